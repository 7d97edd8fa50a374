"""Finding a directory's checkpoints from its files, and what killed saves left behind.

Checkpoints are found from the files themselves, never from an index that
could be stale, missing or damaged (TensorFlow's `checkpoint` file is not
read to find them):

* `ckpt-<step>/` holding `manifest.json`: a checkpoint of this project's
  format (`directory_format.py`);
* `ckpt-<step>.index` (with its `.data-*` files): a checkpoint in
  TensorFlow's format, as runs before that format wrote them; read on the
  TensorFlow backend only (`tf_format.py`), `bin/convert_checkpoints`
  rewrites them.

When both formats hold one step, the directory is used.

Only what is positively marked incomplete is ever deleted
(`remove_partial_saves`): a staging directory `.ckpt-<step>.tmp-*` or a
`ckpt-<step>/` without its manifest (a save killed midway), TensorFlow's
temporary `ckpt-<step>_temp/` and `checkpoint.tmp*`, `.data-*` files
without their `.index`, and `ckpt-<step>.index` files newer than the step
TensorFlow's (readable) `checkpoint` file names that cannot be read, which
is what a kill during TensorFlow's merge leaves. A staging or set-aside
directory whose manifest and files are intact is a complete checkpoint
whose rename did not happen: it is renamed into place, not deleted. A
checkpoint that merely fails to load is skipped by the restore (with a
warning naming the file) and left for the user to look at.
"""

import dataclasses
import glob
import os
import re
from typing import Optional

from absl import logging

from syntax_t2t.checkpointing import directory_format
from syntax_t2t.checkpointing.errors import CorruptCheckpointError

CHECKPOINT_PREFIX = "ckpt"
DIRECTORY_FORMAT = "directory"
TENSORFLOW_FORMAT = "tensorflow"
#: TensorFlow's index of a directory's checkpoints (read only to tell killed merges).
TENSORFLOW_STATE_FILE = "checkpoint"

_NAME = re.compile(re.escape(CHECKPOINT_PREFIX) + r"-(\d+)")
_TF_INDEX = re.compile(re.escape(CHECKPOINT_PREFIX) + r"-(\d+)\.index")
_TF_DATA = re.compile(re.escape(CHECKPOINT_PREFIX) + r"-(\d+)\.data-\d+-of-\d+")
_TF_TEMP = re.compile(re.escape(CHECKPOINT_PREFIX) + r"-\d+_temp(?:_[0-9a-f]+)?")
_STAGED = re.compile(r"\." + re.escape(CHECKPOINT_PREFIX) + r"-(\d+)("
                     + re.escape(directory_format.STAGING_INFIX) + "|"
                     + re.escape(directory_format.REPLACED_INFIX) + r").+")


@dataclasses.dataclass(frozen=True)
class FoundCheckpoint:
    """A complete-looking checkpoint: its step, path and format.

    Attributes:
        step: the step in its name.
        path: the checkpoint directory, or TensorFlow's path prefix
            (`.../ckpt-<step>` without `.index`).
        format: `DIRECTORY_FORMAT` or `TENSORFLOW_FORMAT`.
    """

    step: int
    path: str
    format: str


def find_checkpoints(directory: str) -> list[FoundCheckpoint]:
    """The checkpoints of `directory`, one per step, oldest first (see the module docstring)."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = {}
    for name in names:
        match = _TF_INDEX.fullmatch(name)
        if match:
            step = int(match.group(1))
            found.setdefault(step, FoundCheckpoint(step, os.path.join(directory, name[:-6]),
                                                   TENSORFLOW_FORMAT))
    for name in names:
        match = _NAME.fullmatch(name)
        path = os.path.join(directory, name)
        if match and directory_format.is_complete(path):
            step = int(match.group(1))
            found[step] = FoundCheckpoint(step, path, DIRECTORY_FORMAT)
    return [found[step] for step in sorted(found)]


def latest_checkpoint(directory: str) -> Optional[str]:
    """The path of the newest checkpoint of `directory`, or None."""
    found = find_checkpoints(directory)
    return found[-1].path if found else None


def checkpoint_at(path: str) -> Optional[FoundCheckpoint]:
    """The checkpoint `path` names (a checkpoint directory or TensorFlow prefix), or None.

    A directory without its manifest is no checkpoint (its save did not
    finish).
    """
    path = path.rstrip(os.sep) or path
    match = _NAME.fullmatch(os.path.basename(path))
    step = int(match.group(1)) if match else -1
    if directory_format.is_complete(path):
        return FoundCheckpoint(step, path, DIRECTORY_FORMAT)
    if os.path.isfile(path + ".index"):
        return FoundCheckpoint(step, path, TENSORFLOW_FORMAT)
    return None


def step_of(path: str) -> Optional[int]:
    """The step in a `ckpt-<step>` name, or None."""
    match = _NAME.fullmatch(os.path.basename(path.rstrip(os.sep)))
    return int(match.group(1)) if match else None


def remove_step(directory: str, step: int) -> None:
    """Deletes the checkpoint of `step` in both formats (keep-N), marked incomplete first."""
    prefix = os.path.join(directory, f"{CHECKPOINT_PREFIX}-{step}")
    if os.path.isdir(prefix):
        directory_format.remove(prefix)
    # The index goes first: data files without it are a killed save's leftovers.
    if os.path.exists(prefix + ".index"):
        os.remove(prefix + ".index")
    for path in glob.glob(glob.escape(prefix) + ".data-*"):
        os.remove(path)


def _tensorflow_format():
    """`tf_format`, or None where TensorFlow is not installed."""
    try:
        from syntax_t2t.checkpointing import tf_format
    except ImportError:
        return None
    return tf_format


def _finish_or_remove(path: str, step: int, directory: str, removed: list) -> None:
    """A staging or set-aside directory: put in place when complete and needed, else deleted."""
    final = os.path.join(directory, f"{CHECKPOINT_PREFIX}-{step}")
    if not directory_format.is_complete(final):
        try:
            directory_format.open_checkpoint(path)
        except CorruptCheckpointError:
            pass
        else:
            directory_format.install(path, final)
            logging.warning("recovered the complete checkpoint %s (from %s, whose rename a killed "
                            "save did not finish)", final, path)
            return
    removed.append(path)


def remove_partial_saves(directory: str) -> list[str]:
    """Deletes what saves killed midway left in `directory`; returns the removed paths.

    See the module docstring for what counts; nothing else is touched.
    """
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    removed = []
    indexed = {int(match.group(1)) for match in map(_TF_INDEX.fullmatch, names) if match}
    for name in names:
        path = os.path.join(directory, name)
        staged = _STAGED.fullmatch(name)
        if staged and os.path.isdir(path):
            _finish_or_remove(path, int(staged.group(1)), directory, removed)
        elif (_NAME.fullmatch(name) and os.path.isdir(path)
              and not directory_format.is_complete(path)):
            removed.append(path)
        elif _TF_TEMP.fullmatch(name) or name.startswith(TENSORFLOW_STATE_FILE + ".tmp"):
            removed.append(path)
        elif _TF_DATA.fullmatch(name) and int(_TF_DATA.fullmatch(name).group(1)) not in indexed:
            removed.append(path)
    if indexed:
        tf_format = _tensorflow_format()
        if tf_format is not None:
            for prefix in tf_format.killed_merges(directory, sorted(indexed)):
                removed.append(prefix + ".index")
                removed.extend(glob.glob(glob.escape(prefix) + ".data-*"))
    for path in sorted(removed):
        logging.warning("removing %s, left by a checkpoint save that did not finish", path)
        if os.path.isdir(path) and not os.path.islink(path):
            directory_format.remove(path)
        else:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
    return sorted(removed)


def no_checkpoint_message(path: str) -> str:
    """Why `path` is no checkpoint, for `--checkpoint_path` errors."""
    if os.path.isdir(path) and _NAME.fullmatch(os.path.basename(path.rstrip(os.sep))):
        return (f"{path} has no {directory_format.MANIFEST_FILE}: the save of this checkpoint did "
                f"not finish")
    return (f"no checkpoint there (expected the directory {path} holding "
            f"{directory_format.MANIFEST_FILE}, or TensorFlow's file {path}.index)")

