"""N-gram precision by order and its change between systems (MG-SA's Figure 2), against hand counts."""

import json

import pytest
from absl import flags
from absl.testing import flagsaver

from syntax_t2t.cli import analyze, common
from syntax_t2t.evaluation import ngram_precision

FLAGS = flags.FLAGS
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

REFERENCES = ["the cat sat on the mat", "a dog runs fast"]
BASELINE = ["the cat on the mat", "a cat runs"]
SYSTEM = ["the cat sat on a mat", "a dog runs"]
# Counted by hand, (matching n-grams, hypothesis n-grams) per order 1-4:
# baseline "the cat on the mat": 5/5, 3/4 (the cat, on the, the mat), 1/3
# (on the mat), 0/2; "a cat runs": 2/3, 0/2, 0/1, 0/0.
BASELINE_COUNTS = ((7, 3, 1, 0), (8, 6, 4, 2))
# system "the cat sat on a mat": 5/6, 3/5, 2/4 (the cat sat, cat sat on),
# 1/3 (the cat sat on); "a dog runs": 3/3, 2/2, 1/1, 0/0.
SYSTEM_COUNTS = ((8, 5, 3, 1), (9, 7, 5, 3))


def test_precisions_of_a_hand_counted_corpus():
    base = ngram_precision.ngram_precisions(BASELINE, REFERENCES)
    system = ngram_precision.ngram_precisions(SYSTEM, REFERENCES)
    assert (base.matches, base.totals) == BASELINE_COUNTS
    assert (system.matches, system.totals) == SYSTEM_COUNTS
    assert base.precisions == pytest.approx((100 * 7 / 8, 50.0, 25.0, 0.0))
    assert system.precisions == pytest.approx((100 * 8 / 9, 100 * 5 / 7, 60.0, 100 / 3))
    assert "tok:13a" in base.signature


def test_matches_are_clipped_by_the_reference_counts():
    # "the" three times against one "the": 1 of 3 unigrams; no order-4 n-gram.
    result = ngram_precision.ngram_precisions(["the the the"], ["the cat"])
    assert result.matches == (1, 0, 0, 0) and result.totals == (3, 2, 1, 0)
    assert result.precisions == pytest.approx((100 / 3, 0.0, 0.0, 0.0))


def test_changes_are_system_minus_baseline_per_order():
    report = ngram_precision.precision_changes(BASELINE, {"mgsa": SYSTEM}, REFERENCES, max_order=3)
    assert report["orders"] == [1, 2, 3]
    assert report["baseline"]["totals"] == [8, 6, 4]
    assert report["systems"]["mgsa"]["differences"] == pytest.approx(
        [100 * 8 / 9 - 87.5, 100 * 5 / 7 - 50.0, 60.0 - 25.0], abs=1e-4)


def test_misaligned_or_empty_inputs_are_refused():
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        ngram_precision.ngram_precisions(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="at least one segment"):
        ngram_precision.ngram_precisions([], [])


@pytest.fixture
def files(tmp_path):
    if not FLAGS.is_parsed():
        FLAGS(["analyze"])
    for name, lines in (("ref", REFERENCES), ("base", BASELINE), ("mgsa", SYSTEM),
                        ("upper", [line.upper() for line in SYSTEM])):
        (tmp_path / f"{name}.txt").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return tmp_path


def test_cli_writes_the_plot_and_the_numbers(files):
    out = files / "out"
    with flagsaver.flagsaver(analysis_dir=str(out), ngram_references=str(files / "ref.txt"),
                             ngram_baseline=str(files / "base.txt"),
                             ngram_systems=[str(files / "mgsa.txt"), str(files / "upper.txt")],
                             ngram_names=["transformer", "mgsa", "shouting"], lowercase=True):
        analyze.main(["analyze"])
    assert (out / "ngram_precision_changes.png").read_bytes().startswith(PNG_SIGNATURE)
    report = json.loads((out / "analysis.json").read_text(encoding="utf-8"))["ngram_precision_changes"]
    assert report["baseline_name"] == "transformer" and report["orders"] == [1, 2, 3, 4]
    assert report["files"]["mgsa"] == str(files / "mgsa.txt")
    assert report["systems"]["mgsa"]["matches"] == list(SYSTEM_COUNTS[0])
    # Case-insensitive counting: the upper-cased output matches as well.
    assert report["systems"]["shouting"]["matches"] == list(SYSTEM_COUNTS[0])
    assert "case:lc" in report["signature"]


def test_cli_needs_every_file_and_distinct_names(files):
    with flagsaver.flagsaver(analysis_dir=str(files / "out"), ngram_baseline=str(files / "base.txt")):
        with pytest.raises(common.UsageError, match="need --ngram_references, --ngram_systems"):
            analyze.main(["analyze"])
    with flagsaver.flagsaver(analysis_dir=str(files / "out"), ngram_references=str(files / "ref.txt"),
                             ngram_baseline=str(files / "base.txt"),
                             ngram_systems=[str(files / "mgsa.txt")], ngram_names=["a", "a"]):
        with pytest.raises(common.UsageError, match="needs 2 different names"):
            analyze.main(["analyze"])
