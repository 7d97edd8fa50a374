"""The absl command-line programs; `bin/*` are thin executables calling them.

Every program (and console script) imports this package first, before any
third-party package: the moment to run `bin/*` under the checkout's `.venv`
when the `python3` on the PATH lacks the packages, and to keep TensorFlow's
C++ start-up noise quiet.
"""

import importlib.util
import os
import sys

from syntax_t2t.cli import quiet_start


def _run_in_the_checkouts_venv():
    """Re-executes the program with `<checkout>/.venv/bin/python` if this interpreter lacks absl.

    `bin/*` start with `#!/usr/bin/env python3`; run without activating the
    environment (`make install` makes `.venv`), they would stop with
    ModuleNotFoundError.
    """
    if importlib.util.find_spec("absl") is not None:
        return
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    venv_python = os.path.join(checkout, ".venv", "bin", "python")
    if (os.path.isfile(venv_python) and os.path.abspath(sys.executable) != venv_python
            and os.path.isfile(sys.argv[0])):
        os.execv(venv_python, [venv_python, *sys.argv])


_run_in_the_checkouts_venv()
quiet_start.install()
