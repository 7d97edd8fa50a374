"""SIGTERM in any tool unwinds through its clean-up (#35 item 9): staging directories and spooled stdin go.

Python's default SIGTERM ends a process without running `finally` blocks or
`atexit` handlers; `common.run` turns it into an exit with status 143 that
runs both. Checked in a child process that signals itself in the middle of
its work, as `bin/export` and `bin/average_checkpoints` stage theirs.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

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
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
            print("not stopped", flush=True)
        finally:
            shutil.rmtree(staging)

    common.run(main, builtins=[])
""")


def test_sigterm_removes_staging_and_spooled_input(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "tool.py"
    script.write_text(PROGRAM.format(repo=str(REPO), work=str(work)))
    result = subprocess.run([sys.executable, str(script)], input="a line\n", capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 143, result.stderr
    assert "not stopped" not in result.stdout
    assert "error: stopped by SIGTERM" in result.stderr
    assert list(work.iterdir()) == []
    spool = result.stdout.split("spool ", 1)[1].split()[0]
    assert not os.path.exists(spool), f"{spool} left behind"
