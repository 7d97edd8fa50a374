"""Clipping by global norm (`backend/clipping.py`): the rule both train steps follow, any backend."""

import keras
import numpy as np
import pytest

from syntax_t2t.backend import clipping

pytestmark = pytest.mark.backends


def as_numpy(values):
    return [None if value is None else keras.ops.convert_to_numpy(value) for value in values]


def test_the_global_norm_is_that_of_all_gradients_together():
    gradients = [np.array([3.0, 4.0], np.float32), None, np.array([[0.0, 12.0]], np.float32)]
    assert float(clipping.global_norm(gradients)) == pytest.approx(13.0, rel=1e-6)
    assert float(clipping.global_norm([None])) == 0.0


def test_a_larger_norm_is_scaled_to_the_bound_and_none_is_kept():
    gradients = [np.array([3.0, 4.0], np.float32), None, np.array([[0.0, 12.0]], np.float32)]
    clipped = as_numpy(clipping.clip_by_global_norm(gradients, 1.3))
    assert clipped[1] is None
    np.testing.assert_allclose(clipped[0], [0.3, 0.4], rtol=1e-6)
    np.testing.assert_allclose(clipped[2], [[0.0, 1.2]], rtol=1e-6)


def test_a_smaller_norm_passes_unchanged_and_the_bound_may_be_a_tensor():
    gradients = [np.array([0.3, 0.4], np.float32)]
    clipped = as_numpy(clipping.clip_by_global_norm(gradients, keras.ops.convert_to_tensor(2.0)))
    np.testing.assert_allclose(clipped[0], [0.3, 0.4], rtol=1e-6)


def test_the_dtype_of_each_gradient_is_kept():
    clipped = clipping.clip_by_global_norm([np.array([30.0, 40.0], np.float16)], 5.0)
    assert keras.backend.standardize_dtype(clipped[0].dtype) == "float16"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(clipped[0]), [3.0, 4.0], rtol=1e-3)


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_a_non_finite_norm_makes_every_gradient_nan(bad):
    # Not zeros: the step's finiteness check must see it and refuse the update.
    gradients = [np.array([bad, 1.0], np.float32), np.array([2.0], np.float32)]
    clipped = as_numpy(clipping.clip_by_global_norm(gradients, 1.0))
    assert all(np.all(np.isnan(gradient)) for gradient in clipped)
