"""`bin/grid`'s programs as processes: a killed grid takes its program with it, a stopped one lets it stop cleanly.

Split from `test_grid.py`: these tests start a grid driver and a stand-in
program as real processes and send them signals.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from syntax_t2t import directory_lock
from syntax_t2t.grid import backend_record, child_process, runner

REPO = Path(__file__).resolve().parents[1]

_CLEAN_STOPPER = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    out = Path(sys.argv[1])
    received = []
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda n, frame: received.append(n))
    (out / "ready").write_text(str(os.getpid()))
    while not received:
        time.sleep(0.01)
    time.sleep(0.5)
    (out / "saved").write_text(" ".join(str(n) for n in received))
    sys.exit(128 + received[0])
""")

# bin/grid's handling of an interrupted stage, around one program call.
_GRID_DRIVER = textwrap.dedent("""
    import sys, types
    from syntax_t2t.grid import runner
    out = sys.argv[1]
    grid = runner.GridRunner(types.SimpleNamespace(problem="p"), "toy", out, {"data_dir": out})
    try:
        grid._call(runner.Run(None, 0, out), [sys.executable, out + "/stopper.py", out], "x.log")
    except runner.GridInterrupted as interrupted:
        print(f"stopped: {interrupted}", file=sys.stderr)
        sys.exit(interrupted.exit_status)
""")


# A grid's program, started as the toolkit's programs start (`cli/common.py`), working in a run
# under the grid's lock, until SIGTERM.
_RUN_WORKER = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    from syntax_t2t import directory_lock
    from syntax_t2t.cli import common

    def main(argv):
        out = Path(argv[1])
        assert directory_lock.acquire(str(out / "run")).inherited
        stopped = []
        signal.signal(signal.SIGTERM, lambda number, frame: stopped.append(number))
        (out / "ready").write_text(str(os.getpid()))
        while not stopped:
            time.sleep(0.01)
        (out / "stopped").write_text("SIGTERM")

    common.run(main, builtins=())
""")

_LOCKING_GRID_DRIVER = textwrap.dedent("""
    import sys, types
    from syntax_t2t import directory_lock
    from syntax_t2t.grid import runner
    out = sys.argv[1]
    grid = runner.GridRunner(types.SimpleNamespace(problem="p"), "toy", out, {"data_dir": out})
    directory_lock.acquire(out + "/run")
    grid._call(runner.Run(None, 0, out), [sys.executable, out + "/worker.py", out], "x.log")
""")


def _wait_for(condition, seconds=120):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _lock_taken(directory):
    try:
        directory_lock.release(directory_lock.acquire(directory))
    except directory_lock.DirectoryInUseError:
        return False
    return True


def test_a_killed_grid_takes_its_program_with_it(tmp_path):
    """Issue 35, item 1: SIGKILL to bin/grid (it cannot pass that on) left its bin/train
    running, and a rerun started a second trainer in the run. The program works under the
    grid's lock, refuses everyone else, and gets SIGTERM (bin/train saves and stops) when the
    grid dies."""
    (tmp_path / "worker.py").write_text(_RUN_WORKER)
    driver = subprocess.Popen([sys.executable, "-c", _LOCKING_GRID_DRIVER, str(tmp_path)],
                              stderr=subprocess.PIPE, text=True, start_new_session=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        _wait_for(lambda: (tmp_path / "ready").exists() or driver.poll() is not None)
        assert (tmp_path / "ready").exists(), driver.stderr.read()
        worker = (tmp_path / "ready").read_text()
        with pytest.raises(directory_lock.DirectoryInUseError, match=f"pid {worker} on "):
            directory_lock.acquire(str(tmp_path / "run"))
        driver.kill()
        driver.wait(timeout=60)
        _wait_for(lambda: (tmp_path / "stopped").exists())
        _wait_for(lambda: _lock_taken(str(tmp_path / "run")))
    finally:
        if driver.poll() is None:
            driver.kill()
        driver.stderr.close()


@pytest.mark.parametrize("number,whole_group", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_a_stopped_grid_lets_its_program_stop_cleanly(tmp_path, number, whole_group):
    """Ctrl-C (SIGINT to the terminal's process group) or SIGTERM to the grid
    alone: the running program gets the signal exactly once, the grid waits
    for it to finish saving, and exits with 128 + the signal's number."""
    (tmp_path / "stopper.py").write_text(_CLEAN_STOPPER)
    driver = subprocess.Popen([sys.executable, "-c", _GRID_DRIVER, str(tmp_path)],
                              stderr=subprocess.PIPE, text=True, start_new_session=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    ready = tmp_path / "ready"
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), driver.stderr.read()
        time.sleep(0.2)  # the driver's handlers are installed right after the start
        if whole_group:
            os.killpg(driver.pid, number)
        else:
            os.kill(driver.pid, number)
        _, stderr = driver.communicate(timeout=60)
        assert (tmp_path / "saved").read_text() == str(int(number))
        assert driver.returncode == 128 + number
        assert f"stopped by {signal.Signals(number).name} while" in stderr
    finally:
        if driver.poll() is None:
            driver.kill()
        if ready.exists():  # never leave the program running
            try:
                os.kill(int(ready.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def _environment_of_started_program(tmp_path, compilation_cache):
    with open(tmp_path / "env.log", "w") as log:
        code = "import json, os; print(json.dumps(dict(os.environ)))"
        process = child_process.start([sys.executable, "-c", code], log, compilation_cache)
        assert process.wait(timeout=60) == 0
    return json.loads((tmp_path / "env.log").read_text())


@pytest.mark.parametrize("backend", ["jax", "tensorflow"])
def test_programs_on_jax_share_the_grids_compilation_cache(tmp_path, monkeypatch, backend):
    """Every seed of a system compiles the same XLA programs (one per batch shape): on JAX the
    grid's programs keep them in one cache; a cache the user named is kept."""
    monkeypatch.setattr(backend_record, "current", lambda: backend)
    monkeypatch.delenv(child_process.COMPILATION_CACHE_ENV, raising=False)
    cache = str(tmp_path / "G" / runner.COMPILATION_CACHE)
    env = _environment_of_started_program(tmp_path, cache)
    assert env["KERAS_BACKEND"] == backend
    assert env.get(child_process.COMPILATION_CACHE_ENV) == (cache if backend == "jax" else None)
    monkeypatch.setenv(child_process.COMPILATION_CACHE_ENV, str(tmp_path / "mine"))
    env = _environment_of_started_program(tmp_path, cache)
    assert env[child_process.COMPILATION_CACHE_ENV] == str(tmp_path / "mine")
