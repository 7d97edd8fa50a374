"""How bin/grid runs a program: under the grid's run lock, never outliving the grid.

A program started by the grid (bin/train, bin/decode, ...) works in a run
directory whose lock the grid holds (`directory_lock`): it is handed the
lock, so it may work there while any other process is refused. It runs in a
session of its own (a terminal's Ctrl-C reaches it through the grid only,
see `PassedOnSignals`), so a grid killed outright (SIGKILL, which it cannot
pass on) would leave it running, holding the run, and a rerun of the grid
would find the run taken; so it is named the grid's child in its environment
and asks the kernel for SIGTERM when the grid dies (`parent_death`), on
which bin/train saves a checkpoint and stops as it does on a user's SIGTERM.

Programs run under the grid's Keras backend, named to them in
`KERAS_BACKEND` (not left to a `keras.json` they might read differently),
so that the backend the grid records for a run (`grid/backend_record.py`) is the
one that trained it.
"""

import os
import signal
import subprocess

from absl import logging

from syntax_t2t import directory_lock, parent_death
from syntax_t2t.grid import backend_record
from syntax_t2t.training.stop_signals import StopSignals


class PassedOnSignals(StopSignals):
    """While a child program runs: SIGINT and SIGTERM are sent on to it, not acted on.

    Each signal received is passed on (a second one means "stop at once" to
    bin/train), and the grid keeps waiting for the program to end.

    Args:
        process: the child's `subprocess.Popen`.

    Attributes:
        received: the first signal received, or None.
    """

    def __init__(self, process):
        super().__init__()
        self.process = process

    def _handle(self, number, frame):
        if self.received is None:
            self.received = number
        logging.warning("received %s: passed on to the running program; waiting for it to stop",
                        signal.Signals(number).name)
        if self.process.poll() is None:
            self.process.send_signal(number)


def start(command, log) -> subprocess.Popen:
    """Starts `command`, its output to the open file `log`, under this process's directory locks.

    Returns:
        The running `subprocess.Popen`.
    """
    env = parent_death.child_environment(dict(os.environ, KERAS_BACKEND=backend_record.current()))
    # No preexec_fn: the child makes its own death request (`parent_death.adopt`).
    return subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                            start_new_session=True, **directory_lock.child_process_arguments(env))
