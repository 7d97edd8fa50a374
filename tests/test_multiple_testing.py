"""Holm–Bonferroni against a hand computation."""

import pytest

from syntax_t2t.evaluation.multiple_testing import holm


def test_holm_by_hand():
    # Sorted: 0.005 x 4 = 0.020; 0.010 x 3 = 0.030; 0.030 x 2 = 0.060;
    # 0.040 x 1 = 0.040, raised to the 0.060 before it (step-down).
    adjusted = holm([0.010, 0.040, 0.030, 0.005])
    assert adjusted == pytest.approx([0.030, 0.060, 0.060, 0.020])


def test_holm_caps_at_one_and_skips_untested_comparisons():
    adjusted = holm([0.5, None, 0.4])
    assert adjusted[1] is None and adjusted[0] == pytest.approx(0.8)
    assert adjusted[2] == pytest.approx(0.8)
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_issue_32_four_contrasts():
    # The pre-registered family of four: only a p below 0.0125 survives alone.
    adjusted = holm([0.011, 0.2, 0.03, 0.9])
    assert adjusted[0] == pytest.approx(0.044) and adjusted[2] == pytest.approx(0.09)


def test_p_values_outside_zero_one_are_refused():
    with pytest.raises(ValueError):
        holm([1.2])
