"""Counts behind the dev-set metrics, computed on the device per batch.

A supervised head's attachment counts (UAS) are its criterion's
(`criteria/head_gold.py`).

Each function returns `(correct, total)` as float32 scalars so that a whole
dev set's accuracy is the ratio of summed counts, independent of how the
batches were cut.
"""

import tensorflow as tf

PAD_ID = 0


def token_accuracy_counts(logits: tf.Tensor, targets: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Teacher-forced predictions that equal the target, over non-padding targets.

    Args:
        logits: [B, T, V] scores of the next target token.
        targets: [B, T] int gold ids, 0 for padding (the `<EOS>` counts).

    Returns:
        (correct, total) float32 scalars.
    """
    real = tf.not_equal(targets, PAD_ID)
    predicted = tf.argmax(logits, axis=-1, output_type=targets.dtype)
    correct = tf.logical_and(real, tf.equal(predicted, targets))
    return (tf.reduce_sum(tf.cast(correct, tf.float32)),
            tf.reduce_sum(tf.cast(real, tf.float32)))


def target_token_count(targets: tf.Tensor) -> tf.Tensor:
    """The number of non-padding target tokens (what tokens/s counts)."""
    return tf.reduce_sum(tf.cast(tf.not_equal(targets, PAD_ID), tf.float32))
