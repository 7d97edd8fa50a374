"""The chi-square distribution against closed forms, a printed table and a naive integral."""

import math
import statistics

import pytest
from hypothesis import given, settings, strategies as st

from syntax_t2t.evaluation import chi_square


@pytest.mark.parametrize("x", [1e-9, 0.01, 0.5, 2.0, 3.9, 4.1, 9.0, 40.0])
def test_cdf_against_closed_forms(x):
    # One degree of freedom is the square of a standard normal: P(X <= x) = erf(sqrt(x / 2)).
    assert chi_square.cdf(x, 1) == pytest.approx(math.erf(math.sqrt(x / 2)), rel=1e-12, abs=1e-15)
    # Two: the exponential with mean 2; four: 1 - e^(-x/2) (1 + x/2).
    assert chi_square.cdf(x, 2) == pytest.approx(-math.expm1(-x / 2), rel=1e-12, abs=1e-15)
    assert chi_square.cdf(x, 4) == pytest.approx(1 - math.exp(-x / 2) * (1 + x / 2),
                                                 rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("probability, df, printed", [
    (0.975, 1, 5.024), (0.975, 2, 7.378), (0.2, 4, 1.649), (0.025, 4, 0.484),
    (0.975, 4, 11.143), (0.2, 6, 3.070), (0.025, 6, 1.237), (0.975, 6, 14.449),
    (0.025, 10, 3.247), (0.975, 10, 20.483), (0.025, 30, 16.791), (0.975, 30, 46.979),
    (0.025, 100, 74.222), (0.975, 100, 129.561)])
def test_quantiles_against_a_printed_table(probability, df, printed):
    assert chi_square.quantile(probability, df) == pytest.approx(printed, abs=1e-3)


def test_quantiles_at_one_and_two_degrees_of_freedom_in_closed_form():
    normal = statistics.NormalDist()
    for probability in (1e-6, 0.025, 0.2, 0.5, 0.8, 0.975, 0.999999):
        assert chi_square.quantile(probability, 1) == pytest.approx(
            normal.inv_cdf((1 + probability) / 2) ** 2, rel=1e-9)
        assert chi_square.quantile(probability, 2) == pytest.approx(
            -2 * math.log1p(-probability), rel=1e-9)


def _naive_cdf(x, df, steps=20_000):
    """Simpson's rule on the density after t = u^2, which leaves it smooth at 0 for every df:
    P(X <= x) = integral over [0, sqrt x] of u^(df-1) e^(-u^2/2) / (2^(df/2-1) Gamma(df/2))."""
    def integrand(u):
        if u == 0.0:
            return 1.0 / math.sqrt(math.pi / 2) if df == 1 else 0.0
        return math.exp((df - 1) * math.log(u) - u * u / 2 - (df / 2 - 1) * math.log(2)
                        - math.lgamma(df / 2))

    end = math.sqrt(x)
    h = end / steps
    total = integrand(0.0) + integrand(end) + sum(
        (4 if i % 2 else 2) * integrand(i * h) for i in range(1, steps))
    return total * h / 3


@settings(max_examples=30, deadline=None)
@given(df=st.integers(1, 60), scale=st.floats(0.05, 3.0))
def test_cdf_is_the_integral_of_the_density(df, scale):
    # Both series branches: below the mean (scale < 1) and above it.
    x = scale * df
    assert chi_square.cdf(x, df) == pytest.approx(_naive_cdf(x, df), abs=1e-8)


@settings(max_examples=40, deadline=None)
@given(df=st.integers(1, 400), probability=st.floats(1e-6, 1 - 1e-6))
def test_quantile_inverts_the_cdf(df, probability):
    assert chi_square.cdf(chi_square.quantile(probability, df), df) == pytest.approx(
        probability, rel=1e-9, abs=1e-12)


def test_the_two_branches_meet_continuously():
    # The power series serves x / 2 < df / 2 + 1, the closed-form upper tail the rest.
    for df in (1, 2, 3, 6, 7, 50, 51):
        edge = df + 2.0
        assert chi_square.cdf(edge * (1 - 1e-12), df) == pytest.approx(
            chi_square.cdf(edge, df), rel=1e-10)


def test_bad_arguments_are_refused():
    for df in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="whole number"):
            chi_square.cdf(1.0, df)
    for probability in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="strictly between"):
            chi_square.quantile(probability, 3)
    assert chi_square.cdf(0.0, 3) == 0.0 and chi_square.cdf(-1.0, 3) == 0.0
    assert chi_square.cdf(math.inf, 3) == 1.0
