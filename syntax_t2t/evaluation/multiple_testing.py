"""Holm–Bonferroni: p-values adjusted for testing several comparisons at once.

A report that tests eleven systems against one baseline at the 5% level
finds about one "significant" difference among eleven equal systems by
chance alone. Holm (1979) controls the chance of any false rejection among
the m tests (the family-wise error rate) at the nominal level, uniformly more
powerfully than Bonferroni: the i-th smallest p-value is multiplied by
m - i + 1, and each adjusted value is at least the one before it, so that
rejecting "adjusted p < level" is Holm's step-down procedure.
"""

from typing import Optional, Sequence


def holm(p_values: Sequence[Optional[float]]) -> list[Optional[float]]:
    """Holm-adjusted p-values, in the input's order.

    Args:
        p_values: one per comparison; None for a comparison without a test
            (left out of the family, and None in the result).

    Returns:
        The adjusted p-values, each at most 1.
    """
    tested = [(p, index) for index, p in enumerate(p_values) if p is not None]
    for p, _ in tested:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"a p-value must lie in [0, 1], got {p}")
    count = len(tested)
    adjusted: list[Optional[float]] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(sorted(tested)):
        running = max(running, min(1.0, (count - rank) * p))
        adjusted[index] = running
    return adjusted
