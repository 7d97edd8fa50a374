"""Counts behind the dev-set metrics, computed on the device per batch.

Each function returns `(correct, total)` as float32 scalars so that a whole
dev set's accuracy is the ratio of summed counts, independent of how the
batches were cut.
"""

import tensorflow as tf

PAD_ID = 0


def token_accuracy_counts(logits, targets):
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


def target_token_count(targets):
    """The number of non-padding target tokens (what tokens/s counts)."""
    return tf.reduce_sum(tf.cast(tf.not_equal(targets, PAD_ID), tf.float32))


def head_selection_counts(parse_logits, gold_positions):
    """Unlabelled attachments: each position's argmax head vs. its gold head position.

    The parse scores are over the `<ROOT>`-prefixed source: row `p` scores
    the candidate heads of the token at position `p` (columns, 0 = ROOT).

    Args:
        parse_logits: [B, S', S'] scores.
        gold_positions: [B, S'] int, the gold head position of each
            position, -1 where nothing is scored (ROOT, `<EOS>`, padding).

    Returns:
        (correct, total) float32 scalars: UAS = correct / total.
    """
    predicted = tf.argmax(parse_logits, axis=-1, output_type=gold_positions.dtype)
    scored = tf.greater_equal(gold_positions, 0)
    correct = tf.logical_and(scored, tf.equal(predicted, gold_positions))
    return (tf.reduce_sum(tf.cast(correct, tf.float32)),
            tf.reduce_sum(tf.cast(scored, tf.float32)))


def gold_positions_from_heads(src_heads, length):
    """`src_heads` [B, S] (-1 = no word) as gold positions [B, length] of the prefixed source.

    Word `i` (1-based) sits at position `i`, and its head value is already a
    position; position 0 (ROOT) and positions past the words get -1.
    """
    positions = tf.pad(src_heads, [[0, 0], [1, 0]], constant_values=-1)
    missing = tf.maximum(length - tf.shape(positions)[1], 0)
    positions = tf.pad(positions, [[0, 0], [0, missing]], constant_values=-1)
    return positions[:, :length]


def attachment_counts(parse_logits, src_heads):
    """`head_selection_counts` against the gold tree's heads.

    Args:
        parse_logits: [B, S', S'] scores over the `<ROOT>`-prefixed source.
        src_heads: [B, S] gold heads, -1 where there is no word (the
            `<EOS>` position and padding).

    Returns:
        (correct, total) float32 scalars.
    """
    gold = gold_positions_from_heads(src_heads, tf.shape(parse_logits)[1])
    return head_selection_counts(parse_logits, gold)
