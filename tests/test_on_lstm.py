"""Tests for syntax_t2t.layers.on_lstm: cumax and the ordered-neurons LSTM cell."""

import keras
import numpy as np
import pytest
from keras import ops

from syntax_t2t.layers.on_lstm import ONLSTMCell, cumax

pytestmark = pytest.mark.backends


def test_cumax_rises_from_zero_to_one():
    values = ops.convert_to_numpy(cumax(np.array([[0.0, np.log(3.0)]], np.float32)))
    np.testing.assert_allclose(values, [[0.25, 1.0]], rtol=1e-6)


@pytest.mark.parametrize("chunk_size", [1, 4])
def test_master_gates_are_monotone(chunk_size):
    rng = np.random.default_rng(1)
    cell = ONLSTMCell(16, chunk_size)
    cell.build((None, 6))
    # Large random weights so that the softmax is far from uniform.
    cell.set_weights([w + rng.normal(scale=3.0, size=w.shape) for w in cell.get_weights()])
    inputs = rng.normal(size=(5, 6)).astype(np.float32)
    hidden = rng.normal(size=(5, 16)).astype(np.float32)
    forget, input_ = (ops.convert_to_numpy(g) for g in cell.master_gates(inputs, hidden))
    assert (np.diff(forget, axis=-1) >= -1e-6).all() and (np.diff(input_, axis=-1) <= 1e-6).all()
    assert forget.min() >= 0 and forget.max() <= 1 + 1e-6
    np.testing.assert_allclose(forget[:, -1], 1.0, rtol=1e-5)
    np.testing.assert_allclose(input_[:, -1], 0.0, atol=1e-6)
    # A chunk's neurons share their master gate.
    chunks = forget.reshape(5, 16 // chunk_size, chunk_size)
    assert (chunks == chunks[..., :1]).all()


def test_cell_step_against_the_equations():
    rng = np.random.default_rng(2)
    cell = ONLSTMCell(4, 2)
    cell.build((None, 3))
    x, h, c = (rng.normal(size=(2, n)).astype(np.float32) for n in (3, 4, 4))
    new_h, (_, new_c) = cell(x, [h, c])
    kernel, recurrent, bias = cell.get_weights()
    z = x @ kernel + h @ recurrent + bias
    sigmoid = lambda v: 1 / (1 + np.exp(-v))

    def np_cumax(v):
        e = np.exp(v - v.max(-1, keepdims=True))
        return np.cumsum(e / e.sum(-1, keepdims=True), axis=-1)

    mf = np.repeat(np_cumax(z[:, 0:2]), 2, axis=-1)
    mi = np.repeat(1 - np_cumax(z[:, 2:4]), 2, axis=-1)
    f, i, o, g = (z[:, 4 + 4 * k: 8 + 4 * k] for k in range(4))
    w = mf * mi
    expected_c = (sigmoid(f) * w + mf - w) * c + (sigmoid(i) * w + mi - w) * np.tanh(g)
    np.testing.assert_allclose(new_c, expected_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new_h, sigmoid(o) * np.tanh(expected_c), rtol=1e-5, atol=1e-6)


def test_runs_as_a_keras_rnn():
    outputs = keras.layers.RNN(ONLSTMCell(8, 4), return_sequences=True)(np.ones([2, 5, 3], "float32"))
    assert outputs.shape == (2, 5, 8)
    with pytest.raises(ValueError, match="multiple of chunk_size"):
        ONLSTMCell(6, 4)
