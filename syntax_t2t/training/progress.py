"""Console progress lines and TensorBoard scalars of a training run.

Training scalars go to `<output_dir>/train`, dev-set evaluations to
`<output_dir>/eval`, under the same tag names (`loss/total`, `loss/nmt`,
`loss/parse`), so TensorBoard draws both runs on one chart.

On the TensorFlow backend scalars are written with TensorFlow's own
`tf.summary.write` and the scalar plugin's metadata: `tf.summary.scalar` is
only a front for the TensorBoard package, which training has no other use
for (viewing the logs needs it, of course). On other backends
(`event_files.py`) the same records are written without TensorFlow.
"""

import json
import os
import time
from typing import Callable, Mapping, Optional

import keras
from absl import logging

from syntax_t2t import io_utils
from syntax_t2t.training import event_files

#: Training time, steps and target tokens of a run, summed over its sessions.
TRAINING_TIME_FILE = "training_time.json"


def write_scalar(tag: str, value: float, step: int) -> None:
    """Writes one scalar for TensorBoard to TensorFlow's default summary writer."""
    import tensorflow as tf
    from tensorflow.core.framework import summary_pb2

    # What TensorBoard's scalar plugin marks its summaries with (plugin data
    # version 0 serialises to empty content).
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    tf.summary.write(tag, tf.constant(value, tf.float32), step=step, metadata=metadata)


class _TensorFlowScalars:
    """A `tf.summary` file writer (or a no-op one) behind the interface of `_EventFileScalars`."""

    def __init__(self, directory):
        import tensorflow as tf

        self._writer = (tf.summary.create_noop_writer() if directory is None
                        else tf.summary.create_file_writer(directory))

    def write(self, scalars, step):
        with self._writer.as_default():
            for tag, value in scalars.items():
                write_scalar(tag, value, step)
        self._writer.flush()

    def close(self):
        self._writer.close()


class _EventFileScalars:
    """Scalars in an event file written without TensorFlow; nothing when `directory` is None."""

    def __init__(self, directory):
        self._directory = directory
        self._writer = None  # created with the first scalars, as tf.summary creates its file

    def write(self, scalars, step):
        if self._directory is None:
            return
        if self._writer is None:
            self._writer = event_files.EventFileWriter(self._directory)
        for tag, value in scalars.items():
            self._writer.scalar(tag, value, step)
        self._writer.flush()

    def close(self):
        if self._writer is not None:
            self._writer.close()


def _scalar_writer(directory):
    if keras.backend.backend() == "tensorflow":
        return _TensorFlowScalars(directory)
    return _EventFileScalars(directory)


def format_duration(seconds: float) -> str:
    """`3725` -> `"1h02m"`, `65` -> `"1m05s"`, `7` -> `"7s"`."""
    seconds = int(round(max(0.0, seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{seconds:02d}s"
    return f"{seconds}s"


def format_losses(losses: Mapping[str, float]) -> str:
    """`{"total": 3.2, "nmt": 3.0, "parse": 0.2}` -> `"loss 3.2000 (nmt 3.0000, parse 0.2000)"`."""
    parts = [f"{name} {value:.4f}" for name, value in sorted(losses.items()) if name != "total"]
    text = f"loss {losses['total']:.4f}"
    return f"{text} ({', '.join(parts)})" if parts else text


class ReportSchedule:
    """When a progress line is due.

    Every `every` steps and at the last step, as T2T's
    `log_step_count_steps`; and at the first step that ends a minute or more
    after the previous line (or the session's start), so that a slow run (a
    few seconds a step on a CPU) shows its loss and ETA within about a minute
    instead of after 100 steps.

    Args:
        every: report at multiples of this step count.
        train_steps: the last step.
        max_seconds: the longest wait for a line while steps complete.
        clock: seconds, monotonic (tests pass a fake one).
    """

    def __init__(self, every: int, train_steps: int, max_seconds: float = 60.0,
                 clock: Callable[[], float] = time.monotonic):
        self.every = max(1, int(every))
        self.train_steps = train_steps
        self.max_seconds = max_seconds
        self._clock = clock
        self._last = clock()

    def due(self, step: int) -> bool:
        """True when a line should be written after `step`; starts the next wait when it is."""
        now = self._clock()
        if (step % self.every == 0 or step >= self.train_steps
                or now - self._last >= self.max_seconds):
            self._last = now
            return True
        return False


class ProgressReporter:
    """Writes progress to the log and to TensorBoard.

    Args:
        output_dir: the run's directory, or None to write no summaries
            (workers other than the chief).
        train_steps: the step training stops at, for the ETA.
    """

    def __init__(self, output_dir: Optional[str], train_steps: int):
        self.train_steps = train_steps
        self.output_dir = output_dir
        self.totals = read_training_time(output_dir) if output_dir else None
        if output_dir is None:
            self._train_writer = self._eval_writer = _scalar_writer(None)
        else:
            self._train_writer = _scalar_writer(os.path.join(output_dir, "train"))
            self._eval_writer = _scalar_writer(os.path.join(output_dir, "eval"))

    def report_training(self, step: int, losses: Mapping[str, float], tokens_per_second: float,
                        steps_per_second: float, learning_rate: float,
                        diagnostics: Optional[Mapping[str, float]] = None) -> None:
        """Logs one progress line and writes the training scalars.

        Args:
            step: the global step reached.
            losses: `{name: mean loss over the interval}`, including "total".
            tokens_per_second: non-padding target tokens per second.
            steps_per_second: training steps per second.
            learning_rate: the current learning rate.
            diagnostics: `{name: mean over the interval}` of the criterion's
                diagnostics (a supervised head's loss share and
                attention entropy), written under `diagnostics/<name>`.
        """
        diagnostics = diagnostics or {}
        remaining = max(0, self.train_steps - step)
        eta = format_duration(remaining / steps_per_second) if steps_per_second > 0 else "?"
        extra = "".join(f"  {name} {value:.4f}" for name, value in sorted(diagnostics.items()))
        logging.info("step %d/%d  %s%s  %.0f tokens/s  lr %.3g  ETA %s",
                     step, self.train_steps, format_losses(losses), extra, tokens_per_second,
                     learning_rate, eta)
        scalars = {f"loss/{name}": value for name, value in losses.items()}
        scalars.update({f"diagnostics/{name}": value for name, value in diagnostics.items()})
        scalars.update(tokens_per_second=tokens_per_second, steps_per_second=steps_per_second,
                       learning_rate=learning_rate)
        self._train_writer.write(scalars, step)

    def add_training_time(self, seconds: float, tokens: float, steps: float) -> None:
        """Adds an interval's training time (saving and evaluating left out) to the run's total.

        Kept in `<output_dir>/training_time.json`, so that a resumed run's
        total covers every session: the training cost of a run, and its mean
        speed, without the evaluations' decoding.
        """
        if self.totals is None:
            return
        self.totals["seconds"] += float(seconds)
        self.totals["tokens"] += float(tokens)
        self.totals["steps"] += int(steps)
        io_utils.atomic_write_text(os.path.join(self.output_dir, TRAINING_TIME_FILE),
                                   json.dumps(self.totals) + "\n")

    def report_evaluation(self, step: int, results: Mapping[str, float]) -> None:
        """Logs and writes a dev-set evaluation.

        Args:
            step: the global step evaluated.
            results: `{"loss/<name>": ..., "token_accuracy": ..., "uas": ...}`.
        """
        text = "  ".join(f"{name} {value:.4f}" for name, value in sorted(results.items()))
        logging.info("eval at step %d: %s", step, text)
        self._eval_writer.write(results, step)

    def close(self) -> None:
        self._train_writer.close()
        if self._eval_writer is not self._train_writer:
            self._eval_writer.close()


def read_training_time(output_dir: str) -> dict:
    """`{"seconds", "tokens", "steps"}` trained so far in `output_dir` (zeros for a new run)."""
    path = os.path.join(output_dir, TRAINING_TIME_FILE)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as stream:
            try:
                return json.load(stream)
            except json.JSONDecodeError:
                logging.warning("%s is not valid JSON; the run's training time starts again", path)
    return {"seconds": 0.0, "tokens": 0.0, "steps": 0}
