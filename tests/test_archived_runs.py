"""The committed run records of docs/runs/ re-scored from their own outputs.

docs/results.md reports these runs' test scores. The records keep the test
translations and the parse heads' trees, so every figure can be recomputed
without the grid: here with sacreBLEU and conllu called directly, not
through `syntax_t2t.evaluation`, so a fault in the toolkit's scoring or in
what was committed (a translation file from another run) fails this test;
and the tables of docs/results.md §0 and of the pilot must agree with the records.
"""

import json
import pathlib
import statistics

import conllu
import pytest
import sacrebleu

from syntax_t2t.io_utils import open_text

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARCHIVES = ROOT / "docs" / "runs"
SHARED_DATA = ROOT.parent / "shared" / "data"
# Where each experiment's test references and gold trees are, under ../shared/data.
TEST_FILES = {
    "test_2016_flickr": SHARED_DATA / "multi30k" / "test_2016_flickr.en.gz",
    "val": SHARED_DATA / "multi30k" / "val.en.gz",
    "pud_cs": SHARED_DATA / "pud" / "cs_pud-ud-test.conllu.gz",
}


def _records():
    return sorted(path.parent for path in ARCHIVES.glob("*/runs/*/seed*/scores.json"))


def _needed(name):
    path = TEST_FILES.get(name)
    if path is None:
        pytest.fail(f"no reference file is known for the test set {name!r}: add it to TEST_FILES")
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/data is not beside the project)")
    return path


def _lines(path):
    with open_text(path) as handle:
        return [line.rstrip("\n") for line in handle]


def _heads(path):
    """Each sentence's HEAD column over its syntactic words (no multiword ranges)."""
    with open_text(path) as handle:
        return [[token["head"] for token in sentence if isinstance(token["id"], int)]
                for sentence in conllu.parse_incr(handle)]


@pytest.mark.parametrize("record", _records(),
                         ids=lambda path: f"{path.parents[2].name}/{path.parent.name}/{path.name}")
def test_recorded_scores_match_the_recorded_outputs(record):
    scores = json.loads((record / "scores.json").read_text())
    for test, recorded in scores["translation"].items():
        references = _lines(_needed(test))
        hypotheses = (record / "tests" / f"{test}.hyp").read_text(encoding="utf-8").splitlines()
        assert len(hypotheses) == len(references)
        assert sacrebleu.corpus_bleu(hypotheses, [references]).score == pytest.approx(
            recorded["BLEU"], abs=1e-6)
        assert sacrebleu.corpus_chrf(hypotheses, [references]).score == pytest.approx(
            recorded["chrF"], abs=1e-6)
    if "length_penalty" in scores:
        # The alpha was chosen on dev: its dev BLEU is the highest (the first
        # listed among equals: length_penalty.json keeps the candidates'
        # order), recomputed from the archived dev translations.
        choice = json.loads((record / "tests" / "length_penalty.json").read_text())
        assert scores["length_penalty"] == choice
        references = _lines(_needed(choice["dev_set"]))
        dev_bleu = {}
        for alpha, recorded in choice["bleu"].items():
            name = f"{choice['dev_set']}.alpha{alpha}.hyp.gz"
            hypotheses = _lines(record / "tests" / "dev" / name)
            dev_bleu[alpha] = sacrebleu.corpus_bleu(hypotheses, [references]).score
            assert dev_bleu[alpha] == pytest.approx(recorded, abs=1e-6)
        assert float(max(dev_bleu, key=dev_bleu.get)) == choice["alpha"]
        for test, recorded in scores["translation_dev_alpha"].items():
            references = _lines(_needed(test))
            hypotheses = _lines(record / "tests" / f"{test}.dev_alpha.hyp")
            assert sacrebleu.corpus_bleu(hypotheses, [references]).score == pytest.approx(
                recorded["BLEU"], abs=1e-6)
    for test, recorded in scores["parse"].items():
        gold = _heads(_needed(test))
        predicted = _heads(record / "tests" / f"{test}.conllu.gz")
        assert [len(sentence) for sentence in predicted] == [len(sentence) for sentence in gold]
        pairs = [(p, g) for ps, gs in zip(predicted, gold) for p, g in zip(ps, gs)]
        uas = 100 * sum(p == g for p, g in pairs) / len(pairs)
        assert uas == pytest.approx(recorded["UAS"], abs=1e-6)


def _first_table(heading):
    """The rows of the first table under docs/results.md's `heading`, by system."""
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    section = text[text.index(f"\n{heading}"):]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))

    def cells(line):
        return [cell.strip() for cell in line.strip("|").split("|")]

    header = cells(lines[start])
    return {row[0]: dict(zip(header, row)) for row in map(cells, lines[start + 2:end])}


def test_results_table_matches_the_records():
    # §0 of docs/results.md is written by hand from the grid's report; every
    # system it lists must have exactly its seeds archived, at the BLEU and
    # chrF (mean over seeds) it shows.
    rows = _first_table("## 0. ")
    assert rows, "docs/results.md §0 has no table"
    for system, row in rows.items():
        records = sorted((ARCHIVES / "multi30k_cs_en_syntax_full_budget" / "runs" / system).glob(
            "seed*/scores.json"))
        assert len(records) == int(row["seeds"]), system
        tests = [json.loads(path.read_text())["translation"]["test_2016_flickr"] for path in records]
        for metric, column in (("BLEU", "test BLEU"), ("chrF", "chrF")):
            mean = sum(test[metric] for test in tests) / len(tests)
            assert row[column].split(" ")[0] == f"{mean:.2f}", (system, metric)


def test_pilot_table_matches_the_records():
    # The pilot's table is copied by hand from the grid's report: each system's
    # seeds, every seed's BLEU at alpha 0.6 and at the dev-chosen alpha, and
    # their mean and sd, as the archived records have them.
    rows = _first_table("### The pilot's tables")
    assert len(rows) == 6, "the pilot's table lists six systems"
    for system, row in rows.items():
        records = sorted((ARCHIVES / "multi30k_cs_en_pilot" / "runs" / system).glob(
            "seed*/scores.json"))
        assert len(records) == int(row["seeds"]), system
        scores = [json.loads(path.read_text()) for path in records]
        for key, summary, per_seed in (
                ("translation", "BLEU α 0.6 (mean ± sd)", "per seed, α 0.6"),
                ("translation_dev_alpha", "BLEU, dev-chosen α (mean ± sd)", "per seed, dev α")):
            bleu = [score[key]["test_2016_flickr"]["BLEU"] for score in scores]
            assert row[per_seed] == ", ".join(f"{value:.2f}" for value in bleu), (system, key)
            assert row[summary] == f"{statistics.fmean(bleu):.2f} ± {statistics.stdev(bleu):.2f}", (
                system, key)
