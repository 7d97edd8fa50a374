"""Quantiles of a distribution on [0, inf) from its distribution function, by bisection.

`student_t` and `chi_square` have distribution functions in closed form or
by series, not their inverses; bisection needs nothing more and converges
for any increasing function, at a cost (about 50 evaluations) that does
not matter beside a report.
"""

from typing import Callable


def inverse(cdf: Callable[[float], float], probability: float, start: float = 1.0) -> float:
    """The x >= 0 with cdf(x) = `probability`, for a cdf increasing on [0, inf).

    Args:
        cdf: the distribution function.
        probability: cdf(0) <= probability < 1.
        start: a first upper bracket (doubled until cdf reaches `probability`).
    """
    low, high = 0.0, start
    while cdf(high) < probability:
        low, high = high, high * 2.0
    for _ in range(400):
        middle = (low + high) / 2.0
        if cdf(middle) < probability:
            low = middle
        else:
            high = middle
        if high - low <= 1e-13 * high:
            break
    return (low + high) / 2.0
