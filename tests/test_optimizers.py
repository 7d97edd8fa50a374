"""The optimizer factory and clipping by the global norm of the summed gradient."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from syntax_t2t.hparams import HParams, HParamsError
from syntax_t2t.training import optimizers
from syntax_t2t.training.schedules import T2T_NOAM_SCALE, NoamSchedule


def hparams(**overrides):
    return HParams(optimizer="adam", adam_beta1=0.9, adam_beta2=0.997, adam_epsilon=1e-9,
                   learning_rate=0.2, hidden_size=512,
                   learning_rate_warmup_steps=8000).override(overrides)


def test_adam_with_t2t_settings_on_the_noam_schedule():
    optimizer = optimizers.make_optimizer(hparams(), "float32")
    assert isinstance(optimizer, keras.optimizers.Adam)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.997, 1e-9)
    variable = tf.Variable([1.0])
    optimizer.build([variable])
    for updates in (0, 7999, 20000):
        optimizer.iterations.assign(updates)
        assert float(optimizer.learning_rate) == pytest.approx(
            float(NoamSchedule(0.2 * T2T_NOAM_SCALE, 512, 8000)(updates)), rel=1e-6)


def test_float16_gets_dynamic_loss_scaling_and_bfloat16_does_not():
    scaled = optimizers.make_optimizer(hparams(), "mixed_float16")
    assert isinstance(scaled, keras.optimizers.LossScaleOptimizer)
    assert isinstance(scaled.inner_optimizer, keras.optimizers.Adam)
    assert isinstance(optimizers.make_optimizer(hparams(), "mixed_bfloat16"), keras.optimizers.Adam)


def test_other_optimizers_are_refused():
    with pytest.raises(HParamsError, match="optimizer='adagrad' is not supported; use 'adam' or 'sgd'"):
        optimizers.make_optimizer(hparams(optimizer="adagrad"), "float32")


def test_plain_sgd_keeps_a_constant_rate():
    optimizer = optimizers.make_optimizer(hparams(optimizer="sgd", learning_rate=1.0), "float32")
    assert type(optimizer) is keras.optimizers.SGD
    variable = tf.Variable([1.0, -2.0])
    optimizer.build([variable])
    for _ in range(2):
        optimizer.apply([tf.constant([0.5, 0.25])], [variable])
    np.testing.assert_allclose(variable.numpy(), [0.0, -2.5])
    assert float(optimizer.learning_rate) == 1.0


def test_halving_sgd_halves_when_the_dev_loss_gets_worse_and_resumes_from_a_checkpoint(tmp_path):
    settings = hparams(optimizer="sgd", learning_rate=1.0).define("learning_rate_halving", True)
    optimizer = optimizers.make_optimizer(settings, "float32")
    assert isinstance(optimizer, optimizers.HalvingSGD)
    optimizer.build([tf.Variable([0.0])])
    # The first loss has nothing to be worse than; 3.0 -> 2.0 improves; 2.0 -> 2.5 worsens.
    assert [optimizer.observe_dev_loss(loss) for loss in (3.0, 2.0, 2.5, 2.4, 2.6)] == [
        False, False, True, False, True]
    assert float(optimizer.learning_rate) == 0.25
    path = tf.train.Checkpoint(optimizer=optimizer).save(str(tmp_path / "ckpt"))
    restored = optimizers.make_optimizer(settings, "float32")
    restored.build([tf.Variable([0.0])])
    tf.train.Checkpoint(optimizer=restored).restore(path).assert_consumed()
    assert float(restored.learning_rate) == 0.25
    assert restored.observe_dev_loss(2.7) and float(restored.learning_rate) == 0.125


def global_norm(gradients):
    return float(np.sqrt(sum(np.sum(np.square(tf.convert_to_tensor(g).numpy()))
                             for g in gradients if g is not None)))


def test_clipping_scales_to_the_bound_and_keeps_small_gradients():
    optimizer = optimizers.make_optimizer(hparams(), "float32")
    big = [tf.constant([3.0, 4.0]), None, tf.constant([[0.0, 12.0]])]  # norm 13
    clipped = optimizers.clip_by_global_norm(big, 1.3, optimizer)
    assert clipped[1] is None
    np.testing.assert_allclose(clipped[0].numpy(), [0.3, 0.4], rtol=1e-6)
    np.testing.assert_allclose(clipped[2].numpy(), [[0.0, 1.2]], rtol=1e-6)
    small = [tf.constant([0.3, 0.4])]
    np.testing.assert_allclose(optimizers.clip_by_global_norm(small, 1.0, optimizer)[0].numpy(),
                               [0.3, 0.4])


def test_sparse_gradients_are_clipped_by_the_norm_of_their_sum():
    # Token 1 occurs twice: the summed gradient of row 1 is [6, 8] (norm 10),
    # although the norm of the slices' values is sqrt(50).
    slices = tf.IndexedSlices(values=tf.constant([[3.0, 4.0], [3.0, 4.0]]),
                              indices=tf.constant([1, 1]), dense_shape=tf.constant([3, 2]))
    optimizer = optimizers.make_optimizer(hparams(), "float32")
    clipped = optimizers.clip_by_global_norm([slices], 5.0, optimizer)
    np.testing.assert_allclose(tf.convert_to_tensor(clipped[0]).numpy(),
                               [[0, 0], [3.0, 4.0], [0, 0]], rtol=1e-6)


def test_the_bound_follows_the_loss_scale():
    optimizer = optimizers.make_optimizer(hparams(), "mixed_float16")
    variable = tf.Variable([0.0, 0.0])
    optimizer.build([variable])
    scale = float(optimizers.loss_scale(optimizer))
    assert scale == 2.0 ** 15
    scaled_gradient = [tf.constant([3.0, 4.0]) * scale]  # unscaled norm 5
    clipped = optimizers.clip_by_global_norm(scaled_gradient, 1.0, optimizer)
    assert global_norm(clipped) / scale == pytest.approx(1.0, rel=1e-6)
    infinite = optimizers.clip_by_global_norm([tf.constant([np.inf, 1.0])], 1.0, optimizer)
    assert not np.all(np.isfinite(infinite[0].numpy()))


def test_an_embedding_gradient_is_summed_per_row_before_the_optimizer_sees_it():
    # Token 1 occurs twice: its gradient is [2, 2]. Keras's Adam on TensorFlow
    # would square the two slices separately (second moment 1 + 1, not 2 ** 2).
    slices = tf.IndexedSlices(values=tf.ones((3, 2)), indices=tf.constant([0, 1, 1]),
                              dense_shape=tf.constant([3, 2]))
    dense = optimizers.dense_gradients([slices, None, tf.constant([5.0])])
    assert dense[1] is None
    assert not isinstance(dense[0], tf.IndexedSlices)
    np.testing.assert_array_equal(dense[0].numpy(), [[1, 1], [2, 2], [0, 0]])
    np.testing.assert_array_equal(dense[2].numpy(), [5.0])
