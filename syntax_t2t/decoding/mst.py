"""Maximum spanning dependency tree (Chu-Liu/Edmonds) over head scores.

The search is networkx's `maximum_spanning_arborescence` (Edmonds' algorithm)
on the complete graph of head -> dependent edges. ROOT has no incoming edge,
so every spanning arborescence hangs from it; ROOT may take several
dependents, as Prague a-layers need (thesis Table 5.1).

When each word's best head already forms a tree, that tree is the maximum
(no other tree can beat every word's own best choice), and Edmonds' algorithm
is skipped: trained parsers mostly produce trees, so this is the usual case.
"""

import networkx as nx
import numpy as np

from syntax_t2t.data.tree import TreeError, check_heads


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
            the diagonal; use
            log-probabilities to get the most probable tree under a
            head-selection model.

    Returns:
        int32 [n] heads forming a tree rooted in ROOT (0).
    """
    scores = _checked(scores)
    heads = best_heads(scores)
    try:
        return np.asarray(check_heads(heads), dtype=np.int32)
    except TreeError:
        pass
    size = len(scores)
    graph = nx.DiGraph()
    graph.add_weighted_edges_from(
        (head, dependent, float(scores[dependent, head]))
        for dependent in range(1, size) for head in range(size) if head != dependent)
    tree = nx.maximum_spanning_arborescence(graph, attr="weight", preserve_attrs=False)
    heads = np.zeros(size - 1, dtype=np.int32)
    for head, dependent in tree.edges():
        heads[dependent - 1] = head
    return heads


def _checked(scores) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1] or scores.shape[0] < 2:
        raise ValueError(f"head scores must be [n + 1, n + 1] with n >= 1, got shape {scores.shape}")
    off_diagonal = ~np.eye(len(scores), dtype=bool)
    if not np.isfinite(scores[1:][off_diagonal[1:]]).all():
        raise ValueError("head scores must be finite (the diagonal excepted)")
    return scores
