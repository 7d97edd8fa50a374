"""The checkpoint format both backends write and read: a directory of NumPy arrays and JSON.

    ckpt-<step>/
        arrays.npz            every array, keyed "<part>/<name>": model_weights/<weight path>,
                              optimizer/<name>, random_state/<index>, and "step"
        input_position.json   the NumPy input pipeline's position (optional)
        tf_input_position/    a `tf.data` iterator's position, TensorFlow's own files (optional)
        manifest.json         written last: format, version, step, parts, and the size and
                              SHA-256 of every other file

Names in `arrays.npz` are those of `variables.py`. `manifest.json` marks
the checkpoint complete and lets a reader tell a damaged file (its checksum
differs) from a checkpoint that does not fit the model.

Writing is atomic for a reader: everything, manifest last, is written and
synced into a hidden staging directory `.ckpt-<step>.tmp-<random>/` beside
the target, which is then renamed to `ckpt-<step>`. A directory that
replaces an older one of the same step first moves that one aside
(`.ckpt-<step>.old-<random>`). `discovery.py` says what a kill at any moment
leaves and what is done with it.
"""

import dataclasses
import json
import os
import shutil
import tempfile
import zipfile
from typing import Callable, Mapping, Optional

import numpy as np

from syntax_t2t import io_utils
from syntax_t2t.checkpointing.errors import CorruptCheckpointError

FORMAT = "syntax_t2t.checkpoint"
VERSION = 1
MANIFEST_FILE = "manifest.json"
ARRAYS_FILE = "arrays.npz"
STEP_KEY = "step"
STAGING_INFIX = ".tmp-"
REPLACED_INFIX = ".old-"


def _sync_file(path: str) -> None:
    with open(path, "rb+") as stream:
        os.fsync(stream.fileno())


def _files_under(root: str) -> list[str]:
    """Paths of every file under `root`, relative to it and with `/`, sorted."""
    found = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories.sort()
        for name in files:
            found.append(os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/"))
    return sorted(found)


def write_checkpoint(directory: str, name: str, step: int, arrays: Mapping[str, np.ndarray], *,
                     json_files: Optional[Mapping[str, object]] = None,
                     writers: Optional[Mapping[str, Callable[[str], None]]] = None) -> str:
    """Writes the checkpoint `directory/name` atomically (see the module docstring).

    Args:
        directory: the run's (or model directory's) folder; created if needed.
        name: the checkpoint's name, `ckpt-<step>`.
        step: the global step, recorded in the manifest and as `arrays["step"]`.
        arrays: `{"<part>/<name>": array}`.
        json_files: `{file name: JSON-able value}` written beside the arrays.
        writers: `{entry name: function(path)}` that write an entry (a file
            or a directory) of their own, such as TensorFlow's iterator state.

    Returns:
        The path of the checkpoint directory.
    """
    os.makedirs(directory, exist_ok=True)
    final = os.path.join(directory, name)
    staging = tempfile.mkdtemp(prefix=f".{name}{STAGING_INFIX}", dir=directory)
    try:
        arrays = dict(arrays)
        arrays[STEP_KEY] = np.asarray(step, dtype=np.int64)
        with open(os.path.join(staging, ARRAYS_FILE), "wb") as stream:
            np.savez(stream, **arrays)
        for file_name, value in (json_files or {}).items():
            with open(os.path.join(staging, file_name), "w", encoding="utf-8") as stream:
                json.dump(value, stream)
        for entry, write in (writers or {}).items():
            write(os.path.join(staging, entry))
        files = {}
        for relative in _files_under(staging):
            path = os.path.join(staging, relative)
            _sync_file(path)
            files[relative] = {"bytes": os.path.getsize(path), "sha256": io_utils.sha256_file(path)}
        parts = sorted({key.split("/", 1)[0] for key in arrays}
                       | {os.path.splitext(file_name)[0] for file_name in json_files or {}}
                       | set(writers or {}))
        manifest = {"format": FORMAT, "version": VERSION, "step": int(step), "parts": parts,
                    "files": files}
        with open(os.path.join(staging, MANIFEST_FILE), "w", encoding="utf-8") as stream:
            json.dump(manifest, stream, indent=1, sort_keys=True)
            stream.write("\n")
            stream.flush()
            os.fsync(stream.fileno())
        for sub_directory, _, _ in os.walk(staging):
            io_utils.fsync_directory(sub_directory)
        install(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def install(staging: str, final: str) -> None:
    """Renames the complete checkpoint `staging` to `final`, moving an older `final` aside first."""
    directory, name = os.path.split(final)
    aside = None
    if os.path.lexists(final):
        aside = tempfile.mkdtemp(prefix=f".{name}{REPLACED_INFIX}", dir=directory)
        os.rmdir(aside)
        os.rename(final, aside)
    os.rename(staging, final)
    io_utils.fsync_directory(directory)
    if aside is not None:
        remove(aside)


def remove(path: str) -> None:
    """Deletes a checkpoint directory so that a kill midway leaves it marked incomplete.

    The manifest goes first: whatever is left after a kill has none, which
    is what marks a directory as a save that did not finish.
    """
    try:
        os.remove(os.path.join(path, MANIFEST_FILE))
    except FileNotFoundError:
        pass
    shutil.rmtree(path, ignore_errors=True)


def is_complete(path: str) -> bool:
    """Whether `path` is a checkpoint directory with its manifest (its files are not checked)."""
    return os.path.isfile(os.path.join(path, MANIFEST_FILE))


def _damaged(path: str, reason: str) -> CorruptCheckpointError:
    return CorruptCheckpointError(f"{path}: the checkpoint file is truncated or corrupt ({reason})")


@dataclasses.dataclass
class StoredCheckpoint:
    """A checkpoint directory whose manifest was read and whose files were checked.

    Attributes:
        path: the directory.
        step: the global step it was saved at.
        parts: what it holds (`model_weights`, `optimizer`, `step`,
            `random_state`, `input_position`, `tf_input_position`).
    """

    path: str
    step: int
    parts: frozenset
    _arrays: object = dataclasses.field(default=None, repr=False)

    def arrays(self, part: str) -> dict[str, np.ndarray]:
        """`{name: array}` of one part (`model_weights`, `optimizer`, `random_state`)."""
        arrays = self._open_arrays()
        prefix = part + "/"
        try:
            return {key[len(prefix):]: arrays[key] for key in arrays.files
                    if key.startswith(prefix)}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
            raise _damaged(os.path.join(self.path, ARRAYS_FILE),
                           f"{type(error).__name__}: {error}") from error

    def json(self, file_name: str):
        """The value of one of its JSON files (`input_position.json`)."""
        path = os.path.join(self.path, file_name)
        try:
            with open(path, encoding="utf-8") as stream:
                return json.load(stream)
        except (OSError, ValueError) as error:
            raise _damaged(path, f"{type(error).__name__}: {error}") from error

    def entry(self, name: str) -> str:
        """The path of one of its entries (`tf_input_position`)."""
        return os.path.join(self.path, name)

    def _open_arrays(self):
        if self._arrays is None:
            path = os.path.join(self.path, ARRAYS_FILE)
            try:
                self._arrays = np.load(path, allow_pickle=False)
            except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
                raise _damaged(path, f"{type(error).__name__}: {error}") from error
        return self._arrays


def read_manifest(path: str) -> dict:
    """The manifest of checkpoint directory `path`.

    Raises:
        CorruptCheckpointError: there is none (a save that did not finish),
            or it is not one of this format and version.
    """
    manifest_path = os.path.join(path, MANIFEST_FILE)
    if not os.path.isfile(manifest_path):
        raise CorruptCheckpointError(f"{path}: no {MANIFEST_FILE}, so the checkpoint is incomplete "
                                     f"(its save did not finish)")
    try:
        with open(manifest_path, encoding="utf-8") as stream:
            manifest = json.load(stream)
    except (OSError, ValueError) as error:
        raise _damaged(manifest_path, f"{type(error).__name__}: {error}") from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _damaged(manifest_path, f"not a {FORMAT} manifest")
    if manifest.get("version") != VERSION:
        raise CorruptCheckpointError(
            f"{manifest_path}: checkpoint format version {manifest.get('version')!r}, this code "
            f"reads version {VERSION}; use the version of syntax_t2t that wrote it")
    return manifest


def open_checkpoint(path: str, verify: bool = True) -> StoredCheckpoint:
    """Reads a checkpoint directory's manifest and, with `verify`, checks every file against it.

    Raises:
        CorruptCheckpointError: the manifest is missing or damaged, or a file
            is missing, of another size or another checksum (named).
    """
    manifest = read_manifest(path)
    if verify:
        for relative, expected in sorted(manifest.get("files", {}).items()):
            file_path = os.path.join(path, *relative.split("/"))
            if not os.path.isfile(file_path):
                raise CorruptCheckpointError(f"{file_path}: missing from the checkpoint")
            size = os.path.getsize(file_path)
            if size != expected["bytes"]:
                raise _damaged(file_path, f"{size} bytes, the manifest says {expected['bytes']}")
            if io_utils.sha256_file(file_path) != expected["sha256"]:
                raise _damaged(file_path, "its SHA-256 differs from the manifest's")
    return StoredCheckpoint(path=path, step=int(manifest["step"]),
                            parts=frozenset(manifest.get("parts", ())))
