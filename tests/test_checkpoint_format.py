"""The directory checkpoint format on any backend: all restored, damage found, nothing lost.

No TensorFlow here: these run under both backends (`make test`'s JAX pass).
TensorFlow's own format and the cross-backend round trips are in
test_checkpoint_tf_format.py and test_checkpoint_backends.py.
"""

import json
import logging
import os

import keras
import numpy as np
import pytest

from syntax_t2t.checkpointing import directory_format, discovery, weights
from syntax_t2t.checkpointing.errors import (CheckpointMismatchError, CorruptCheckpointError)
from syntax_t2t.training import checkpoint_averaging, checkpoints

pytestmark = pytest.mark.backends


class Stack(keras.Model):
    """Dense layers, built in the first call (under the model's numbered name), with dropout."""

    def __init__(self, depth=2, width=3, **kwargs):
        super().__init__(**kwargs)
        self.dense = [keras.layers.Dense(width, name=f"dense_{i}") for i in range(depth)]
        self.dropout = keras.layers.Dropout(0.5, seed=3, name="dropout")

    def call(self, x, training=False):
        for layer in self.dense:
            x = self.dropout(layer(x), training=training)
        return x


def built(model):
    model(np.zeros((1, 4), "float32"))
    return model


class Position:
    """An input iterator whose position is a JSON-able state, as the NumPy pipeline's."""

    def __init__(self, at=0, refuse=False):
        self.at, self.refuse = at, refuse

    def state(self):
        return {"format": "test", "at": self.at}

    def restore(self, state):
        if self.refuse:
            raise ValueError("the saved input position is for other shards")
        self.at = state["at"]


def trained(model, steps=2):
    """A built Adam whose every variable moved away from its initial value."""
    optimizer = keras.optimizers.Adam(learning_rate=0.1)
    optimizer.build(model.trainable_variables)
    for _ in range(steps):
        optimizer.apply([keras.ops.ones(v.shape) for v in model.trainable_variables],
                        model.trainable_variables)
    return optimizer


def keeper(directory, model, optimizer=None, keep=3, iterator=None):
    optimizer = optimizer or trained(model, steps=0)
    step = keras.Variable(0, dtype="int32", trainable=False)
    return checkpoints.TrainingCheckpoint(str(directory), model, optimizer, step, keep,
                                          data_iterator=iterator), step


def save_at(saver, step, steps):
    for value in steps:
        step.assign(value)
        saver.save()


def test_every_part_is_restored_into_another_model_and_optimizer(tmp_path):
    model = built(Stack())
    optimizer = trained(model)
    model.dropout.seed_generator.state.assign(np.array([5, 9]).astype(
        model.dropout.seed_generator.state.dtype))
    saver, step = keeper(tmp_path, model, optimizer, iterator=Position(at=41))
    step.assign(12)
    path = saver.save()
    assert path == str(tmp_path / "ckpt-12")

    other = built(Stack())
    other_optimizer = trained(other, steps=0)
    position = Position()
    restorer, other_step = keeper(tmp_path, other, other_optimizer, iterator=position)
    assert restorer.restore_latest() == 12
    assert int(other_step.numpy()) == 12 and position.at == 41
    assert restorer.restored_parts == {"model_weights", "optimizer", "step", "random_state", "data"}
    for mine, theirs in zip(model.variables + optimizer.variables,
                            other.variables + other_optimizer.variables):
        np.testing.assert_array_equal(np.asarray(theirs.numpy()), np.asarray(mine.numpy()))
    assert int(other_optimizer.iterations.numpy()) == 2


def test_the_manifest_is_written_last_and_checks_every_file(tmp_path):
    saver, step = keeper(tmp_path, built(Stack()), iterator=Position(at=3))
    step.assign(4)
    path = saver.save()
    assert sorted(os.listdir(tmp_path)) == ["ckpt-4"]  # no staging directory left
    with open(os.path.join(path, directory_format.MANIFEST_FILE)) as stream:
        manifest = json.load(stream)
    assert manifest["step"] == 4 and manifest["format"] == directory_format.FORMAT
    assert set(manifest["files"]) == {"arrays.npz", "input_position.json"}
    assert set(manifest["parts"]) == {"model_weights", "optimizer", "random_state", "step",
                                      "input_position"}
    with open(os.path.join(path, "input_position.json"), "a") as stream:
        stream.write(" ")
    with pytest.raises(CorruptCheckpointError, match=r"input_position\.json: the checkpoint file "
                                                     r"is truncated or corrupt \(\d+ bytes"):
        directory_format.open_checkpoint(path)


def flip_a_byte(path):
    with open(path, "r+b") as stream:
        stream.seek(os.path.getsize(path) // 2)
        byte = stream.read(1)
        stream.seek(-1, os.SEEK_CUR)
        stream.write(bytes([byte[0] ^ 0xFF]))


def test_a_damaged_checkpoint_is_skipped_and_kept(tmp_path, caplog):
    saver, step = keeper(tmp_path, built(Stack()))
    save_at(saver, step, (5, 10))
    flip_a_byte(tmp_path / "ckpt-10" / "arrays.npz")
    restorer, restored_step = keeper(tmp_path, built(Stack()))
    assert restorer.remove_partial_saves() == []
    with caplog.at_level(logging.WARNING):
        assert restorer.restore_latest() == 5
    expected = (f"skipping checkpoint {tmp_path}/ckpt-10: {tmp_path}/ckpt-10/arrays.npz: the "
                f"checkpoint file is truncated or corrupt (its SHA-256 differs")
    assert any(expected in record.getMessage() for record in caplog.records)
    assert (tmp_path / "ckpt-10" / "arrays.npz").exists()

    flip_a_byte(tmp_path / "ckpt-5" / "arrays.npz")
    with pytest.raises(CorruptCheckpointError,
                       match=r"no checkpoint of .* can be read \(2 tried\)"):
        keeper(tmp_path, built(Stack()))[0].restore_latest()


def test_only_what_killed_saves_left_is_removed(tmp_path):
    saver, step = keeper(tmp_path, built(Stack()))
    save_at(saver, step, (5, 10))
    leftovers = {".ckpt-15.tmp-1a2b": "dir", "ckpt-20": "dir",  # directory format
                 "ckpt-3_temp": "dir", "checkpoint.tmp0123": "file",  # TensorFlow's
                 "ckpt-4.data-00000-of-00001": "file"}
    for name, kind in leftovers.items():
        if kind == "dir":
            (tmp_path / name).mkdir()
            (tmp_path / name / "arrays.npz").write_bytes(b"\0" * 16)
        else:
            (tmp_path / name).write_bytes(b"half")
    removed = saver.remove_partial_saves()
    assert sorted(os.path.basename(path) for path in removed) == sorted(leftovers)
    assert sorted(os.listdir(tmp_path)) == ["ckpt-10", "ckpt-5"]


def test_a_complete_save_whose_rename_was_killed_is_recovered(tmp_path):
    saver, step = keeper(tmp_path, built(Stack()))
    save_at(saver, step, (5, 12))
    os.rename(tmp_path / "ckpt-12", tmp_path / ".ckpt-12.tmp-x9")
    assert saver.remove_partial_saves() == []
    assert sorted(os.listdir(tmp_path)) == ["ckpt-12", "ckpt-5"]
    assert keeper(tmp_path, built(Stack()))[0].restore_latest() == 12


@pytest.mark.parametrize("index", [None, 'model_checkpoint_path: "ckpt-999"\n', "\x00garbage{{"],
                         ids=["deleted", "names-a-missing-checkpoint", "garbage"])
def test_checkpoints_are_found_from_their_files_whatever_tensorflows_index_says(tmp_path, index):
    saver, step = keeper(tmp_path, built(Stack()))
    save_at(saver, step, (50,))
    if index is not None:
        (tmp_path / discovery.TENSORFLOW_STATE_FILE).write_text(index)
    assert saver.remove_partial_saves() == []
    assert discovery.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ckpt-50")
    assert keeper(tmp_path, built(Stack()))[0].restore_latest() == 50


def test_keep_n_leaves_checkpoints_past_the_saved_step(tmp_path):
    saver, step = keeper(tmp_path, built(Stack()), keep=2)
    save_at(saver, step, (10, 20, 30))
    flip_a_byte(tmp_path / "ckpt-30" / "arrays.npz")
    resumed, resumed_step = keeper(tmp_path, built(Stack()), keep=2)
    assert resumed.restore_latest() == 20
    save_at(resumed, resumed_step, (21, 22))
    # ckpt-30 (skipped as damaged) is this run's to overwrite when it gets there.
    assert sorted(os.listdir(tmp_path)) == ["ckpt-21", "ckpt-22", "ckpt-30"]


def test_a_checkpoint_whose_values_the_model_would_leave_unused_is_refused(tmp_path):
    deep = built(Stack(depth=2))
    path = weights.save_model_weights(deep, str(tmp_path / "model"), 7)
    shallow = built(Stack(depth=1))
    with pytest.raises(CheckpointMismatchError,
                       match=r"ckpt-7: the checkpoint does not fit model Stack with these hparams: "
                             r"2 saved model weights match nothing here and would be left unused "
                             r"\(dense_1/bias, dense_1/kernel\)"):
        weights.restore_model(shallow, path)

    saver, step = keeper(tmp_path / "run", deep)
    save_at(saver, step, (3,))
    with pytest.raises(CheckpointMismatchError,
                       match=r"ckpt-3: the checkpoint does not match this model and optimizer: 2 "
                             r"saved model weights match nothing here .*; 4 saved optimizer "
                             r"variables match nothing here"):
        keeper(tmp_path / "run", shallow)[0].restore_latest()


def test_the_weights_of_a_model_alone_cannot_resume_training(tmp_path):
    model = built(Stack())
    weights.save_model_weights(model, str(tmp_path), 8)
    with pytest.raises(CheckpointMismatchError, match=r"ckpt-8: .* it holds no optimizer"):
        keeper(tmp_path, built(Stack()))[0].restore_latest()


def test_an_input_position_of_another_pipeline_restarts_the_input(tmp_path, caplog):
    saver, step = keeper(tmp_path, built(Stack()), iterator=Position(at=9))
    save_at(saver, step, (6,))
    position = Position(refuse=True)
    resumed, _ = keeper(tmp_path, built(Stack()), iterator=position)
    with caplog.at_level(logging.WARNING):
        assert resumed.restore_latest() == 6
    assert "data" not in resumed.restored_parts and position.at == 0
    assert resumed.input_position.restore_error is not None
    assert any("the saved input position does not fit this input pipeline" in record.getMessage()
               for record in caplog.records)


def test_averaging_reads_checkpoints_and_writes_a_model_directory(tmp_path):
    model = built(Stack())
    run = tmp_path / "run"
    saver, step = keeper(run, model)
    for value in (1, 2):
        model.dense[0].kernel.assign(np.full((4, 3), float(value)))
        save_at(saver, step, (value,))
    (run / "hparams.json").write_text("{}\n")
    prefixes = checkpoint_averaging.last_checkpoints(str(run), 2)
    assert [os.path.basename(prefix) for prefix in prefixes] == ["ckpt-1", "ckpt-2"]
    checkpoint_averaging.average_into(model, prefixes)
    path = checkpoint_averaging.save_averaged(model, str(run), str(run / "averaged"), 2)
    assert sorted(os.listdir(run / "averaged")) == ["averaged_from.json", "ckpt-2", "hparams.json"]
    saved = weights.read_model_weights(path)
    np.testing.assert_array_equal(saved["dense_0/kernel"], np.full((4, 3), 1.5))
