"""Binary phrase structures for the tree-based encoder of Eriguchi et al. (2016).

A binary tree over n words has n - 1 phrase nodes (their eq. 13). Nodes are
numbered as in that equation, 0-based: the words are nodes 0..n-1 and the
phrase nodes n..2n-2. Phrase nodes are sorted by level and then from left to
right, where a word has level 0 and a phrase node one more than its higher
child. Every child therefore has a smaller number than its parent, the root
is node 2n-2 (node 0 when n = 1), and a batched Tree-LSTM can compute all
nodes of one level at once, level after level.

`binarize` turns a `ConstituencyTree` into such a tree:

1. Unary constituents disappear: a constituent with a single child is that
   child. A unary chain over a constituent keeps its labels joined from the
   top, `S+VP`; a constituent over a single word becomes the word.
2. A constituent X with children c_1..c_k, k >= 2, becomes k - 1 binary
   nodes. Its top node is labelled X and the others `@X` (the intermediate
   symbols of Klein and Manning's binarisation), by one of three rules:

   * `"right"`: right-branching, (c_1 (c_2 (... (c_{k-1} c_k)))). The default
     for bracketed trees, whose constituents carry no heads.
   * `"left"`: left-branching, (((c_1 c_2) c_3) ... c_k).
   * `"head"`: head-outward, for trees with head tokens such as
     `phrase_structure_from_dependencies`. The child containing the head
     first absorbs its right siblings, nearest first, then its left siblings,
     nearest first: (l_2 (l_1 ((h r_1) r_2))). A constituent whose head is
     unknown is binarised right-branching.
"""

import dataclasses
from typing import Sequence

import numpy as np

from syntax_t2t.data.constituency import ConstituencyTree, NO_HEAD

RULES = ("right", "left", "head")
INTERMEDIATE_PREFIX = "@"
UNARY_JOIN = "+"
PAD_NODE = -1


@dataclasses.dataclass(frozen=True, eq=False)
class BinaryTree:
    """A binary tree whose leaves are the words, in level order.

    Attributes:
        num_leaves: n, the number of words (nodes 0..n-1).
        left: read-only int32 [n-1]; `left[k]` is the left child of phrase
            node n + k.
        right: read-only int32 [n-1]; the right children.
        labels: the n - 1 phrase labels.
        levels: read-only int32 [n-1]; 1 + the larger level of the two
            children, words having level 0. Non-decreasing.
        spans: read-only int32 [n-1, 2]; the half-open word span of each
            phrase node.
    """

    num_leaves: int
    left: np.ndarray
    right: np.ndarray
    labels: tuple[str, ...]
    levels: np.ndarray = dataclasses.field(init=False)
    spans: np.ndarray = dataclasses.field(init=False)

    def __post_init__(self):
        n = int(self.num_leaves)
        if n < 1:
            raise ValueError(f"a binary tree needs at least one leaf, got {n}")
        left, right = np.asarray(self.left), np.asarray(self.right)
        labels = tuple(self.labels)
        for name, values in (("left", left), ("right", right), ("labels", labels)):
            if len(values) != n - 1:
                raise ValueError(
                    f"{name} has {len(values)} entries, a tree with {n} leaves has {n - 1} phrase nodes"
                )
        children = np.concatenate([left, right]).astype(np.int64)
        if children.size and not np.array_equal(np.sort(children), np.arange(2 * n - 2)):
            raise ValueError("every node except the root must be the child of exactly one phrase node")
        node = np.arange(n, 2 * n - 1)
        if np.any((left >= node) | (right >= node)):
            k = int(np.flatnonzero((left >= node) | (right >= node))[0])
            raise ValueError(
                f"phrase node {n + k} has a child numbered as high or higher: children come first"
            )
        starts = np.concatenate([np.arange(n), np.zeros(n - 1, dtype=np.int64)])
        ends = starts + 1
        levels = np.zeros(2 * n - 1, dtype=np.int64)
        for k in range(n - 1):
            a, b = left[k], right[k]
            if ends[a] != starts[b]:
                raise ValueError(
                    f"phrase node {n + k}: left child {a} ends at {ends[a]}, "
                    f"right child {b} starts at {starts[b]}; leaves must stay in sentence order"
                )
            starts[n + k], ends[n + k] = starts[a], ends[b]
            levels[n + k] = 1 + max(levels[a], levels[b])
        if np.any(np.diff(levels[n:]) < 0):
            raise ValueError("phrase nodes must be sorted by level")
        object.__setattr__(self, "num_leaves", n)
        object.__setattr__(self, "left", _read_only(left))
        object.__setattr__(self, "right", _read_only(right))
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "levels", _read_only(levels[n:]))
        object.__setattr__(self, "spans", _read_only(np.stack([starts[n:], ends[n:]], axis=1).reshape(-1, 2)))

    @property
    def root(self) -> int:
        """The root's node number: 2n - 2 (the only word when n = 1)."""
        return 2 * self.num_leaves - 2

    @property
    def num_levels(self) -> int:
        """The root's level: how many batched steps a Tree-LSTM needs."""
        return int(self.levels[-1]) if self.levels.size else 0

    def parents(self) -> np.ndarray:
        """int32 [2n-1]: the parent of every node, -1 for the root."""
        parents = np.full(2 * self.num_leaves - 1, -1, dtype=np.int32)
        internal = np.arange(self.num_leaves, 2 * self.num_leaves - 1)
        parents[self.left] = internal
        parents[self.right] = internal
        return parents

    def to_bracketed(self, words: Sequence[str]) -> str:
        """The tree in bracketed notation over `words`, for reading and debugging."""
        text = list(words)
        for k in range(self.num_leaves - 1):
            text.append(f"({self.labels[k]} {text[self.left[k]]} {text[self.right[k]]})")
        return text[self.root]


def _read_only(array) -> np.ndarray:
    result = np.array(array, dtype=np.int32)
    result.setflags(write=False)
    return result


def _combine_order(num_children: int, head_child: int, rule: str) -> list[int]:
    """Order in which children join the growing node (the first one starts it)."""
    if rule == "left":
        return list(range(num_children))
    if rule == "head" and head_child >= 0:
        return [head_child, *range(head_child + 1, num_children), *range(head_child - 1, -1, -1)]
    return list(range(num_children - 1, -1, -1))


def binarize(tree: ConstituencyTree, rule: str = "right") -> BinaryTree:
    """Binarises a constituency tree by the rule named in the module docstring.

    Args:
        tree: the sentence's constituency tree.
        rule: `"right"`, `"left"` or `"head"`.

    Returns:
        The `BinaryTree`; every constituent of `tree` with two or more
        children is the span of one of its nodes.

    Raises:
        ValueError: for an unknown rule.
    """
    if rule not in RULES:
        raise ValueError(f"unknown binarisation rule {rule!r}, expected one of {RULES}")
    n = len(tree)
    # Nodes are built bottom-up with provisional numbers n, n+1, ...; each
    # constituent becomes a node number and a label (empty for a bare word).
    pairs: list[tuple[int, int]] = []
    pair_labels: list[str] = []
    built_node = [0] * tree.num_constituents
    built_label = [""] * tree.num_constituents

    def join(a: int, b: int, label: str) -> int:
        pairs.append((a, b))
        pair_labels.append(label)
        return n + len(pairs) - 1

    for k in reversed(range(tree.num_constituents)):
        children = tree.children(k)
        label = tree.labels[k]
        if len(children) == 1:
            child = children[0]
            if child.is_token:
                built_node[k], built_label[k] = child.index, ""
            elif built_node[child.index] < n:  # the constituent below is a bare word
                built_node[k], built_label[k] = built_node[child.index], ""
            else:
                built_node[k] = built_node[child.index]
                built_label[k] = f"{label}{UNARY_JOIN}{built_label[child.index]}"
                pair_labels[built_node[k] - n] = built_label[k]
            continue
        nodes = [c.index if c.is_token else built_node[c.index] for c in children]
        head_child = -1
        if tree.head_tokens[k] != NO_HEAD:
            head = int(tree.head_tokens[k])
            head_child = next(
                i
                for i, c in enumerate(children)
                if (c.is_token and c.index == head)
                or (not c.is_token and tree.spans[c.index, 0] <= head < tree.spans[c.index, 1])
            )
        order = _combine_order(len(children), head_child, rule)
        current = nodes[order[0]]
        for step, i in enumerate(order[1:], start=1):
            node_label = label if step == len(order) - 1 else f"{INTERMEDIATE_PREFIX}{label}"
            # Children right of the first one join on the right, the others on the left.
            if i > order[0]:
                current = join(current, nodes[i], node_label)
            else:
                current = join(nodes[i], current, node_label)
        built_node[k], built_label[k] = current, label
    return _renumber(n, pairs, pair_labels)


def _renumber(n: int, pairs: list[tuple[int, int]], labels: list[str]) -> BinaryTree:
    """Sorts provisional phrase nodes by (level, start) and renumbers the children."""
    levels = np.zeros(n + len(pairs), dtype=np.int64)
    starts = np.concatenate([np.arange(n), np.zeros(len(pairs), dtype=np.int64)])
    for k, (a, b) in enumerate(pairs):  # provisional numbers already put children first
        levels[n + k] = 1 + max(levels[a], levels[b])
        starts[n + k] = starts[a]
    order = np.lexsort((starts[n:], levels[n:]))
    new_number = np.arange(n + len(pairs))
    new_number[n + order] = n + np.arange(len(pairs))
    left = [int(new_number[pairs[k][0]]) for k in order]
    right = [int(new_number[pairs[k][1]]) for k in order]
    return BinaryTree(
        n, np.array(left, dtype=np.int64), np.array(right, dtype=np.int64), tuple(labels[k] for k in order)
    )


def batch_binary_trees(trees: Sequence[BinaryTree], num_positions: int) -> dict[str, np.ndarray]:
    """Pads binary trees into the arrays of one batch for a level-wise Tree-LSTM.

    In a batch padded to S positions, leaf t of sentence b is position t and
    its phrase node n_b + k is renumbered S + k, so node numbers mean the same
    in every sentence: leaves 0..S-1, phrase nodes S..2S-2.

    Args:
        trees: B binary trees.
        num_positions: S, at least the number of leaves of every tree.

    Returns:
        A dict of int32 arrays: `tree_left`, `tree_right`, `tree_level`
        [B, S-1], padded with -1 after each sentence's n_b - 1 phrase nodes,
        and `tree_root` [B], the root's node number (S + n_b - 2, or 0 for a
        one-word sentence).

    Raises:
        ValueError: if a tree has more leaves than `num_positions`.
    """
    batch = len(trees)
    size = max(num_positions - 1, 0)
    arrays = {
        name: np.full((batch, size), PAD_NODE, dtype=np.int32)
        for name in ("tree_left", "tree_right", "tree_level")
    }
    roots = np.zeros(batch, dtype=np.int32)
    for b, tree in enumerate(trees):
        n = tree.num_leaves
        if n > num_positions:
            raise ValueError(f"tree {b} has {n} leaves, more than the {num_positions} positions of the batch")
        shift = num_positions - n  # moves phrase node n + k to S + k; leaves stay
        for name, children in (("tree_left", tree.left), ("tree_right", tree.right)):
            arrays[name][b, : n - 1] = np.where(children >= n, children + shift, children)
        arrays["tree_level"][b, : n - 1] = tree.levels
        roots[b] = tree.root + shift if n > 1 else 0
    arrays["tree_root"] = roots
    return arrays
