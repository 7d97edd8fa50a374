"""Student's t distribution against closed forms and printed tables."""

import math

import pytest

from syntax_t2t.evaluation import student_t


@pytest.mark.parametrize("t", [0.0, 0.3, 1.0, 2.5, 12.7])
def test_two_sided_p_against_closed_forms(t):
    # One degree of freedom is Cauchy: P(|T| >= t) = 1 - 2 atan(t) / pi.
    assert student_t.two_sided_p(t, 1) == pytest.approx(1 - 2 * math.atan(t) / math.pi, abs=1e-10)
    # Two: P(|T| >= t) = 1 - t / sqrt(2 + t^2).
    assert student_t.two_sided_p(t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), abs=1e-10)
    assert student_t.two_sided_p(-t, 2) == student_t.two_sided_p(t, 2)


@pytest.mark.parametrize("probability, df, printed", [
    (0.975, 1, 12.7062), (0.975, 4, 2.7764), (0.975, 10, 2.2281), (0.975, 30, 2.0423),
    (0.80, 4, 0.9410), (0.95, 19, 1.7291), (0.995, 38, 2.7116)])
def test_quantiles_against_a_printed_table(probability, df, printed):
    assert student_t.quantile(probability, df) == pytest.approx(printed, abs=1e-4)
    assert student_t.quantile(1 - probability, df) == pytest.approx(-printed, abs=1e-4)


def test_many_degrees_of_freedom_approach_the_normal():
    assert student_t.quantile(0.975, 1e7) == pytest.approx(1.959964, abs=1e-5)
    assert student_t.cdf(0.0, 3) == 0.5


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        student_t.quantile(1.0, 3)
    with pytest.raises(ValueError):
        student_t.two_sided_p(1.0, 0)
