"""`parent_death`: a program started by the grid asks for SIGTERM on the grid's death itself.

The grid's death taking its program with it is `test_grid_processes.py`'s;
here: nothing of Python runs in the forked child before exec (the reason
for the design), a program whose parent is already gone stops before its
`main`, and the request is not handed on to the program's own children.
"""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from syntax_t2t import parent_death

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="PR_SET_PDEATHSIG is Linux's")


def _python(code, *arguments, env=None):
    env = dict(os.environ if env is None else env, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, arguments)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_the_grid_starts_a_program_without_running_python_in_the_forked_child(tmp_path):
    """JAX makes the grid multithreaded; Python run between fork and exec (a `preexec_fn`,
    which also runs the at-fork hooks by which JAX warns of a likely deadlock) may deadlock."""
    result = _python("""
        import os, sys
        from pathlib import Path
        from syntax_t2t.grid import child_process
        out = Path(sys.argv[1])
        os.register_at_fork(after_in_child=lambda: (out / "forked_child_ran_python").touch())
        with open(out / "log", "w") as log:
            process = child_process.start(
                [sys.executable, "-c", "import os; print(os.environ['SYNTAX_T2T_TERMINATE_WITH'])"],
                log)
        assert process.wait(timeout=60) == 0
        print(os.getpid())
    """, tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "forked_child_ran_python").exists()
    # The child was told who its parent is.
    assert (tmp_path / "log").read_text().split() == [result.stdout.strip()]


_PROGRAM = """
    import sys
    from pathlib import Path
    from syntax_t2t.cli import common

    def main(argv):
        Path(argv[1]).write_text("main ran")

    common.run(main, builtins=())
"""


def test_a_program_whose_parent_is_already_gone_stops_before_its_main(tmp_path):
    # A process id that is not this program's parent (this test's own parent's) stands for a
    # grid that died between starting the program and the program's request.
    env = dict(os.environ, **{parent_death.PARENT_ENV: str(os.getppid())})
    result = _python(_PROGRAM, tmp_path / "ran", env=env)
    assert result.returncode == -signal.SIGTERM, result.stderr
    assert not (tmp_path / "ran").exists()


def test_a_program_whose_parent_lives_runs(tmp_path):
    env = parent_death.child_environment()  # this test is the program's parent
    result = _python(_PROGRAM, tmp_path / "ran", env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ran").read_text() == "main ran"


def test_the_request_is_not_handed_on_to_the_programs_children():
    result = _python("""
        import os, subprocess, sys
        from syntax_t2t import parent_death
        assert parent_death.adopt()
        print(repr(os.environ.get(parent_death.PARENT_ENV)))
        subprocess.run([sys.executable, "-c",
                        "import os; print(repr(os.environ.get('SYNTAX_T2T_TERMINATE_WITH')))"])
    """, env=parent_death.child_environment())
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "None"]


def test_no_named_parent_makes_no_request(monkeypatch):
    monkeypatch.delenv(parent_death.PARENT_ENV, raising=False)
    assert parent_death.adopt() is False


def test_a_malformed_parent_is_named_in_the_error(monkeypatch):
    monkeypatch.setenv(parent_death.PARENT_ENV, "grid")
    with pytest.raises(ValueError, match="SYNTAX_T2T_TERMINATE_WITH='grid'"):
        parent_death.adopt()
