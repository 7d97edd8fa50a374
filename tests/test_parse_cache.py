"""Tests for syntax_t2t.parsing.parse_cache."""

import concurrent.futures
import gzip
import os
import signal
import subprocess
import sys
import time

import pytest

from parser_fixtures import ChainParser, untrained_pipeline_dir
from syntax_t2t.data.conllu_reader import write_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError
from syntax_t2t.parsing import parse_cache
from syntax_t2t.parsing.parser import ParserError
from syntax_t2t.parsing.spacy_adapter import SpacyParser


def _write_lines(path, lines: list[bytes]):
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return str(path)


@pytest.fixture
def source(tmp_path):
    # Line 2 is blank, line 4 is not UTF-8: neither is parsed.
    return _write_lines(tmp_path / "train.cs", ["Pes  běží .".encode(), b"   ", "Kočka = spí".encode(),
                                                b"\xff bad", b"x"])


def test_parses_every_parsable_line_once_with_its_line_and_text(tmp_path, source):
    parser = ChainParser()
    path = parse_cache.parse_file(parser, source, tmp_path / "parses")
    assert os.path.dirname(path) == str(tmp_path / "parses")
    assert os.path.basename(path).startswith("train.cs.chain.") and path.endswith(".conllu.gz")
    assert parser.parsed == [["Pes", "běží", "."], ["Kočka", "=", "spí"], ["x"]]
    parses = list(parse_cache.read_parses(path))
    assert [line for line, _ in parses] == [1, 3, 5]
    first, second, third = (tree for _, tree in parses)
    assert first.tokens == ("Pes", "běží", ".") and first.heads.tolist() == [0, 1, 2]
    assert dict(first.comments) == {"source_line": "1", "text": "Pes běží ."}
    assert dict(second.comments) == {"source_line": "3", "text": "Kočka = spí"}
    assert third.tokens == ("x",)

    # A second run reads the cache: nothing is parsed again.
    again = ChainParser()
    assert parse_cache.parse_file(again, source, tmp_path / "parses") == path
    assert again.parsed == []
    assert list(parse_cache.parsed_lines(again, source, tmp_path / "parses")) == parses
    assert again.parsed == []


def test_key_covers_parser_input_and_input_form(tmp_path, source):
    cache = tmp_path / "parses"
    path = parse_cache.cache_path(ChainParser(), source, cache)
    assert parse_cache.cache_path(ChainParser(), source, cache) == path
    assert parse_cache.cache_path(ChainParser(version="2"), source, cache) != path
    assert parse_cache.cache_path(ChainParser(), source, cache, pretokenized=True) != path
    (tmp_path / "other").mkdir()
    edited = _write_lines(tmp_path / "other" / "train.cs", [b"Pes"])
    assert parse_cache.cache_path(ChainParser(), edited, cache) != path
    # The same text gzipped is the same input.
    with open(source, "rb") as stream:
        (tmp_path / "zipped").mkdir()
        (tmp_path / "zipped" / "train.cs.gz").write_bytes(gzip.compress(stream.read()))
    assert parse_cache.cache_path(ChainParser(), tmp_path / "zipped" / "train.cs.gz", cache) == path


def test_pretokenised_lines_keep_their_words(tmp_path):
    source = _write_lines(tmp_path / "tok.en", [b"Do n't  stop", b"U.S.A. !"])
    parser = ChainParser()
    path = parse_cache.parse_file(parser, source, tmp_path / "parses", pretokenized=True)
    assert parser.parsed == [["Do", "n't", "stop"], ["U.S.A.", "!"]]
    assert [tree.comments["text"] for _, tree in parse_cache.read_parses(path)] == [
        "Do n't stop", "U.S.A. !"]


def test_an_interrupted_parse_leaves_no_cache_and_resumes(tmp_path, source):
    cache = tmp_path / "parses"
    path = parse_cache.cache_path(ChainParser(), source, cache)
    with pytest.raises(RuntimeError, match="parser crashed"):
        parse_cache.parse_file(ChainParser(fail_after=2), source, cache, chunk_lines=1)
    assert not os.path.exists(path)
    # Lines 1 and 3 were committed; the next run parses only line 5.
    resumed = ChainParser()
    assert parse_cache.parse_file(resumed, source, cache, chunk_lines=1) == path
    assert resumed.parsed == [["x"]]
    assert sorted(os.listdir(cache)) == [os.path.basename(path)]
    assert [line for line, _ in parse_cache.read_parses(path)] == [1, 3, 5]


def test_a_parser_that_loses_lines_is_an_error(tmp_path, source):
    with pytest.raises(ParserError, match="returned 2 trees for the 3 lines of .*train.cs"):
        parse_cache.parse_file(ChainParser(drop_last=True), source, tmp_path / "parses")
    # Its trees may be misaligned with the lines: nothing is kept to resume from.
    assert os.listdir(tmp_path / "parses") == []


def test_a_file_that_is_not_a_cache_is_rejected(tmp_path):
    tree = DependencyTree.from_heads(["a"], [0])
    no_line = tmp_path / "no_line.conllu"
    write_conllu([tree], no_line)
    with pytest.raises(InputError, match=r"no_line.conllu: sentence 1 has '# source_line = ', "
                                         r"expected a line number above 0"):
        list(parse_cache.read_parses(no_line))
    unordered = tmp_path / "unordered.conllu"
    write_conllu([DependencyTree.from_heads(["a"], [0], comments={"source_line": line})
                  for line in ("2", "2")], unordered)
    with pytest.raises(InputError, match="sentence 2 has '# source_line = 2', expected a line "
                                         "number above 2.*Delete it to parse again"):
        list(parse_cache.read_parses(unordered))


def test_spacy_parses_from_the_cache_equal_direct_parses(tmp_path):
    parser = SpacyParser.load(untrained_pipeline_dir(tmp_path / "model"))
    lines = ["Pes běží.", "Kočka spí, ale pes ne!", "Jedna (dvě) tři."]
    source = _write_lines(tmp_path / "val.cs.gz", [line.encode() for line in lines])
    direct = list(parser.parse_texts(lines))
    cached = [tree for _, tree in parse_cache.parsed_lines(parser, source, tmp_path / "parses")]
    assert [(t.tokens, t.heads.tolist(), t.labels, t.xpos) for t in cached] == [
        (t.tokens, t.heads.tolist(), t.labels, t.xpos) for t in direct]
    assert os.path.basename(parse_cache.cache_path(parser, source, tmp_path / "parses")).startswith(
        "val.cs.spacy.")


def _numbered_lines(directory, count):
    directory.mkdir(exist_ok=True)
    return _write_lines(directory / "big.cs", [f"věta {i} má {i % 5 + 1} slov".encode()
                                              if i % 17 else b"" for i in range(count)])


def test_torn_writes_after_the_last_commit_are_dropped(tmp_path):
    source = _numbered_lines(tmp_path / "raw", 60)
    whole = parse_cache.parse_file(ChainParser(), source, tmp_path / "whole", chunk_lines=4)
    cache = tmp_path / "torn"
    with pytest.raises(RuntimeError, match="parser crashed"):
        parse_cache.parse_file(ChainParser(fail_after=22), source, cache, chunk_lines=4)
    path = parse_cache.cache_path(ChainParser(), source, cache)
    # As if killed while writing the next chunk and its index line.
    with open(path + parse_cache.PARTIAL_SUFFIX, "ab") as stream:
        stream.write(gzip.compress(b"1\thalf")[:9])
    with open(path + parse_cache.INDEX_SUFFIX, "a") as stream:
        stream.write("99999 4")
    resumed = ChainParser()
    parse_cache.parse_file(resumed, source, cache, chunk_lines=4)
    assert len(resumed.parsed) == 56 - 20  # 56 parsable lines, 5 chunks of 4 committed
    with open(whole, "rb") as expected, open(path, "rb") as actual:
        assert actual.read() == expected.read()


def _parse_in_another_process(source, cache, delay, chunk_lines, commits):
    """A process that parses `source` into `cache` slowly, once it has committed `commits` chunks."""
    index = parse_cache.cache_path(ChainParser(), source, cache) + parse_cache.INDEX_SUFFIX
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = (f"import sys; sys.path[:0] = [{repo!r}, {os.path.join(repo, 'tests')!r}]\n"
              "from parser_fixtures import ChainParser\n"
              "from syntax_t2t.parsing import parse_cache\n"
              f"parse_cache.parse_file(ChainParser(delay={delay}), {source!r}, {str(cache)!r}, "
              f"chunk_lines={chunk_lines})\n")
    process = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 120
    while not (os.path.isfile(index) and len(open(index).readlines()) >= commits):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            pytest.fail(f"the parsing process committed fewer than {commits} chunks")
        time.sleep(0.01)
    return process


def test_a_killed_parse_resumes_to_the_same_cache(tmp_path):
    source = _numbered_lines(tmp_path / "raw", 400)
    whole = parse_cache.parse_file(ChainParser(), source, tmp_path / "whole", chunk_lines=7)
    cache = tmp_path / "killed"
    path = parse_cache.cache_path(ChainParser(), source, cache)
    index = path + parse_cache.INDEX_SUFFIX
    process = _parse_in_another_process(source, cache, delay=0.02, chunk_lines=7, commits=3)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not os.path.exists(path)
    committed = int(open(index).read().split()[-1])
    assert committed >= 21
    resumed = ChainParser()
    assert parse_cache.parse_file(resumed, source, cache, chunk_lines=7) == path
    assert len(resumed.parsed) == 376 - committed  # 376 parsable lines: none lost, none twice
    with open(whole, "rb") as expected, open(path, "rb") as actual:
        assert actual.read() == expected.read()
    assert [line for line, _ in parse_cache.read_parses(path)] == [
        number for number in range(1, 401) if (number - 1) % 17]


def test_a_second_process_waits_for_the_writer_and_reads_its_cache(tmp_path):
    """Two datagens sharing a tmp_dir both appended to one partial file, and the cache they left
    was refused ("sentence 1001 has '# source_line = 1'"): one writes, the other waits."""
    source = _numbered_lines(tmp_path / "raw", 200)
    whole = parse_cache.parse_file(ChainParser(), source, tmp_path / "whole", chunk_lines=7)
    cache = tmp_path / "shared"
    writer = _parse_in_another_process(source, cache, delay=0.01, chunk_lines=7, commits=2)
    try:
        waiting = ChainParser()
        path = parse_cache.parse_file(waiting, source, cache, chunk_lines=7)
        assert writer.wait(timeout=60) == 0
    finally:
        writer.kill()
        writer.wait()
    assert waiting.parsed == []
    with open(whole, "rb") as expected, open(path, "rb") as actual:
        assert actual.read() == expected.read()
    assert sorted(os.listdir(cache)) == [os.path.basename(path)]


def test_a_waiting_process_resumes_when_the_writer_dies(tmp_path):
    source = _numbered_lines(tmp_path / "raw", 200)
    whole = parse_cache.parse_file(ChainParser(), source, tmp_path / "whole", chunk_lines=7)
    cache = tmp_path / "shared"
    writer = _parse_in_another_process(source, cache, delay=0.05, chunk_lines=7, commits=2)
    waiting = ChainParser()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        try:
            result = pool.submit(parse_cache.parse_file, waiting, source, cache, chunk_lines=7)
            time.sleep(0.3)
            assert not result.done(), "did not wait for the writer"
        finally:
            writer.kill()
            writer.wait()
        path = result.result(timeout=60)
    committed = 188 - len(waiting.parsed)  # 188 parsable lines
    assert committed >= 14 and committed % 7 == 0
    with open(whole, "rb") as expected, open(path, "rb") as actual:
        assert actual.read() == expected.read()


def test_a_cached_tree_changed_by_hand_is_refused(tmp_path, source):
    """Issue 35, item 5: a cached word edited by hand ("Pes" -> "Kůň") went into the training data
    and shifted every id after it; the cache's own `# text` was never compared with it."""
    path = parse_cache.parse_file(ChainParser(), source, tmp_path / "parses")
    text = gzip.decompress(open(path, "rb").read()).decode("utf-8")
    assert "# parse_sha256 = " in text
    assert [tree.comments.keys() for _, tree in parse_cache.read_parses(path)][0] == {
        "source_line", "text"}
    with open(path, "wb") as stream:
        stream.write(gzip.compress(text.replace("\tPes\t", "\tKůň\t", 1).encode("utf-8")))
    with pytest.raises(InputError, match=r"sentence 1 \(input line 1\) was changed after it was "
                                         r"parsed: its words, tree or text no longer match its "
                                         r"'# parse_sha256'\. Delete the cache to parse again"):
        list(parse_cache.read_parses(path))
