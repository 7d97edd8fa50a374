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
one that trained it. On JAX they share one persistent compilation cache in
the grid directory (`start`'s `compilation_cache`).
"""

import os
import signal
import subprocess
from typing import Optional

from absl import logging

from syntax_t2t import directory_lock, parent_death
from syntax_t2t.grid import backend_record
from syntax_t2t.training.stop_signals import StopSignals

#: JAX's persistent compilation cache (read by JAX when it is imported).
COMPILATION_CACHE_ENV = "JAX_COMPILATION_CACHE_DIR"


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


def start(command, log, compilation_cache: Optional[str] = None) -> subprocess.Popen:
    """Starts `command`, its output to the open file `log`, under this process's directory locks.

    Args:
        command: the program and its arguments.
        log: an open file for its standard output and error.
        compilation_cache: on the JAX backend, the directory where the program
            keeps the XLA programs it compiles and finds those that earlier
            programs compiled (`JAX_COMPILATION_CACHE_DIR`; one the environment
            names already is kept). Each batch shape of a training or decoding
            step is a program of its own, and every seed of a system compiles
            the same ones (docs/performance.md, "The JAX compilation cache").

    Returns:
        The running `subprocess.Popen`.
    """
    backend = backend_record.current()
    env = dict(os.environ, KERAS_BACKEND=backend)
    if backend == "jax" and compilation_cache and not env.get(COMPILATION_CACHE_ENV):
        env[COMPILATION_CACHE_ENV] = compilation_cache
    env = parent_death.child_environment(env)
    # No preexec_fn: the child makes its own death request (`parent_death.adopt`).
    return subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                            start_new_session=True, **directory_lock.child_process_arguments(env))
