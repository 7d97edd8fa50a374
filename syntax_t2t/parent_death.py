"""A program started by bin/grid ends when the grid dies, however the grid dies.

The grid's programs run in sessions of their own (a terminal's Ctrl-C
reaches them through the grid only), so a grid killed outright (SIGKILL)
would leave its bin/train running and holding the run. On Linux the kernel
can send a process a signal when its parent dies (`PR_SET_PDEATHSIG`). The
request is made by the child itself at its start (`adopt`, called by every
program's start-up in `cli/common.py`), not between fork and exec in the
parent (`subprocess`'s `preexec_fn`): under JAX the grid is multithreaded,
and Python code run in a forked child of a multithreaded process may
deadlock (a lock held by another thread at the fork is never released).

The parent names itself in the child's environment (`child_environment`);
the child pops the name, so that programs it starts in turn do not take the
grid for their parent, asks for SIGTERM on its parent's death, and stops at
once when the parent it was started by is already gone (it died before the
request was in place). bin/train saves a checkpoint and stops on SIGTERM,
as on a user's.
"""

import ctypes
import os
import signal
import sys
from typing import Optional

#: The environment variable naming the process whose death stops the program.
PARENT_ENV = "SYNTAX_T2T_TERMINATE_WITH"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def child_environment(env: Optional[dict] = None) -> dict:
    """`env` (default `os.environ`) naming this process as the child's parent.

    Returns:
        A new dictionary.
    """
    env = dict(os.environ if env is None else env)
    env[PARENT_ENV] = str(os.getpid())
    return env


def adopt() -> bool:
    """Ends this process with SIGTERM when the parent named in `PARENT_ENV` dies.

    Does nothing when no parent is named or off Linux (the request has no
    equivalent there). A named parent that is no longer this process's parent
    has died already: this process is sent SIGTERM at once.

    Returns:
        Whether the request was made.
    """
    named = os.environ.pop(PARENT_ENV, None)
    if named is None or not sys.platform.startswith("linux"):
        return False
    try:
        parent = int(named)
    except ValueError:
        raise ValueError(f"{PARENT_ENV}={named!r}: expected the parent's process id") from None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    if prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_PDEATHSIG): {os.strerror(error)}")
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)
    return True
