"""Maximum spanning dependency tree (Chu-Liu/Edmonds) over head scores.

The search is `ufal.chu_liu_edmonds` (TurboParser's C++ Chu-Liu/Edmonds,
O(n^2) per contraction; about 0.2 ms for 80 words where networkx's
pure-Python Edmonds took 500 ms: `bin/bench --only=mst`). ROOT has no
incoming edge, so every spanning tree hangs from it; ROOT may take several
dependents, as Prague a-layers need (thesis Table 5.1), and the C++ search
does not restrict it to one. A word never heads itself: the library leaves
out edges whose score is NaN, which the diagonal is set to.
"""

import numpy as np
from ufal.chu_liu_edmonds import chu_liu_edmonds


def best_heads(scores: np.ndarray) -> np.ndarray:
    """Each word's highest-scoring head other than itself (1-based, 0 = ROOT).

    Args:
        scores: [n + 1, n + 1]; `scores[d, h]` scores node h (0 = ROOT) as
            the head of word d. Row 0 (ROOT's own head) is ignored.

    Returns:
        int32 [n] heads, possibly with cycles.
    """
    scores = _checked(scores)
    allowed = np.where(np.eye(len(scores), dtype=bool), -np.inf, scores)
    return np.argmax(allowed[1:], axis=1).astype(np.int32)


def maximum_spanning_tree(scores: np.ndarray) -> np.ndarray:
    """The tree maximising the sum of `scores[d, head(d)]` over the words.

    Args:
        scores: [n + 1, n + 1] head scores as in `best_heads`, finite off
            the diagonal; use log-probabilities to get the most probable
            tree under a head-selection model.

    Returns:
        int32 [n] heads forming a tree rooted in ROOT (0).
    """
    scores = _checked(scores).copy()
    np.fill_diagonal(scores, np.nan)
    heads, _ = chu_liu_edmonds(scores)
    return np.asarray(heads[1:], dtype=np.int32)


def _checked(scores) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1] or scores.shape[0] < 2:
        raise ValueError(f"head scores must be [n + 1, n + 1] with n >= 1, got shape {scores.shape}")
    off_diagonal = ~np.eye(len(scores), dtype=bool)
    if not np.isfinite(scores[1:][off_diagonal[1:]]).all():
        raise ValueError("head scores must be finite (the diagonal excepted)")
    return scores
