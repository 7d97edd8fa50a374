"""Tests for syntax_t2t.parsing.parse_cache."""

import gzip
import os

import numpy as np
import pytest

from parser_fixtures import untrained_pipeline_dir
from syntax_t2t.data.conllu_reader import write_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError
from syntax_t2t.parsing import parse_cache
from syntax_t2t.parsing.parser import Parser, ParserError
from syntax_t2t.parsing.spacy_adapter import SpacyParser


class ChainParser(Parser):
    """A reference parser: words are the whitespace-separated pieces, each attached to
    the one before it (the first to ROOT); counts the sentences it parses."""

    def __init__(self, version="1", fail_after=None, drop_last=False):
        self.spec = f"chain:{version}"
        self.version = version
        self.fail_after = fail_after
        self.drop_last = drop_last
        self.parsed = []

    def _tree(self, words):
        if self.fail_after is not None and len(self.parsed) >= self.fail_after:
            raise RuntimeError("parser crashed")
        self.parsed.append(list(words))
        return DependencyTree.from_heads(words, np.arange(len(words)), labels=["dep"] * len(words))

    def parse_texts(self, texts):
        texts = list(texts)
        for text in texts[:-1] if self.drop_last else texts:
            yield self._tree(text.split())

    def parse_tokens(self, sentences):
        for words in sentences:
            yield self._tree(list(words))

    def fingerprint(self, pretokenized):
        return {"library": "chain", "version": self.version}


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


def test_an_interrupted_parse_leaves_no_cache(tmp_path, source):
    with pytest.raises(RuntimeError, match="parser crashed"):
        parse_cache.parse_file(ChainParser(fail_after=1), source, tmp_path / "parses")
    assert os.listdir(tmp_path / "parses") == []


def test_a_parser_that_loses_lines_is_an_error(tmp_path, source):
    with pytest.raises(ParserError, match="returned 2 trees for the 3 lines of .*train.cs"):
        parse_cache.parse_file(ChainParser(drop_last=True), source, tmp_path / "parses")
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
