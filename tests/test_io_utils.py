"""Tests for syntax_t2t.io_utils: gzip-aware strict reading and atomic writes."""

import gzip
import os
import stat

import pytest

from syntax_t2t import io_utils
from syntax_t2t.errors import InputError, SkipCounter, counted, raise_or_skip


def _leftovers(directory):
    return sorted(name for name in os.listdir(directory) if name.startswith(".") and ".tmp" in name)


class _Interrupt(Exception):
    pass


def test_atomic_write_creates_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    with io_utils.atomic_write(target) as stream:
        stream.write("héllo\nworld\r\n")
        # While writing, the data lives in a hidden temporary file beside the target.
        assert not target.exists()
        assert len(_leftovers(tmp_path)) == 1
    assert target.read_bytes() == "héllo\nworld\r\n".encode("utf-8")
    assert _leftovers(tmp_path) == []


def test_interrupted_write_leaves_no_target_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(_Interrupt):
        with io_utils.atomic_write(target) as stream:
            stream.write("partial")
            raise _Interrupt()
    assert not target.exists()
    assert os.listdir(tmp_path) == []


def test_interrupted_write_keeps_existing_target(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old content")
    with pytest.raises(KeyboardInterrupt):
        with io_utils.atomic_write(target, "wb") as stream:
            stream.write(b"new")
            raise KeyboardInterrupt()
    assert target.read_bytes() == b"old content"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_successful_write_replaces_existing_target(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old content")
    with io_utils.atomic_write(target, "wb") as stream:
        stream.write(b"\x00new")
    assert target.read_bytes() == b"\x00new"


def test_new_file_permissions_follow_umask(tmp_path):
    umask = os.umask(0o022)
    try:
        io_utils.atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "a.txt").st_mode) == 0o644


def test_atomic_write_rejects_other_modes(tmp_path):
    with pytest.raises(ValueError, match="'a'"):
        with io_utils.atomic_write(tmp_path / "x", "a"):
            pass


def test_atomic_write_text_gzips_by_suffix_reproducibly(tmp_path):
    io_utils.atomic_write_text(tmp_path / "a.txt.gz", "řádek 1\nřádek 2\n")
    first = (tmp_path / "a.txt.gz").read_bytes()
    assert gzip.decompress(first).decode("utf-8") == "řádek 1\nřádek 2\n"
    io_utils.atomic_write_text(tmp_path / "a.txt.gz", "řádek 1\nřádek 2\n")
    assert (tmp_path / "a.txt.gz").read_bytes() == first


@pytest.mark.parametrize("name", ["plain.txt", "data.gz", "gzip_without_suffix.txt"])
def test_read_lines_plain_and_gzip(tmp_path, name):
    content = "první\n\nthird line\r\nlast without newline".encode("utf-8")
    path = tmp_path / name
    path.write_bytes(content if name == "plain.txt" else gzip.compress(content))
    assert io_utils.is_gzip(path) == (name != "plain.txt")
    assert list(io_utils.read_lines(path)) == [
        (1, "první"),
        (2, ""),
        (3, "third line"),
        (4, "last without newline"),
    ]
    with io_utils.open_text(path) as stream:
        assert stream.read().startswith("první\n\nthird")


def test_read_lines_does_not_split_on_unicode_line_separators(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("a\u2028b\x1cc\n", encoding="utf-8")
    assert list(io_utils.read_lines(path)) == [(1, "a\u2028b\x1cc")]


def test_read_lines_drops_the_byte_order_mark_and_the_invisible_one_inside_a_line(tmp_path):
    # Inside a line U+FEFF is a zero width no-break space: invisible, so it is dropped as the
    # zero width space is (io_utils.normalize_text), and "two" finds its vocabulary entry.
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbfone\n\xef\xbb\xbftwo\nthr\xef\xbb\xbfee\n")
    assert list(io_utils.read_lines(path)) == [(1, "one"), (2, "two"), (3, "three")]


@pytest.mark.parametrize("compress", [False, True])
def test_invalid_utf8_names_file_and_line(tmp_path, compress):
    content = b"fine\nalso fine\nbad \xff byte\nnever reached\n"
    path = tmp_path / ("bad.txt.gz" if compress else "bad.txt")
    path.write_bytes(gzip.compress(content) if compress else content)
    lines = io_utils.read_lines(path)
    assert next(lines) == (1, "fine")
    assert next(lines) == (2, "also fine")
    with pytest.raises(InputError) as caught:
        next(lines)
    message = str(caught.value)
    assert message.startswith(f"{path}:3: ")
    assert "invalid UTF-8" in message and "\\xff" in message and "offset 5" in message
    assert (caught.value.path, caught.value.line, caught.value.reason) == (str(path), 3, "invalid UTF-8")


def test_truncated_gzip_is_an_input_error(tmp_path):
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(b"line\n" * 1000)[:-12])
    with pytest.raises(InputError, match=r"cut\.gz:\d+: cannot decompress gzip data"):
        list(io_utils.read_lines(path))


def test_gz_suffix_on_plain_file_is_an_input_error(tmp_path):
    path = tmp_path / "fake.gz"
    path.write_bytes(b"plain text\n")
    with pytest.raises(InputError, match=r"fake\.gz:1: cannot decompress gzip data"):
        list(io_utils.read_lines(path))


def test_input_error_format_and_pickling():
    import pickle

    error = InputError("dir/f.conllu", 7, "wrong column count: 9", reason="wrong column count")
    assert str(error) == "dir/f.conllu:7: wrong column count: 9"
    assert str(InputError("f", None, "file is empty")) == "f: file is empty"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.line, copy.message, copy.reason) == (
        "dir/f.conllu",
        7,
        "wrong column count: 9",
        "wrong column count",
    )


def test_skip_counter_counts_by_reason_and_logs(caplog):
    skip = SkipCounter()
    assert skip.summary() == "skipped 0 examples"
    with caplog.at_level("WARNING"):
        raise_or_skip(InputError("a", 1, "cycle 1 -> 2", reason="not a tree"), skip)
        raise_or_skip(InputError("a", 5, "9 columns", reason="wrong column count"), skip)
        raise_or_skip(InputError("b", 2, "cycle 3 -> 4", reason="not a tree"), skip)
    assert skip.total == 3
    assert skip.counts == {"not a tree": 2, "wrong column count": 1}
    assert skip.summary() == "skipped 3 examples: 2 not a tree, 1 wrong column count"
    assert "a:5: 9 columns" in caplog.text


def test_skip_counter_one_example_is_singular():
    skip = SkipCounter()
    raise_or_skip(InputError("a", 1, "cycle 1 -> 2", reason="not a tree"), skip)
    assert skip.summary() == "skipped 1 example: 1 not a tree"


@pytest.mark.parametrize("count, one, several, expected", [
    (0, "line", "", "0 lines"),
    (1, "line", "", "1 line"),
    (2, "line", "", "2 lines"),
    (1, "degree", "degrees", "1 degree"),
    (3, "analysis", "analyses", "3 analyses"),
    (1, "unusable input sentence", "", "1 unusable input sentence"),
])
def test_counted_agrees_noun_with_count(count, one, several, expected):
    assert counted(count, one, several) == expected


def test_raise_or_skip_without_counter_raises():
    error = InputError("a", 1, "bad")
    with pytest.raises(InputError) as caught:
        raise_or_skip(error, None)
    assert caught.value is error
