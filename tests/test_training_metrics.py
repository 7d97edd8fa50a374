"""Token accuracy and UAS counts against hand-worked batches and a naive loop."""

import numpy as np
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from syntax_t2t.training import metrics


def one_hot_logits(ids, vocab):
    return tf.one_hot(ids, vocab, dtype=tf.float32)


def test_token_accuracy_ignores_padding():
    targets = tf.constant([[5, 6, 1, 0], [7, 1, 0, 0]])
    predicted = tf.constant([[5, 9, 1, 5], [7, 2, 4, 4]])  # 3 of the 5 real tokens
    correct, total = metrics.token_accuracy_counts(one_hot_logits(predicted, 10), targets)
    assert (float(correct), float(total)) == (3.0, 5.0)
    assert float(metrics.target_token_count(targets)) == 5.0


def test_attachment_counts_worked_example():
    # Sentence of 3 words: heads 2 0 2 (1-based, 0 = ROOT), then the <EOS>
    # position (-1) and one padding position (-1).
    src_heads = tf.constant([[2, 0, 2, -1, -1]])
    # Rows/columns: ROOT, w1, w2, w3, EOS, pad. Word 1 -> 2 (right),
    # word 2 -> 3 (wrong), word 3 -> 2 (right); the EOS and pad rows are
    # wrong on purpose and must not count.
    predicted_heads = np.array([[0, 2, 3, 2, 4, 4]])
    logits = one_hot_logits(predicted_heads, 6)
    correct, total = metrics.attachment_counts(logits, src_heads)
    assert (float(correct), float(total)) == (2.0, 3.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 6), st.integers(0, 10_000))
def test_attachment_counts_match_a_naive_loop(batch, length, seed):
    rng = np.random.default_rng(seed)
    words = rng.integers(0, length + 1, size=batch)
    heads = np.full((batch, length), -1)
    for b in range(batch):
        heads[b, :words[b]] = rng.integers(0, words[b] + 1, size=words[b])
    logits = rng.normal(size=(batch, length + 1, length + 1)).astype(np.float32)
    correct = total = 0
    for b in range(batch):
        for i in range(words[b]):
            total += 1
            correct += int(np.argmax(logits[b, i + 1]) == heads[b, i])
    got = metrics.attachment_counts(tf.constant(logits), tf.constant(heads, tf.int32))
    assert (float(got[0]), float(got[1])) == (correct, total)


def test_gold_positions_from_heads_shift_words_behind_root():
    src_heads = tf.constant([[2, 0, -1], [0, -1, -1]])
    np.testing.assert_array_equal(metrics.gold_positions_from_heads(src_heads, 5).numpy(),
                                  [[-1, 2, 0, -1, -1], [-1, 0, -1, -1, -1]])
    np.testing.assert_array_equal(metrics.gold_positions_from_heads(src_heads, 3).numpy(),
                                  [[-1, 2, 0], [-1, 0, -1]])


def test_head_selection_against_a_models_own_gold():
    # DiagonalParse's gold: each word's head is the previous position.
    gold = tf.constant([[-1, 0, 1, 2, -1]])
    predicted = np.array([[3, 0, 1, 1, 0]])  # words 1, 2 right; word 3 wrong
    correct, total = metrics.head_selection_counts(one_hot_logits(predicted, 5), gold)
    assert (float(correct), float(total)) == (2.0, 3.0)
