"""Training checkpoints: layout, naming, and what a restore refuses."""

import keras
import numpy as np
import pytest

from syntax_t2t.training import checkpoints

pytestmark = pytest.mark.backends


class TwoLayers(keras.Model):
    """Layers in a Python list, which TensorFlow's own tracking misses."""

    def __init__(self, first="dense", second="other", width=3, **kwargs):
        super().__init__(**kwargs)
        self.stack = [keras.layers.Dense(width, name=first), keras.layers.Dense(2, name=second)]

    def call(self, x):
        for layer in self.stack:
            x = layer(x)
        return x


def built(model):
    model(np.zeros((1, 4), "float32"))
    return model


def make_checkpoint(directory, model, keep=3):
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    step = keras.Variable(0, dtype="int32", trainable=False)
    return checkpoints.TrainingCheckpoint(str(directory), model, optimizer, step, keep), optimizer, step


def test_model_weights_are_keyed_by_path():
    model = built(TwoLayers())
    weights = checkpoints.model_weights(model)
    assert len(weights) == 4
    # Relative to the model: its own name is numbered per instance (two_layers_1).
    assert sorted(weights) == ["dense/bias", "dense/kernel", "other/bias", "other/kernel"]
    assert all(weights[weight.path.split("/", 1)[1]] is weight for weight in model.weights)


def test_weights_sharing_a_path_are_refused():
    with pytest.raises(ValueError,
                       match="several weights with the path.*same/bias, .*same/kernel; give its"):
        checkpoints.model_weights(built(TwoLayers(first="same", second="same")))


def test_save_names_by_step_keeps_the_newest_and_restores(tmp_path):
    model = built(TwoLayers())
    keeper, optimizer, step = make_checkpoint(tmp_path, model, keep=2)
    assert keeper.restore_latest() is None
    for value in (5, 10, 15):
        step.assign(value)
        model.stack[1].kernel.assign(np.full((3, 2), float(value)))
        keeper.save()
    assert keeper.latest.endswith("ckpt-15")
    assert [p.rsplit("/", 1)[1] for p in keeper.checkpoints] == ["ckpt-10", "ckpt-15"]

    other = built(TwoLayers())
    restored, _, other_step = make_checkpoint(tmp_path, other)
    assert restored.restore_latest() == 15
    assert int(other_step.numpy()) == 15
    np.testing.assert_array_equal(other.stack[1].kernel.numpy(), np.full((3, 2), 15.0))
    np.testing.assert_array_equal(other.stack[0].kernel.numpy(), model.stack[0].kernel.numpy())


def test_a_checkpoint_of_another_architecture_is_refused(tmp_path):
    keeper, _, _ = make_checkpoint(tmp_path, built(TwoLayers()))
    keeper.save()
    wider, _, _ = make_checkpoint(tmp_path, built(TwoLayers(width=5)))
    with pytest.raises(checkpoints.CheckpointMismatchError,
                       match="ckpt-0: the checkpoint does not match"):
        wider.restore_latest()
