"""The training losses of the models: translation and head selection."""

import math

import tensorflow as tf

PAD_ID = 0


def label_smoothed_cross_entropy(logits, targets, label_smoothing):
    """T2T's label-smoothed cross-entropy per target token, padding masked.

    The gold token gets probability `1 - eps` and every other token
    `eps / (V - 1)`. As T2T's `smoothing_cross_entropy`, the minimum value
    of the smoothed cross-entropy (the entropy of the soft targets) is
    subtracted, so a perfect model scores 0; this shifts the loss by a
    constant and leaves the gradients unchanged. With `eps = 0` the result
    is the plain negative log-likelihood per token. The soft targets are
    never materialised: the sum over the vocabulary is the gold term plus
    `eps / (V - 1)` times the sum of all log-probabilities.

    Args:
        logits: float [B, T, V].
        targets: int [B, T], 0 = padding.
        label_smoothing: eps in [0, 1).

    Returns:
        float32 scalar: the mean over non-padding target tokens.
    """
    logits = tf.cast(logits, tf.float32)
    targets = tf.cast(targets, tf.int32)
    vocab_size = tf.cast(tf.shape(logits)[-1], tf.float32)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    confidence = 1.0 - label_smoothing
    low = label_smoothing / (vocab_size - 1.0)
    gold = tf.gather(log_probs, targets, axis=-1, batch_dims=2)
    cross_entropy = -(confidence - low) * gold - low * tf.reduce_sum(log_probs, axis=-1)
    minimum = -(confidence * math.log(confidence)
                + (vocab_size - 1.0) * low * tf.math.log(low + 1e-20))
    weights = tf.cast(tf.not_equal(targets, PAD_ID), tf.float32)
    total = tf.reduce_sum((cross_entropy - minimum) * weights)
    return total / tf.maximum(tf.reduce_sum(weights), 1.0)


def head_selection_cross_entropy(logits, gold_heads):
    """Cross-entropy of attention rows against gold head positions (thesis 4.1).

    Row i of `logits` is the parse head's pre-softmax attention of position i
    over all positions; its softmax is read as the distribution of i's head
    (Dozat and Manning's head selection).

    Args:
        logits: float [B, S, S], masked where keys are padding.
        gold_heads: int [B, S], the position of each position's head, or -1
            for rows without one (the `<ROOT>` position, `<EOS>`, padding).

    Returns:
        float32 scalar: the mean over rows with a gold head (0 if none).
    """
    gold_heads = tf.cast(gold_heads, tf.int32)
    weights = tf.cast(gold_heads >= 0, tf.float32)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.maximum(gold_heads, 0), logits=tf.cast(logits, tf.float32))
    return tf.reduce_sum(cross_entropy * weights) / tf.maximum(tf.reduce_sum(weights), 1.0)
