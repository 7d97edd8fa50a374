"""SIGTERM or SIGINT in any tool unwinds through its clean-up (#35 item 9): staging directories and spooled stdin go.

Python's default SIGTERM ends a process without running `finally` blocks or
`atexit` handlers; `common.run` turns it into an exit with status 143 that
runs both. SIGINT (Ctrl-C) unwinds as `KeyboardInterrupt`, which ended in a
traceback; it ends in one line and status 130. Checked in a child process
that signals itself in the middle of its work, as `bin/export` and
`bin/average_checkpoints` stage theirs.
"""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PROGRAM = textwrap.dedent("""
    import os, shutil, signal, sys, tempfile, time
    sys.path.insert(0, {repo!r})
    from syntax_t2t import io_utils
    from syntax_t2t.cli import common

    def main(argv):
        io_utils.readable_path("-")  # spools standard input to a temporary file
        print("spool", os.path.dirname(io_utils.readable_path("-")), flush=True)
        staging = tempfile.mkdtemp(dir={work!r}, prefix=".model.", suffix=".tmp")
        try:
            os.kill(os.getpid(), {number})
            time.sleep(30)
            print("not stopped", flush=True)
        finally:
            shutil.rmtree(staging)

    common.run(main, builtins=[])
""")


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_removes_staging_and_spooled_input(tmp_path, number):
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "tool.py"
    script.write_text(PROGRAM.format(repo=str(REPO), work=str(work), number=int(number)))
    result = subprocess.run([sys.executable, str(script)], input="a line\n", capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 128 + number, result.stderr
    assert "not stopped" not in result.stdout
    assert f"error: stopped by {number.name}" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(work.iterdir()) == []
    spool = result.stdout.split("spool ", 1)[1].split()[0]
    assert not os.path.exists(spool), f"{spool} left behind"
