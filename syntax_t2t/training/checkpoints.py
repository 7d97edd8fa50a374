"""Saving and resuming training state: weights, optimizer, step, dropout state, input position.

A run's checkpoints are `ckpt-<step>/` directories in the format that every
backend writes and reads (`checkpointing/directory_format.py`), holding:

* `model_weights`: every weight of the model, by its Keras path;
* `optimizer`: the optimizer's variables (iteration count, Adam's moments,
  the loss scale under float16), by name;
* `step`: the global step;
* `random_state`: the state of the model's random-number generators (the
  dropout layers' Keras seed generators), by their order in the model.
  Without it a resumed run would draw the dropout masks of step 0 again;
* the position of the training input, so that a resumed run goes on where
  the saved one was instead of restarting the shuffled stream: the NumPy
  pipeline's `state()` (`input_position.json`), or the `tf.data` iterator's
  state (`tf_input_position/`: its shuffle buffer, the files' shuffled
  order, the examples waiting in their length buckets). Only some `tf.data`
  iterators can be saved: not a multi-replica one, nor one of a pipeline
  with a Python generator (`tf.data.Dataset.from_generator`); their runs
  restart the input on resume. A saved position only fits the same input
  pipeline: when it does not (other data, other batching, the other
  backend's pipeline), the rest is restored and the input starts again.

`checkpointing/variables.py` explains the names. The model and the
optimizer must be built before `restore_latest`; the restore then checks
that every saved value finds its variable and every variable its value, so
a checkpoint of another model is an error rather than a partially
initialised network. `random_state` and the input position are optional: a
checkpoint without them restores the rest and warns.

Runs trained before this format hold TensorFlow checkpoints
(`ckpt-<step>.index`, `.data-*`); on the TensorFlow backend they are
restored too, and the run's next save is in the directory format.
`convert_tensorflow_checkpoints` (`bin/convert_checkpoints`) rewrites them
for the other backends.

Checkpoints are found from their files (`checkpointing/discovery.py`):
the newest one that loads is restored, damaged ones are skipped with a
warning and never deleted, and a directory holding checkpoints of which
none loads is an error, never a fresh start. Saves are atomic (a staging
directory renamed into place, its manifest written last);
`remove_partial_saves` deletes only what killed saves left.
"""

from typing import Any, Optional

import keras
from absl import logging

from syntax_t2t.checkpointing import directory_format, discovery, variables
# Re-exported: what the trainer, the tools and the tests name as `checkpoints.<name>`.
from syntax_t2t.checkpointing.discovery import CHECKPOINT_PREFIX, latest_checkpoint  # noqa: F401
from syntax_t2t.checkpointing.errors import (CheckpointError, CheckpointMismatchError,  # noqa: F401
                                             CorruptCheckpointError, NeedsTensorFlowError)
from syntax_t2t.checkpointing.variables import model_weights, random_state  # noqa: F401
from syntax_t2t.checkpointing.weights import (check_fits, read_model_weights,  # noqa: F401
                                              restore_model, save_weights, tensorflow_format)
from syntax_t2t.hparams import HParams
from syntax_t2t.training import optimizers

#: The file of the NumPy pipeline's position in a checkpoint directory.
INPUT_POSITION_FILE = "input_position.json"

_MISSING_CONSEQUENCE = {
    "random_state": "dropout starts again from its initial random state",
    "data": "the training input starts again from the beginning of its shuffled stream",
}


def checkpoint_exists(path: str) -> bool:
    """Whether `path` names a complete checkpoint (a directory, or TensorFlow's `.index`)."""
    return discovery.checkpoint_at(path) is not None


class JsonInputPosition:
    """The NumPy input pipeline's position (`state()`, `restore()`) as a checkpoint part.

    Attributes:
        iterator: the wrapped iterator (replace it after a failed restore).
        restore_error: the error of a failed restore (another pipeline, a
            damaged shard), or None.
    """

    kind = "input_position"

    def __init__(self, iterator: Any):
        self.iterator = iterator
        self.restore_error = None

    def state(self) -> dict:
        return self.iterator.state()

    def restore(self, state: dict) -> None:
        self.restore_error = None
        try:
            self.iterator.restore(state)
        except (ValueError, KeyError, TypeError) as error:
            self.restore_error = error


def _input_position(iterator):
    """The checkpoint part for the training input's position, or None (warned) when unsaveable."""
    if iterator is None:
        return None
    if callable(getattr(iterator, "state", None)) and callable(getattr(iterator, "restore", None)):
        return JsonInputPosition(iterator)
    try:
        from syntax_t2t.checkpointing import tf_format
    except ImportError:
        reason = f"a {type(iterator).__name__} has no state() and TensorFlow is not installed"
    else:
        reason = tf_format.InputPosition.unsaveable_reason(iterator)
        if reason is None:
            return tf_format.InputPosition(iterator)
    logging.warning("the training input's position cannot be checkpointed (%s): a resumed run "
                    "starts the input again", reason)
    return None


class TrainingCheckpoint:
    """The checkpointed state of a run.

    Args:
        directory: where the checkpoints live.
        model: a built Keras model.
        optimizer: a built Keras optimizer.
        step: the global step, a scalar integer variable (`numpy()`, `assign()`).
        keep_checkpoint_max: how many of the newest checkpoints to keep
            (None or 0: all).
        data_iterator: the training input's iterator, saved as the input
            position when it can be (see the module docstring), or None.
    """

    def __init__(self, directory: str, model: keras.Model, optimizer: keras.optimizers.Optimizer,
                 step: Any, keep_checkpoint_max: Optional[int], data_iterator: Any = None):
        self.directory = directory
        self.model = model
        self.optimizer = optimizer
        self.step = step
        self.keep_checkpoint_max = keep_checkpoint_max
        self._weights = model_weights(model)
        self._random_state = random_state(model)
        # Checked now, so that an optimizer whose variables cannot be named fails before training.
        variables.optimizer_variables(optimizer, model)
        self.input_position = _input_position(data_iterator)
        self.restored_parts = frozenset()

    @property
    def latest(self) -> Optional[str]:
        """Path of the newest checkpoint, or None."""
        return latest_checkpoint(self.directory)

    @property
    def checkpoints(self) -> list[str]:
        """Paths of the run's checkpoints, oldest first."""
        return [found.path for found in discovery.find_checkpoints(self.directory)]

    def _optimizer_variables(self):
        # Named anew each time: an optimizer may add variables after it is built.
        return variables.optimizer_variables(self.optimizer, self.model)

    @property
    def saves_input_position(self) -> bool:
        """Whether the checkpoints hold the training input's position."""
        return self.input_position is not None

    # Restoring -----------------------------------------------------------------------

    def restore_latest(self) -> Optional[int]:
        """Restores the newest checkpoint that can be read, if any.

        A checkpoint whose files are truncated or corrupt is skipped with a
        warning naming the file, and the next older one is tried. Sets
        `restored_parts` to the parts that were read.

        Returns:
            The restored global step, or None when the directory holds no
            checkpoint.

        Raises:
            CheckpointMismatchError: the checkpoint holds values that match
                no variable or have another shape, or leaves variables
                without a value.
            CorruptCheckpointError: checkpoints exist but none can be read.
            NeedsTensorFlowError: the newest is in TensorFlow's format and
                TensorFlow is not installed.
        """
        candidates = list(reversed(discovery.find_checkpoints(self.directory)))
        if not candidates:
            return None
        failures = []
        for found in candidates:
            try:
                if found.format == discovery.TENSORFLOW_FORMAT:
                    step = self._restore_tensorflow(found.path)
                else:
                    step = self._restore_directory(found.path)
            except CorruptCheckpointError as failure:
                failures.append(failure)
                logging.warning("skipping checkpoint %s: %s; trying an older one", found.path,
                                failure)
                continue
            if failures:
                logging.warning("resumed from %s, the newest checkpoint that loads (skipped %d "
                                "damaged: %s)", found.path, len(failures),
                                ", ".join(c.path for c in candidates[:len(failures)]))
            logging.info("restored %s (step %d)", found.path, step)
            return step
        raise CorruptCheckpointError(
            f"no checkpoint of {self.directory} can be read ({len(failures)} tried): "
            + "; ".join(str(failure) for failure in failures)
            + ". Move the damaged files away to start this run again from scratch")

    def _restore_directory(self, path: str) -> int:
        stored = directory_format.open_checkpoint(path)
        context = f"{path}: the checkpoint does not match this model and optimizer"
        lacking = [part for part in ("model_weights", "optimizer") if part not in stored.parts]
        if lacking:
            raise CheckpointMismatchError(
                f"{context}: it holds no {' and no '.join(lacking)} (the weights of a model "
                f"alone, such as an averaged or best checkpoint, cannot resume training)")
        groups = [("model weights", self._weights, stored.arrays("model_weights")),
                  ("optimizer variables", self._optimizer_variables(), stored.arrays("optimizer"))]
        restored = {"model_weights", "optimizer", "step"}
        if self._random_state and "random_state" in stored.parts:
            groups.append(("random generator states", self._random_state,
                           stored.arrays("random_state")))
            restored.add("random_state")
        elif self._random_state:
            self._warn_missing(path, "random_state")
        elif "random_state" in stored.parts:
            logging.warning("%s: not restoring its random_state, which this run cannot use", path)
        problems = [problem for part, named, saved in groups
                    for problem in variables.mismatches(named, saved, part)]
        if problems:
            raise CheckpointMismatchError(f"{context}: " + "; ".join(problems))
        for part, named, saved in groups:
            variables.assign(named, saved, part, context)
        self.step.assign(stored.step)
        if self._restore_position(path, stored):
            restored.add("data")
        self.restored_parts = frozenset(restored)
        return stored.step

    def _restore_position(self, path: str, stored) -> bool:
        """Restores the input position from a directory checkpoint; whether it was."""
        saved = [kind for kind in ("input_position", "tf_input_position") if kind in stored.parts]
        position = self.input_position
        if position is None:
            if saved:
                logging.warning("%s: not restoring its input position, which this run cannot use",
                                path)
            return False
        if position.kind not in saved:
            if saved:
                logging.warning("%s: its input position was saved from another kind of input "
                                "pipeline (%s); %s", path, saved[0], _MISSING_CONSEQUENCE["data"])
            else:
                self._warn_missing(path, "data")
            return False
        if position.kind == JsonInputPosition.kind:
            position.restore(stored.json(INPUT_POSITION_FILE))
        else:
            position.read(stored.entry(position.kind))
        if position.restore_error is not None:
            logging.warning("%s: the saved input position does not fit this input pipeline (other "
                            "data or batching?); %s. The pipeline says: %s", path,
                            _MISSING_CONSEQUENCE["data"],
                            str(position.restore_error).split("\n")[0])
            return False
        return True

    def _restore_tensorflow(self, prefix: str) -> int:
        tf_format = tensorflow_format(prefix)
        if keras.backend.backend() != "tensorflow":
            raise CheckpointError(
                f"{prefix} is a checkpoint in TensorFlow's format: resume it on the TensorFlow "
                f"backend, or rewrite it with bin/convert_checkpoints first")
        saved = tf_format.saved_parts(prefix)
        optional = {}
        if self._random_state and "random_state" in saved:
            optional["random_state"] = self._random_state
        elif self._random_state:
            self._warn_missing(prefix, "random_state")
        position = self.input_position
        if isinstance(position, tf_format.InputPosition) and "data" in saved:
            optional["data"] = position
        elif position is not None:
            self._warn_missing(prefix, "data")
        unread = sorted({"random_state", "data"} & saved - set(optional))
        if unread:
            logging.warning("%s: not restoring its %s, which this run cannot use", prefix,
                            ", ".join(unread))
        required = {"model_weights": self._weights, "optimizer": self.optimizer,
                    "step": self.step}
        tf_format.restore_training_state(prefix, required, optional)
        restored = set(required) | set(optional)
        if "data" in optional and position.restore_error is not None:
            restored.discard("data")
            logging.warning("%s: the saved input position does not fit this input pipeline (other "
                            "data or batching?); %s. TensorFlow says: %s", prefix,
                            _MISSING_CONSEQUENCE["data"],
                            position.restore_error.message.split("\n")[0])
        self.restored_parts = frozenset(restored)
        return int(variables.to_numpy(self.step))

    @staticmethod
    def _warn_missing(path: str, part: str) -> None:
        logging.warning("%s holds no %s (it was written without): %s", path, part,
                        _MISSING_CONSEQUENCE[part])

    # Saving --------------------------------------------------------------------------

    def save(self) -> str:
        """Writes a checkpoint named after the current step, drops the oldest beyond keep-N.

        Returns:
            The checkpoint's path.
        """
        step = int(variables.to_numpy(self.step))
        arrays = {}
        for part, named in (("model_weights", self._weights),
                            ("optimizer", self._optimizer_variables()),
                            ("random_state", self._random_state)):
            arrays.update({f"{part}/{name}": value
                           for name, value in variables.values_of(named).items()})
        json_files, writers = {}, {}
        if isinstance(self.input_position, JsonInputPosition):
            json_files[INPUT_POSITION_FILE] = self.input_position.state()
        elif self.input_position is not None:
            writers[self.input_position.kind] = self.input_position.write
        path = directory_format.write_checkpoint(self.directory, f"{CHECKPOINT_PREFIX}-{step}",
                                                 step, arrays, json_files=json_files,
                                                 writers=writers)
        self._keep_newest(step)
        logging.info("saved checkpoint %s", path)
        return path

    def _keep_newest(self, saved_step: int) -> None:
        # Checkpoints past the one just saved were skipped as damaged on
        # resume: this run overwrites them when it gets there.
        if not self.keep_checkpoint_max:
            return
        older = [found for found in discovery.find_checkpoints(self.directory)
                 if found.step <= saved_step]
        for found in older[:-self.keep_checkpoint_max]:
            discovery.remove_step(self.directory, found.step)

    def remove_partial_saves(self) -> list[str]:
        """Deletes what saves killed midway left behind; returns the removed paths.

        See `checkpointing/discovery.py` for what counts; complete
        checkpoints are never removed.
        """
        return discovery.remove_partial_saves(self.directory)


def convert_tensorflow_checkpoints(directory: str, model: keras.Model,
                                   hparams: HParams) -> list[str]:
    """Rewrites `directory`'s checkpoints in TensorFlow's format in the directory format.

    Only TensorFlow can read them, so call it on the TensorFlow backend. A
    training checkpoint (one with an optimizer) is restored into `model` and
    a fresh optimizer of `hparams` (loss-scaled when the checkpoint's is), as
    a resumed run restores it, every value checked, and saved again; the
    position of a `tf.data` input is not carried over, so a run resumed from
    the new checkpoint restarts its input. A checkpoint of the weights alone
    (averaged, best) is checked against `model` and rewritten as weights
    alone. The TensorFlow files stay; where both formats hold a step, the
    directory is the one used.

    Args:
        directory: a run (or averaged, or best) directory.
        model: the run's model, built; its weights are overwritten.
        hparams: the run's hparams (its optimizer).

    Returns:
        The paths written, oldest first.

    Raises:
        CheckpointMismatchError: a checkpoint does not fit the model.
        CorruptCheckpointError: a checkpoint cannot be read.
    """
    written = []
    for found in discovery.find_checkpoints(directory):
        if found.format != discovery.TENSORFLOW_FORMAT:
            continue
        tf_format = tensorflow_format(found.path)
        if "optimizer" in tf_format.saved_parts(found.path):
            policy = "mixed_float16" if tf_format.has_loss_scale(found.path) else "float32"
            optimizer = optimizers.make_optimizer(hparams, policy)
            optimizer.build(model.trainable_variables)
            step = keras.Variable(0, dtype="int64", trainable=False, name="converted_step")
            keeper = TrainingCheckpoint(directory, model, optimizer, step, keep_checkpoint_max=None)
            keeper._restore_tensorflow(found.path)
            written.append(keeper.save())
        else:
            saved = read_model_weights(found.path, model)
            check_fits(model, saved, found.path)
            written.append(save_weights(directory, found.step, saved))
        logging.info("converted %s to %s", found.path, written[-1])
    return written
