"""The chi-square distribution at whole degrees of freedom, without SciPy.

A seed standard deviation s pooled over k degrees of freedom is itself an
estimate: with normal seed scores, k s^2 / sigma^2 follows chi-square with k
degrees of freedom, which gives sigma's confidence interval (see
`seed_significance.sd_confidence_interval`). A pilot's one or six degrees of
freedom leave that interval wide, and a seed count planned from s alone
would hide it. SciPy is not on the GPU machines the grid runs on, as
`student_t` explains for its distribution.

The distribution function is P(k/2, x/2), the regularised lower incomplete
gamma function. Below its mean the power series for P converges
geometrically; above it, the upper tail Q = 1 - P has a finite closed form
at whole k (a Poisson tail for even k; the complementary error function
and a finite sum for odd k). Both branches add positive terms only, so
neither loses digits to cancellation. Quantiles come by bisection (`inverse_cdf`).
"""

import math

from syntax_t2t.evaluation import inverse_cdf

_EPSILON = 1e-16
_MAX_TERMS = 100_000


def _lower_series(a: float, y: float) -> float:
    """P(a, y) = e^-y y^a / Gamma(a + 1) * sum_n y^n / ((a + 1) ... (a + n)), for y < a + 1."""
    term = total = 1.0
    for n in range(1, _MAX_TERMS):
        term *= y / (a + n)
        total += term
        if term < total * _EPSILON:
            break
    return math.exp(-y + a * math.log(y) - math.lgamma(a + 1.0)) * total


def _upper_closed_form(df: int, y: float) -> float:
    """Q(df / 2, y) = 1 - P(df / 2, y) by its finite sum at whole df."""
    if df % 2 == 0:
        # Q(m, y) = e^-y * sum_{j < m} y^j / j!
        return sum(math.exp(-y + j * math.log(y) - math.lgamma(j + 1.0)) for j in range(df // 2))
    # Q(n + 1/2, y) = erfc(sqrt y) + e^-y * sum_{j < n} y^(j + 1/2) / Gamma(j + 3/2)
    return math.erfc(math.sqrt(y)) + sum(
        math.exp(-y + (j + 0.5) * math.log(y) - math.lgamma(j + 1.5)) for j in range(df // 2))


def _check_df(df: int) -> None:
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"degrees of freedom must be a whole number >= 1, got {df!r}")


def cdf(x: float, df: int) -> float:
    """P(X <= x) for X chi-square with `df` (a whole number >= 1) degrees of freedom."""
    _check_df(df)
    if x <= 0.0:
        return 0.0
    if math.isinf(x):
        return 1.0
    a, y = df / 2.0, x / 2.0
    if y < a + 1.0:
        return min(1.0, _lower_series(a, y))
    return max(0.0, 1.0 - _upper_closed_form(df, y))


def quantile(probability: float, df: int) -> float:
    """The x with P(X <= x) = `probability`, for 0 < probability < 1."""
    _check_df(df)
    if not 0.0 < probability < 1.0:
        raise ValueError(f"probability={probability} must lie strictly between 0 and 1")
    return inverse_cdf.inverse(lambda x: cdf(x, df), probability, start=float(df))
