"""Tests for syntax_t2t.data.parallel_text."""

import gzip
import re
from pathlib import Path

import pytest

from syntax_t2t.data.parallel_text import read_parallel, read_plain_lines, split_tokens
from syntax_t2t.errors import InputError, SkipCounter

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"real data folder {DATA} is absent")


def write(path, data: bytes):
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def test_reads_aligned_pairs_plain_and_gzip(tmp_path):
    source = write(tmp_path / "train.cs", "Pes štěká .\nKočka spí .\r\nAhoj\n".encode())
    target = write(tmp_path / "train.en.gz", b"The dog barks .\nThe cat sleeps .\nHello")
    assert list(read_parallel(source, target)) == [
        (1, "Pes štěká .", "The dog barks ."),
        (2, "Kočka spí .", "The cat sleeps ."),
        (3, "Ahoj", "Hello"),
    ]


def test_split_tokens_splits_on_whitespace_only():
    assert split_tokens("  Pes  štěká,\tkočka\u00a0spí .\n") == ["Pes", "štěká,", "kočka", "spí", "."]
    assert split_tokens("") == []


def case(source, target, culprit, line, fragment, name):
    return pytest.param(source, target, culprit, line, fragment, id=name)


# Each case: source bytes, target bytes, the file the error must name ("src" or
# "tgt"), its line (None: the whole file), a fragment of the message.
MALFORMED = [
    case(b"a\nb\nc\nd\n", b"A\nB\nC\n", "tgt", 4,
         "file ends after 3 lines, but the parallel file {src} has a line 4", "source-longer"),
    case(b"a\nb\n", b"A\nB\nC\n", "src", 3,
         "file ends after 2 lines, but the parallel file {tgt} has a line 3", "target-longer"),
    case(b"a\nb", b"A\nB\n\n", "src", 3, "file ends after 2 lines", "trailing-blank-line-counts"),
    case(b"a\n", b"", "tgt", 1, "file is empty, but the parallel file {src} has a line 1", "empty-target"),
    case(b"", b"", "src", None, "file is empty (and so is {tgt})", "both-empty"),
    case(b"a\nb\n", b"A\nB\xe9\n", "tgt", 2, "invalid UTF-8", "invalid-utf8"),
    case(b"a\n \t\nc\n", b"A\nB\nC\n", "src", 2, "empty sentence (blank line)", "blank-source-line"),
    case(b"a\nb\nc\n", b"A\nB\n\n", "tgt", 3, "empty sentence (blank line)", "blank-target-line"),
]


@pytest.mark.parametrize("source_bytes, target_bytes, culprit, line, fragment", MALFORMED)
def test_malformed_input_names_file_line_and_problem(
    tmp_path, source_bytes, target_bytes, culprit, line, fragment
):
    paths = {
        "src": write(tmp_path / "src.txt", source_bytes),
        "tgt": write(tmp_path / "tgt.txt.gz", target_bytes),
    }
    with pytest.raises(InputError) as caught:
        list(read_parallel(paths["src"], paths["tgt"]))
    location = str(paths[culprit]) if line is None else f"{paths[culprit]}:{line}"
    assert str(caught.value).startswith(location + ": ")
    assert fragment.format(**paths) in str(caught.value)


def test_skip_bad_pairs_but_not_misaligned_files(tmp_path):
    source = write(tmp_path / "s.txt", b"one\n\xff\nthree\n\nfive\n")
    target = write(tmp_path / "t.txt", b"ONE\nTWO\nTHREE\nFOUR\nFIVE\n")
    skip = SkipCounter()
    assert [number for number, _, _ in read_parallel(source, target, skip=skip)] == [1, 3, 5]
    assert skip.counts == {"invalid UTF-8": 1, "empty sentence": 1}
    shorter = write(tmp_path / "short.txt", b"ONE\n")
    with pytest.raises(InputError, match=re.escape(f"{shorter}:2: file ends after 1 line, but")):
        list(read_parallel(source, shorter, skip=SkipCounter()))


def test_read_plain_lines_keeps_blank_lines(tmp_path):
    path = write(tmp_path / "in.txt.gz", "věta\n\n  \nposlední".encode())
    assert list(read_plain_lines(path)) == [(1, "věta"), (2, ""), (3, "  "), (4, "poslední")]


@pytest.mark.parametrize(
    "data, message",
    [(b"", "{path}: file is empty"), (b"ok\nbad \xc3\x28\n", "{path}:2: invalid UTF-8")],
)
def test_read_plain_lines_errors(tmp_path, data, message):
    path = write(tmp_path / "in.txt", data)
    with pytest.raises(InputError, match=re.escape(message.format(path=path))):
        list(read_plain_lines(path))


@pytest.mark.real_data
@needs_data
@pytest.mark.parametrize("split, expected", [("val", 1014), ("test_2016_flickr", 1000)])
def test_multi30k_files_are_aligned(split, expected):
    folder = DATA / "multi30k"
    pairs = list(read_parallel(folder / f"{split}.cs.gz", folder / f"{split}.en.gz"))
    assert [number for number, _, _ in pairs] == list(range(1, expected + 1))
    assert sum(1 for _ in read_plain_lines(folder / f"{split}.de.gz")) == expected
    assert all(split_tokens(source) and split_tokens(target) for _, source, target in pairs)
