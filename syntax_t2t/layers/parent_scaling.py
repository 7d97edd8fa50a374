"""Parent-scaled self-attention (Pascal; Bugliarello and Okazaki 2020), as tensor functions.

A Pascal head scales its scores by the closeness of every key to the query
token's dependency parent before the softmax (seed eq. 4-6):

    S = Q K^T / sqrt(d)                       (eq. 4)
    N[t, j] = S[t, j] * D[t, j]               (eq. 5)
    D[t, j] = N(j | p_t, sigma^2)             (eq. 6, a normal density)

`p_t` is the *middle position* of the subwords of token t's parent word; a
word attached to ROOT is its own parent (`data/subword_syntax.py` gives the
numpy version of this rule; `parent_positions` computes it on the device
from the batch). D has no parameters: `MultiHeadAttention` applies it to the
heads listed in its `parent_scaled_heads`.

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
import tensorflow as tf


def parent_positions(heads, word_positions=None):
    """Pascal's parent position of every token: the middle of its parent word.

    Args:
        heads: int [B, S], 1-based positions of each token's head (in subword
            problems the first subword of the head word, `first_subword_heads`),
            0 = ROOT, -1 = no tree node (`<EOS>`, padding).
        word_positions: int [B, S], the 1-based word each token belongs to,
            0 = none (`src_word_position` of subword problems); None when
            every token with a head is a word of its own.

    Returns:
        float32 [B, S]: the middle position (0-based) of the subwords of each
        token's head word; for a token attached to ROOT the middle of its own
        word; for a token without a head, its own position.
    """
    heads = tf.cast(heads, tf.int32)
    length = tf.shape(heads)[1]
    indices = tf.range(length, dtype=tf.int32)
    positions = tf.cast(indices, tf.float32)
    if word_positions is None:
        words = tf.where(heads >= 0, indices[None, :] + 1, 0)
    else:
        words = tf.cast(word_positions, tf.int32)
    # The subwords of a word are contiguous, so its middle (first + last) / 2
    # is the mean of its positions.
    same_word = tf.cast(
        tf.logical_and(tf.equal(words[:, :, None], words[:, None, :]), words[:, :, None] > 0),
        tf.float32)
    sizes = tf.reduce_sum(same_word, axis=-1)
    middles = tf.where(sizes > 0,
                       tf.reduce_sum(same_word * positions, axis=-1) / tf.maximum(sizes, 1.0),
                       positions[None, :])
    parent_index = tf.where(heads > 0, tf.minimum(heads - 1, length - 1), indices[None, :])
    parents = tf.gather(middles, parent_index, batch_dims=1)
    return tf.where(heads < 0, positions[None, :], parents)


def parent_weights(parents, key_length, variance):
    """D of eq. 6: the normal density of every key position around each parent.

    Args:
        parents: float [B, Sq], the parent position of each query token.
        key_length: Sk.
        variance: sigma^2 > 0.

    Returns:
        float32 [B, Sq, Sk], `D[b, t, j] = exp(-(j - p_t)^2 / (2 sigma^2)) / sqrt(2 pi sigma^2)`.
    """
    keys = tf.cast(tf.range(key_length), tf.float32)
    distances = keys[None, None, :] - tf.cast(parents, tf.float32)[:, :, None]
    return tf.exp(-tf.square(distances) / (2.0 * variance)) / math.sqrt(2.0 * math.pi * variance)


def ignore_parents(weights, rate, seed):
    """Parent ignoring: each row of D becomes all ones with probability `rate`.

    Args:
        weights: float32 [B, Sq, Sk], D.
        rate: q in [0, 1].
        seed: a `keras.random.SeedGenerator` (or an int seed).

    Returns:
        float32 [B, Sq, Sk].
    """
    rows = tf.shape(weights)[:2]
    draws = keras.random.uniform(tf.concat([rows, [1]], axis=0), seed=seed)
    return tf.where(draws < rate, tf.ones_like(weights), weights)
