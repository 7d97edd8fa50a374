"""BLEU, chrF and paired bootstrap through sacreBLEU: worked examples and behaviour."""

import math

import pytest

from syntax_t2t.errors import InputError
from syntax_t2t.evaluation import translation
from syntax_t2t.evaluation.report import format_table


def test_bleu_of_a_hand_counted_sentence():
    # Reference: "the cat sat on the mat ."; the hypothesis swaps one word.
    # Matching n-grams counted by hand: 6/7, 4/6, 2/5, 1/4; equal lengths, so
    # no brevity penalty.
    scores = translation.corpus_scores(["the cat sat on a mat ."], ["the cat sat on the mat ."])
    expected = 100 * math.exp(sum(math.log(p) for p in (6 / 7, 4 / 6, 2 / 5, 1 / 4)) / 4)
    assert scores["BLEU"].score == pytest.approx(expected, abs=1e-6)
    assert scores["BLEU"].name == "BLEU"
    assert "case:mixed" in scores["BLEU"].signature and "tok:13a" in scores["BLEU"].signature
    assert scores["chrF"].name == "chrF2"


def test_bleu_is_cased_and_brevity_penalised():
    reference = ["The cat sat on the mat ."]
    exact = translation.corpus_scores(["The cat sat on the mat ."], reference)["BLEU"].score
    assert exact == pytest.approx(100)
    lowercased = translation.corpus_scores(["the cat sat on the mat ."], reference)["BLEU"].score
    assert lowercased < 100
    # Dropping the final "." keeps every n-gram precision at 1: only the
    # brevity penalty exp(1 - 7/6) remains.
    short = translation.corpus_scores(["The cat sat on the mat"], reference)["BLEU"].score
    assert short == pytest.approx(100 * math.exp(1 - 7 / 6), abs=1e-6)


def test_chrf_is_100_for_identical_and_0_for_disjoint_text():
    assert translation.corpus_scores(["abc def"], ["abc def"])["chrF"].score == pytest.approx(100)
    assert translation.corpus_scores(["xyz"], ["abc"])["chrF"].score == pytest.approx(0)


def _corpus(size=120):
    references = [f"sentence number {i} says word{i} and word{i + 1} ." for i in range(size)]
    garbage = [f"nothing like {i} at all" for i in range(size)]
    return references, garbage


def test_paired_bootstrap_separates_a_better_system_from_an_equal_one():
    references, garbage = _corpus()
    good_even = [r if i % 2 == 0 else g for i, (r, g) in enumerate(zip(references, garbage))]
    good_odd = [r if i % 2 else g for i, (r, g) in enumerate(zip(references, garbage))]
    comparisons = translation.paired_bootstrap(
        ("even", good_even), [("odd", good_odd), ("perfect", references)], references, samples=300)
    by_key = {(c.system, c.metric): c for c in comparisons}
    assert set(by_key) == {("odd", "BLEU"), ("odd", "chrF2"), ("perfect", "BLEU"), ("perfect", "chrF2")}
    assert by_key["perfect", "BLEU"].p_value < 0.01
    assert by_key["perfect", "BLEU"].system_score == pytest.approx(100)
    assert by_key["odd", "BLEU"].p_value > 0.05
    assert "bs:300" in by_key["odd", "BLEU"].signature


def test_identical_systems_are_not_significantly_different():
    references, garbage = _corpus(40)
    [comparison, _] = translation.paired_bootstrap(("a", garbage), [("b", list(garbage))], references,
                                                   samples=50)
    assert comparison.p_value == 1.0


def test_line_count_mismatch_names_both_files(tmp_path):
    hypotheses, references = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hypotheses.write_text("a\nb\n", encoding="utf-8")
    references.write_text("a\nb\nc\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"hyp\.txt: has 2 lines but the references .*ref\.txt have 3"):
        translation.score_files(hypotheses, references)
    hypotheses.write_text("a\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"hyp\.txt: has 1 line but the references"):
        translation.score_files(hypotheses, references)


def test_invalid_utf8_is_reported_with_its_line(tmp_path):
    hypotheses, references = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hypotheses.write_bytes(b"fine\nbad \xff byte\n")
    references.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"hyp\.txt:2: invalid UTF-8"):
        translation.score_files(hypotheses, references)


def test_table_aligns_numbers_right_and_shows_missing_values():
    table = format_table(["system", "BLEU", "LAS"], [["base", 36.661, None], ["dep_parse", 38.0, 91.5]])
    lines = table.split("\n")
    assert lines[0].split() == ["system", "BLEU", "LAS"]
    assert lines[2] == "base       36.66      -"
    assert lines[3] == "dep_parse  38.00  91.50"
