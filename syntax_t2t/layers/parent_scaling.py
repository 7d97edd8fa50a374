"""Parent-scaled self-attention (Pascal; Bugliarello and Okazaki 2020), as tensor functions.

A Pascal head scales its scores by the closeness of every key to the query
token's dependency parent before the softmax (seed eq. 4-6):

    S = Q K^T / sqrt(d)                       (eq. 4)
    N[t, j] = S[t, j] * D[t, j]               (eq. 5)
    D[t, j] = N(j | p_t, sigma^2)             (eq. 6, a normal density)

`p_t` is the *middle position* of the subwords of token t's parent word; a
word attached to ROOT is its own parent (`data/subword_syntax.py` gives the
numpy version of this rule; `parent_positions` computes it on the device
from the batch). D has no parameters: the attention term `ParentScaledHeads`
(`layers/attention_terms/parent_scaled_heads.py`) applies it to its heads.

Table 7b's "parent-only" row, "where weights are only placed on parents",
replaces the density by D[t, j] = 1 when key j is a subword of t's parent
word and 0 elsewhere (`parent_only_weights`, from `parent_spans`). Eq. 5
multiplies the scores, so the other keys get score 0, not -inf, just as
far keys do under the Gaussian: the head still attends to them, with only
the parent's score learned.

Parent ignoring (training only) sets each row of D to 1 with probability q,
so that the token's row falls back to plain attention. D belongs to the
sentence, not to a head (eq. 5 has no head index), so one draw per row
serves every Pascal head of the layer.

Rows of tokens without a parent in the tree (the `<EOS>` position and
padding) are centred on the token itself. Positions count from the first
token of each sentence: the pipeline pads on the right, so a parent position
is the same key index in every sentence of a batch.
"""

import math

import keras
from keras import ops

from syntax_t2t.backend import Tensor

#: How a Pascal head weighs its scores: eq. 6's normal density around the
#: parent's middle, or Table 7b's "parent-only" (1 on the parent's subwords).
WEIGHTINGS = ("gaussian", "parent_only")


def parent_spans(heads: Tensor, word_positions: Tensor = None) -> Tensor:
    """The first and last position of every token's parent word.

    Args:
        heads: int [B, S], 1-based positions of each token's head (in subword
            problems the first subword of the head word, `first_subword_heads`),
            0 = ROOT, -1 = no tree node (`<EOS>`, padding).
        word_positions: int [B, S], the 1-based word each token belongs to,
            0 = none (`src_word_position` of subword problems); None when
            every token with a head is a word of its own.

    Returns:
        float32 [B, S, 2]: (first, last) 0-based positions of the subwords of
        each token's head word; for a token attached to ROOT those of its
        own word; for a token without a head, its own position twice.
    """
    heads = ops.cast(heads, "int32")
    length = ops.shape(heads)[1]
    indices = ops.arange(length, dtype="int32")
    positions = ops.cast(indices, "float32")
    if word_positions is None:
        words = ops.where(heads >= 0, indices[None, :] + 1, 0)
    else:
        words = ops.cast(word_positions, "int32")
    same_word = ops.logical_and(ops.equal(words[:, :, None], words[:, None, :]),
                                words[:, :, None] > 0)
    keys = ops.broadcast_to(positions[None, None, :], ops.shape(same_word))
    own = ops.broadcast_to(positions[None, :], ops.shape(heads))
    has_word = ops.any(same_word, axis=-1)
    # The subwords of a word are contiguous: its span runs from the first to the last.
    first = ops.where(has_word, ops.min(ops.where(same_word, keys, float("inf")), axis=-1), own)
    last = ops.where(has_word, ops.max(ops.where(same_word, keys, -1.0), axis=-1), own)
    spans = ops.stack([first, last], axis=-1)
    parent_index = ops.where(heads > 0, ops.minimum(heads - 1, length - 1), indices[None, :])
    parents = ops.take_along_axis(spans, parent_index[:, :, None], axis=1)
    return ops.where((heads < 0)[:, :, None], ops.stack([own, own], axis=-1), parents)


def parent_positions(heads: Tensor, word_positions: Tensor = None) -> Tensor:
    """Pascal's parent position of every token: the middle of its parent word.

    Args:
        heads, word_positions: as in `parent_spans`.

    Returns:
        float32 [B, S]: the middle position (0-based) of the subwords of each
        token's head word; for a token attached to ROOT the middle of its own
        word; for a token without a head, its own position.
    """
    return ops.mean(parent_spans(heads, word_positions), axis=-1)


def parent_weights(parents: Tensor, key_length: Tensor, variance: float) -> Tensor:
    """D of eq. 6: the normal density of every key position around each parent.

    Args:
        parents: float [B, Sq], the parent position of each query token.
        key_length: Sk.
        variance: sigma^2 > 0.

    Returns:
        float32 [B, Sq, Sk], `D[b, t, j] = exp(-(j - p_t)^2 / (2 sigma^2)) / sqrt(2 pi sigma^2)`.
    """
    keys = ops.arange(key_length, dtype="float32")
    distances = keys[None, None, :] - ops.cast(parents, "float32")[:, :, None]
    return ops.exp(-ops.square(distances) / (2.0 * variance)) / math.sqrt(2.0 * math.pi * variance)


def parent_only_weights(spans: Tensor, key_length: Tensor) -> Tensor:
    """D of Table 7b's "parent-only" row: 1 on the subwords of each token's parent word, else 0.

    Args:
        spans: float [B, Sq, 2], the (first, last) position of each query
            token's parent word (`parent_spans`).
        key_length: Sk.

    Returns:
        float32 [B, Sq, Sk].
    """
    keys = ops.arange(key_length, dtype="float32")[None, None, :]
    spans = ops.cast(spans, "float32")
    inside = ops.logical_and(keys >= spans[:, :, 0:1], keys <= spans[:, :, 1:2])
    return ops.cast(inside, "float32")


def scaling_weights(parents: Tensor, key_length: Tensor, weighting: str = "gaussian",
                    variance: float = 1.0) -> Tensor:
    """D of a Pascal head for `weighting` (one of `WEIGHTINGS`).

    Args:
        parents: float [B, Sq] parent middles (`parent_positions`) or
            [B, Sq, 2] parent spans (`parent_spans`); "parent_only" needs
            the spans, "gaussian" takes either (centred on the middle).
        key_length: Sk.
        weighting: "gaussian" (eq. 6) or "parent_only" (Table 7b).
        variance: sigma^2 of the Gaussian.

    Returns:
        float32 [B, Sq, Sk].

    Raises:
        ValueError: an unknown weighting, or "parent_only" given middles.
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"unknown parent weighting {weighting!r}; "
                         f"expected one of {', '.join(WEIGHTINGS)}")
    parents = ops.cast(parents, "float32")
    is_span = len(parents.shape) == 3
    if weighting == "parent_only":
        if not is_span:
            raise ValueError("parent_only weighting needs the spans of the parent words, "
                             "float [B, Sq, 2] (parent_spans), not their middles")
        return parent_only_weights(parents, key_length)
    middles = ops.mean(parents, axis=-1) if is_span else parents
    return parent_weights(middles, key_length, variance)


def ignore_parents(weights: Tensor, rate: float, seed) -> Tensor:
    """Parent ignoring: each row of D becomes all ones with probability `rate`.

    Args:
        weights: float32 [B, Sq, Sk], D.
        rate: q in [0, 1].
        seed: a `keras.random.SeedGenerator` (or an int seed).

    Returns:
        float32 [B, Sq, Sk].
    """
    shape = ops.shape(weights)
    draws = keras.random.uniform((shape[0], shape[1], 1), seed=seed)
    return ops.where(draws < rate, ops.ones_like(weights), weights)
