"""Token accuracy counts against hand-worked batches (UAS counts: tests/test_criteria.py)."""

import tensorflow as tf

from syntax_t2t.training import metrics


def one_hot_logits(ids, vocab):
    return tf.one_hot(ids, vocab, dtype=tf.float32)


def test_token_accuracy_ignores_padding():
    targets = tf.constant([[5, 6, 1, 0], [7, 1, 0, 0]])
    predicted = tf.constant([[5, 9, 1, 5], [7, 2, 4, 4]])  # 3 of the 5 real tokens
    correct, total = metrics.token_accuracy_counts(one_hot_logits(predicted, 10), targets)
    assert (float(correct), float(total)) == (3.0, 5.0)
    assert float(metrics.target_token_count(targets)) == 5.0
