"""`directory_lock`: one process at a time in a run or data directory (issue 35, item 1).

Other processes are real processes (flock locks are per open file, so a
second open in this process would conflict too, but the point is the
kernel's release when a process dies). No TensorFlow.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from syntax_t2t import directory_lock

pytestmark = pytest.mark.backends

REPO = Path(__file__).resolve().parents[1]

#: Takes the lock of argv[1] (shared when argv[2] == "shared"), says so, and holds it until its
#: standard input closes; with argv[3], runs that command as a child under the lock first.
HOLDER = textwrap.dedent("""
    import subprocess, sys
    from syntax_t2t import directory_lock
    directory_lock.acquire(sys.argv[1], shared=sys.argv[2] == "shared")
    if len(sys.argv) > 3:
        sys.exit(subprocess.run(sys.argv[3:], **directory_lock.child_process_arguments()).returncode)
    print("held", flush=True)
    sys.stdin.read()
""")


def start_holder(directory, mode="exclusive", *child):
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory), mode, *child],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env=dict(os.environ, PYTHONPATH=str(REPO)))
    if not child:
        assert process.stdout.readline() == "held\n"
    return process


def stop(process):
    process.stdin.close()
    process.wait(timeout=60)


def test_a_second_process_is_refused_naming_the_holder(tmp_path):
    holder = start_holder(tmp_path / "run")
    try:
        with pytest.raises(directory_lock.DirectoryInUseError) as refused:
            directory_lock.acquire(str(tmp_path / "run"))
        message = str(refused.value)
        assert message.startswith(f"--output_dir={tmp_path / 'run'} is in use by another process "
                                  f"(pid {holder.pid} on {socket.gethostname()} since ")
        assert "-c" in message and message.endswith("wait until it has finished, or choose "
                                                    "another directory")
        assert "\n" not in message
    finally:
        stop(holder)
    # Let go on a clean end: the file is gone, and the directory is free.
    assert not (tmp_path / "run" / directory_lock.LOCK_FILE).exists()
    with directory_lock.locked(str(tmp_path / "run")) as lock:
        record = json.loads((tmp_path / "run" / directory_lock.LOCK_FILE).read_text())
        assert record["pid"] == os.getpid() and not lock.shared


def test_the_lock_goes_with_a_killed_holder(tmp_path):
    holder = start_holder(tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    assert (tmp_path / directory_lock.LOCK_FILE).exists()  # the dead holder's record stays
    with directory_lock.locked(str(tmp_path)):
        text = (tmp_path / directory_lock.LOCK_FILE).read_text()
        assert json.loads(text)["pid"] == os.getpid() and len(text.splitlines()) == 1
    holder.stdin.close()


def test_locks_nest_within_a_process_and_a_created_directory_goes_when_unused(tmp_path):
    directory = tmp_path / "new" / "run"
    outer = directory_lock.acquire(str(directory))
    inner = directory_lock.acquire(str(tmp_path / "new" / ".." / "new" / "run"))
    assert inner is outer and outer.count == 2
    directory_lock.release(inner)
    assert (directory / directory_lock.LOCK_FILE).exists()
    directory_lock.release(outer)
    assert not directory.exists()  # created for the lock, nothing written: removed
    directory_lock.acquire(str(tmp_path))
    (tmp_path / "kept").write_text("")
    directory_lock.release_all()
    assert sorted(os.listdir(tmp_path)) == ["kept", "new"]


def test_shared_holders_keep_an_exclusive_one_out(tmp_path):
    first = start_holder(tmp_path, "shared")
    second = start_holder(tmp_path, "shared")
    try:
        with pytest.raises(directory_lock.DirectoryInUseError,
                           match=rf"--data_dir=.* \(pid ({first.pid}|{second.pid}) on .*; pid "):
            directory_lock.acquire(str(tmp_path), "--data_dir")
    finally:
        stop(first)
        stop(second)
    with directory_lock.locked(str(tmp_path), "--data_dir"):
        pass


def test_the_last_shared_holder_removes_the_lock_file(tmp_path):
    lock_file = tmp_path / directory_lock.LOCK_FILE
    other = start_holder(tmp_path, "shared")
    try:
        with directory_lock.locked(str(tmp_path), "--data_dir", shared=True):
            pass
        assert lock_file.exists()  # the other holder still works there
    finally:
        stop(other)
    assert not lock_file.exists()
    with directory_lock.locked(str(tmp_path), "--data_dir", shared=True):
        assert lock_file.exists()
    assert os.listdir(tmp_path) == []


def test_a_child_works_under_its_parents_lock_and_no_one_else_does(tmp_path):
    child = textwrap.dedent(f"""
        import sys
        from syntax_t2t import directory_lock
        lock = directory_lock.acquire({str(tmp_path)!r})
        assert lock.inherited
        directory_lock.release_all()
        try:
            directory_lock.acquire({str(tmp_path / 'other')!r})
        except directory_lock.DirectoryInUseError:
            sys.exit(1)
        print("child worked", flush=True)
    """)
    parent = start_holder(tmp_path, "exclusive", sys.executable, "-c", child)
    output, _ = parent.communicate(timeout=120)
    assert parent.returncode == 0 and output == "child worked\n"
    # The child's release left the parent's lock alone; the parent's end let it go.
    with directory_lock.locked(str(tmp_path)):
        pass


def test_an_unwritable_directory_is_one_line(tmp_path):
    (tmp_path / "ro").mkdir()
    os.chmod(tmp_path / "ro", 0o555)
    try:
        if os.access(tmp_path / "ro", os.W_OK):
            pytest.skip("running as a user who may write anywhere")
        with pytest.raises(directory_lock.DirectoryLockError,
                           match=r"--output_dir=.*/ro: cannot create its lock file .*/ro/"
                                 r"\.syntax_t2t\.lock \(Permission denied\)"):
            directory_lock.acquire(str(tmp_path / "ro"))
    finally:
        os.chmod(tmp_path / "ro", 0o755)
