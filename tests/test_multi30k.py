"""Tests for problems.multi30k (`multi30k_syntax_cs_en`, `_de_en`, `_en_cs`)."""

import gzip
import itertools
import json
import os

import pytest
import spacy

from parser_fixtures import MULTI30K, needs_czech_ud, tiny_czech_parser, untrained_pipeline_dir
from syntax_t2t.problems.multi30k import (EXTRA_TEST_SETS, SPLIT_FILES, Multi30kSyntaxCsEn,
                                          Multi30kSyntaxDeEn, Multi30kSyntaxEnCs)
from syntax_t2t import io_utils, registry
from syntax_t2t.cli import registration
from syntax_t2t.data.download import DownloadError
from syntax_t2t.errors import InputError, SkipCounter
from syntax_t2t.parsing.parser import ParserSpecError
from syntax_t2t.parsing.spacy_adapter import SpacyParser
from syntax_t2t.problem import DEV, SPLITS, TEST, TRAIN

needs_multi30k = pytest.mark.skipif(not MULTI30K.is_dir(), reason=f"real data folder {MULTI30K} is absent")


@pytest.fixture(scope="module")
def untrained(tmp_path_factory):
    return untrained_pipeline_dir(tmp_path_factory.mktemp("untrained") / "cs")


def _write(directory, name, lines):
    directory.mkdir(parents=True, exist_ok=True)
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    (directory / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)


def _raw_data(tmp_path, source_lines, target_lines, split=TRAIN):
    _write(tmp_path / "multi30k", f"{SPLIT_FILES[split]}.cs.gz", source_lines)
    _write(tmp_path / "multi30k", f"{SPLIT_FILES[split]}.en", target_lines)


def test_registered_directions_and_default_parsers():
    registration.import_all()
    for name, cls, languages in [("multi30k_syntax_cs_en", Multi30kSyntaxCsEn, ("cs", "en")),
                                 ("multi30k_syntax_de_en", Multi30kSyntaxDeEn, ("de", "en")),
                                 ("multi30k_syntax_en_cs", Multi30kSyntaxEnCs, ("en", "cs"))]:
        problem = registry.problem(name)
        assert type(problem) is cls
        assert (cls.source_language, cls.target_language) == languages
        assert problem.options()["parser"] == f"stanza:{languages[0]}"
    assert SPLIT_FILES == {TRAIN: "train", DEV: "val", TEST: "test_2016_flickr"}


def test_malformed_parser_option_fails_at_construction():
    with pytest.raises(ParserSpecError, match="--parser=spacy:: the model after spacy: is missing"):
        Multi30kSyntaxCsEn(parser="spacy:")


def test_local_files_are_used_and_missing_ones_downloaded(tmp_path):
    remote = tmp_path / "remote"
    _write(remote, "val.en.gz", ["A dog."])
    problem = Multi30kSyntaxCsEn(url_template=f"file://{remote}/{{filename}}")
    _write(tmp_path / "raw" / "multi30k", "val.cs", ["Pes."])  # plain text is used as it is
    assert problem.raw_path(str(tmp_path / "raw"), DEV, "cs") == str(tmp_path / "raw" / "multi30k" / "val.cs")
    downloaded = problem.raw_path(str(tmp_path / "raw"), DEV, "en")
    assert downloaded == str(tmp_path / "raw" / "multi30k" / "val.en.gz")
    assert list(io_utils.read_lines(downloaded)) == [(1, "A dog.")]
    with pytest.raises(DownloadError, match=r"put it at .*multi30k/test_2016_flickr.en.gz"):
        problem.raw_path(str(tmp_path / "raw"), TEST, "en")


def test_the_2018_test_set_is_on_the_download_list(tmp_path):
    assert EXTRA_TEST_SETS == ("test_2018_flickr",)
    remote = tmp_path / "remote"
    _write(remote, "test_2018_flickr.cs.gz", ["Dva psi."])
    _write(remote, "test_2018_flickr.en.gz", ["Two dogs."])
    problem = Multi30kSyntaxCsEn(url_template=f"file://{remote}/{{filename}}")
    raw = tmp_path / "raw"
    _write(raw / "multi30k", "test_2018_flickr.en", ["Two dogs, here."])  # a local file wins
    paths = problem.fetch_extra_test_sets(str(raw))
    assert paths == [str(raw / "multi30k" / "test_2018_flickr.cs.gz"),
                     str(raw / "multi30k" / "test_2018_flickr.en")]
    assert list(io_utils.read_lines(paths[0])) == [(1, "Dva psi.")]
    assert list(io_utils.read_lines(paths[1])) == [(1, "Two dogs, here.")]
    # Offline without the files: datagen goes on (the data does not need them).
    offline = Multi30kSyntaxCsEn(url_template=f"file://{tmp_path / 'nowhere'}/{{filename}}")
    assert offline.fetch_extra_test_sets(str(tmp_path / "empty")) == []


def test_samples_pair_parsed_sources_with_tokenised_targets(tmp_path, untrained):
    sources = ["Pes běží.", "Dva muži,  jeden pes!", "Dívka (malá) spí."]
    targets = ["A dog runs.", "Two men, one dog!", "A (little) girl doesn't sleep."]
    _raw_data(tmp_path, sources, targets)
    problem = Multi30kSyntaxCsEn(parser=f"spacy:{untrained}")
    samples = list(problem.generate_samples(str(tmp_path), TRAIN, None))

    source_tokenizer = spacy.blank("cs").tokenizer
    english = spacy.blank("en").tokenizer
    assert [list(tree.tokens) for tree, _ in samples] == [
        [token.text for token in source_tokenizer(" ".join(line.split()))] for line in sources]
    assert [target for _, target in samples] == [[token.text for token in english(line)]
                                                 for line in targets]
    assert samples[2][1] == ["A", "(", "little", ")", "girl", "does", "n't", "sleep", "."]
    assert [tree.comments["source_line"] for tree, _ in samples] == ["1", "2", "3"]
    (cache,) = os.listdir(tmp_path / "multi30k" / "parses")
    assert cache.startswith("train.cs.spacy.") and cache.endswith(".conllu.gz")


def test_bad_lines_are_errors_or_skipped_and_stay_aligned(tmp_path, untrained):
    _raw_data(tmp_path, ["Jedna.", "Dvě.", "  ", "Čtyři."], ["One.", "", "Three.", "Four."])
    problem = Multi30kSyntaxCsEn(parser=f"spacy:{untrained}")
    with pytest.raises(InputError, match=r"multi30k/train.en:2: empty sentence"):
        list(problem.generate_samples(str(tmp_path), TRAIN, None))
    skip = SkipCounter()
    samples = list(problem.generate_samples(str(tmp_path), TRAIN, skip))
    assert [(tree.tokens, target) for tree, target in samples] == [
        (("Jedna", "."), ["One", "."]), (("Čtyři", "."), ["Four", "."])]
    assert skip.counts == {"empty sentence": 2}


def test_line_count_mismatch_names_the_shorter_file(tmp_path, untrained):
    _raw_data(tmp_path, ["Jedna.", "Dvě."], ["One."])
    problem = Multi30kSyntaxCsEn(parser=f"spacy:{untrained}")
    with pytest.raises(InputError, match=r"train.en:2: file ends after 1 line, but the parallel file "
                                         r".*train.cs.gz has a line 2"):
        list(problem.generate_samples(str(tmp_path), TRAIN, None))


def test_rerun_reads_the_cached_parses(tmp_path, untrained, monkeypatch):
    _raw_data(tmp_path, ["Jedna.", "Dvě tři."], ["One.", "Two three."])
    first = list(Multi30kSyntaxCsEn(parser=f"spacy:{untrained}").generate_samples(
        str(tmp_path), TRAIN, None))

    def no_parsing(self, texts):
        raise AssertionError("parsed again although the parses are cached")

    monkeypatch.setattr(SpacyParser, "parse_texts", no_parsing)
    again = list(Multi30kSyntaxCsEn(parser=f"spacy:{untrained}").generate_samples(
        str(tmp_path), TRAIN, None))
    assert again == first


def _copy_head(split, language, directory, lines):
    name = f"{SPLIT_FILES[split]}.{language}.gz"
    with gzip.open(MULTI30K / name, "rt", encoding="utf-8") as stream:
        head = list(itertools.islice(stream, lines))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(gzip.compress("".join(head).encode("utf-8")))
    return [line.rstrip("\n") for line in head]


@pytest.mark.real_data
@needs_multi30k
@needs_czech_ud
def test_datagen_on_real_multi30k_with_the_trained_parser(tmp_path, monkeypatch):
    lines = {(split, language): _copy_head(split, language, tmp_path / "raw" / "multi30k", 200)
             for split in SPLITS for language in ("cs", "en")}
    parser_dir = tiny_czech_parser()["output_dir"]
    problem = Multi30kSyntaxCsEn(parser=f"spacy:{parser_dir}", num_shards={TRAIN: 2, DEV: 1, TEST: 1})
    record = problem.generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
    assert record["counts"] == {TRAIN: 200, DEV: 200, TEST: 200}
    assert record["options"]["parser"] == f"spacy:{parser_dir}"
    assert len(os.listdir(tmp_path / "raw" / "multi30k" / "parses")) == 3  # one per split

    learned = problem.source_parser().nlp
    tags = set(learned.get_pipe("tagger").labels)
    for split in SPLITS:
        samples = list(problem.generate_samples(str(tmp_path / "raw"), split, None))
        assert len(samples) == 200
        for (tree, target), source, english in zip(samples, lines[split, "cs"], lines[split, "en"]):
            assert "".join(tree.tokens) == "".join(source.split())  # the tokenizer keeps every character
            assert set(tree.xpos) <= tags
            assert "".join(target) == "".join(english.split())
    # The vocabularies hold the parser's tags and labels.
    upos = (tmp_path / "data" / "multi30k_syntax_cs_en.vocab.upos.txt").read_text().split("\n")
    assert "NOUN" in upos and "VERB" in upos

    monkeypatch.setattr(SpacyParser, "parse_texts", lambda self, texts: pytest.fail("parsed again"))
    again = Multi30kSyntaxCsEn(parser=f"spacy:{parser_dir}", num_shards={TRAIN: 2, DEV: 1, TEST: 1})
    record_again = again.generate_data(str(tmp_path / "data"), str(tmp_path / "raw"), overwrite=True)
    assert record_again["counts"] == record["counts"]
    assert json.loads((tmp_path / "data" / "multi30k_syntax_cs_en.datagen.json").read_text())[
        "vocab_sizes"] == record["vocab_sizes"]


def test_datagen_finds_every_split_and_the_parser_before_it_parses(tmp_path, untrained, monkeypatch):
    """#34 item 7: a dev file that cannot be downloaded stops datagen before the training split is parsed."""
    for split in (TRAIN, TEST):
        _raw_data(tmp_path / "raw", ["Pes běží."], ["A dog runs."], split=split)
    _write(tmp_path / "raw" / "multi30k", "val.cs", ["Pes."])  # val.en is neither here nor remote
    problem = Multi30kSyntaxCsEn(parser=f"spacy:{untrained}",
                                 url_template=f"file://{tmp_path / 'nowhere'}/{{filename}}")
    loaded = []
    monkeypatch.setattr(Multi30kSyntaxCsEn, "source_parser",
                        lambda self: loaded.append(True) or pytest.fail("parser loaded first"))
    with pytest.raises(DownloadError, match=r"multi30k/val.en.gz"):
        problem.generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
    assert not (tmp_path / "raw" / "multi30k" / "parses").exists() and not loaded
