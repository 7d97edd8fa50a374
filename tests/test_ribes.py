"""RIBES on the worked examples of Isozaki et al. (2010)."""

import math

import pytest

from syntax_t2t.evaluation.ribes import corpus_ribes


def test_worked_examples():
    reference = "John hit Bob yesterday"
    # Swapped subject and object: ranks [2, 1, 0, 3], 3 of 6 pairs
    # increasing, so the normalised Kendall's tau is 0.5; precision and
    # brevity are perfect.
    swapped = corpus_ribes(["Bob hit John yesterday"], [reference])
    assert swapped.name == "RIBES" and swapped.score == pytest.approx(50.0)
    # In order but one word short: tau 1, precision 1, brevity penalty
    # exp(1 - 4/3) to the power 0.10.
    short = corpus_ribes(["John hit Bob"], [reference])
    assert short.score == pytest.approx(100 * math.exp(1 - 4 / 3) ** 0.10)
    both = corpus_ribes(["Bob hit John yesterday", "John hit Bob"], [reference, reference])
    assert both.score == pytest.approx((swapped.score + short.score) / 2)
    assert corpus_ribes([reference], [reference]).score == pytest.approx(100.0)
    assert corpus_ribes([""], [reference]).score == 0.0
    assert "alpha:0.25" in both.signature and "beta:0.1" in both.signature


def test_misaligned_inputs_are_rejected():
    with pytest.raises(ValueError, match="1 hypotheses but 2 references"):
        corpus_ribes(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="at least one segment"):
        corpus_ribes([], [])
