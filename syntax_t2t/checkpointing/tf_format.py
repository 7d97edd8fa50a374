"""TensorFlow's checkpoint format, as runs before the directory format wrote it; TensorFlow only.

A run trained before `directory_format.py` existed holds `ckpt-<step>.index`
and `.data-*` files written by `tf.train.CheckpointManager` from
`tf.train.Checkpoint(model_weights=..., optimizer=..., step=...,
random_state=..., data=...)`, the parts being those of `variables.py` (the
optimizer as TensorFlow tracks it, by position). This module reads them:
the model weights alone by name (decoding, averaging, conversion), or
everything into a built model and optimizer (a resumed run). It also
holds the `tf.data` iterator's position, which only TensorFlow can save,
for the directory format's `tf_input_position/` entry.

Import it only where TensorFlow is installed: it imports TensorFlow.
"""

import glob
import os
import re
from typing import Iterable, Mapping, Optional

import numpy as np
import tensorflow as tf

from syntax_t2t.checkpointing import variables
from syntax_t2t.checkpointing.errors import CheckpointMismatchError, CorruptCheckpointError

# What TensorFlow raises on a truncated or damaged checkpoint file: an OpError
# (DataLossError, "file is too short to be an sstable", ...) or, for a data
# file cut short, IndexError("Read less bytes than requested").
READ_ERRORS = (tf.errors.OpError, IndexError)
_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
# The `tf_input_position/` entry's checkpoint prefix.
_POSITION_PREFIX = "position"


def corrupt_checkpoint_error(prefix: str, error: Exception) -> CorruptCheckpointError:
    """A `CorruptCheckpointError` naming the file of checkpoint `prefix` that failed to read.

    The index is named when it cannot be opened; otherwise the data files
    (normally one), whose tensors TensorFlow reads from it.
    """
    try:
        _open(prefix)
        files = sorted(glob.glob(glob.escape(prefix) + ".data-*")) or [prefix + ".data-*"]
    except READ_ERRORS:
        files = [prefix + ".index"]
    detail = " ".join(str(error).split())[:300]
    return CorruptCheckpointError(f"{', '.join(files)}: the checkpoint file is truncated or "
                                  f"corrupt ({type(error).__name__}: {detail})")


def _unescape(name: str) -> str:
    # TensorFlow's object graph writes "/" in a name as ".S" and "." as "..".
    return re.sub(r"\.([S.])", lambda match: "/" if match.group(1) == "S" else ".", name)


def _open(prefix: str):
    # Not `tf.train.load_checkpoint`, which reads a directory's `checkpoint`
    # file instead when `ckpt-<step>/` (the directory format's twin) exists.
    return tf.compat.v1.train.NewCheckpointReader(prefix)


def _reader(prefix: str):
    try:
        return _open(prefix)
    except READ_ERRORS as error:
        raise corrupt_checkpoint_error(prefix, error) from error


def saved_parts(prefix: str) -> set[str]:
    """The top-level parts (`model_weights`, `optimizer`, `data`, ...) saved in a checkpoint."""
    return {name.split("/", 1)[0] for name in _reader(prefix).get_variable_to_shape_map()}


def part_shapes(prefix: str, part: str) -> dict[str, tuple]:
    """`{name: shape}` of a name-keyed part (`model_weights`, `random_state`), without its data."""
    start = part + "/"
    return {_unescape(key[len(start):-len(_VALUE_SUFFIX)]): tuple(shape)
            for key, shape in _reader(prefix).get_variable_to_shape_map().items()
            if key.startswith(start) and key.endswith(_VALUE_SUFFIX)}


def read_part(prefix: str, part: str) -> dict[str, np.ndarray]:
    """`{name: array}` of a name-keyed part (`model_weights`, `random_state`).

    Raises:
        CorruptCheckpointError: a file of the checkpoint cannot be read (named).
    """
    reader = _reader(prefix)
    start = part + "/"
    try:
        return {_unescape(key[len(start):-len(_VALUE_SUFFIX)]): np.asarray(reader.get_tensor(key))
                for key in reader.get_variable_to_shape_map()
                if key.startswith(start) and key.endswith(_VALUE_SUFFIX)}
    except READ_ERRORS as error:
        raise corrupt_checkpoint_error(prefix, error) from error


def has_loss_scale(prefix: str) -> bool:
    """Whether the checkpoint's optimizer is a loss-scale optimizer (trained under float16)."""
    return any(name.startswith("optimizer/inner_optimizer/")
               for name in _reader(prefix).get_variable_to_shape_map())


def read_step(prefix: str) -> Optional[int]:
    """The saved global step, or None when the checkpoint holds none."""
    reader = _reader(prefix)
    key = "step" + _VALUE_SUFFIX
    if not reader.has_tensor(key):
        return None
    try:
        return int(reader.get_tensor(key))
    except READ_ERRORS as error:
        raise corrupt_checkpoint_error(prefix, error) from error


def _loads(prefix: str) -> bool:
    try:
        reader = _open(prefix)
        for key in reader.get_variable_to_shape_map():
            if key.endswith(_VALUE_SUFFIX):
                reader.get_tensor(key)
    except READ_ERRORS:
        return False
    return True


def killed_merges(directory: str, steps: Iterable[int]) -> list[str]:
    """Prefixes of `ckpt-<step>` files that a kill during TensorFlow's save left half-merged.

    TensorFlow names a checkpoint in its `checkpoint` file only after its
    files are merged: files of a later step that cannot be read are a killed
    merge. Without a readable `checkpoint` file nothing is known, so nothing
    is returned.
    """
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (tf.errors.OpError, ValueError, UnicodeDecodeError):
        return []
    if state is None or not state.model_checkpoint_path:
        return []
    named = re.fullmatch(r".*-(\d+)", state.model_checkpoint_path)
    if named is None:
        return []
    newest = int(named.group(1))
    prefixes = [os.path.join(directory, f"ckpt-{step}") for step in steps if step > newest]
    return [prefix for prefix in prefixes if not _loads(prefix)]


class InputPosition(tf.__internal__.tracking.Trackable):
    """A `tf.data` iterator's state as a checkpoint part that may fail to restore.

    TensorFlow restores an iterator only into the same pipeline it was saved
    from; any other pipeline fails and leaves the iterator unusable. This
    wrapper records that failure in `restore_error` instead of raising, so
    that the rest of the checkpoint is restored (and checked) as usual and
    the trainer can start a fresh iterator.

    Attributes:
        iterator: the wrapped iterator (replace it after a failed restore).
        restore_error: the error of a failed restore, or None.
    """

    kind = "tf_input_position"

    def __init__(self, iterator):
        self.iterator = iterator
        self.restore_error = None

    @staticmethod
    def unsaveable_reason(iterator) -> Optional[str]:
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

    def write(self, path: str) -> None:
        """Saves the position as the directory `path` (a checkpoint entry)."""
        os.makedirs(path)
        tf.train.Checkpoint(data=self).write(os.path.join(path, _POSITION_PREFIX))

    def read(self, path: str) -> None:
        """Restores the position saved by `write`; a misfit lands in `restore_error`.

        Raises:
            CorruptCheckpointError: the files cannot be read.
        """
        prefix = os.path.join(path, _POSITION_PREFIX)
        try:
            tf.train.Checkpoint(data=self).read(prefix).assert_consumed()
        except READ_ERRORS as error:
            raise corrupt_checkpoint_error(prefix, error) from error


def restore_training_state(prefix: str, required: Mapping[str, object],
                           optional: Mapping[str, object]) -> None:
    """Reads a training checkpoint into the objects it was saved from, checking that all fit.

    Args:
        prefix: the checkpoint.
        required: `{"model_weights": {path: variable}, "optimizer": optimizer,
            "step": variable}`.
        optional: parts restored when the checkpoint has them
            (`random_state`, `data`); the checkpoint's other optional parts
            are left unread.

    Raises:
        CheckpointMismatchError: saved values without a variable (named for
            the model's weights), variables without a value, or values of
            another shape.
        CorruptCheckpointError: a file cannot be read.
    """
    context = f"{prefix}: the checkpoint does not match this model and optimizer"
    # TensorFlow's partial restore does not report values left over; names can.
    saved_weights = variables.relative_names(part_shapes(prefix, "model_weights"),
                                             required["model_weights"])
    problems = variables.mismatches(required["model_weights"], saved_weights, "model weights")
    if problems:
        raise CheckpointMismatchError(f"{context}: " + "; ".join(problems))
    saved = saved_parts(prefix)
    try:
        status = tf.train.Checkpoint(**required, **optional).restore(prefix)
        if saved - set(required) - set(optional) - {"_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter"}:
            status.expect_partial().assert_existing_objects_matched()
        else:
            status.assert_consumed()
    except READ_ERRORS as error:
        raise corrupt_checkpoint_error(prefix, error) from error
    except (AssertionError, ValueError) as error:
        # ValueError: a saved tensor of another shape; AssertionError: saved
        # values without a variable, or variables without a value.
        raise CheckpointMismatchError(f"{context}: {error}") from error
