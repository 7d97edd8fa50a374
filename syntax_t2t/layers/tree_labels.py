"""Pairwise label matrices computed on the device from per-token heads.

The numpy functions of `syntax_t2t.data.features` define the labels of one
sentence; these tensor functions compute the same labels for a padded
batch, so that T x T matrices never have to be stored or fed (design.md). They
are plain `keras.ops` programs (a few batched matmuls, no Python loop over
tokens) whose output shapes follow from their inputs' shapes, so they run
under XLA and `jax.jit`; their labels are integers and need no gradient.

Batches follow design.md: `src_heads` [B, S] holds 1-based heads (0 = ROOT)
for the words and -1 for every position that is not a word of the tree (the
`<EOS>` position and padding). Pairs that involve such a position get one
extra label, the *no-tree* label, which is the last id of each label space
here (`*_label_count(...) - 1`); the ids of word pairs are exactly those of
`features.py`. With `include_root=True` the ROOT node comes first, as in the
`<ROOT>`-prefixed source of DepParse (position 0 = ROOT, position i = token
i), and its row and column carry its real tree labels.

Subword batches (`*_subword` problems) follow the rule of
`data/subword_syntax.py`: *a subword stands for its word*. Their `src_heads`
are subword heads (`first_subword_heads`), which put two pieces of one word
two edges apart (siblings under the head word's first piece); given
`word_positions` (`src_word_position`: the 1-based word of each subword, 0 =
none), the tree labels are instead computed on the words (`word_heads`) and
gathered back to every subword pair (`project_to_subwords`), so pieces of one
word are at distance 0 with the empty traversal code, and any other pair has
the label of its two words (`subword_tree_distance_labels`,
`subword_traversal_labels`). Relative positions stay sequence offsets.
"""

import math

from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.data import features


def relative_position_labels(query_length: Tensor, key_length: Tensor, max_relative_position: int,
                             query_offset: Tensor = 0) -> Tensor:
    """Clipped relative positions of Shaw et al. (2018), as `features.relative_positions`.

    Args:
        query_length: Sq, number of query positions.
        key_length: Sk, number of key positions.
        max_relative_position: clipping distance k (> 0).
        query_offset: position of the first query (the decoding step when
            queries are a suffix of the keys, e.g. with a key/value cache).

    Returns:
        int32 [Sq, Sk]; entry (i, j) is `clip(j - (i + offset), -k, k) + k`.
    """
    queries = ops.arange(query_length, dtype="int32") + ops.cast(query_offset, "int32")
    keys = ops.arange(key_length, dtype="int32")
    offsets = keys[None, :] - queries[:, None]
    k = max_relative_position
    return ops.clip(offsets, -k, k) + k


def relative_position_label_count(max_relative_position: int) -> int:
    """Size of the relative-position label space: 2k + 1 (no no-tree label needed)."""
    return features.relative_position_vocab_size(max_relative_position)


def tree_distance_label_count(max_distance: int) -> int:
    """Tree-distance labels of `features.py` plus the final no-tree label."""
    return features.tree_distance_vocab_size(max_distance) + 1


def tree_traversal_label_count(max_traversal: int) -> int:
    """Traversal labels of `features.py` plus the final no-tree label."""
    return features.traversal_vocab_size(max_traversal) + 1


def _ancestors(heads):
    """Ancestor-or-self matrix of the ROOT-inclusive node set of each sentence.

    Non-word positions (head -1) are attached to ROOT so that the computation
    stays a tree; their labels are replaced by the no-tree label afterwards
    and no word can have them as ancestors.

    Args:
        heads: int32 [B, S], 1-based heads, 0 = ROOT, -1 = not a word.

    Returns:
        `ancestors`: float32 [B, N, N] with N = S + 1; entry (i, k) is 1 iff
        node k is on the path from node i up to ROOT (both included).
        `is_node`: bool [B, N], false for non-word positions.
    """
    heads = ops.cast(heads, "int32")
    length = ops.shape(heads)[1]
    num_nodes = length + 1
    is_word = heads >= 0
    # Clipping keeps malformed heads inside the tensor instead of reading
    # garbage on accelerators; trees are validated when data is generated.
    parents = ops.clip(ops.where(is_word, heads, 0), 0, length)
    parents = ops.pad(parents, [[0, 0], [1, 0]])
    is_node = ops.pad(is_word, [[0, 0], [1, 0]], constant_values=True)
    # reach(t) = "k is at most 2^t steps above i"; squaring doubles the reach.
    # Every path to ROOT has at most N - 1 edges, so ceil(log2(N)) squarings
    # close the relation (an extra one would not change it).
    reach = ops.one_hot(parents, num_nodes, dtype="float32")
    reach = ops.minimum(reach + ops.eye(num_nodes, dtype="float32")[None], 1.0)
    # A static trip count where N is static (always under JAX, whose loops
    # with a traced bound compile but cannot be differentiated).
    ancestors = ops.fori_loop(0, _ceil_log2(num_nodes),
                              lambda _, relation: ops.minimum(ops.matmul(relation, relation), 1.0),
                              reach)
    return ancestors, is_node


def _ceil_log2(count):
    """ceil(log2(count)) for count >= 1: a Python int for an int, else an int32 scalar."""
    if isinstance(count, int):
        return (count - 1).bit_length()
    # Rounding may give one more for a power of two, which changes nothing here.
    return ops.cast(ops.ceil(ops.log(ops.cast(count, "float32")) / math.log(2.0)), "int32")


def _climbs(ancestors):
    """Depths and the steps up and down of every shortest path.

    The lowest common ancestor of i and j is their deepest common ancestor,
    so its depth is the number of common ancestors minus one.

    Returns:
        `depth` float32 [B, N]; `up`, `down` float32 [B, N, N].
    """
    depth = ops.sum(ancestors, axis=-1) - 1.0
    common = ops.matmul(ancestors, ops.transpose(ancestors, (0, 2, 1)))
    lca_depth = common - 1.0
    return depth, depth[:, :, None] - lca_depth, depth[:, None, :] - lca_depth


def _finish(labels, is_node, no_tree_label, include_root):
    """Applies the no-tree label and drops ROOT's row and column if asked."""
    pair_is_tree = ops.logical_and(is_node[:, :, None], is_node[:, None, :])
    labels = ops.where(pair_is_tree, labels, no_tree_label)
    return labels if include_root else labels[:, 1:, 1:]


def word_heads(heads: Tensor, word_positions: Tensor) -> Tensor:
    """The word tree of a subword batch.

    Args:
        heads: int [B, S], subword heads as `first_subword_heads` gives them
            (1-based position of the first subword of the head word, 0 =
            ROOT, -1 = not a word).
        word_positions: int [B, S], the 1-based word of each subword (words
            are contiguous and numbered from 1 in order), 0 = none.

    Returns:
        int32 [B, S]: entry `w - 1` is the head of word `w` (1-based word,
        0 = ROOT), read off the word's first subword; -1 after the last word.
    """
    heads = ops.cast(heads, "int32")
    words = ops.cast(word_positions, "int32")
    length = ops.shape(words)[1]
    previous = ops.pad(words, [[0, 0], [1, 0]])[:, :-1]
    is_first = ops.logical_and(words > 0, ops.not_equal(words, previous))
    # The word of each subword's head subword (clipped: see `_ancestors`).
    head_subword = ops.clip(heads - 1, 0, length - 1)
    head_word = ops.where(heads > 0, ops.take_along_axis(words, head_subword, axis=1),
                          ops.where(heads == 0, 0, -1))
    # slot[b, s, w] = subword s is the first subword of word w + 1.
    slot = ops.logical_and(is_first[:, :, None], ops.equal(
        words[:, :, None] - 1, ops.arange(length, dtype="int32")[None, None, :]))
    values = ops.sum(ops.where(slot, head_word[:, :, None], 0), axis=1)
    return ops.where(ops.any(slot, axis=1), values, -1)


def project_to_subwords(word_labels: Tensor, word_positions: Tensor, no_tree_label: int,
                        include_root: bool = False) -> Tensor:
    """Word-pair labels moved onto subword pairs ("a subword stands for its word").

    Args:
        word_labels: int32 [B, S + 1, S + 1], labels of the word tree with
            ROOT first (node w = word w), e.g. `tree_distance_labels(
            word_heads(...), k, include_root=True)`.
        word_positions: int [B, S], the 1-based word of each subword, 0 = none.
        no_tree_label: the label of pairs with a position that is no word.
        include_root: keep ROOT as row/column 0.

    Returns:
        int32 [B, S, S] (or [B, S + 1, S + 1] with ROOT first); entry (s, t)
        is the label of the words of subwords s and t.
    """
    words = ops.cast(word_positions, "int32")
    # Clipped like malformed heads in `_ancestors`: never read outside the tensor.
    nodes, is_node = ops.clip(words, 0, ops.shape(words)[1]), words > 0
    if include_root:
        nodes = ops.pad(nodes, [[0, 0], [1, 0]])
        is_node = ops.pad(is_node, [[0, 0], [1, 0]], constant_values=True)
    labels = ops.take_along_axis(word_labels, nodes[:, :, None], axis=1)
    labels = ops.take_along_axis(labels, nodes[:, None, :], axis=2)
    pair_is_tree = ops.logical_and(is_node[:, :, None], is_node[:, None, :])
    return ops.where(pair_is_tree, labels, no_tree_label)


def tree_distance_labels(heads: Tensor, max_distance: int, include_root: bool = False,
                         word_positions: Tensor = None) -> Tensor:
    """Tree-distance labels of a batch (thesis 3.1.2), as `features.tree_distance_labels`.

    Args:
        heads: int [B, S], 1-based heads, 0 = ROOT, -1 = not a word.
        max_distance: largest distance with its own label; longer distances
            get the overflow label `max_distance + 1`.
        include_root: prepend ROOT as row/column 0.
        word_positions: for subword batches, int [B, S], the 1-based word of
            each subword (0 = none); the labels are then those of
            `subword_syntax.subword_tree_distance_labels` (module docstring).

    Returns:
        int32 [B, S, S], or [B, S + 1, S + 1] with `include_root`; pairs with
        a non-word position get `tree_distance_label_count(max_distance) - 1`.
    """
    if word_positions is not None:
        words = tree_distance_labels(word_heads(heads, word_positions), max_distance,
                                     include_root=True)
        return project_to_subwords(words, word_positions,
                                   tree_distance_label_count(max_distance) - 1, include_root)
    ancestors, is_node = _ancestors(heads)
    _, up, down = _climbs(ancestors)
    distance = ops.cast(up + down, "int32")
    labels = ops.minimum(distance, max_distance + 1)
    return _finish(labels, is_node, tree_distance_label_count(max_distance) - 1, include_root)


def tree_traversal_labels(heads: Tensor, max_traversal: int, include_root: bool = False,
                          word_positions: Tensor = None) -> Tensor:
    """Tree-traversal label ids of a batch (thesis 3.1.3), as `features.traversal_labels`.

    A path that climbs exactly once and then descends is a sibling move; its
    first node below the common head is the ancestor of j at the depth of i,
    and its side (L or R) is whether that sibling comes before or after i.

    Args:
        heads: int [B, S], 1-based heads, 0 = ROOT, -1 = not a word.
        max_traversal: longest code with its own label; longer codes get the
            overflow id `features.traversal_vocab_size(max_traversal) - 1`.
        include_root: prepend ROOT as row/column 0.
        word_positions: for subword batches, int [B, S], the 1-based word of
            each subword (0 = none); the labels are then those of
            `subword_syntax.subword_traversal_labels` (module docstring).

    Returns:
        int32 [B, S, S], or [B, S + 1, S + 1] with `include_root`; ids index
        `features.traversal_vocab(max_traversal)`; pairs with a non-word
        position get `tree_traversal_label_count(max_traversal) - 1`.
    """
    if word_positions is not None:
        words = tree_traversal_labels(word_heads(heads, word_positions), max_traversal,
                                      include_root=True)
        return project_to_subwords(words, word_positions,
                                   tree_traversal_label_count(max_traversal) - 1, include_root)
    ancestors, is_node = _ancestors(heads)
    depth, up, down = _climbs(ancestors)
    num_nodes = ops.shape(depth)[1]
    node_index = ops.arange(num_nodes, dtype="float32")
    # through[i, j] = sum_k [depth(k) == depth(i)] * k * ancestors[j, k]: the
    # ancestor of j at the depth of i (only read where depth(j) > depth(i)).
    same_depth = ops.cast(ops.equal(depth[:, :, None], depth[:, None, :]), "float32")
    through = ops.matmul(same_depth * node_index[None, None, :],
                         ops.transpose(ancestors, (0, 2, 1)))
    sibling_move = ops.logical_and(ops.equal(up, 1.0), down >= 1.0)
    is_left = through < node_index[None, :, None]
    up, down = ops.cast(up, "int32"), ops.cast(down, "int32")

    # Ids as in `features.traversal_vocab`: U^a D^b grouped by length s = a + b
    # then by a; then L D^c and R D^c for c = 0 .. T - 1; then overflow.
    plain_length = up + down
    plain_id = plain_length * (plain_length + 1) // 2 + up
    sibling_base = (max_traversal + 1) * (max_traversal + 2) // 2
    side_offset = ops.where(is_left, 0, max_traversal)
    # A sibling code "L D^c" replaces "U D^(c+1)": its length is `down`.
    sibling_id = sibling_base + side_offset + (down - 1)
    labels = ops.where(sibling_move, sibling_id, plain_id)
    code_length = ops.where(sibling_move, down, plain_length)
    labels = ops.where(code_length > max_traversal,
                      features.traversal_vocab_size(max_traversal) - 1, labels)
    return _finish(labels, is_node, tree_traversal_label_count(max_traversal) - 1, include_root)
