"""SIGINT and SIGTERM as a request to stop training cleanly.

Cluster schedulers send SIGTERM before they kill a job, and Ctrl-C sends
SIGINT. While training, either one only sets a flag: the trainer finishes the
step it is in, saves a checkpoint and raises `TrainingInterrupted`, so the run
resumes exactly there. A second signal acts as it would without the trainer
(SIGINT raises `KeyboardInterrupt`, SIGTERM ends the process), for a user who
does not want to wait for the save. Saving is collective under multi-worker
training, so there every worker must get the signal (as schedulers send it
to every task of a job).

    with StopSignals() as stop:
        while ...:
            if stop.received is not None:
                ...save, then raise TrainingInterrupted(...)
"""

import signal
import threading
from typing import Any, Optional

from absl import logging

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TrainingInterrupted(Exception):
    """Training stopped on a signal after saving a checkpoint.

    Attributes:
        signal_number: the signal received.
        step: the global step reached (and saved).
        checkpoint: the checkpoint holding that step, or None when nothing
            was saved (no step was trained since the last checkpoint).
    """

    def __init__(self, signal_number: int, step: int, checkpoint: Optional[str]):
        self.signal_number = signal_number
        self.step = step
        self.checkpoint = checkpoint
        saved = f"the checkpoint {checkpoint} holds it" if checkpoint else "nothing new to save"
        super().__init__(f"training stopped by {signal.Signals(signal_number).name} at step {step} "
                         f"({saved}); run the same command again to resume")

    @property
    def exit_status(self) -> int:
        """The shell's status for a process ended by this signal: 128 + its number."""
        return 128 + int(self.signal_number)


class StopSignals:
    """Context manager that records SIGINT/SIGTERM instead of acting on them.

    Handlers can only be installed from the main thread; elsewhere (a
    trainer run in a worker thread) the signals keep their usual effect.

    Attributes:
        received: the first signal received, or None.
    """

    def __init__(self):
        self.received = None
        self._previous = {}

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            for number in SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._restore()
        return False

    def _handle(self, number, frame):
        self.received = number
        logging.warning("received %s: stopping after the current step and saving a checkpoint "
                        "(send it again to stop at once, without saving)",
                        signal.Signals(number).name)
        self._restore()

    def _restore(self):
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}
