"""Averaging the weights of a run's last checkpoints (Popel & Bojar 2018).

Averaging the last few checkpoints of a run usually beats the last one
alone (Popel & Bojar, "Training Tips for the Transformer Model", 2018),
which the thesis follows. The model's variables are read from every
checkpoint (the optimizer's are ignored), averaged, and saved as one
checkpoint of the model alone that `bin/decode --checkpoint_path` (or
`--output_dir` set to the averaged directory) restores like any other.
"""

import os

import numpy as np
import tensorflow as tf
from absl import logging

from syntax_t2t import io_utils
from syntax_t2t.decoding.model_loading import CheckpointError, restore_model
from syntax_t2t.training import checkpoints, run_directory


def last_checkpoints(directory: str, count: int) -> list[str]:
    """The newest `count` checkpoint prefixes of a run, oldest first.

    Raises:
        CheckpointError: the run holds fewer than `count` checkpoints.
    """
    if count < 1:
        raise ValueError(f"need at least one checkpoint to average, got {count}")
    state = tf.train.get_checkpoint_state(directory)
    available = list(state.all_model_checkpoint_paths) if state else []
    if len(available) < count:
        raise CheckpointError(
            f"{directory} holds {len(available)} checkpoint(s) but {count} were asked to be averaged; "
            f"lower --num_last_checkpoints or train longer")
    return available[-count:]


def checkpoint_step(prefix: str) -> int:
    """The step in a `ckpt-<step>` checkpoint name."""
    name = os.path.basename(prefix)
    try:
        return int(name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        raise CheckpointError(f"{prefix}: not a checkpoint named <prefix>-<step>") from None


def average_into(model, prefixes: list[str]) -> None:
    """Sets the model's weights to their mean over the checkpoints.

    Floating-point weights are averaged (accumulated in float64); any other
    weight keeps the value of the newest checkpoint.
    """
    sums, dtypes = None, None
    for prefix in prefixes:
        restore_model(model, prefix)
        values = [np.asarray(variable.numpy()) for variable in model.weights]
        if sums is None:
            dtypes = [value.dtype for value in values]
            sums = [value.astype(np.float64) if value.dtype.kind == "f" else value for value in values]
        else:
            sums = [total + value if value.dtype.kind == "f" else value
                    for total, value in zip(sums, values)]
        logging.info("read %s", prefix)
    for variable, total, dtype in zip(model.weights, sums, dtypes):
        value = total / len(prefixes) if dtype.kind == "f" else total
        variable.assign(value.astype(dtype))


def save_averaged(model, run_dir: str, averaged_dir: str, step: int) -> str:
    """Saves the model as `averaged_dir/ckpt-<step>` beside a copy of the run's files.

    With `hparams.json` and `flags.txt` copied, `averaged_dir` works as the
    `--output_dir` of `bin/decode` and `bin/analyze`.

    Returns:
        The checkpoint prefix written.
    """
    if os.path.abspath(averaged_dir) == os.path.abspath(run_dir):
        raise CheckpointError(f"the averaged checkpoint needs its own directory, not the run's {run_dir}: "
                              f"its checkpoint list would replace the run's")
    os.makedirs(averaged_dir, exist_ok=True)
    for name in (run_directory.HPARAMS_FILE, run_directory.FLAGS_FILE):
        source = os.path.join(run_dir, name)
        if os.path.exists(source):
            with open(source, "rb") as stream:
                data = stream.read()
            with io_utils.atomic_write(os.path.join(averaged_dir, name), "wb") as stream:
                stream.write(data)
    step_variable = tf.Variable(step, dtype=tf.int64, trainable=False)
    checkpoint = tf.train.Checkpoint(model_weights=checkpoints.model_weights(model), step=step_variable)
    manager = tf.train.CheckpointManager(checkpoint, averaged_dir, max_to_keep=None,
                                         checkpoint_name=checkpoints.CHECKPOINT_PREFIX)
    return manager.save(checkpoint_number=step)
