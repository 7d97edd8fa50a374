"""File helpers shared by readers and writers.

Reading: plain or gzip files (recognised by their magic bytes or a `.gz`
suffix), decoded as strict UTF-8 one line at a time, so that a bad byte is
reported with the file and the line it is on. `-` is standard input. Readers
may open a file several times (sniffing gzip, guessing the format, numbering
lines); a stream (pipe, `/dev/stdin`, process substitution) can be read only
once, so its content is spooled to a temporary file at its first opening and
every later opening in this process reads the spool.

Writing: `atomic_write` writes to a hidden temporary file beside the target
and renames it over the target only once everything was written and synced,
so an interrupted run never leaves a half-written output behind. `-` is
standard output, and a stream target (`/dev/stdout`, a pipe) is written
directly. `check_output_path` tells before the work starts whether an output
can be written at all.
"""

import atexit
import contextlib
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import unicodedata
import uuid
import zlib
from typing import Any, BinaryIO, Callable, Iterator, Optional, Sequence, TextIO, Union

from absl import logging

from syntax_t2t.errors import InputError, OutputPathError

PathLike = Union[str, os.PathLike]

GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"


STDIO = "-"

# (device, inode) of each stream read so far -> the temporary file holding its content.
_spools: dict[tuple[int, int], str] = {}
_spool_dir: list[str] = []


def _spool_directory() -> str:
    if not _spool_dir:
        _spool_dir.append(tempfile.mkdtemp(prefix="syntax_t2t_spool_"))
        atexit.register(shutil.rmtree, _spool_dir[0], True)
    return _spool_dir[0]


def readable_path(path: PathLike) -> str:
    """A path that can be opened any number of times and holds the content of `path`.

    A regular file is its own answer. `-` (standard input) and other
    streams are copied, on their first call, to a temporary file that lives
    until the process ends; later calls for the same stream return that
    copy, so a stream is read exactly once whatever its readers do.

    Raises:
        InputError: `path` is a directory.
        FileNotFoundError: `path` does not exist.
    """
    name = os.fspath(path)
    if name == STDIO:
        status = os.fstat(sys.stdin.fileno())
    else:
        status = os.stat(name)
    if stat.S_ISREG(status.st_mode):
        return name
    if stat.S_ISDIR(status.st_mode):
        raise InputError(name, None, "is a directory, not a file", reason="directory")
    key = (status.st_dev, status.st_ino)
    if key not in _spools:
        spool = os.path.join(_spool_directory(), f"{len(_spools)}.spool")
        if name == STDIO:
            source = open(sys.stdin.fileno(), "rb", closefd=False)
        else:
            source = open(name, "rb")
        with source, open(spool, "wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
        _spools[key] = spool
    return _spools[key]


def is_gzip(path: PathLike) -> bool:
    """Whether `path` is gzip-compressed: by its magic bytes, or its `.gz` suffix.

    A `.gz` file that is not really gzip is treated as gzip, so reading it
    fails with a clear error instead of yielding compressed garbage.
    """
    with open(readable_path(path), "rb") as stream:
        magic = stream.read(len(GZIP_MAGIC))
    return magic == GZIP_MAGIC or os.fspath(path).endswith(".gz")


def open_binary(path: PathLike) -> BinaryIO:
    """Opens a plain or gzip file, or a stream, for reading bytes (decompressing if needed)."""
    readable = readable_path(path)
    if is_gzip(path):
        return gzip.open(readable, "rb")
    return open(readable, "rb")


def open_text(path: PathLike) -> TextIO:
    """Opens a plain or gzip file as strictly decoded UTF-8 text.

    Use `read_lines` instead when a decoding error should name the line.
    """
    return io.TextIOWrapper(open_binary(path), encoding="utf-8", errors="strict")


def read_raw_lines(path: PathLike) -> Iterator[tuple[int, bytes]]:
    """Yields `(line_number, raw_bytes)` for each line, without its line terminator.

    Lines are split on `\\n` only; a `\\r` right before it (Windows line
    endings) is dropped too. Line numbers start at 1.

    Raises:
        InputError: if gzip data is corrupt or truncated (named at the line
            where decompression failed).
    """
    line_number = 0
    with open_binary(path) as stream:
        try:
            for line_number, raw in enumerate(stream, start=1):
                if raw.endswith(b"\n"):
                    raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
                yield line_number, raw
        except (OSError, EOFError, zlib.error) as error:
            raise InputError(
                path, line_number + 1, f"cannot decompress gzip data: {error}", reason="corrupt gzip"
            ) from error


# Invisible characters that only make equal words differ: zero width space, word joiner, and the
# byte order mark inside a line. The zero width (non-)joiners shape some scripts and stay.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u2060\ufeff"))


def normalize_text(text: str) -> str:
    """`text` in Unicode NFC, without invisible zero-width characters.

    What every reader of text (datagen's corpora, decoding's input, the parse
    cache) applies, so that the same words in NFD or with a zero width space
    find the same vocabulary entries.
    """
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", text.translate(_INVISIBLE))


def decode_line(path: PathLike, line_number: int, raw: bytes, normalize: bool = True) -> str:
    """Decodes one line as strict UTF-8, in NFC (`normalize_text`) unless told not to.

    A UTF-8 byte order mark at the start of line 1 is dropped; a NUL byte is
    refused.

    Args:
        path: the file the line comes from, for the error message.
        line_number: 1-based number of the line, for the error message.
        raw: the line's bytes, without line terminator.
        normalize: False for files the toolkit wrote itself and must read back
            exactly (a vocabulary is the id table its data was encoded with).

    Returns:
        The decoded line.

    Raises:
        InputError: naming file, line and the offending byte's column.
    """
    if line_number == 1 and raw.startswith(_UTF8_BOM):
        raw = raw[len(_UTF8_BOM) :]
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise InputError(path, line_number, f"a NUL byte at byte offset {nul + 1} of the line (a "
                                            f"binary file, or text in UTF-16?)", reason="NUL byte")
    try:
        text = raw.decode("utf-8", errors="strict")
        return normalize_text(text) if normalize else text
    except UnicodeDecodeError as error:
        bad = raw[error.start : error.end]
        raise InputError(
            path,
            line_number,
            f"invalid UTF-8: byte(s) {bad!r} at byte offset {error.start + 1} of the line ({error.reason})",
            reason="invalid UTF-8",
        ) from error


def read_lines(path: PathLike, normalize: bool = True) -> Iterator[tuple[int, str]]:
    """Yields `(line_number, text)` for each line of a plain or gzip UTF-8 file.

    Args:
        path: the file to read.
        normalize: whether to apply `normalize_text` (see `decode_line`).

    Yields:
        1-based line number and the decoded line without its terminator.

    Raises:
        InputError: on invalid UTF-8 or corrupt gzip data, naming the line.
    """
    for line_number, raw in read_raw_lines(path):
        yield line_number, decode_line(path, line_number, raw, normalize)


def _create_temporary_beside(path: str) -> tuple[str, int]:
    directory, name = os.path.split(os.path.abspath(path))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temporary = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            # Mode 0o666 lets the umask decide permissions, as for a plain open().
            return temporary, os.open(temporary, flags, 0o666)
        except FileExistsError:
            continue


_TEMPORARY = re.compile(r"\.(?P<name>.+)\.[0-9a-f]{12}\.tmp")


def remove_orphaned_temporaries(directory: PathLike, name_prefix: str) -> list[str]:
    """Deletes the temporary files of `atomic_write`-style writes that a killed run left behind.

    Only files named `.<name>.<12 hex digits>.tmp` whose `<name>` starts with
    `name_prefix` are removed (each logged), so call it where no other
    process writes such files at the same time (e.g. a datagen run's start).

    Returns:
        The removed paths.
    """
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for entry in sorted(os.listdir(directory)):
            match = _TEMPORARY.fullmatch(entry)
            if match and match.group("name").startswith(name_prefix):
                path = os.path.join(directory, entry)
                logging.warning("removing %s, left by an earlier run that did not finish", path)
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
                removed.append(path)
    return removed


def fsync_directory(directory: str) -> None:
    """Makes a rename into `directory` durable (a no-op where the file system cannot sync it)."""
    # Some file systems cannot fsync a directory; the rename is still atomic there.
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _is_stream_target(path: str) -> bool:
    if path == STDIO:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


@contextlib.contextmanager
def _open_stream_target(path: str, mode: str, encoding: str):
    if path == STDIO:
        sys.stdout.flush()
        binary = open(sys.stdout.fileno(), "wb", closefd=False)
    else:
        binary = open(path, "wb")
    with binary:
        if mode == "wb":
            yield binary
        else:
            text = io.TextIOWrapper(binary, encoding=encoding, newline="")
            yield text
            text.flush()
            text.detach()


def summary_stream(*outputs: PathLike) -> TextIO:
    """Where a program's summary lines go: stderr when an output is standard output."""
    return sys.stderr if any(os.fspath(path) == STDIO for path in outputs if path) else sys.stdout


def check_output_path(path: PathLike, what: str,
                      others: Sequence[tuple[str, Optional[PathLike]]] = ()) -> None:
    """Raises `OutputPathError` unless `path` can be written (called before the work).

    `-` and existing streams are always writable; otherwise `path` must not
    be a directory, nor the file of one of `others` (symbolic links
    resolved), and its directory must exist and be writable.

    Args:
        path: the output file as the user gave it.
        what: how the user named it, e.g. `"--decode_to_file"`.
        others: `(flag, path)` of the program's inputs and other outputs,
            which this output must not replace; unset ones (None, "") and
            streams are passed over.
    """
    name = os.fspath(path)
    if _is_stream_target(name):
        return
    real = os.path.realpath(name)
    for flag, other in others:
        if other and not _is_stream_target(os.fspath(other)) and (
                os.path.realpath(os.fspath(other)) == real):
            raise OutputPathError(name, what, f"is the same file as {flag}={os.fspath(other)}; "
                                              f"it would be overwritten: give another file")
    if os.path.isdir(name):
        raise OutputPathError(name, what, "is a directory; give a file name")
    directory = os.path.dirname(os.path.abspath(name))
    if not os.path.isdir(directory):
        raise OutputPathError(name, what, f"directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputPathError(name, what, f"directory {directory} is not writable")
    if os.path.exists(name) and not os.access(name, os.W_OK):
        raise OutputPathError(name, what, "exists and is read-only")


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "w", encoding: str = "utf-8"):
    """Context manager that replaces `path` only if the block completes.

    Writes go to a temporary file `.<name>.<random>.tmp` in the same directory
    (so the final `os.replace` is an atomic rename on one file system). On
    success the data is flushed and fsynced, then renamed over `path`. If the
    block raises, the temporary file is removed and an existing `path` is
    left untouched.

    Args:
        path: the file to (over)write.
        mode: `"w"` for text (no newline translation) or `"wb"` for bytes.
        encoding: text encoding, used in mode `"w"` only.

    Yields:
        The open file object to write to.

    Raises:
        ValueError: for any other mode.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write supports modes 'w' and 'wb', got {mode!r}")
    path = os.fspath(path)
    if _is_stream_target(path):
        # A stream cannot be replaced: it gets the output as it comes.
        with _open_stream_target(path, mode, encoding) as stream:
            yield stream
        return
    temporary, descriptor = _create_temporary_beside(path)
    try:
        if mode == "wb":
            stream = os.fdopen(descriptor, "wb")
        else:
            stream = os.fdopen(descriptor, "w", encoding=encoding, newline="")
        descriptor = None  # now owned by `stream`
        with stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        if descriptor is not None:
            os.close(descriptor)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    fsync_directory(os.path.dirname(os.path.abspath(path)))


def atomic_write_text(path: PathLike, text: str, encoding: str = "utf-8") -> None:
    """Atomically writes `text` to `path`, gzip-compressed when `path` ends in `.gz`.

    Compressed output stores no timestamp, so equal text gives equal bytes.
    """
    data = text.encode(encoding)
    if os.fspath(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    with atomic_write(path, "wb") as stream:
        stream.write(data)


def sha256_file(path: PathLike) -> str:
    """The SHA-256 of a file's bytes, in hex, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_json_record(path: PathLike, what: str, remedy: str, valid: Callable[[Any], bool],
                     expected: str, default=None):
    """A run's JSON record (`default` when absent), refused in one line when damaged.

    Args:
        what: the record's name in messages ("environment record").
        remedy: what the user can do, appended to a refusal.
        valid: whether a parsed value has the record's shape.
        expected: the shape, said when `valid` is false.

    Raises:
        InputError: not JSON (naming its line), or JSON of another shape.
    """
    if not os.path.exists(path):
        return default
    try:
        with open(path, encoding="utf-8") as stream:
            value = json.load(stream)
    except json.JSONDecodeError as error:
        raise InputError(path, error.lineno, f"not the run's {what} ({error.msg}); {remedy}",
                         reason=f"damaged {what}") from error
    if not valid(value):
        raise InputError(path, None, f"not the run's {what} ({expected}); {remedy}",
                         reason=f"damaged {what}")
    return value


def read_json(path: PathLike, default=None, remedy: str = ""):
    """A JSON file's value, or `default` when the file does not exist.

    Raises:
        InputError: the file is not valid JSON (naming its line), with
            `remedy` (what the user can do) appended.
    """
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as stream:
        try:
            return json.load(stream)
        except json.JSONDecodeError as error:
            raise InputError(path, error.lineno, f"not valid JSON ({error.msg})"
                             + (f"; {remedy}" if remedy else ""), reason="bad JSON") from None
