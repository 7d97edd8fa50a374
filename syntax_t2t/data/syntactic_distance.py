"""Neural syntactic distances (NSD): a tree as one integer per word.

Ma et al. (2019) give every word w_i (i = 1..n) a distance that describes the
pair (w_i, w_{i+1}); the last word gets a fixed value (their eq. 1):

* `d_S(w_i)`: the height of the lowest common ancestor (LCA) of w_i and
  w_{i+1} (Shen et al. 2018); `d_S(w_n) = H`.
* `d_G(w_i)`: the number of common ancestors of w_i and w_{i+1}
  (Gómez-Rodríguez and Vilares 2018); `d_G(w_n) = 0`.
* `d_R`: the relative form of d_G (eq. 3): `d_R(w_1) = d_G(w_1)`,
  `d_R(w_i) = d_G(w_i) - d_G(w_{i-1})`.
* `d_D(w_i) = i - h(i)` on a dependency tree, ROOT being 0 (eq. 4).

Conventions, chosen so that `d_S(w_i) + d_G(w_i) = H` (eq. 2) holds on every
tree, which makes d_S and d_G "equivalent in nature" as the paper says:

* The tree is a `ConstituencyTree`: its constituents are the internal nodes,
  the words its leaves (preterminals are tags, not nodes). The common
  ancestors of two words are the constituents containing both, the root
  included, so every real pair has `d_G >= 1` and the last word's 0 marks
  the end of the sentence.
* H, the height of the tree, is counted in levels: the number of nodes on the
  longest path from the root down to a word, the word included.
* The height of a node is its level counted from the bottom of that layered
  drawing: `H - 1 - depth`, with the root at depth 0. The root has height
  H - 1, the deepest words height 0; `d_S(w_n) = H` puts the end of the
  sentence one level above the root. When all words are equally deep this is
  the usual bottom-up height (words 0, a node one more than its highest
  child) used by Shen et al.
"""

import numpy as np

from syntax_t2t.data.constituency import ConstituencyTree
from syntax_t2t.data.tree import check_heads


def tree_height(tree: ConstituencyTree) -> int:
    """H: the number of nodes on the longest root-to-word path, the word included."""
    return int(tree.token_depths.max()) + 1


def _lowest_common_ancestors(tree: ConstituencyTree) -> np.ndarray:
    """int [n-1]: the deepest constituent containing tokens i and i+1."""
    n = len(tree)
    pairs = np.arange(n - 1)
    starts, ends = tree.spans[:, 0], tree.spans[:, 1]
    contains_pair = (starts[None, :] <= pairs[:, None]) & (ends[None, :] >= pairs[:, None] + 2)
    # Pre-order lists ancestors first, so the last containing constituent is the lowest.
    last = tree.num_constituents - 1 - np.argmax(contains_pair[:, ::-1], axis=1)
    return last


def common_ancestor_counts(tree: ConstituencyTree) -> np.ndarray:
    """d_G: how many constituents contain both w_i and w_{i+1}; 0 for the last word.

    Returns:
        int32 [n].
    """
    lca = _lowest_common_ancestors(tree)
    return np.concatenate([tree.depths[lca] + 1, [0]]).astype(np.int32)


def lca_heights(tree: ConstituencyTree) -> np.ndarray:
    """d_S: the height of the LCA of w_i and w_{i+1}; H for the last word.

    Returns:
        int32 [n].
    """
    height = tree_height(tree)
    lca = _lowest_common_ancestors(tree)
    return np.concatenate([height - 1 - tree.depths[lca], [height]]).astype(np.int32)


def relative_common_ancestor_counts(tree: ConstituencyTree) -> np.ndarray:
    """d_R: d_G(w_1) first, then the change of d_G from each word to the next.

    Returns:
        int32 [n].
    """
    counts = common_ancestor_counts(tree)
    return np.diff(counts, prepend=0).astype(np.int32)


def dependency_distances(heads) -> np.ndarray:
    """d_D(w_i) = i - h(i), with 1-based words and ROOT at 0.

    Positive when the head is to the left, negative when it is to the right;
    a dependent of ROOT gets its own position.

    Args:
        heads: 1-based heads of n tokens, 0 = ROOT.

    Returns:
        int32 [n].
    """
    heads = check_heads(heads)
    return (np.arange(1, heads.size + 1) - heads).astype(np.int32)


def distance_labels(distances, max_distance: int) -> np.ndarray:
    """Embedding ids of (possibly negative) distances, clipped at +-max_distance.

    Args:
        distances: int array of NSD values.
        max_distance: k; values beyond +-k share the id of +-k.

    Returns:
        int32 array of `clip(d, -k, k) + k`, in `[0, 2k]`.
    """
    k = max_distance
    return (np.clip(np.asarray(distances), -k, k) + k).astype(np.int32)


def distance_vocab_size(max_distance: int) -> int:
    """Number of ids `distance_labels` uses: 2k + 1."""
    return 2 * max_distance + 1
