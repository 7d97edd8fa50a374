"""Tests for problems.pud (`pud_syntax_cs_en`, `pud_syntax_de_cs`)."""

import gzip
import shutil
from pathlib import Path

import pytest

from syntax_t2t.problems.pud import PudSyntaxCsEn, PudSyntaxDeCs, pud_filename
from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.errors import InputError, SkipCounter
from syntax_t2t.problem import DEV, TEST, TRAIN

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PUD = DATA / "pud"
needs_pud = pytest.mark.skipif(not PUD.is_dir(), reason=f"real data folder {PUD} is absent")


def test_registered_names_and_languages():
    registration.import_all()
    assert type(registry.problem("pud_syntax_cs_en")) is PudSyntaxCsEn
    assert type(registry.problem("pud_syntax_de_cs")) is PudSyntaxDeCs
    assert (PudSyntaxDeCs.source_language, PudSyntaxDeCs.target_language) == ("de", "cs")
    assert pud_filename("cs") == "cs_pud-ud-test.conllu"


def _sentence(parallel_id, words):
    """A CoNLL-U sentence (first word the root) with a `parallel_id`, or none if None."""
    if parallel_id is None:
        lines = ["# sent_id = no-id"]
    else:
        lines = [f"# sent_id = s-{parallel_id}", f"# parallel_id = {parallel_id}"]
    for index, word in enumerate(words, start=1):
        head = 0 if index == 1 else 1
        lines.append("\t".join([str(index), word, word, "X", "_", "_", str(head),
                                "root" if head == 0 else "dep", "_", "_"]))
    return "\n".join(lines) + "\n\n"


def _write(directory, language, sentences):
    (directory / pud_filename(language)).write_text("".join(sentences), encoding="utf-8")


def test_pairs_by_parallel_id_and_splits_by_position(tmp_path):
    _write(tmp_path, "cs", [_sentence(f"p{i}", [f"cs{i}", "x"]) for i in range(5)])
    # Target in another order: pairing must use parallel_id, not position.
    _write(tmp_path, "en", [_sentence(f"p{i}", [f"en{i}"]) for i in (4, 2, 0, 1, 3)])
    problem = PudSyntaxCsEn(train_size=2, dev_size=2, test_size=1)
    pairs = {split: [(tree.tokens[0], target) for tree, target in
                     problem.generate_samples(str(tmp_path), split, None)]
             for split in (TRAIN, DEV, TEST)}
    assert pairs == {TRAIN: [("cs0", ["en0"]), ("cs1", ["en1"])],
                     DEV: [("cs2", ["en2"]), ("cs3", ["en3"])],
                     TEST: [("cs4", ["en4"])]}


def test_unaligned_sentences_are_errors_or_skipped_once(tmp_path):
    _write(tmp_path, "cs", [_sentence("p0", ["a"]), _sentence("p1", ["b"]), _sentence(None, ["c"]),
                            _sentence("p3", ["d"])])
    _write(tmp_path, "en", [_sentence("p0", ["A"]), _sentence("p3", ["D"]), _sentence("p3", ["DD"])])
    problem = PudSyntaxCsEn(train_size=3, dev_size=1, test_size=0)
    with pytest.raises(InputError, match="parallel_id p3 appears twice"):
        list(problem.generate_samples(str(tmp_path), TRAIN, None))
    skip = SkipCounter()
    record = problem.generate_data(str(tmp_path / "data"), str(tmp_path), skip=skip)
    assert record["counts"] == {TRAIN: 1, DEV: 1, TEST: 0}
    # p1 has no target, sentence 3 no parallel_id, p3 is duplicated in the
    # target file: each reported once although the target file is read for
    # every split.
    assert skip.counts == {"no aligned target": 1, "no parallel_id": 1, "duplicate parallel_id": 1}


def test_downloads_missing_files(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    _write(mirror, "cs", [_sentence(f"p{i}", [f"cs{i}"]) for i in range(3)])
    _write(mirror, "en", [_sentence(f"p{i}", [f"en{i}"]) for i in range(3)])
    template = mirror.as_uri() + "/{filename}"
    problem = PudSyntaxCsEn(train_size=1, dev_size=1, test_size=1, url_template=template)
    tmp_dir = tmp_path / "tmp"
    record = problem.generate_data(str(tmp_path / "data"), str(tmp_dir))
    assert record["counts"] == {TRAIN: 1, DEV: 1, TEST: 1}
    assert sorted(p.name for p in tmp_dir.iterdir()) == ["cs_pud-ud-test.conllu", "en_pud-ud-test.conllu"]


def test_the_default_url_points_at_the_ud_repository():
    problem = PudSyntaxCsEn()
    assert problem.url_template.format(treebank="Czech", filename=pud_filename("cs")) == (
        "https://raw.githubusercontent.com/UniversalDependencies/UD_Czech-PUD/master/"
        "cs_pud-ud-test.conllu")


@pytest.mark.real_data
@needs_pud
def test_datagen_from_the_real_pud_files(tmp_path):
    tmp_dir = tmp_path / "tmp"
    tmp_dir.mkdir()
    for language in ("cs", "en"):
        shutil.copy(PUD / f"{pud_filename(language)}.gz", tmp_dir)
    problem = PudSyntaxCsEn()
    record = problem.generate_data(str(tmp_path / "data"), str(tmp_dir))
    assert record["counts"] == {TRAIN: 800, DEV: 100, TEST: 100}
    sizes = problem.vocab_sizes(str(tmp_path / "data"))
    assert 4 + 10 < sizes["upos"] <= 4 + 17  # UD has 17 UPOS tags
    assert sizes["xpos"] > 300  # PDT positional tags

    czech = list(read_conllu(PUD / "cs_pud-ud-test.conllu.gz"))
    english = {t.comments["parallel_id"]: t for t in read_conllu(PUD / "en_pud-ud-test.conllu.gz")}
    first_test = czech[900]
    samples = list(problem.generate_samples(str(tmp_dir), TEST, None))
    source, target = samples[0]
    assert source == first_test
    assert target == list(english[first_test.comments["parallel_id"]].tokens)


def test_accepts_gzipped_files(tmp_path):
    for language, words in (("cs", ["a"]), ("en", ["A"])):
        text = _sentence("p0", words)
        with gzip.open(tmp_path / f"{pud_filename(language)}.gz", "wt", encoding="utf-8") as stream:
            stream.write(text)
    problem = PudSyntaxCsEn(train_size=1, dev_size=0, test_size=0)
    assert [target for _, target in problem.generate_samples(str(tmp_path), TRAIN, None)] == [["A"]]
