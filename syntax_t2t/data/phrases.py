"""Phrase partitions of a sentence for multi-granularity self-attention (MG-SA).

Hao et al. (2019) give some attention heads a memory of phrases instead of
words. A partition assigns every token the id of its phrase; phrase ids are
0, 1, ..., M-1 from left to right, so `phrase_ids[t]` can index a segment
operation (max pooling, a phrase encoder) directly.

Two kinds of partitions:

* n-gram partitions: the sentence cut into non-overlapping n-grams from the
  left, the last one shorter when n does not divide the length (the paper
  pads it); MG-SA uses n = 2, 3 and 4, one granularity per group of heads.
* syntactic partitions: the units at level k of a constituency tree. Level 0
  is the root (the whole sentence) and level k holds the children of the
  level k-1 units. A token whose branch ends above level k stays a unit of
  its own at the deeper levels, and so does a constituent's direct word: in
  Figure 1 of the paper, level 1 of "Bush held a talk with Sharon" is
  (Bush)(held a talk with Sharon) and level 2 is (Bush)(held)(a talk)(with
  Sharon). MG-SA uses levels 1 to K = 3.

Phrase tag supervision predicts each syntactic phrase's label: a
constituent's label (NP), or a single word's part-of-speech tag (NNP).
"""

from typing import NamedTuple, Sequence

import numpy as np

from syntax_t2t.data.constituency import ConstituencyTree

PAD_PHRASE_ID = -1


def ngram_partition(length: int, n: int) -> np.ndarray:
    """Phrase ids of the non-overlapping n-grams of a sentence.

    Args:
        length: number of tokens.
        n: phrase length, >= 1.

    Returns:
        int32 [length]; token t is in phrase `t // n`.

    Raises:
        ValueError: if `n < 1` or `length < 0`.
    """
    if n < 1 or length < 0:
        raise ValueError(f"need a phrase length n >= 1 and a length >= 0, got n={n}, length={length}")
    return (np.arange(length) // n).astype(np.int32)


def ngram_partitions(length: int, ngram_sizes: Sequence[int] = (2, 3, 4)) -> np.ndarray:
    """The n-gram partitions for several granularities.

    Returns:
        int32 [len(ngram_sizes), length]; row g is `ngram_partition(length, ngram_sizes[g])`.
    """
    return np.stack([ngram_partition(length, n) for n in ngram_sizes]).reshape(len(ngram_sizes), length)


class SyntacticPartitions(NamedTuple):
    """The syntactic phrases of a sentence at several tree levels.

    Attributes:
        phrase_ids: int32 [K, n]; row k-1 gives each token's phrase id at
            level k (levels 1..K, or the levels asked for).
        phrase_labels: K tuples; tuple k-1 holds the label of each phrase of
            level k, indexed by phrase id.
    """

    phrase_ids: np.ndarray
    phrase_labels: tuple[tuple[str, ...], ...]


def _units_at_level(tree: ConstituencyTree, level: int) -> np.ndarray:
    """Which unit each token belongs to at `level`.

    Returns:
        int64 [n]: a constituent index, or `m + t` for a token t that is a
        unit of its own.
    """
    if level < 0:
        raise ValueError(f"tree levels start at 0 (the root), got {level}")
    units = tree.token_parents.astype(np.int64)
    depths = tree.depths[units]
    # Climb from each token's lowest constituent to its ancestor at `level`.
    for _ in range(int(depths.max(initial=0))):
        too_deep = depths > level
        units = np.where(too_deep, tree.parents[units], units)
        depths = np.where(too_deep, depths - 1, depths)
    own_unit = tree.depths[tree.token_parents] < level  # the branch ends above `level`
    return np.where(own_unit, tree.num_constituents + np.arange(len(tree)), units)


def syntactic_partition(tree: ConstituencyTree, level: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """The phrases of one tree level.

    Args:
        tree: the sentence's constituency tree.
        level: 0 for the root, 1 for its children, and so on.

    Returns:
        `(phrase_ids, phrase_labels)`: int32 [n] phrase ids numbered left to
        right, and the label of each phrase.
    """
    units = _units_at_level(tree, level)
    # Units are contiguous runs of tokens, so a new phrase starts where the unit changes.
    starts = np.concatenate([[True], units[1:] != units[:-1]])
    phrase_ids = (np.cumsum(starts) - 1).astype(np.int32)
    m = tree.num_constituents
    labels = tuple(tree.labels[u] if u < m else tree.tags[u - m] for u in units[starts].tolist())
    return phrase_ids, labels


def syntactic_partitions(tree: ConstituencyTree, num_levels: int = 3) -> SyntacticPartitions:
    """The phrases of the top `num_levels` levels below the root (levels 1..K).

    Args:
        tree: the sentence's constituency tree.
        num_levels: K, the number of granularities (MG-SA uses 3).

    Returns:
        `SyntacticPartitions` with `phrase_ids` of shape [K, n].
    """
    levels = [syntactic_partition(tree, level) for level in range(1, num_levels + 1)]
    ids = np.stack([ids for ids, _ in levels]).reshape(num_levels, len(tree)).astype(np.int32)
    return SyntacticPartitions(ids, tuple(labels for _, labels in levels))


def phrase_spans(phrase_ids: np.ndarray) -> np.ndarray:
    """The half-open token span of every phrase of one partition.

    Args:
        phrase_ids: int [n], phrase ids 0..M-1 numbered left to right.

    Returns:
        int32 [M, 2]; row p is (first token, last token + 1) of phrase p.
    """
    phrase_ids = np.asarray(phrase_ids)
    num_phrases = int(phrase_ids.max(initial=-1)) + 1
    starts = np.searchsorted(phrase_ids, np.arange(num_phrases), side="left")
    ends = np.searchsorted(phrase_ids, np.arange(num_phrases), side="right")
    return np.stack([starts, ends], axis=1).astype(np.int32)


def pad_partitions(partitions: Sequence[np.ndarray], length: int) -> np.ndarray:
    """Stacks per-sentence partitions into one padded batch array.

    Args:
        partitions: B arrays of shape [G, n_b] (G granularities, the same for
            every sentence; n_b tokens).
        length: the padded sentence length S >= every n_b (e.g. the batch's
            `inputs` length, whose `<EOS>` position belongs to no phrase).

    Returns:
        int32 [B, G, S]; positions past a sentence's end hold -1, which
        TensorFlow's unsorted segment operations ignore.

    Raises:
        ValueError: if the granularities differ or a sentence is too long.
    """
    if not partitions:
        raise ValueError("pad_partitions needs at least one sentence")
    granularities = {np.shape(p)[0] for p in partitions}
    if len(granularities) != 1:
        raise ValueError(
            f"every sentence needs the same number of granularities, got {sorted(granularities)}"
        )
    longest = max(np.shape(p)[1] for p in partitions)
    if longest > length:
        raise ValueError(f"a sentence has {longest} tokens, more than the padded length {length}")
    batch = np.full((len(partitions), granularities.pop(), length), PAD_PHRASE_ID, dtype=np.int32)
    for b, partition in enumerate(partitions):
        batch[b, :, : np.shape(partition)[1]] = partition
    return batch
