"""Syntax features derived from a dependency tree, as pure numpy functions.

Every function takes the `heads` of one unpadded sentence (1-based, 0 = ROOT,
see `docs/design.md`) and is vectorised over token pairs. Pair features work
in the ROOT-inclusive node set: node 0 is ROOT and node `i` is token `i`;
with `include_root=False` (the default) ROOT's row and column are dropped and
index `i` of the result is token `i + 1`.

Each label space puts its overflow label (if it has one) last, and has a
`*_vocab_size` function for sizing embedding tables. No pad id is reserved
inside these spaces.
"""

import numpy as np

from syntax_t2t.data.tree import check_heads


def relative_positions(n: int, max_relative_position: int) -> np.ndarray:
    """Clipped relative-position labels (Shaw et al. 2018; thesis 3.1.1).

    Args:
        n: sentence length.
        max_relative_position: the clipping distance k; pairs further apart
            share the label of distance k.

    Returns:
        int32 [n, n]; entry (i, j) is `clip(j - i, -k, k) + k`, in `[0, 2k]`.
    """
    positions = np.arange(n)
    offsets = positions[None, :] - positions[:, None]
    k = max_relative_position
    return (np.clip(offsets, -k, k) + k).astype(np.int32)


def relative_position_vocab_size(max_relative_position: int) -> int:
    """Number of labels `relative_positions` uses: 2k + 1."""
    return 2 * max_relative_position + 1


def _parents(heads) -> np.ndarray:
    """Parent of every node of the ROOT-inclusive set; ROOT is its own parent."""
    return np.concatenate([[0], check_heads(heads)]).astype(np.int64)


def ancestor_matrix(heads) -> np.ndarray:
    """Ancestor-or-self relation over ROOT and the tokens.

    Args:
        heads: 1-based heads of n tokens, 0 = ROOT.

    Returns:
        bool [n+1, n+1]; `A[i, k]` is true iff node k lies on the path from
        node i up to ROOT (both ends included).
    """
    parents = _parents(heads)
    nodes = np.arange(parents.shape[0])
    ancestors = np.zeros((nodes.size, nodes.size), dtype=bool)
    current = nodes
    # A tree of n tokens is at most n deep, so n + 1 steps reach ROOT everywhere.
    for _ in range(nodes.size):
        ancestors[nodes, current] = True
        current = parents[current]
    return ancestors


def depths(heads) -> np.ndarray:
    """Depth of every node: int32 [n+1], ROOT at 0, its dependents at 1."""
    return (ancestor_matrix(heads).sum(axis=1) - 1).astype(np.int32)


def _climbs(heads):
    """Steps up (`a`) and down (`b`) of the shortest path between all nodes.

    The lowest common ancestor of i and j is their deepest common ancestor,
    so its depth is the number of common ancestors minus one.
    """
    ancestors = ancestor_matrix(heads)
    depth = ancestors.sum(axis=1) - 1
    common = ancestors.astype(np.int32) @ ancestors.T.astype(np.int32)
    lca_depth = common - 1
    return ancestors, depth, depth[:, None] - lca_depth, depth[None, :] - lca_depth


def _drop_root(matrix: np.ndarray, include_root: bool) -> np.ndarray:
    return matrix if include_root else matrix[1:, 1:]


def tree_distances(heads, include_root: bool = False) -> np.ndarray:
    """Number of edges between every pair of nodes (thesis 3.1.2).

    ROOT counts as a node, so two dependents of ROOT are at distance 2.

    Args:
        heads: 1-based heads of n tokens, 0 = ROOT.
        include_root: keep ROOT as row/column 0.

    Returns:
        Symmetric int32 [n, n], or [n+1, n+1] with `include_root`.
    """
    _, _, up, down = _climbs(heads)
    return _drop_root(up + down, include_root).astype(np.int32)


def tree_distance_labels(heads, max_distance: int, include_root: bool = False) -> np.ndarray:
    """Tree distances with an overflow label (thesis 3.1.2).

    Args:
        heads: 1-based heads of n tokens, 0 = ROOT.
        max_distance: largest distance with its own label.
        include_root: keep ROOT as row/column 0.

    Returns:
        int32 matrix of `d` where `d <= max_distance`, else `max_distance + 1`
        (the "out-of-vocabulary" distance).
    """
    return np.minimum(tree_distances(heads, include_root), max_distance + 1).astype(np.int32)


def tree_distance_vocab_size(max_distance: int) -> int:
    """Labels 0..max_distance plus the overflow label: max_distance + 2."""
    return max_distance + 2


def _traversal_parts(heads):
    """Decomposes every shortest path into (up, down, sibling side).

    Returns:
        `up`, `down`: int [n+1, n+1] steps up to and down from the lowest
        common ancestor. `side`: int [n+1, n+1], 0 for a U*D* code, 1 when the
        path starts with a move to a left sibling (code L D*), 2 for a right
        sibling (code R D*).
    """
    ancestors, depth, up, down = _climbs(heads)
    size = depth.size
    # ancestor_at[j, d]: the ancestor of node j at depth d (0 where none).
    ancestor_at = np.zeros((size, size), dtype=np.int64)
    rows, cols = np.nonzero(ancestors)
    ancestor_at[rows, depth[cols]] = cols
    # When i climbs once and descends, the sibling it passes through is the
    # ancestor of j at the depth of i.
    through = ancestor_at[:, depth].T
    sibling_move = (up == 1) & (down >= 1)
    nodes = np.arange(size)
    side = np.where(sibling_move, np.where(through < nodes[:, None], 1, 2), 0)
    return up, down, side


def traversal_codes(heads, include_root: bool = False) -> np.ndarray:
    """Unclipped tree traversal codes of every pair (thesis 3.1.3).

    The code from i to j spells the shortest path: U (to the head), D (to a
    dependent), L / R (to a sibling left / right of i). A path that goes up
    once and then down starts with a sibling move, so "UD..." becomes
    "LD..." or "RD..."; every code matches `U*D*|LD*|RD*`. A node's code to
    itself is "".

    Args:
        heads: 1-based heads of n tokens, 0 = ROOT.
        include_root: keep ROOT as row/column 0.

    Returns:
        object array of str, [n, n] or [n+1, n+1]; entry (i, j) is the code
        from i to j.
    """
    up, down, side = _traversal_parts(heads)
    plain = np.char.add(np.char.multiply("U", up), np.char.multiply("D", down))
    first_move = np.array(["", "L", "R"])[side]
    sibling = np.char.add(first_move, np.char.multiply("D", np.maximum(down - 1, 0)))
    codes = np.where(side == 0, plain, sibling).astype(object)
    return _drop_root(codes, include_root)


def _plain_id(up, down):
    """Id of U^up D^down: codes are grouped by length s, then ordered by up."""
    length = up + down
    return length * (length + 1) // 2 + up


def traversal_vocab(max_traversal: int) -> tuple[str, ...]:
    """Every traversal code of length <= max_traversal, in label-id order.

    Ids 0 .. (T+1)(T+2)/2 - 1 are the codes U^a D^b (grouped by length, then
    by a), followed by L D^c and then R D^c for c = 0 .. T-1. The overflow
    label, id `traversal_vocab_size(T) - 1`, is not in this tuple.
    """
    plain = [
        "U" * up + "D" * (length - up)
        for length in range(max_traversal + 1)
        for up in range(length + 1)
    ]
    left = ["L" + "D" * c for c in range(max_traversal)]
    right = ["R" + "D" * c for c in range(max_traversal)]
    return tuple(plain + left + right)


def traversal_vocab_size(max_traversal: int) -> int:
    """Size of the traversal label space, including the final overflow id."""
    return (max_traversal + 1) * (max_traversal + 2) // 2 + 2 * max_traversal + 1


def traversal_labels(heads, max_traversal: int, include_root: bool = False) -> np.ndarray:
    """Tree traversal label ids into `traversal_vocab(max_traversal)` (thesis 3.1.3).

    Codes longer than `max_traversal` get the overflow id
    `traversal_vocab_size(max_traversal) - 1` (the thesis used T = 10).

    Args:
        heads: 1-based heads of n tokens, 0 = ROOT.
        max_traversal: longest code with its own label.
        include_root: keep ROOT as row/column 0.

    Returns:
        int32 [n, n] or [n+1, n+1].
    """
    up, down, side = _traversal_parts(heads)
    sibling_base = (max_traversal + 1) * (max_traversal + 2) // 2
    # A sibling code "LD^c" replaces "UD^(c+1)": its length is `down`.
    sibling_ids = sibling_base + (side - 1) * max_traversal + (down - 1)
    ids = np.where(side == 0, _plain_id(up, down), sibling_ids)
    length = np.where(side == 0, up + down, down)
    overflow = traversal_vocab_size(max_traversal) - 1
    ids = np.where(length > max_traversal, overflow, ids)
    return _drop_root(ids, include_root).astype(np.int32)


def diagonal_heads(n: int) -> np.ndarray:
    """The "diagonal" pseudo-tree: token i depends on token i - 1 (thesis 4.2).

    Token 1 hangs on ROOT, so the heads are 0, 1, ..., n-1 (Table 5.1).
    """
    return np.arange(n, dtype=np.int32)


def root_prefixed_heads(heads) -> np.ndarray:
    """Heads in the `<ROOT>`-prefixed view used by DepParse (thesis 5.2).

    Position 0 is ROOT and gets head 0, i.e. ROOT points at itself, so every
    row of the head-selection target is a valid position. Position i holds
    token i, whose head value is directly the position of its head.

    Returns:
        int32 [n+1].
    """
    return np.concatenate([[0], check_heads(heads)]).astype(np.int32)


def prepend_root(ids, root_id: int = 3) -> np.ndarray:
    """Prepends the reserved `<ROOT>` id (3, docs/design.md) to a 1-D id sequence."""
    ids = np.asarray(ids)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        raise ValueError(
            f"expected a 1-D integer id sequence, got {ids.dtype} of shape {ids.shape}"
        )
    dtype = ids.dtype if ids.size else np.int64
    return np.concatenate([np.array([root_id], dtype=dtype), ids.astype(dtype)])
