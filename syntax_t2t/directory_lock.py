"""One process at a time in a run or data directory.

Every program that writes into a training run (`bin/train`,
`bin/average_checkpoints`, `bin/export` into the run, `bin/grid`) or a data
directory (`bin/datagen`) first takes an exclusive lock on the file
`LOCK_FILE` in it, and a second program finds the lock held and refuses in
one line that names the holder (pid, host, start time, command). The lock is
the kernel's (`fcntl.flock`), held by the working process itself: it goes
when the process ends, however it ends (SIGKILL, a crash, a lost machine's
NFS lease), so there is never a stale lock to delete by hand. The file only
records who holds it; it is removed on a clean release.

Datagen tasks (`--task_id`/`--num_tasks`) write one directory together, so
they share a lock (`shared=True`), which keeps a whole-directory run out.

A program run by the holder (bin/grid's stages) works under the holder's
lock: `child_process_arguments` passes the locked file to it and names it
in the environment (`INHERITED_ENV`), and the child's `acquire` of the same
directory adopts it instead of finding it held.

Within one process locks nest: acquiring a directory twice counts, and
`release_all` (called when a program ends, `cli/common.py`) lets go of all.
"""

import atexit
import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
import socket
import sys
from typing import Iterator, Optional

LOCK_FILE = ".syntax_t2t.lock"
INHERITED_ENV = "SYNTAX_T2T_INHERITED_LOCKS"
# A holder's command is for people to recognise: long argument lists are cut.
_COMMAND_CHARACTERS = 300


class DirectoryLockError(RuntimeError):
    """A directory's lock cannot be taken: the file cannot be written, or another process holds it."""


class DirectoryInUseError(DirectoryLockError):
    """Another process holds the directory's lock."""


@dataclasses.dataclass
class DirectoryLock:
    """A lock this process holds.

    Attributes:
        directory: the directory, symbolic links resolved.
        descriptor: the open lock file.
        shared: whether it is a shared lock.
        inherited: whether it is the lock of the process that started this one.
        created_directory: whether taking it created the directory (removed
            again on release when nothing else was put there).
        count: how many times this process acquired it.
    """

    directory: str
    descriptor: int
    shared: bool = False
    inherited: bool = False
    created_directory: bool = False
    count: int = 1
    owner: int = dataclasses.field(default_factory=os.getpid)

    @property
    def path(self) -> str:
        return os.path.join(self.directory, LOCK_FILE)


_HELD: dict = {}


def acquire(directory: str, flag: str = "--output_dir", shared: bool = False) -> DirectoryLock:
    """Takes the lock of `directory` (created if missing) for this process.

    Args:
        directory: the run or data directory.
        flag: the option that named it, for the refusal (`--data_dir`).
        shared: a lock that other shared holders may hold at once.

    Raises:
        DirectoryInUseError: another process holds it (exclusively, or at
            all when this asks for an exclusive lock).
        DirectoryLockError: the lock file cannot be created.
    """
    real = os.path.realpath(directory)
    held = _HELD.get(real)
    if held is not None:
        held.count += 1
        return held
    created = not os.path.lexists(real)
    try:
        os.makedirs(real, exist_ok=True)
    except OSError as error:
        raise DirectoryLockError(f"{flag}={directory}: cannot create the directory "
                                 f"({error.strerror or error})") from None
    lock = _inherited(real, shared) or _take(real, flag, directory, shared)
    lock.created_directory = created
    # A program that ends without `release_all` cleans up too (registered once).
    atexit.unregister(release_all)
    atexit.register(release_all)
    _HELD[real] = lock
    return lock


def release(lock: DirectoryLock) -> None:
    """Undoes one `acquire`; the last one lets the lock go and removes its file."""
    lock.count -= 1
    if lock.count > 0:
        return
    _HELD.pop(lock.directory, None)
    if lock.inherited or lock.owner != os.getpid():
        return  # the parent's lock (passed on, or copied by a fork): the parent lets it go
    last = not lock.shared
    if lock.shared:
        # The last of the shared holders (no other one lets an exclusive lock through) removes
        # the file as an exclusive holder does; the others leave it to that one.
        try:
            fcntl.flock(lock.descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            last = True
        except OSError:
            last = False
    if last:
        # Removed before it is let go: a process that opened this file meanwhile finds it gone
        # once it gets the lock, and starts over on a new file (`_take`).
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(lock.descriptor), os.stat(lock.path)):
                os.remove(lock.path)
    os.close(lock.descriptor)
    if lock.created_directory:
        with contextlib.suppress(OSError):
            os.rmdir(lock.directory)  # only when empty: nothing was written after all


def release_all() -> None:
    """Lets go of every lock this process holds (a program's end)."""
    for lock in list(_HELD.values()):
        lock.count = 1
        release(lock)


@contextlib.contextmanager
def locked(directory: str, flag: str = "--output_dir", shared: bool = False
           ) -> Iterator[DirectoryLock]:
    """`acquire` for the length of a `with` block."""
    lock = acquire(directory, flag, shared)
    try:
        yield lock
    finally:
        release(lock)


def child_process_arguments(env: Optional[dict] = None) -> dict:
    """`subprocess.Popen` keywords that let a child work under this process's locks.

    Returns:
        `{"env": ..., "pass_fds": ...}`: `env` (default `os.environ`) naming
        the held locks' files in `INHERITED_ENV`, and their descriptors.
    """
    descriptors = tuple(lock.descriptor for lock in _HELD.values())
    env = dict(os.environ if env is None else env)
    env[INHERITED_ENV] = ",".join(str(descriptor) for descriptor in descriptors)
    return {"env": env, "pass_fds": descriptors}


def holder_record() -> dict:
    """What a holder writes into the lock file: who it is."""
    command = " ".join(sys.argv)
    if len(command) > _COMMAND_CHARACTERS:
        command = command[:_COMMAND_CHARACTERS - 3] + "..."
    return {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def _inherited(real: str, shared: bool) -> Optional[DirectoryLock]:
    """The parent's lock on `real`, when the parent passed it to this process."""
    path = os.path.join(real, LOCK_FILE)
    for text in os.environ.get(INHERITED_ENV, "").split(","):
        try:
            descriptor = int(text)
            same = os.path.samestat(os.fstat(descriptor), os.stat(path))
        except (ValueError, OSError):
            continue
        if same:
            _append_record(descriptor)  # a refusal then names the program at work too
            return DirectoryLock(real, descriptor, shared, inherited=True)
    return None


def _take(real: str, flag: str, given: str, shared: bool) -> DirectoryLock:
    path = os.path.join(real, LOCK_FILE)
    while True:
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as error:
            raise DirectoryLockError(f"{flag}={given}: cannot create its lock file {path} "
                                     f"({error.strerror or error})") from None
        try:
            fcntl.flock(descriptor, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            holders = _describe_holders(descriptor)
            os.close(descriptor)
            raise DirectoryInUseError(
                f"{flag}={given} is in use by another process ({holders}); wait until it has "
                f"finished, or choose another directory") from None
        try:
            current = os.path.samestat(os.fstat(descriptor), os.stat(path))
        except FileNotFoundError:
            current = False
        if current:
            break
        os.close(descriptor)  # locked a file its holder removed on release: take the new one
    if not shared:
        os.ftruncate(descriptor, 0)
    _append_record(descriptor)
    return DirectoryLock(real, descriptor, shared)


def _append_record(descriptor: int) -> None:
    with contextlib.suppress(OSError):  # the record is for messages; the lock is what counts
        os.lseek(descriptor, 0, os.SEEK_END)
        os.write(descriptor, (json.dumps(holder_record()) + "\n").encode("utf-8"))


def _alive(record: dict) -> bool:
    """False only for a record of this host whose process is gone."""
    if record.get("host") != socket.gethostname() or not isinstance(record.get("pid"), int):
        return True
    try:
        os.kill(record["pid"], 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _describe_holders(descriptor: int) -> str:
    try:
        os.lseek(descriptor, 0, os.SEEK_SET)
        text = os.read(descriptor, 1 << 16).decode("utf-8", "replace")
    except OSError:
        text = ""
    records = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict):
                records.append(record)
    live = [record for record in records if _alive(record)] or records
    if not live:
        return "it has not recorded who it is yet"
    return "; ".join(f"pid {record.get('pid')} on {record.get('host')} since "
                     f"{record.get('started')}: {record.get('command')}" for record in live)
