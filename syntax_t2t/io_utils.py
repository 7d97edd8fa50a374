"""File helpers shared by readers and writers.

Reading: plain or gzip files (recognised by their magic bytes or a `.gz`
suffix), decoded as strict UTF-8 one line at a time, so that a bad byte is
reported with the file and the line it is on.

Writing: `atomic_write` writes to a hidden temporary file beside the target
and renames it over the target only once everything was written and synced,
so an interrupted run never leaves a half-written output behind.
"""

import contextlib
import gzip
import io
import os
import uuid
import zlib
from typing import BinaryIO, Iterator, TextIO, Union

from syntax_t2t.errors import InputError

PathLike = Union[str, os.PathLike]

GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"


def is_gzip(path: PathLike) -> bool:
    """Whether `path` is gzip-compressed: by its magic bytes, or its `.gz` suffix.

    A `.gz` file that is not really gzip is treated as gzip, so reading it
    fails with a clear error instead of yielding compressed garbage.
    """
    with open(path, "rb") as stream:
        magic = stream.read(len(GZIP_MAGIC))
    return magic == GZIP_MAGIC or os.fspath(path).endswith(".gz")


def open_binary(path: PathLike) -> BinaryIO:
    """Opens a plain or gzip file for reading bytes (decompressing if needed)."""
    if is_gzip(path):
        return gzip.open(path, "rb")
    return open(path, "rb")


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


def decode_line(path: PathLike, line_number: int, raw: bytes) -> str:
    """Decodes one line as strict UTF-8.

    A UTF-8 byte order mark at the start of line 1 is dropped.

    Args:
        path: the file the line comes from, for the error message.
        line_number: 1-based number of the line, for the error message.
        raw: the line's bytes, without line terminator.

    Returns:
        The decoded line.

    Raises:
        InputError: naming file, line and the offending byte's column.
    """
    if line_number == 1 and raw.startswith(_UTF8_BOM):
        raw = raw[len(_UTF8_BOM) :]
    try:
        return raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError as error:
        bad = raw[error.start : error.end]
        raise InputError(
            path,
            line_number,
            f"invalid UTF-8: byte(s) {bad!r} at byte offset {error.start + 1} of the line ({error.reason})",
            reason="invalid UTF-8",
        ) from error


def read_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """Yields `(line_number, text)` for each line of a plain or gzip UTF-8 file.

    Args:
        path: the file to read.

    Yields:
        1-based line number and the decoded line without its terminator.

    Raises:
        InputError: on invalid UTF-8 or corrupt gzip data, naming the line.
    """
    for line_number, raw in read_raw_lines(path):
        yield line_number, decode_line(path, line_number, raw)


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


def _fsync_directory(directory: str) -> None:
    # Makes the rename itself durable; some file systems cannot fsync a
    # directory, and the data is already safe in that case anyway.
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
    _fsync_directory(os.path.dirname(os.path.abspath(path)))


def atomic_write_text(path: PathLike, text: str, encoding: str = "utf-8") -> None:
    """Atomically writes `text` to `path`, gzip-compressed when `path` ends in `.gz`.

    Compressed output stores no timestamp, so equal text gives equal bytes.
    """
    data = text.encode(encoding)
    if os.fspath(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    with atomic_write(path, "wb") as stream:
        stream.write(data)
