"""Maximum spanning tree and head decoding, against brute force on small graphs."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntax_t2t.data.tree import TreeError, check_heads
from syntax_t2t.decoding.mst import best_heads, maximum_spanning_tree
from syntax_t2t.decoding.parse_heads import decode_heads, head_log_probs


def tree_score(scores, heads):
    return sum(scores[d + 1, h] for d, h in enumerate(heads))


def brute_force_best_tree(scores):
    n = len(scores) - 1
    best = -np.inf
    for heads in itertools.product(range(n + 1), repeat=n):
        try:
            check_heads(np.array(heads))
        except TreeError:
            continue
        best = max(best, tree_score(scores, heads))
    return best


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 5), seed=st.integers(0, 2 ** 32 - 1), integer=st.booleans())
def test_maximum_spanning_tree_matches_brute_force(n, seed, integer):
    rng = np.random.default_rng(seed)
    # Small integer scores make ties and cycles of equal weight common.
    shape = (n + 1, n + 1)
    scores = rng.integers(-3, 4, size=shape).astype(float) if integer else rng.normal(size=shape)
    heads = maximum_spanning_tree(scores)
    check_heads(heads)  # a well-formed tree, or this raises
    assert tree_score(scores, heads) == pytest.approx(brute_force_best_tree(scores))


def test_a_cycle_among_the_best_heads_is_broken_optimally():
    # Words 1 and 2 prefer each other (a cycle); ROOT is a weak second choice
    # for both, and breaking the cycle at word 2 costs less (5 - 4 < 6 - 3).
    scores = np.full((4, 4), -10.0)
    scores[1, 2], scores[1, 0] = 6.0, 3.0
    scores[2, 1], scores[2, 0] = 5.0, 4.0
    scores[3, 1] = 1.0
    assert best_heads(scores).tolist() == [2, 1, 1]
    assert maximum_spanning_tree(scores).tolist() == [2, 0, 1]


def test_a_word_never_heads_itself():
    scores = np.zeros((3, 3))
    scores[1, 1] = scores[2, 2] = 100.0
    assert best_heads(scores).tolist() == [0, 0]


def test_head_log_probs_ignore_eos_and_padding_and_normalise():
    # Sentence of 2 words inside a padded [5, 5] score matrix: positions 3
    # (<EOS>) and 4 (padding) would win if they were considered.
    logits = np.zeros((5, 5))
    logits[:, 3:] = 50.0
    logits[1, 0], logits[2, 1] = 2.0, 3.0
    log_probs = head_log_probs(logits, 2)
    assert log_probs.shape == (3, 3)
    np.testing.assert_allclose(np.exp(log_probs).sum(axis=1), 1.0)
    assert np.isneginf(np.diag(log_probs)).all()
    assert decode_heads(logits, 2, "argmax").tolist() == [0, 1]
    assert decode_heads(logits, 2, "mst").tolist() == [0, 1]


def test_argmax_keeps_cycles_and_mst_removes_them():
    logits = np.zeros((4, 4))
    logits[1, 2] = logits[2, 1] = 5.0  # words 1 and 2 head each other
    logits[3, 2] = 5.0
    logits[1, 0] = 1.0
    assert decode_heads(logits, 3, "argmax").tolist() == [2, 1, 2]
    tree = decode_heads(logits, 3, "mst")
    check_heads(tree)
    assert tree.tolist() == [0, 1, 2]


def test_unknown_decoder_and_bad_shapes_are_rejected():
    with pytest.raises(ValueError, match="unknown parse decoder 'viterbi'"):
        decode_heads(np.zeros((3, 3)), 2, "viterbi")
    with pytest.raises(ValueError, match="cannot hold 4 words"):
        decode_heads(np.zeros((3, 3)), 4)
    with pytest.raises(ValueError, match="finite"):
        maximum_spanning_tree(np.array([[0.0, 0.0], [np.nan, 0.0]]))
