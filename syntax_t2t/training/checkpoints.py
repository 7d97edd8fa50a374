"""Saving and resuming training state: model weights, optimizer and step counter.

Layout of a checkpoint (`ckpt-<step>`, written by `tf.train.CheckpointManager`,
which keeps the newest `keep_checkpoint_max`):

* `model_weights/<weight path>`: every weight of the model, keyed by its
  Keras path (`encoder_layer_0/self_attention/query_kernel`, ...). Keras 3
  keeps layers held in Python lists (the encoder and decoder stacks) out of
  TensorFlow's dependency graph, so `tf.train.Checkpoint(model=model)` would
  silently save only the top-level layers; the paths are fixed by the layer
  names, so they also identify a weight in another process. Decoding reads
  only this part.
* `optimizer`: the Keras optimizer as TensorFlow tracks it (iteration count,
  Adam's moments, the loss scale under float16).
* `step`: the global step.
* `random_state`: the state of the model's random-number generators (the
  dropout layers' Keras seed generators), keyed by their order in the model,
  as Keras numbers their names per process. Without it a resumed run would
  draw the dropout masks of step 0 again.
* `data`: the position of the training input (the `tf.data` iterator: its
  shuffle buffer, the files' shuffled order, the examples waiting in their
  length buckets), so that a resumed run goes on where the saved one was
  instead of restarting the shuffled stream. Only some iterators can be saved:
  not a multi-replica one, nor one of a pipeline with a Python generator
  (`tf.data.Dataset.from_generator`); their runs restart the input on resume.
  A saved position only fits the same input pipeline: when it does not (other
  data, other batching), the rest is restored and the input starts again.

The model and the optimizer must be built before `restore_latest` so that
every saved value finds its variable at once; the restore then checks that
nothing was left over on either side, so a checkpoint of another model is an
error rather than a partially initialised network. `random_state` and `data`
are optional: a checkpoint without them (an older one, or one saved with
several replicas) restores the rest and warns.

Saving is atomic as far as a reader can tell: TensorFlow writes the tensors
under a temporary name (`ckpt-<step>_temp/`), merges them into the final
`ckpt-<step>.index` and `.data-*` files, and only then rewrites the
`checkpoint` file that names the newest checkpoint, itself through a
temporary file and a rename. A process killed at any moment therefore leaves
`checkpoint` naming the last complete save, which is what `restore_latest`
reads; `remove_partial_saves` deletes the temporary directories such a kill
leaves behind.
"""

import collections
import glob
import os
import re
import shutil

import tensorflow as tf
from absl import logging

CHECKPOINT_PREFIX = "ckpt"
# Parts a checkpoint may lack (see the module docstring).
OPTIONAL_PARTS = ("random_state", "data")


class CheckpointMismatchError(ValueError):
    """A checkpoint does not fit the model and optimizer it is restored into."""


class CorruptCheckpointError(ValueError):
    """A checkpoint whose files cannot be read (truncated or damaged)."""


# What TensorFlow raises on a truncated or damaged checkpoint file: an OpError
# (DataLossError, "file is too short to be an sstable", ...) or, for a data
# file cut short, IndexError("Read less bytes than requested").
READ_ERRORS = (tf.errors.OpError, IndexError)


def corrupt_checkpoint_error(prefix, error):
    """A `CorruptCheckpointError` naming the file of checkpoint `prefix` that failed to read.

    The index is named when it cannot be opened; otherwise the data files
    (normally one), whose tensors TensorFlow reads from it.
    """
    try:
        tf.train.load_checkpoint(prefix)
        files = sorted(glob.glob(glob.escape(prefix) + ".data-*")) or [prefix + ".data-*"]
    except READ_ERRORS:
        files = [prefix + ".index"]
    detail = " ".join(str(error).split())[:300]
    return CorruptCheckpointError(f"{', '.join(files)}: the checkpoint file is truncated or corrupt "
                                  f"({type(error).__name__}: {detail})")


def model_weights(model):
    """`{weight path: variable}` of every weight of a built Keras model.

    Raises:
        ValueError: two weights share a path (layers with the same name under
            one parent), so they could not be told apart in a checkpoint.
    """
    weights = model.weights
    paths = collections.Counter(weight.path for weight in weights)
    shared = sorted(path for path, count in paths.items() if count > 1)
    if shared:
        raise ValueError(f"model {type(model).__name__} has several weights with the path(s) "
                         f"{', '.join(shared)}; give its layers distinct names")
    return {weight.path: weight for weight in weights}


def random_state(model):
    """`{index: variable}` of the model's random-generator states (Keras seed generators).

    These are the model's variables that are not weights; they are keyed by
    their position in `model.variables`, which the model's structure fixes,
    because their names carry per-process counters (`seed_generator_7`).
    """
    weights = {id(weight) for weight in model.weights}
    others = [variable for variable in model.variables if id(variable) not in weights]
    return {str(index): variable for index, variable in enumerate(others)}


def saved_parts(path):
    """The top-level parts (`model_weights`, `optimizer`, `data`, ...) saved in a checkpoint."""
    return {name.split("/", 1)[0] for name, _ in tf.train.list_variables(path)}


def latest_checkpoint(directory):
    """The path prefix of the newest checkpoint in `directory`, or None."""
    return tf.train.latest_checkpoint(directory)


class CheckpointError(ValueError):
    """A checkpoint that is missing or does not fit the model."""


def checkpoint_exists(prefix: str) -> bool:
    """Whether `prefix` names a TensorFlow checkpoint (its `.index` file exists)."""
    return tf.io.gfile.exists(prefix + ".index")


def restore_model(model, checkpoint_prefix: str) -> None:
    """Reads the model's weights from a checkpoint.

    Raises:
        CheckpointError: a weight of the model has no value in the
            checkpoint, or a value of another shape, or a file of the
            checkpoint is truncated or corrupt (named).
    """
    try:
        weights = tf.train.Checkpoint(model_weights=model_weights(model))
        status = weights.read(checkpoint_prefix)
        status.expect_partial().assert_existing_objects_matched()
    except READ_ERRORS as error:
        raise CheckpointError(str(corrupt_checkpoint_error(checkpoint_prefix, error))) from error
    except (AssertionError, ValueError) as error:
        raise CheckpointError(f"{checkpoint_prefix}: the checkpoint does not fit model "
                              f"{type(model).__name__} with these hparams: {error}") from error


class InputPosition(tf.__internal__.tracking.Trackable):
    """The training input iterator's state as a checkpoint part that may fail to restore.

    TensorFlow restores an iterator only into the same pipeline it was saved
    from; any other pipeline fails and leaves the iterator unusable. This
    wrapper records that failure in `restore_error` instead of raising, so
    that the rest of the checkpoint is restored (and checked) as usual and
    the trainer can start a fresh iterator.

    Attributes:
        iterator: the wrapped iterator (replace it after a failed restore).
        restore_error: the `tf.errors.OpError` of a failed restore, or None.
    """

    def __init__(self, iterator):
        self.iterator = iterator
        self.restore_error = None

    @staticmethod
    def unsaveable_reason(iterator):
        """Why `iterator`'s state cannot be checkpointed, or None when it can."""
        if not isinstance(iterator, tf.__internal__.tracking.Trackable):
            return f"TensorFlow cannot checkpoint a {type(iterator).__name__}"
        try:
            iterator._serialize_to_tensors()
        except tf.errors.OpError as error:
            return error.message.split("\n")[0]
        return None

    def _serialize_to_tensors(self):
        return self.iterator._serialize_to_tensors()

    def _restore_from_tensors(self, restored_tensors):
        self.restore_error = None
        try:
            return self.iterator._restore_from_tensors(restored_tensors)
        except tf.errors.OpError as error:
            self.restore_error = error
            return tf.no_op()


class TrainingCheckpoint:
    """The checkpointed state of a run.

    Args:
        directory: where the checkpoints live.
        model: a built Keras model.
        optimizer: a built Keras optimizer.
        step: a scalar int64 `tf.Variable`, the global step.
        keep_checkpoint_max: how many of the newest checkpoints to keep.
        data_iterator: the training input's iterator, saved as the input
            position when TensorFlow can checkpoint it (see the module
            docstring), or None.
    """

    def __init__(self, directory, model, optimizer, step, keep_checkpoint_max, data_iterator=None):
        self.step = step
        self.directory = directory
        self._required = {"model_weights": model_weights(model), "optimizer": optimizer,
                          "step": step}
        self._optional = {}
        rng = random_state(model)
        if rng:
            self._optional["random_state"] = rng
        self.input_position = None
        if data_iterator is not None:
            reason = InputPosition.unsaveable_reason(data_iterator)
            if reason is None:
                self.input_position = InputPosition(data_iterator)
                self._optional["data"] = self.input_position
            else:
                logging.warning("the training input's position cannot be checkpointed (%s): a "
                                "resumed run starts the input again", reason)
        self.checkpoint = tf.train.Checkpoint(**self._required, **self._optional)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, directory, max_to_keep=keep_checkpoint_max,
            step_counter=step, checkpoint_name=CHECKPOINT_PREFIX)
        self.restored_parts = frozenset()

    @property
    def latest(self):
        """Path prefix of the newest checkpoint, or None."""
        return self.manager.latest_checkpoint

    @property
    def saves_input_position(self):
        """Whether the checkpoints hold the training input's position."""
        return "data" in self._optional

    def restore_latest(self):
        """Restores the newest checkpoint that can be read, if any.

        A checkpoint whose files are truncated or corrupt is skipped with a
        warning naming the file, and the next older one is tried. Sets
        `restored_parts` to the parts that were read.

        Returns:
            The restored global step, or None when there is no checkpoint.

        Raises:
            CheckpointMismatchError: the checkpoint holds values that match
                no variable or have another shape, or leaves variables
                without a value.
            CorruptCheckpointError: no checkpoint of the run can be read.
        """
        candidates = list(reversed(self.manager.checkpoints))
        if not candidates:
            return None
        failures = []
        for path in candidates:
            try:
                step = self._restore(path)
            except READ_ERRORS as error:
                failure = corrupt_checkpoint_error(path, error)
                failures.append(failure)
                logging.warning("skipping checkpoint %s: %s; trying an older one", path, failure)
                continue
            if failures:
                logging.warning("resumed from %s, the newest checkpoint that loads (skipped %d "
                                "damaged: %s)", path, len(failures),
                                ", ".join(os.path.basename(p) for p in candidates[:len(failures)]))
            return step
        raise CorruptCheckpointError(
            f"no checkpoint of {self.directory} can be read ({len(failures)} tried): "
            + "; ".join(str(failure) for failure in failures)
            + ". Move the damaged files away to start this run again from scratch")

    def _restore(self, path):
        saved = saved_parts(path)
        optional = {name: value for name, value in self._optional.items() if name in saved}
        for name in sorted(set(self._optional) - saved):
            logging.warning("%s holds no %s (it was written without): %s", path, name,
                            _MISSING_CONSEQUENCE[name])
        # A part saved here that this run cannot take (the input position,
        # when this run's input cannot be checkpointed) is left unread;
        # everything else must match.
        unread = sorted(name for name in OPTIONAL_PARTS if name in saved and name not in optional)
        try:
            status = tf.train.Checkpoint(**self._required, **optional).restore(path)
            if unread:
                logging.warning("%s: not restoring its %s, which this run cannot use", path,
                                ", ".join(unread))
                status.expect_partial().assert_existing_objects_matched()
            else:
                status.assert_consumed()
        except (AssertionError, ValueError) as error:
            # ValueError: a saved tensor of another shape; AssertionError:
            # saved values without a variable, or variables without a value.
            raise CheckpointMismatchError(
                f"{path}: the checkpoint does not match this model and optimizer: "
                f"{error}") from error
        restored = set(self._required) | set(optional)
        if "data" in optional and self.input_position.restore_error is not None:
            restored.discard("data")
            logging.warning("%s: the saved input position does not fit this input pipeline (other "
                            "data or batching?); %s. TensorFlow says: %s", path,
                            _MISSING_CONSEQUENCE["data"],
                            self.input_position.restore_error.message.split("\n")[0])
        self.restored_parts = frozenset(restored)
        step = int(self.step.numpy())
        logging.info("restored %s (step %d)", path, step)
        return step

    def save(self):
        """Writes a checkpoint named after the current step; returns its path."""
        path = self.manager.save(checkpoint_number=self.step)
        logging.info("saved checkpoint %s", path)
        return path

    def remove_partial_saves(self):
        """Deletes what saves killed midway left behind; returns the removed paths.

        That is the tensors' temporary directory `ckpt-<step>_temp/`, the
        `checkpoint` file's temporary copies, and `ckpt-<step>` files of a
        step past the newest complete checkpoint (a kill while they were being
        merged), none of which `checkpoint` names.
        """
        directory = glob.escape(self.directory)
        removed = glob.glob(os.path.join(directory, f"{CHECKPOINT_PREFIX}-*_temp"))
        removed += glob.glob(os.path.join(directory, "checkpoint.tmp*"))
        latest = self.latest
        newest_step = _step_of(latest) if latest else -1
        for path in glob.glob(os.path.join(directory, f"{CHECKPOINT_PREFIX}-*")):
            match = _SAVED_FILE.fullmatch(os.path.basename(path))
            if match and int(match.group(1)) > newest_step:
                removed.append(path)
        for path in sorted(removed):
            logging.warning("removing %s, left by a checkpoint save that did not finish", path)
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.remove(path)
        return sorted(removed)


_SAVED_FILE = re.compile(re.escape(CHECKPOINT_PREFIX) + r"-(\d+)\.(?:index|data-\d+-of-\d+)")


def _step_of(prefix):
    return int(os.path.basename(prefix).rsplit("-", 1)[1])


_MISSING_CONSEQUENCE = {
    "random_state": "dropout starts again from its initial random state",
    "data": "the training input starts again from the beginning of its shuffled stream",
}
