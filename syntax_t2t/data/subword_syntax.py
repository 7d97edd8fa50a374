"""Word-level syntax projected onto subword units, as pure numpy functions.

A sentence of `n` words (with `heads`, 1-based, 0 = ROOT, `docs/design.md`)
becomes `T >= n` subwords. The link between both is `word_index`: an int
array of length `T` whose entry `t` is the 0-based index of the word that
subword `t` belongs to (what `SubwordVocabulary.encode_with_word_index`
returns). It starts at 0, never decreases, steps by at most 1 and ends at
`n - 1`: every word has at least one subword and subwords keep word order.

Positions. Subword positions are 0-based indices into the subword sequence
the encoder reads (`inputs` without `<EOS>`). In the `<ROOT>`-prefixed view
(DepParse, `features.root_prefixed_heads`) ROOT takes position 0 and subword
`t` moves to position `t + 1`, so a 1-based subword head is directly a
position there, exactly as for words.

Parents, two rules:

* Pascal (Bugliarello & Okazaki 2020): every subword of word `w` gets the
  *middle position* of the subwords of `w`'s head word, `(first + last) / 2`;
  a word split into positions 6, 7, 8 has middle 7, one split into 4, 5 has
  middle 4.5 (fractional middles are kept: Pascal centres a Gaussian there).
  Pascal has no ROOT token, so a word attached to ROOT is its own parent: its
  subwords point at its own middle. With `root_prefixed=True` the sequence
  gains ROOT at position 0, ROOT's parent is ROOT itself (0), and words
  attached to ROOT point at 0.
* SISA (Strubell et al. 2018, as extended to subwords by Pascal's authors):
  every subword of word `w` has as head the *first subword* of `w`'s head
  word, or ROOT. These heads follow the design's heads convention (1-based
  subword positions, 0 = ROOT) and form a valid tree over the subwords: the
  first subwords form a copy of the word tree and every other subword hangs
  on the same head as the first subword of its word.

Annotations: labels and tags (UPOS, XPOS, deprels, their ids) are copied to
every subword of a word.

Thesis features (chapter 3 and 4), rule on subwords: **a subword stands for
its word**. A pair feature of subwords `(s, t)` is the word feature of
`(word(s), word(t))`; in particular two subwords of one word are the same tree
node: tree distance 0 and traversal code `""`, like a subword and itself.
This keeps the label spaces (and embedding tables) of `features` unchanged
and reduces to the word-level feature when every word is one subword.

* tree distance and traversal: `subword_tree_distance_labels`,
  `subword_traversal_labels` (projections of `features`; on the device
  `layers/tree_labels.py` with `word_positions`);
* relative position: the Shaw et al. feature is over sequence positions, so
  on subwords it is `features.relative_positions(T, k)` unchanged (subword
  offsets, as with any subword Transformer); `word_relative_positions` gives
  the alternative that counts words, with the same labels;
* parse heads (DepParse head selection): the SISA heads above, so that every
  subword's head points into its head word; predicted subword heads map back
  to word heads through each word's first subword
  (`word_heads_from_subword_heads`), for UAS/LAS on the original words
  (`decoding/parse_heads.decode_word_heads` reads a parse head's scores the
  same way, from each word's first subword, summing over the head word's
  subwords). The
  diagonal pseudo-tree (DiagonalParse) is a sequence structure and stays
  `features.diagonal_heads(T)` on subwords.
"""

from typing import Sequence

import numpy as np

from syntax_t2t.data import features
from syntax_t2t.data.tree import check_heads


def check_word_index(word_index, num_words: int | None = None) -> np.ndarray:
    """Validates a subword-to-word map.

    Args:
        word_index: 1-D integer sequence; entry `t` is the 0-based word of
            subword `t`.
        num_words: the number of words it must cover, if known.

    Returns:
        The map as a new read-only int64 array.

    Raises:
        ValueError: naming the first subword that breaks the rules (not
            starting at word 0, going back, skipping a word, or not covering
            `num_words` words).
    """
    array = np.asarray(word_index)
    if array.ndim != 1:
        raise ValueError(f"word_index must be one-dimensional, got shape {array.shape}")
    if array.size == 0:
        raise ValueError("word_index is empty: a sentence needs at least one subword")
    if array.dtype.kind not in "iu":
        raise ValueError(f"word_index must hold integers, got dtype {array.dtype}")
    array = array.astype(np.int64)
    if array[0] != 0:
        raise ValueError(f"subword 0 belongs to word {array[0]}: the first subword must belong to word 0")
    steps = np.diff(array)
    bad = np.flatnonzero((steps < 0) | (steps > 1))
    if bad.size:
        t = int(bad[0]) + 1
        raise ValueError(
            f"subword {t} belongs to word {array[t]} but subword {t - 1} to word {array[t - 1]}: "
            "word_index must stay or step up by one"
        )
    covered = int(array[-1]) + 1
    if num_words is not None and covered != num_words:
        raise ValueError(f"word_index covers {covered} words but the sentence has {num_words}")
    array.setflags(write=False)
    return array


def word_spans(word_index) -> tuple[np.ndarray, np.ndarray]:
    """First and last subword position of every word.

    Args:
        word_index: the subword-to-word map (see the module docstring).

    Returns:
        `(first, last)`, two int64 arrays [n] of 0-based subword positions.
    """
    index = check_word_index(word_index)
    starts = np.flatnonzero(np.concatenate([[True], index[1:] != index[:-1]]))
    ends = np.concatenate([starts[1:] - 1, [index.size - 1]])
    return starts.astype(np.int64), ends.astype(np.int64)


def word_middles(word_index) -> np.ndarray:
    """Middle subword position `(first + last) / 2` of every word: float64 [n]."""
    first, last = word_spans(word_index)
    return (first + last) / 2.0


def _word_heads(word_index, heads) -> tuple[np.ndarray, np.ndarray]:
    heads = check_heads(heads).astype(np.int64)
    return check_word_index(word_index, num_words=heads.size), heads


def pascal_parent_positions(word_index, heads, root_prefixed: bool = False) -> np.ndarray:
    """Pascal's parent position of every subword (middle of the head word).

    Args:
        word_index: the subword-to-word map, length T.
        heads: the word heads, 1-based, 0 = ROOT, length n.
        root_prefixed: False gives Pascal's own frame (0-based positions of
            the subword sequence; a word attached to ROOT is its own parent).
            True gives the `<ROOT>`-prefixed frame: entry 0 is ROOT, whose
            parent is itself (0), entry `t + 1` is subword `t`, and words
            attached to ROOT point at 0.

    Returns:
        float64 [T], or [T + 1] with `root_prefixed`.
    """
    index, heads = _word_heads(word_index, heads)
    middles = word_middles(index)
    own_word = np.arange(heads.size)
    if not root_prefixed:
        parent_word = np.where(heads == 0, own_word, heads - 1)
        return middles[parent_word][index]
    # Position 0 is ROOT and words sit one position later.
    node_positions = np.concatenate([[0.0], middles + 1.0])
    return np.concatenate([[0.0], node_positions[heads][index]])


def first_subword_heads(word_index, heads) -> np.ndarray:
    """SISA heads: every subword depends on the first subword of its head word.

    Args:
        word_index: the subword-to-word map, length T.
        heads: the word heads, 1-based, 0 = ROOT, length n.

    Returns:
        int32 [T], 1-based subword positions in the `<ROOT>`-prefixed view,
        0 = ROOT: a valid tree over the subwords, usable wherever word heads
        are (`features`, DepParse targets, the `src_heads` feature).
    """
    index, heads = _word_heads(word_index, heads)
    first, _ = word_spans(index)
    node_heads = np.concatenate([[0], first + 1])
    return node_heads[heads][index].astype(np.int32)


def word_heads_from_subword_heads(subword_heads, word_index) -> np.ndarray:
    """Word heads read off each word's first subword.

    Inverts `first_subword_heads` and turns a parser's subword-level head
    predictions into word heads for UAS/LAS: the head of word `w` is the word
    that the predicted head of `w`'s first subword belongs to (0 for ROOT).
    Predictions need not form a tree; a word whose first subword points into
    the word itself gets itself as head, which scores as an error.

    Args:
        subword_heads: 1-D ints in `[0, T]`, 1-based positions, 0 = ROOT.
        word_index: the subword-to-word map, length T.

    Returns:
        int32 [n], 1-based word heads, 0 = ROOT.

    Raises:
        ValueError: on a length mismatch or a head outside `[0, T]`.
    """
    index = check_word_index(word_index)
    predicted = np.asarray(subword_heads)
    if predicted.ndim != 1 or predicted.shape[0] != index.size:
        raise ValueError(
            f"subword_heads has shape {predicted.shape} but word_index has {index.size} subwords"
        )
    if predicted.dtype.kind not in "iu":
        raise ValueError(f"subword_heads must hold integers, got dtype {predicted.dtype}")
    out_of_range = np.flatnonzero((predicted < 0) | (predicted > index.size))
    if out_of_range.size:
        t = int(out_of_range[0])
        raise ValueError(f"subword {t} has head {predicted[t]}, outside [0, {index.size}] (0 = ROOT)")
    first, _ = word_spans(index)
    node_words = np.concatenate([[0], index + 1])
    return node_words[predicted[first]].astype(np.int32)


def copy_to_subwords(values, word_index) -> np.ndarray:
    """Copies a per-word annotation (labels, tags or their ids) to every subword.

    Args:
        values: sequence of length n (strings or numbers).
        word_index: the subword-to-word map, length T.

    Returns:
        numpy array [T] (a `str` array for strings); entry t is
        `values[word_index[t]]`.

    Raises:
        ValueError: if `values` does not have one entry per word.
    """
    index = check_word_index(word_index)
    array = np.asarray(values)
    num_words = int(index[-1]) + 1
    if array.ndim != 1 or array.shape[0] != num_words:
        raise ValueError(f"values have shape {array.shape}, expected one value for each of {num_words} words")
    return array[index]


def project_pair_feature(word_matrix, word_index, include_root: bool = False) -> np.ndarray:
    """Projects a word-pair matrix onto subword pairs ("a subword stands for its word").

    Args:
        word_matrix: [n, n] feature of word pairs, or [n+1, n+1] with ROOT as
            row/column 0 when `include_root`.
        word_index: the subword-to-word map, length T.
        include_root: whether `word_matrix` (and the result) keep ROOT first.

    Returns:
        [T, T] (or [T+1, T+1] with ROOT first); entry (s, t) is the word
        matrix's entry for the words of subwords s and t.
    """
    index = check_word_index(word_index)
    matrix = np.asarray(word_matrix)
    size = int(index[-1]) + 1 + int(include_root)
    if matrix.shape != (size, size):
        raise ValueError(f"word_matrix has shape {matrix.shape}, expected {(size, size)}")
    nodes = np.concatenate([[0], index + 1]) if include_root else index
    return matrix[np.ix_(nodes, nodes)]


def subword_tree_distance_labels(word_index, heads, max_distance: int,
                                 include_root: bool = False) -> np.ndarray:
    """Tree distance labels of subword pairs (thesis 3.1.2, module rule).

    Labels and sizes are those of `features.tree_distance_labels`; subwords
    of one word are at distance 0.

    Returns:
        int32 [T, T], or [T+1, T+1] with ROOT first.
    """
    index, heads = _word_heads(word_index, heads)
    words = features.tree_distance_labels(heads, max_distance, include_root=include_root)
    return project_pair_feature(words, index, include_root)


def subword_traversal_labels(word_index, heads, max_traversal: int,
                             include_root: bool = False) -> np.ndarray:
    """Tree traversal label ids of subword pairs (thesis 3.1.3, module rule).

    Ids index `features.traversal_vocab(max_traversal)`; subwords of one word
    get the id of the empty code `""` (0), as a subword and itself.

    Returns:
        int32 [T, T], or [T+1, T+1] with ROOT first.
    """
    index, heads = _word_heads(word_index, heads)
    words = features.traversal_labels(heads, max_traversal, include_root=include_root)
    return project_pair_feature(words, index, include_root)


def word_relative_positions(word_index, max_relative_position: int) -> np.ndarray:
    """Relative positions counted in words, for subword pairs (thesis 3.1.1).

    Labels are those of `features.relative_positions`: entry (s, t) is
    `clip(word(t) - word(s), -k, k) + k`, so subwords of one word are at
    offset 0. (`features.relative_positions(T, k)` counts subwords instead.)

    Returns:
        int32 [T, T].
    """
    index = check_word_index(word_index)
    words = features.relative_positions(int(index[-1]) + 1, max_relative_position)
    return project_pair_feature(words, index)


def word_index_from_counts(pieces_per_word: Sequence[int]) -> np.ndarray:
    """The subword-to-word map of words split into the given numbers of pieces.

    Args:
        pieces_per_word: positive piece counts, one per word.

    Returns:
        int64 [sum(pieces_per_word)].
    """
    counts = np.asarray(pieces_per_word)
    if counts.ndim != 1 or counts.size == 0 or counts.dtype.kind not in "iu" or np.any(counts < 1):
        raise ValueError(f"pieces_per_word must be positive integers, one per word, got {counts.tolist()}")
    return np.repeat(np.arange(counts.size, dtype=np.int64), counts)


def projected_source_features(features: dict, word_index) -> dict:
    """A sentence's word-level source features moved onto its subwords.

    `src_heads` become first-subword heads (`first_subword_heads`), a
    constituent of words `s .. e` covers their subwords from the first of `s`
    to the last of `e`, `src_word_position` is added, and every other
    per-word feature is copied to each subword of its word.

    Args:
        features: `inputs` (already subword ids), `src_heads` and per-word
            features such as `src_deprel`, optionally `src_const_*`.
        word_index: the 0-based word of each subword.
    """
    heads = first_subword_heads(word_index, features["src_heads"])
    projected = {"inputs": features["inputs"], "src_heads": heads.tolist(),
                 "src_word_position": (np.asarray(word_index) + 1).tolist()}
    if "src_const_start" in features:
        first, last = word_spans(word_index)
        projected["src_const_start"] = (first[np.asarray(features["src_const_start"]) - 1]
                                        + 1).tolist()
        projected["src_const_end"] = (last[np.asarray(features["src_const_end"]) - 1] + 1).tolist()
        projected["src_const_label"] = features["src_const_label"]
    for key, values in features.items():
        if key not in projected:
            projected[key] = copy_to_subwords(values, word_index).tolist()
    return projected
