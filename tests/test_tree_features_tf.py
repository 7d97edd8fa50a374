"""Label matrices computed on the device (`keras.ops`) equal the numpy reference of features.py.

The module runs under every Keras backend; "compiled" is XLA the backend's
way (`tf.function(jit_compile=True)`, `jax.jit`).
"""

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops
from tree_strategies import dependency_heads

from syntax_t2t.data import features
from syntax_t2t.layers import tree_labels

pytestmark = pytest.mark.backends

# "I think this is a good example" (as in tests/test_features.py):
# think <- ROOT; I, is <- think; this, example <- is; a, good <- example.
ENGLISH_HEADS = [2, 0, 4, 2, 7, 7, 4]
I, THINK, THIS, IS, A, GOOD, EXAMPLE = range(1, 8)


def numpy(tensor):
    return ops.convert_to_numpy(tensor)


def compiled(function):
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(function, jit_compile=True)
    if backend == "jax":
        import jax

        return jax.jit(function)
    pytest.skip(f"no XLA on the {backend} backend")


def padded_batch(trees, extra_padding=0):
    """Design.md batch layout: words, then <EOS> and padding with head -1."""
    length = max(len(heads) for heads in trees) + 1 + extra_padding
    batch = np.full((len(trees), length), -1, np.int32)
    for row, heads in enumerate(trees):
        batch[row, :len(heads)] = heads
    return batch


def check_against_reference(tf_labels, trees, reference, no_tree_label, include_root):
    offset = 1 if include_root else 0
    for row, heads in enumerate(trees):
        n = len(heads) + offset
        expected = reference(heads)
        np.testing.assert_array_equal(tf_labels[row, :n, :n], expected)
        # Every pair with a non-word position (EOS, padding) gets the no-tree label.
        assert (tf_labels[row, n:, :] == no_tree_label).all()
        assert (tf_labels[row, :, n:] == no_tree_label).all()


@settings(max_examples=30, deadline=None)
@given(st.lists(dependency_heads(max_tokens=9), min_size=1, max_size=4), st.integers(0, 2),
       st.integers(1, 6), st.booleans())
def test_tree_distance_labels_equal_reference(trees, extra_padding, max_distance, include_root):
    batch = padded_batch(trees, extra_padding)
    labels = numpy(tree_labels.tree_distance_labels(batch, max_distance, include_root))
    check_against_reference(
        labels, trees,
        lambda heads: features.tree_distance_labels(heads, max_distance, include_root),
        tree_labels.tree_distance_label_count(max_distance) - 1, include_root)


@settings(max_examples=30, deadline=None)
@given(st.lists(dependency_heads(max_tokens=9), min_size=1, max_size=4), st.integers(0, 2),
       st.integers(1, 6), st.booleans())
def test_tree_traversal_labels_equal_reference(trees, extra_padding, max_traversal, include_root):
    batch = padded_batch(trees, extra_padding)
    labels = numpy(tree_labels.tree_traversal_labels(batch, max_traversal, include_root))
    check_against_reference(
        labels, trees,
        lambda heads: features.traversal_labels(heads, max_traversal, include_root),
        tree_labels.tree_traversal_label_count(max_traversal) - 1, include_root)


def test_traversal_codes_of_the_thesis_example():
    """Figure 3.3: from "is", ROOT is "UU", "I" is "L" (left sibling), "a" is "DD"."""
    vocab = features.traversal_vocab(10)
    labels = numpy(tree_labels.tree_traversal_labels(padded_batch([ENGLISH_HEADS]), 10,
                                                     include_root=True))[0]
    code = {(i, j): vocab[labels[i, j]] for i in range(8) for j in range(8)}
    assert code[IS, 0] == "UU"
    assert code[IS, I] == "L"
    assert code[I, IS] == "R"
    assert code[IS, A] == "DD"
    assert code[A, IS] == "UU"
    assert code[GOOD, A] == "L"
    assert code[THIS, GOOD] == "RD"
    assert code[IS, IS] == ""


def test_tree_distances_of_the_thesis_example():
    """Figure 3.2: "is" is 1 edge from "think" and 2 from "a"; overflow above the maximum."""
    distances = numpy(tree_labels.tree_distance_labels(padded_batch([ENGLISH_HEADS]), 20))[0]
    assert distances[IS - 1, THINK - 1] == 1
    assert distances[IS - 1, A - 1] == 2
    assert distances[A - 1, I - 1] == 4
    clipped = numpy(tree_labels.tree_distance_labels(padded_batch([ENGLISH_HEADS]), 2))[0]
    assert clipped[A - 1, I - 1] == 3  # the overflow label max_distance + 1
    assert clipped[A - 1, 7] == 4  # the EOS column: the no-tree label
    assert tree_labels.tree_distance_label_count(2) == 5


def test_labels_under_xla_equal_eager():
    trees = [ENGLISH_HEADS, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [3, 3, 0]]
    batch = padded_batch(trees, extra_padding=3)

    def labels(heads):
        return (tree_labels.tree_distance_labels(heads, 5),
                tree_labels.tree_traversal_labels(heads, 4, include_root=True))

    distances, traversals = (numpy(x) for x in compiled(labels)(batch))
    np.testing.assert_array_equal(distances, numpy(tree_labels.tree_distance_labels(batch, 5)))
    np.testing.assert_array_equal(
        traversals, numpy(tree_labels.tree_traversal_labels(batch, 4, include_root=True)))
    # The chain of 10 tokens is 10 deep: the ancestor closure needs all its squarings.
    assert distances[1, 0, 9] == 6  # distance 9, overflow label 5 + 1


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="only TensorFlow graphs have shapes unknown when traced")
def test_labels_of_a_batch_whose_length_is_unknown_when_traced():
    import tensorflow as tf

    # The number of squarings then comes from the traced length.
    trees = [ENGLISH_HEADS, list(range(16))]
    batch = padded_batch(trees, extra_padding=1)
    traced = tf.function(lambda heads: tree_labels.tree_traversal_labels(heads, 20, True),
                         input_signature=[tf.TensorSpec([None, None], tf.int32)])
    np.testing.assert_array_equal(
        numpy(traced(batch)), numpy(tree_labels.tree_traversal_labels(batch, 20, True)))
    np.testing.assert_array_equal(numpy(traced(batch))[1, :17, :17],
                                  features.traversal_labels(list(range(16)), 20, True))


def test_deep_chain_needs_every_squaring():
    """A 16-token chain: the deepest token is 16 steps below ROOT."""
    chain = list(range(16))
    labels = tree_labels.tree_traversal_labels(padded_batch([chain]), 20, include_root=True)
    np.testing.assert_array_equal(numpy(labels)[0, :17, :17],
                                  features.traversal_labels(chain, 20, include_root=True))


@pytest.mark.parametrize("length,k,offset", [(6, 2, 0), (9, 3, 0), (1, 20, 4)])
def test_relative_position_labels_equal_reference(length, k, offset):
    full = features.relative_positions(length + offset, k)
    labels = tree_labels.relative_position_labels(length, length + offset, k, query_offset=offset)
    np.testing.assert_array_equal(numpy(labels), full[offset:offset + length, :])
    assert tree_labels.relative_position_label_count(k) == 2 * k + 1
