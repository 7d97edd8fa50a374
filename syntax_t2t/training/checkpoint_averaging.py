"""Averaging the weights of a run's last checkpoints (Popel & Bojar 2018).

Averaging the last few checkpoints of a run usually beats the last one
alone (Popel & Bojar, "Training Tips for the Transformer Model", 2018),
which the thesis follows. The model's variables are read from every
checkpoint (the optimizer's are ignored), averaged, and saved as one
checkpoint of the model alone that `bin/decode --checkpoint_path` (or
`--output_dir` set to the averaged directory) restores like any other.
Checkpoints of either format are read (TensorFlow's on the TensorFlow
backend); the average is written in the directory format, which every
backend reads.
"""

import json
import os
import shutil
import tempfile

import keras
import numpy as np
from absl import logging

from syntax_t2t import io_utils
from syntax_t2t.checkpointing import discovery, variables
from syntax_t2t.checkpointing.errors import CheckpointError
from syntax_t2t.checkpointing.weights import check_fits, read_model_weights, save_model_weights
from syntax_t2t.training import run_directory, run_vocabulary, validation


def last_checkpoints(directory: str, count: int) -> list[str]:
    """The newest `count` checkpoints of a run (found from its files), oldest first.

    Raises:
        CheckpointError: the run holds fewer than `count` checkpoints.
    """
    if count < 1:
        raise ValueError(f"need at least one checkpoint to average, got {count}")
    available = [found.path for found in discovery.find_checkpoints(directory)]
    if len(available) < count:
        raise CheckpointError(
            f"{directory} holds {len(available)} checkpoint(s) but {count} were asked to be averaged; "
            f"lower --num_last_checkpoints or train longer")
    return available[-count:]


def checkpoint_step(prefix: str) -> int:
    """The step in a `ckpt-<step>` checkpoint name."""
    step = discovery.step_of(prefix)
    if step is None:
        raise CheckpointError(f"{prefix}: not a checkpoint named ckpt-<step>")
    return step


def average_into(model: keras.Model, prefixes: list[str]) -> None:
    """Sets the model's weights to their mean over the checkpoints.

    Floating-point weights are averaged (accumulated in float64); any other
    weight keeps the value of the newest checkpoint. Each checkpoint must
    fit the model exactly (`checkpointing/weights.py`).

    Raises:
        CheckpointError: a checkpoint does not fit the model, or cannot be read.
    """
    sums = None
    for prefix in prefixes:
        saved = read_model_weights(prefix, model)
        check_fits(model, saved, prefix)
        if sums is None:
            sums = {path: value.astype(np.float64) if value.dtype.kind == "f" else value
                    for path, value in saved.items()}
        else:
            sums = {path: total + saved[path] if total.dtype.kind == "f" else saved[path]
                    for path, total in sums.items()}
        logging.info("read %s", prefix)
    means = {path: total / len(prefixes) if total.dtype.kind == "f" else total
             for path, total in sums.items()}
    variables.assign(variables.model_weights(model), means, "model weights",
                     f"averaging {', '.join(prefixes)}")


AVERAGED_MARKER = "averaged_from.json"
# Files whose presence makes a directory a run (or an averaging) that must not be overwritten
# (TensorFlow's index of its checkpoints is one in runs trained before the directory format).
_RUN_FILES = (discovery.TENSORFLOW_STATE_FILE, run_directory.HPARAMS_FILE, run_directory.FLAGS_FILE)


def check_averaged_dir(run_dir: str, averaged_dir: str) -> None:
    """Refuses an `averaged_dir` whose writing could damage a run.

    Paths are compared after resolving symbolic links. Allowed: a new or
    empty directory, or one this program wrote from the same run (it holds
    `averaged_from.json` naming that run).

    Raises:
        CheckpointError: `averaged_dir` is the run itself, contains it, is
            its `best/`, is not a directory, or holds the files of another
            run or averaging.
    """
    real_run, real_averaged = os.path.realpath(run_dir), os.path.realpath(averaged_dir)
    where = f"--averaged_dir={averaged_dir}"
    if real_averaged == real_run:
        raise CheckpointError(f"{where} is the run's own directory {run_dir} (paths resolved): its "
                              f"checkpoints would be replaced; give a directory of its own")
    if real_run.startswith(real_averaged.rstrip(os.sep) + os.sep):
        raise CheckpointError(f"{where} contains the run {run_dir}; give a directory of its own")
    if real_averaged == os.path.realpath(os.path.join(run_dir, validation.BEST_DIR)):
        raise CheckpointError(f"{where} is the run's {validation.BEST_DIR}/ (paths resolved), the "
                              f"weights of its best evaluation, which training alone replaces; "
                              f"give a directory of its own")
    if os.path.exists(real_averaged) and not os.path.isdir(real_averaged):
        raise CheckpointError(f"{where} is a file, not a directory")
    if not os.path.isdir(real_averaged):
        return
    held = [name for name in _RUN_FILES if os.path.exists(os.path.join(real_averaged, name))]
    held += [os.path.basename(found.path) for found in discovery.find_checkpoints(real_averaged)
             if found.format == discovery.DIRECTORY_FORMAT]
    if not held:
        return
    marker = os.path.join(real_averaged, AVERAGED_MARKER)
    source = None
    if os.path.isfile(marker):
        with open(marker, encoding="utf-8") as stream:
            source = json.load(stream).get("run")
    if source != real_run:
        owner = (f"an averaging of the run {source}" if source else
                 "a training run (it is no averaged directory written by bin/average_checkpoints)")
        raise CheckpointError(f"{where} holds {', '.join(held)} of {owner}; writing there would "
                              f"replace them: give a new or empty directory")


def save_averaged(model: keras.Model, run_dir: str, averaged_dir: str, step: int) -> str:
    """Saves the model as `averaged_dir/ckpt-<step>` beside a copy of the run's files.

    With `hparams.json`, `flags.txt` and the run's vocabulary record copied,
    `averaged_dir` works as the `--output_dir` of `bin/decode` and
    `bin/analyze`, which check the data as they check the run's. Everything is written
    to a temporary directory beside `averaged_dir` first, which then takes
    its place: an interrupted averaging leaves the previous one intact.

    Returns:
        The checkpoint prefix written.

    Raises:
        CheckpointError: see `check_averaged_dir`.
    """
    check_averaged_dir(run_dir, averaged_dir)
    return save_model_directory(model, run_dir, averaged_dir, step)


def save_model_directory(model: keras.Model, run_dir: str, directory: str,
                         step: int) -> str:
    """Replaces `directory` with the model's weights (`ckpt-<step>`) and the run's files.

    The directory is built beside its target and swapped in whole, so a kill
    leaves the previous one or the new one. Nothing is checked about what
    `directory` held: `save_averaged` checks a user's `--averaged_dir`; a
    run's own `best/` (`training/validation.py`) is always the run's to
    replace.

    Returns:
        The checkpoint prefix written.
    """
    target = os.path.realpath(directory)
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=parent)
    try:
        for name in (run_directory.HPARAMS_FILE, run_directory.FLAGS_FILE):
            source = os.path.join(run_dir, name)
            if os.path.exists(source):
                shutil.copyfile(source, os.path.join(staging, name))
        run_vocabulary.copy_into(run_dir, staging)
        io_utils.atomic_write_text(os.path.join(staging, AVERAGED_MARKER),
                                   json.dumps({"run": os.path.realpath(run_dir), "step": step}) + "\n")
        prefix = os.path.basename(save_model_weights(model, staging, step))
        _replace_directory(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return os.path.join(directory, prefix)


def _replace_directory(new: str, target: str) -> None:
    # A directory cannot be renamed over a non-empty one: the old one steps aside first.
    old = None
    if os.path.isdir(target):
        old = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.", suffix=".old",
                               dir=os.path.dirname(target))
        os.rmdir(old)
        os.replace(target, old)
    os.replace(new, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
