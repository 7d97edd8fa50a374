"""Tests for syntax_t2t.layers.tree_lstm: the binary Tree-LSTM of Eriguchi et al. (2016), eq. 11."""

import keras
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from keras import ops
from layer_gradients import compiled, value_and_gradients

from syntax_t2t.data.binary_tree import batch_binary_trees, binarize
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.layers.tree_lstm import BinaryTreeLSTM, BinaryTreeLSTMCell, root_states

pytestmark = pytest.mark.backends

D = 3


def numpy(value):
    return ops.convert_to_numpy(value)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference_cell(cell, left_h, left_c, right_h, right_c):
    """Eq. 11 written out gate by gate with the cell's U_l, U_r and b."""
    kernel, bias = numpy(cell.kernel), numpy(cell.bias)
    u_left, u_right = kernel[:D], kernel[D:]

    def gate(k):
        columns = slice(k * D, (k + 1) * D)
        return left_h @ u_left[:, columns] + right_h @ u_right[:, columns] + bias[columns]

    i, f_left, f_right, o, u = (gate(k) for k in range(5))
    c = sigmoid(i) * np.tanh(u) + sigmoid(f_left) * left_c + sigmoid(f_right) * right_c
    return sigmoid(o) * np.tanh(c), c


def arrays(*nested_lists):
    return [np.array(values, np.int32) for values in nested_lists]


def random_layer(seed=0):
    layer = BinaryTreeLSTM(D)
    layer.build()
    # Weights from NumPy, the same on every backend; non-zero biases, so that a
    # wrong gate order would show.
    rng = np.random.default_rng(seed)
    layer.cell.kernel.assign(rng.uniform(-0.5, 0.5, (2 * D, 5 * D)))
    layer.cell.bias.assign(rng.uniform(-0.5, 0.5, 5 * D))
    return layer


def test_the_cell_is_equation_11_and_forget_biases_start_at_one():
    cell = BinaryTreeLSTMCell(D, kernel_initializer="glorot_uniform", forget_bias=1.0)
    cell.build()
    np.testing.assert_array_equal(numpy(cell.bias), [0] * D + [1] * (2 * D) + [0] * (2 * D))
    cell.bias.assign(np.linspace(-1, 1, 5 * D))
    rng = np.random.default_rng(1)
    children = [rng.normal(size=(2, D)).astype(np.float32) for _ in range(4)]
    h, c = cell(*children)
    expected_h, expected_c = reference_cell(cell, *children)
    np.testing.assert_allclose(numpy(c), expected_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(numpy(h), expected_h, rtol=1e-5, atol=1e-6)


def test_a_tiny_tree_equals_the_hand_unrolled_computation():
    # ((w0 w1) w2) over three leaf positions: phrase slot 0 = node 3 = (0, 1) at
    # level 1, slot 1 = node 4 = (3, 2) at level 2, the root.
    layer = random_layer()
    rng = np.random.default_rng(2)
    leaf_h, leaf_c = (rng.normal(size=(1, 3, D)).astype(np.float32) for _ in range(2))
    phrase_h, phrase_c = layer(leaf_h, leaf_c, *arrays([[0, 3, -1]], [[1, 2, -1]], [[1, 2, -1]]))
    h3, c3 = reference_cell(layer.cell, leaf_h[0, 0], leaf_c[0, 0], leaf_h[0, 1], leaf_c[0, 1])
    h4, c4 = reference_cell(layer.cell, h3, c3, leaf_h[0, 2], leaf_c[0, 2])
    np.testing.assert_allclose(numpy(phrase_h)[0], [h3, h4, np.zeros(D)], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(numpy(phrase_c)[0], [c3, c4, np.zeros(D)], rtol=1e-5, atol=1e-6)
    root = root_states(leaf_h, phrase_h, np.array([[0, 3, -1]]), np.array([3]))
    np.testing.assert_allclose(numpy(root)[0], h4, rtol=1e-5, atol=1e-6)


def test_a_wide_level_is_computed_in_one_step():
    # (w0 w1) (w2 w3) are both level 1, the root level 2: the same two-slot
    # window must hold both level-1 phrases.
    layer = random_layer(3)
    rng = np.random.default_rng(3)
    leaf_h, leaf_c = (rng.normal(size=(1, 4, D)).astype(np.float32) for _ in range(2))
    phrase_h, _ = layer(leaf_h, leaf_c, *arrays([[0, 2, 4, -1]], [[1, 3, 5, -1]], [[1, 1, 2, -1]]))
    left = reference_cell(layer.cell, leaf_h[0, 0], leaf_c[0, 0], leaf_h[0, 1], leaf_c[0, 1])
    right = reference_cell(layer.cell, leaf_h[0, 2], leaf_c[0, 2], leaf_h[0, 3], leaf_c[0, 3])
    root_h, _ = reference_cell(layer.cell, left[0], left[1], right[0], right[1])
    np.testing.assert_allclose(numpy(phrase_h)[0, :3], [left[0], right[0], root_h],
                               rtol=1e-5, atol=1e-6)


@st.composite
def dependency_heads(draw, max_words=9):
    """Random dependency trees (projective or not): each word's head comes earlier in a random order."""
    n = draw(st.integers(1, max_words))
    order = draw(st.permutations(range(1, n + 1)))
    heads = [0] * n
    for position, word in enumerate(order[1:], start=1):
        heads[word - 1] = order[draw(st.integers(0, position - 1))]
    # Prague-style second ROOT dependents, sometimes.
    for word in order[1:]:
        if draw(st.integers(0, 9)) == 0:
            heads[word - 1] = 0
    return heads


def binary_tree_of(heads, rule):
    tree = DependencyTree.from_heads(["w"] * len(heads), heads)
    return binarize(phrase_structure_from_dependencies(tree), rule)


def run_alone(layer, leaf_h, leaf_c, tree):
    """The layer on one sentence padded to exactly its own length."""
    n = tree.num_leaves
    arrays = batch_binary_trees([tree], n)
    return layer(leaf_h[None, :n], leaf_c[None, :n], arrays["tree_left"], arrays["tree_right"],
                 arrays["tree_level"])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(dependency_heads(), min_size=1, max_size=4), st.sampled_from(["head", "right", "left"]))
def test_batched_and_one_by_one_encodings_agree(all_heads, rule):
    layer = random_layer(4)
    trees = [binary_tree_of(heads, rule) for heads in all_heads]
    positions = max(tree.num_leaves for tree in trees) + 2  # room for <EOS> and padding
    rng = np.random.default_rng(5)
    leaf_h, leaf_c = (rng.normal(size=(len(trees), positions, D)).astype(np.float32)
                      for _ in range(2))
    arrays = batch_binary_trees(trees, positions)
    phrase_h, phrase_c = layer(leaf_h, leaf_c, arrays["tree_left"], arrays["tree_right"],
                               arrays["tree_level"])
    roots = numpy(root_states(leaf_h, phrase_h, arrays["tree_left"],
                              np.array([tree.num_leaves for tree in trees])))
    phrase_h, phrase_c = numpy(phrase_h), numpy(phrase_c)
    for b, tree in enumerate(trees):
        n = tree.num_leaves
        alone_h, alone_c = (numpy(states) for states in run_alone(layer, leaf_h[b], leaf_c[b],
                                                                    tree))
        np.testing.assert_allclose(phrase_h[b, :n - 1], alone_h[0], atol=1e-5)
        np.testing.assert_allclose(phrase_c[b, :n - 1], alone_c[0], atol=1e-5)
        np.testing.assert_array_equal(phrase_h[b, n - 1:], 0.0)
        expected_root = alone_h[0, -1] if n > 1 else leaf_h[b, 0]
        np.testing.assert_allclose(roots[b], expected_root, atol=1e-5)


def test_a_sentence_without_a_parse_has_a_zero_root_and_no_phrases():
    layer = random_layer()
    leaf_h = np.ones([2, 3, D], np.float32)
    empty = np.full([2, 3], -1)
    phrase_h, _ = layer(leaf_h, leaf_h, empty, empty, empty)
    np.testing.assert_array_equal(numpy(phrase_h), 0.0)
    # Row 0 is a one-word tree (its word is the root), row 1 has no parse.
    roots = root_states(leaf_h, phrase_h, empty, np.array([1, 0]))
    np.testing.assert_array_equal(numpy(roots), [[1.0] * D, [0.0] * D])


def test_xla_compiles_it_and_gradients_reach_only_the_leaves_of_the_tree():
    layer = random_layer(6)
    tree = binary_tree_of([2, 0, 4, 2], "head")
    arrays = batch_binary_trees([tree], 6)
    leaf_h = keras.Variable(np.random.default_rng(7).normal(size=(1, 6, D)).astype(np.float32))
    leaf_c = np.zeros([1, 6, D], np.float32)
    args = (arrays["tree_left"], arrays["tree_right"], arrays["tree_level"])
    eager_h, _ = layer(leaf_h, leaf_c, *args)
    xla = compiled(lambda h, c, *a: layer(h, c, *a)[0])
    np.testing.assert_allclose(numpy(xla(leaf_h.value, leaf_c, *args)), numpy(eager_h), atol=1e-5)
    _, (gradient,) = value_and_gradients(lambda: ops.sum(layer(leaf_h, leaf_c, *args)[0]),
                                         [leaf_h])
    gradient = numpy(gradient)[0]
    assert np.all(np.abs(gradient[:4]).sum(axis=1) > 0)  # the four words
    np.testing.assert_array_equal(gradient[4:], 0.0)  # <EOS> and padding are no leaves


def test_every_weight_gets_a_gradient():
    layer = random_layer(8)
    leaf = np.random.default_rng(9).normal(size=(1, 2, D)).astype(np.float32)

    def total():
        phrase_h, phrase_c = layer(leaf, leaf, *arrays([[0, -1]], [[1, -1]], [[1, -1]]))
        return ops.sum(phrase_h) + ops.sum(phrase_c)

    _, gradients = value_and_gradients(total, layer.trainable_variables)
    assert len(gradients) == 2  # the kernel [U_l; U_r] and the bias
    assert all(g is not None and np.abs(numpy(g)).sum() > 0 for g in gradients)


@pytest.mark.parametrize("dtype_policy", ["mixed_bfloat16"])
def test_it_runs_under_mixed_precision(dtype_policy):
    layer = BinaryTreeLSTM(D, dtype=dtype_policy)
    layer.build()
    leaf = ops.cast(np.random.default_rng(10).normal(size=(1, 2, D)), "bfloat16")
    phrase_h, _ = layer(leaf, leaf, *arrays([[0, -1]], [[1, -1]], [[1, -1]]))
    assert keras.backend.standardize_dtype(phrase_h.dtype) == "bfloat16"
    assert layer.cell.kernel.dtype == "float32"
