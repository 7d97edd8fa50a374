"""The training losses of the models: translation and head selection."""

import math

import tensorflow as tf

PAD_ID = 0
# Attention logits at or below half of this are masked keys (layers/attention.py).
MASKED = -1e9


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


def head_selection_cross_entropy(logits, gold_heads, label_smoothing=0.0):
    """Cross-entropy of attention rows against gold head positions (thesis 4.1).

    Row i of `logits` is the parse head's pre-softmax attention of position i
    over all positions; its softmax is read as the distribution of i's head
    (Dozat and Manning's head selection). With `label_smoothing` eps the
    gold column gets `1 - eps` and each other column `eps / (S - 1)`, minus
    the soft targets' entropy, as T2T's `smoothing_cross_entropy` does with
    the n unmasked columns as its vocabulary.

    Args:
        logits: float [B, S, S], masked where keys are padding.
        gold_heads: int [B, S], the position of each position's head, or -1
            for rows without one (the `<ROOT>` position, `<EOS>`, padding).
        label_smoothing: eps in [0, 1).

    Returns:
        float32 scalar: the mean over rows with a gold head (0 if none).
    """
    gold_heads = tf.cast(gold_heads, tf.int32)
    weights = tf.cast(gold_heads >= 0, tf.float32)
    logits = tf.cast(logits, tf.float32)
    labels = tf.maximum(gold_heads, 0)
    if label_smoothing:
        # Smoothing spreads over the columns that can be a head: masked
        # (padding) keys are no candidates.
        valid = tf.cast(logits > MASKED / 2, tf.float32)
        columns = tf.reduce_sum(valid, axis=-1)
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        confidence = 1.0 - label_smoothing
        low = label_smoothing / tf.maximum(columns - 1.0, 1.0)
        gold = tf.gather(log_probs, labels, axis=-1, batch_dims=2)
        cross_entropy = (-(confidence - low) * gold
                         - low * tf.reduce_sum(log_probs * valid, axis=-1))
        cross_entropy += (confidence * math.log(confidence)
                          + (columns - 1.0) * low * tf.math.log(low + 1e-20))
    else:
        cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits)
    return tf.reduce_sum(cross_entropy * weights) / tf.maximum(tf.reduce_sum(weights), 1.0)


#: `parse_loss` values: what the parse head's cross-entropy is taken of.
PARSE_LOSSES = ("logits", "attention")
#: The default `parse_label_smoothing` of each form (`None` in the hparams).
PARSE_LABEL_SMOOTHING = {"logits": 0.0, "attention": 0.1}


def parse_loss(logits, gold_heads, form, label_smoothing=None):
    """The parse head's loss in one of two formulations.

    `"logits"`: cross-entropy of softmax(logits), the head's own attention
    distribution, against the gold heads (Dozat and Manning's head
    selection; the form the thesis's text describes).

    `"attention"`: cross-entropy of softmax(p) where p = softmax(logits) are
    the head's attention *probabilities*, with label smoothing 0.1 by
    default. This is what a public T2T usr_dir matching the thesis's names
    trains: its `parsing()` returns the post-softmax attention weights of the
    parse head as "logits" to T2T's `padded_cross_entropy`. Since p lies in
    [0, 1], softmax(p) is nearly uniform and the gradient is much weaker than
    the `"logits"` form's (about a tenth at uniform attention); padding
    columns (p = 0) take part in that softmax as they did there.

    Args:
        logits: float [B, S, S], the head's masked pre-softmax scores.
        gold_heads: int [B, S], head positions, -1 for rows without one.
        form: one of `PARSE_LOSSES`.
        label_smoothing: eps, or None for the form's default.

    Returns:
        float32 scalar, the mean over rows with a gold head.

    Raises:
        ValueError: an unknown form.
    """
    if form not in PARSE_LOSSES:
        raise ValueError(f"parse_loss={form!r}: expected one of {', '.join(PARSE_LOSSES)}")
    if label_smoothing is None:
        label_smoothing = PARSE_LABEL_SMOOTHING[form]
    if form == "attention":
        logits = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
    return head_selection_cross_entropy(logits, gold_heads, label_smoothing)


def attention_entropy(logits, gold_heads):
    """Mean entropy (nats) of the head's attention rows that have a gold head.

    Args:
        logits: float [B, S, S], the head's masked pre-softmax scores.
        gold_heads: int [B, S], -1 for rows that are not scored.

    Returns:
        float32 scalar (0 when no row is scored).
    """
    logits = tf.cast(logits, tf.float32)
    probs = tf.nn.softmax(logits, axis=-1)
    entropy = -tf.reduce_sum(probs * tf.nn.log_softmax(logits, axis=-1), axis=-1)
    weights = tf.cast(tf.cast(gold_heads, tf.int32) >= 0, tf.float32)
    return tf.reduce_sum(entropy * weights) / tf.maximum(tf.reduce_sum(weights), 1.0)
