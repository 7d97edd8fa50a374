"""Checkpoints in TensorFlow's format (runs before the directory format): found, resumed, converted.

`legacy_save` writes what `TrainingCheckpoint` wrote before (a
`tf.train.CheckpointManager` of `model_weights` by full Keras path, the
model's numbered name included, `optimizer`, `step` and `random_state`,
with TensorFlow's `checkpoint` index file).
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from syntax_t2t.checkpointing import directory_format, discovery, tf_format, weights
from syntax_t2t.checkpointing.errors import CheckpointMismatchError
from syntax_t2t.decoding.model_loading import resolve_checkpoint
from syntax_t2t.hparams import HParams
from syntax_t2t.training import checkpoints, optimizers

HPARAMS = HParams(hidden_size=16, optimizer="adam", adam_beta1=0.9, adam_beta2=0.997,
                  adam_epsilon=1e-9, learning_rate=0.2, learning_rate_warmup_steps=10,
                  clip_grad_norm=0.0)


class Stack(keras.Model):
    """Dense layers, built in the first call (under the model's numbered name), with dropout."""

    def __init__(self, depth=2, **kwargs):
        super().__init__(**kwargs)
        self.dense = [keras.layers.Dense(3, name=f"dense_{i}") for i in range(depth)]
        self.dropout = keras.layers.Dropout(0.5, seed=3, name="dropout")

    def call(self, x, training=False):
        for layer in self.dense:
            x = self.dropout(layer(x), training=training)
        return x


def built(model):
    model(np.zeros((1, 4), "float32"))
    return model


def optimizer_for(model, policy="float32", steps=0):
    optimizer = optimizers.make_optimizer(HPARAMS, policy)
    optimizer.build(model.trainable_variables)
    for _ in range(steps):
        optimizer.apply([tf.ones_like(v) for v in model.trainable_variables],
                        model.trainable_variables)
    return optimizer


def legacy_save(directory, model, optimizer, step, model_only=False):
    parts = dict(model_weights={weight.path: weight for weight in model.weights},
                 step=tf.Variable(step, dtype=tf.int64))
    if not model_only:
        parts.update(optimizer=optimizer, random_state=checkpoints.random_state(model))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(**parts), str(directory),
                                         max_to_keep=None, checkpoint_name="ckpt")
    return manager.save(checkpoint_number=step)


def keeper(directory, model, optimizer=None, keep=3):
    optimizer = optimizer or optimizer_for(model)
    step = tf.Variable(0, dtype=tf.int64)
    return checkpoints.TrainingCheckpoint(str(directory), model, optimizer, step, keep), step


def values(variables):
    return [np.asarray(variable.numpy()) for variable in variables]


def test_a_tensorflow_checkpoint_resumes_and_the_next_save_is_a_directory(tmp_path):
    model = built(Stack())
    optimizer = optimizer_for(model, steps=2)
    legacy_save(tmp_path, model, optimizer, 20)
    other = built(Stack())
    other_optimizer = optimizer_for(other)
    restorer, step = keeper(tmp_path, other, other_optimizer, keep=1)
    assert restorer.restore_latest() == 20
    assert restorer.restored_parts == {"model_weights", "optimizer", "step", "random_state"}
    for expected, got in zip(values(model.variables + optimizer.variables),
                             values(other.variables + other_optimizer.variables)):
        np.testing.assert_array_equal(got, expected)
    step.assign(21)
    assert restorer.save() == str(tmp_path / "ckpt-21")
    # Keep-N counts both formats: ckpt-20's TensorFlow files went.
    assert not [name for name in os.listdir(tmp_path) if name.startswith("ckpt-20")]


MISSING_999 = 'model_checkpoint_path: "ckpt-999"\nall_model_checkpoint_paths: "ckpt-999"\n'


@pytest.mark.parametrize("index", [None, MISSING_999, "\x00{garbage"],
                         ids=["deleted", "names-a-missing-ckpt-999", "garbage"])
def test_a_damaged_index_neither_hides_nor_deletes_a_complete_checkpoint(tmp_path, index):
    # Before: the deleted index made the resumed run delete ckpt-50 as a
    # killed save's leftover and train from step 0; the missing ckpt-999
    # made it train from 0 over ckpt-50; decoding said "holds no checkpoint".
    model = built(Stack())
    legacy_save(tmp_path, model, optimizer_for(model, steps=1), 50)
    os.remove(tmp_path / "checkpoint")
    if index is not None:
        (tmp_path / "checkpoint").write_text(index)
    resumed, _ = keeper(tmp_path, built(Stack()))
    assert resumed.remove_partial_saves() == []
    assert {"ckpt-50.index", "ckpt-50.data-00000-of-00001"} <= set(os.listdir(tmp_path))
    assert resumed.restore_latest() == 50
    assert resolve_checkpoint(str(tmp_path), None) == str(tmp_path / "ckpt-50")


def test_a_killed_merge_is_removed_and_a_complete_unnamed_checkpoint_is_kept(tmp_path):
    model = built(Stack())
    optimizer = optimizer_for(model, steps=1)
    legacy_save(tmp_path, model, optimizer, 2)
    index = (tmp_path / "checkpoint").read_text()
    legacy_save(tmp_path, model, optimizer, 4)
    # Killed after ckpt-4 was merged, before `checkpoint` named it; and a
    # half-merged ckpt-6.
    (tmp_path / "checkpoint").write_text(index)
    (tmp_path / "ckpt-6.index").write_bytes(b"half")
    resumed, _ = keeper(tmp_path, built(Stack()))
    assert resumed.remove_partial_saves() == [str(tmp_path / "ckpt-6.index")]
    assert resumed.restore_latest() == 4


def test_a_tensorflow_checkpoint_with_weights_the_model_leaves_unused_is_refused(tmp_path):
    # Before: restored with half of its weights ignored.
    deep = built(Stack(depth=2))
    prefix = legacy_save(tmp_path, deep, None, 7, model_only=True)
    with pytest.raises(CheckpointMismatchError,
                       match=r"ckpt-7: the checkpoint does not fit model Stack with these hparams: "
                             r"2 saved model weights match nothing here and would be left unused "
                             r"\(dense_1/bias, dense_1/kernel\)"):
        weights.restore_model(built(Stack(depth=1)), prefix)
    legacy_save(tmp_path / "run", deep, optimizer_for(deep), 3)
    with pytest.raises(CheckpointMismatchError,
                       match=r"ckpt-3: the checkpoint does not match this model and optimizer: 2 "
                             r"saved model weights"):
        keeper(tmp_path / "run", built(Stack(depth=1)))[0].restore_latest()


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
def test_conversion_keeps_every_value(tmp_path, policy):
    model = built(Stack())
    optimizer = optimizer_for(model, policy, steps=2)
    for step in (3, 5):
        legacy_save(tmp_path, model, optimizer, step)
    legacy_save(tmp_path / "best", model, None, 5, model_only=True)
    scratch = built(Stack())
    written = checkpoints.convert_tensorflow_checkpoints(str(tmp_path), scratch, HPARAMS)
    assert written == [str(tmp_path / "ckpt-3"), str(tmp_path / "ckpt-5")]
    assert checkpoints.convert_tensorflow_checkpoints(str(tmp_path), scratch, HPARAMS) == []
    best = checkpoints.convert_tensorflow_checkpoints(str(tmp_path / "best"), scratch, HPARAMS)
    assert best == [str(tmp_path / "best" / "ckpt-5")]
    for directory in (tmp_path, tmp_path / "best"):
        stored = directory_format.open_checkpoint(str(directory / "ckpt-5"))
        converted = stored.arrays("model_weights")
        # The saved full paths ("stack/dense_0/kernel") lose the model's name.
        expected = {name.split("/", 1)[1]: value for name, value in
                    tf_format.read_part(str(directory / "ckpt-5"), "model_weights").items()}
        assert stored.step == 5 and converted.keys() == expected.keys()
        for name, value in expected.items():
            np.testing.assert_array_equal(converted[name], value)
    assert discovery.find_checkpoints(str(tmp_path))[-1].format == discovery.DIRECTORY_FORMAT
    other = built(Stack())
    other_optimizer = optimizer_for(other, policy)
    restorer, _ = keeper(tmp_path, other, other_optimizer)
    assert restorer.restore_latest() == 5
    assert restorer.restored_parts == {"model_weights", "optimizer", "step", "random_state"}
    for expected, got in zip(values(model.variables + optimizer.variables),
                             values(other.variables + other_optimizer.variables)):
        np.testing.assert_array_equal(got, expected)
