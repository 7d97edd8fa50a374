"""The training loop on the JAX backend: `Trainer`'s loop around a `jax.jit` step.

    trainer = JaxTrainer(lambda: registry.model("transformer")(hparams, vocab_sizes),
                         hparams, output_dir)
    trainer.train(NumpyDataset(train_files, keys, "train", hparams, seed=1),
                  train_steps=2000, eval_dataset=NumpyDataset(dev_files, keys, "eval", hparams))

What it does is what `trainer.py` does on TensorFlow, step for step: the
global step to stop at, `update_freq` batches per update weighted by their
tokens, clipping, loss scaling under `mixed_float16`, non-finite updates
refused (stop naming the step, or skip and count), a checkpoint every
`save_checkpoints_steps` (and at the end, and on SIGINT/SIGTERM), progress
lines and TensorBoard scalars, dev evaluations handed to a
`validation.Validation` (history, BLEU, best checkpoint, early stopping),
and resuming from the newest checkpoint that loads. The pieces that are not
the step itself are the TensorFlow trainer's own modules: checkpoints,
progress, stop signals, validation, schedules, optimizers, precision.

The differences are the backend's:

* The step is `backend/jax_train_step.py`'s `JaxTrainStep` (or
  `backend/jax_accumulation.py`'s `JaxAccumulatingStep` with
  `update_freq` > 1), always compiled with XLA, once per batch shape. It
  carries the weights, the optimizer and the counters in a state that the
  loop passes from step to step; the Keras variables are brought up to date
  (`write_back`) before anything reads them: saving, evaluating, dev
  decoding, the best checkpoint.
* The input is a `data/numpy_pipeline.py` `NumpyDataset` (no `tf.data`):
  its position is always saved with the checkpoint, so a killed and resumed
  run continues the same stream with the same dropout draws and, XLA on a
  CPU being deterministic, ends with the weights of an uninterrupted run.
* Several devices are a `keras.distribution.DataParallel` (`distribution`,
  made by `backend/jax_distribution.py`): the model and optimizer are built
  under it, so their variables are replicated, the step's state is
  replicated with them, and each batch is sharded along its first axis (the
  pipeline pads it to a multiple of the devices with all-padding rows,
  which weigh nothing). `jax.jit` partitions the step; the update is that of
  one device on the global batch.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Callable, Iterable, Optional

import jax
import keras
import numpy as np
from absl import logging

from syntax_t2t import criteria
from syntax_t2t.backend import jax_distribution
from syntax_t2t.backend.jax_accumulation import AccumulationState, JaxAccumulatingStep
from syntax_t2t.backend.jax_train_step import JaxTrainStep
from syntax_t2t.backend.compile import CompiledFunction
from syntax_t2t.training import (accumulation, checkpoints, evaluation_counts, optimizers,
                                 precision, progress)
from syntax_t2t.training.nonfinite import NonFiniteLossError
from syntax_t2t.training.stop_signals import StopSignals, TrainingInterrupted
from syntax_t2t.training.validation import nothing_to_train


class JaxTrainer:
    """Trains one model on the JAX backend, resuming from and saving to `output_dir`.

    Args:
        build_model: a no-argument callable returning the Keras model (called
            under the dtype policy).
        hparams: the run's `HParams` (optimizer, schedule, `clip_grad_norm`,
            `update_freq`).
        output_dir: where checkpoints and TensorBoard summaries go.
        policy_name: "float32", "mixed_float16" or "mixed_bfloat16".
        keep_checkpoint_max: how many of the newest checkpoints to keep.
        save_checkpoints_steps: save every this many steps (and at the end).
        log_step_count_steps: report progress every this many steps.
        skip_nonfinite_batches: skip (and count) a batch whose loss or
            gradient is not finite instead of stopping with
            `NonFiniteLossError`.
        criterion: what the model is trained against; the criterion the
            model declares (`criteria.for_model`) if None.
        distribution: a `keras.distribution.DataParallel` to train over
            (`jax_distribution.make_distribution`), or None for one device.
            Training batches must then have a multiple of its devices' rows.
    """

    def __init__(self, build_model: Callable[[], keras.Model], hparams, output_dir: str, *,
                 policy_name: str = "float32", keep_checkpoint_max: int = 20,
                 save_checkpoints_steps: int = 1000, log_step_count_steps: int = 100,
                 skip_nonfinite_batches: bool = False,
                 criterion: Optional[criteria.Criterion] = None,
                 distribution: Optional[Any] = None):
        if keras.backend.backend() != "jax":
            raise RuntimeError(f"JaxTrainer needs KERAS_BACKEND=jax, not "
                               f"{keras.backend.backend()!r}")
        self.hparams = hparams
        self.output_dir = output_dir
        self.policy_name = policy_name
        self.keep_checkpoint_max = keep_checkpoint_max
        self.save_checkpoints_steps = save_checkpoints_steps
        self.log_step_count_steps = log_step_count_steps
        self.skip_nonfinite_batches = skip_nonfinite_batches
        self.distribution = distribution
        with self._distribution_scope(), precision.dtype_policy(policy_name):
            self.model = build_model()
        self.criterion = criterion or criteria.for_model(self.model)
        with self._distribution_scope():
            self.optimizer = optimizers.make_optimizer(hparams, policy_name)
            self.global_step = keras.Variable(0, dtype="int32", trainable=False,
                                              name="global_step")
        self.update_freq = int(hparams.get("update_freq", 1))
        self.checkpoint: Optional[checkpoints.TrainingCheckpoint] = None  # made by `train`
        self._step = None
        self._state = None
        self._eval_step = None
        self._loss_names: Optional[tuple] = None

    # Building --------------------------------------------------------------------------

    def _distribution_scope(self):
        """Variables created inside are laid out by the distribution (replicated)."""
        if self.distribution is None:
            return contextlib.nullcontext()
        return self.distribution.scope()

    def build(self, batch) -> None:
        """Creates the model's and optimizer's variables from one batch and makes the step."""
        if self._loss_names is not None:
            return
        with self._distribution_scope(), precision.dtype_policy(self.policy_name):
            outputs = self.model(batch, training=False)
            losses = self.criterion(batch, outputs)
            self.optimizer.build(self.model.trainable_variables)
        if "total" not in losses:
            raise TypeError(f"the criterion {type(self.criterion).__name__} of model "
                            f"{type(self.model).__name__} must return 'total', got {sorted(losses)}")
        options = dict(clip_grad_norm=self.hparams.clip_grad_norm,
                       skip_nonfinite_batches=self.skip_nonfinite_batches, loss_fn=self.criterion)
        if self.update_freq > 1:
            self._step = JaxAccumulatingStep(self.model, self.optimizer, self.update_freq,
                                             **options)
        else:
            self._step = JaxTrainStep(self.model, self.optimizer, **options)
        self._loss_names = tuple(sorted(losses))

    def _fresh_state(self):
        """A step state from the variables' values, its step counter at the global step."""
        state = self._step.initial_state()
        step = jax.numpy.asarray(int(self.global_step.numpy()), "int32")
        if isinstance(state, AccumulationState):
            state = state._replace(train=state.train._replace(step=step))
        else:
            state = state._replace(step=step)
        if self.distribution is not None:
            # The counters are made here, on one device: they join the variables on all.
            state = jax_distribution.replicate(state, self.distribution)
        return state

    def _distribute(self, batch):
        """The batch as the step takes it: split over the devices when there are several."""
        if self.distribution is None:
            return batch
        return jax_distribution.shard_batch(batch, self.distribution)

    def _sync_variables(self) -> None:
        """Copies the step's state into the Keras variables (before they are read)."""
        if self._state is not None:
            self._step.write_back(self._state)
            self.global_step.assign(self._counters()["step"])

    def _counters(self) -> dict:
        return self._step.counters(self._state)

    @property
    def nonfinite_batches(self) -> int:
        """How many batches this trainer refused for a non-finite loss or gradient."""
        return 0 if self._state is None else self._counters()["nonfinite_batches"]

    # Evaluation ------------------------------------------------------------------------

    def evaluate(self, dataset: Iterable, steps: int) -> dict:
        """Evaluates on at most `steps` batches of `dataset` (all when `steps <= 0`).

        Returns:
            `{"loss/<name>": mean over batches, "token_accuracy": ..., "uas": ...}`.
        """
        self._sync_variables()
        if self._eval_step is None:
            model, criterion = self.model, self.criterion
            self._eval_step = CompiledFunction(
                lambda batch: evaluation_counts.evaluation_counts(model, criterion, batch), model)
        totals: dict = {}
        for index, batch in enumerate(dataset):
            if steps > 0 and index >= steps:
                break
            self.build(batch)
            counts = jax.device_get(self._eval_step(dict(batch)))
            for name, value in counts.items():
                totals[name] = totals.get(name, 0.0) + float(value)
        return evaluation_counts.results_of(totals)

    # Training --------------------------------------------------------------------------

    def _prepare_input(self, dataset, iterator, first_batch):
        """Creates the checkpoint, restores the newest one.

        Returns:
            The iterator to go on with, and the first batch to train on, or
            None when that is the iterator's next one.
        """
        os.makedirs(self.output_dir, exist_ok=True)
        self.checkpoint = checkpoints.TrainingCheckpoint(
            self.output_dir, self.model, self.optimizer, self.global_step,
            self.keep_checkpoint_max, data_iterator=iterator)
        self.checkpoint.remove_partial_saves()
        restored = self.checkpoint.restore_latest()
        position = self.checkpoint.input_position
        if restored is not None and "data" in self.checkpoint.restored_parts:
            # The iterator is at the saved position; the batch read to build
            # the model was the start of the stream.
            return iterator, None
        if position is not None and position.restore_error is not None:
            iterator = position.iterator = iter(dataset)
            return iterator, None
        return iterator, first_batch

    def _check_nonfinite(self, reported: int) -> int:
        """Stops at a non-finite step, or logs newly skipped batches; returns the count so far."""
        counters = self._counters()
        count = counters["nonfinite_batches"]
        if count and not self.skip_nonfinite_batches:
            raise NonFiniteLossError(counters["nonfinite_step"],
                                                      self.checkpoint.latest)
        if count > reported:
            logging.warning("skipped %d batch(es) whose loss or gradient was not finite "
                            "(%d so far)", count - reported, count)
        return count

    def _save(self) -> str:
        self._sync_variables()
        return self.checkpoint.save()

    def _read_interval(self, reports: list) -> tuple:
        """Means of the losses over the finite batches, and the tokens and steps of `reports`."""
        values = jax.device_get(reports)
        finite = [report for report in values if float(report["finite"]) > 0.5]
        names = [name for name in values[0] if name not in ("tokens", "finite")] if values else []
        losses = {name: (float(np.mean([float(report[name]) for report in finite]))
                         if finite else float("nan")) for name in names}
        tokens = float(sum(float(report["tokens"]) for report in values))
        return losses, tokens, len(values) / self.update_freq

    def _learning_rate(self) -> float:
        """The rate of the next update: the schedule's at the state's iteration count."""
        # Only the iteration counters are copied: the rest of the variables
        # lag behind the state until the next save or evaluation.
        counters = [self.optimizer.iterations]
        inner = getattr(self.optimizer, "inner_optimizer", None)
        if inner is not None:
            counters.append(inner.iterations)
        train = self._state.train if isinstance(self._state, AccumulationState) else self._state
        for variable, value in zip(self.optimizer.variables, train.optimizer):
            if any(variable is counter for counter in counters):
                # A copy: the state's buffers are donated to the next step.
                variable.assign(jax.numpy.array(value, copy=True))
        return float(self.optimizer.learning_rate)

    def _observe_dev_loss(self, results: dict) -> None:
        """Lets an optimizer that adapts to the dev loss (optimizers.HalvingSGD) see it."""
        optimizer = getattr(self.optimizer, "inner_optimizer", self.optimizer)
        if hasattr(optimizer, "observe_dev_loss") and "loss/total" in results:
            self._sync_variables()
            halved = optimizer.observe_dev_loss(results["loss/total"])
            # The optimizer's variables changed outside the step: the state takes them up.
            counters = self._counters()
            self._state = self._fresh_state()
            self._restore_counters(counters)
            if halved:
                logging.info("dev loss %.4f is worse than at the previous evaluation: learning "
                             "rate halved to %.3g", results["loss/total"], self._learning_rate())

    def _restore_counters(self, counters: dict) -> None:
        accumulating = isinstance(self._state, AccumulationState)
        train = self._state.train if accumulating else self._state
        train = train._replace(
            nonfinite_batches=jax.numpy.asarray(counters["nonfinite_batches"], "int32"),
            nonfinite_step=jax.numpy.asarray(counters["nonfinite_step"], "int32"))
        self._state = self._state._replace(train=train) if accumulating else train

    def _evaluate_and_validate(self, step, eval_dataset, eval_steps, validation, reporter):
        results = self.evaluate(eval_dataset, eval_steps)
        stop_early = False
        if validation is not None:
            results, stop_early = validation.after_evaluation(step, results, self.model)
        if reporter is not None:
            reporter.report_evaluation(step, results)
            self._observe_dev_loss(results)
        return results, stop_early

    def train(self, train_dataset, train_steps: int, eval_dataset=None, eval_every: int = 0,
              eval_steps: int = 100, validation=None) -> dict:
        """Trains until the global step reaches `train_steps`, resuming from the newest checkpoint.

        Args:
            train_dataset: a training `NumpyDataset` (endless; its iterator's
                position is checkpointed), or any iterable of batches.
            train_steps: the global step to stop at.
            eval_dataset: dev batches (iterated anew at each evaluation), or None.
            eval_every: evaluate every this many steps (and at the end); 0
                evaluates only at the end.
            eval_steps: dev batches per evaluation (all when <= 0).
            validation: a `validation.Validation`, or None.

        Returns:
            The results of the last evaluation, or {} when there is no
            `eval_dataset` or nothing was left to train.

        Raises:
            TrainingInterrupted: SIGINT or SIGTERM arrived; the step reached was saved.
            NonFiniteLossError: a step's loss or gradient was not finite
                (without `skip_nonfinite_batches`); nothing after the last
                good step was saved.
        """
        iterator = iter(train_dataset)
        first_batch = next(iterator, None)
        if first_batch is None:
            raise ValueError("the training dataset yields no batch")
        self.build(first_batch)
        iterator, batch = self._prepare_input(train_dataset, iterator, first_batch)
        step = int(self.global_step.numpy())
        if nothing_to_train(validation, step, train_steps):
            return {}
        logging.info("training from step %d to %d (JAX, XLA)", step, train_steps)
        self._state = self._fresh_state()
        if (validation is not None and eval_dataset is not None
                and validation.missing_evaluation(step, eval_every)):
            # Killed between saving this step and evaluating it: evaluate now.
            results, stop_early = validation.after_evaluation(
                step, self.evaluate(eval_dataset, eval_steps), self.model)
            if stop_early:
                return results
        reporter = progress.ProgressReporter(self.output_dir, train_steps)
        schedule = progress.ReportSchedule(self.log_step_count_steps, train_steps)
        results: dict = {}
        saved_step, nonfinite_count = step, 0
        reports: list = []
        interval_start = time.perf_counter()
        try:
            with StopSignals() as stop:
                while step < train_steps:
                    if stop.received is not None:
                        path = self.checkpoint.latest
                        if step != saved_step:
                            self._check_nonfinite(nonfinite_count)
                            path = self._save()
                        raise TrainingInterrupted(stop.received, step, path)
                    # Read only now: a signal's checkpoint then holds the
                    # position after the last batch trained on, not one past it.
                    batch = next(iterator) if batch is None else batch
                    for part in accumulation.batches_of_one_update(batch, iterator,
                                                                   self.update_freq):
                        self._state, report = self._step(self._state, self._distribute(part))
                        reports.append(report)
                    batch = None
                    step += 1
                    last = step == train_steps
                    if schedule.due(step):
                        nonfinite_count = self._check_nonfinite(nonfinite_count)
                        losses, tokens, steps = self._read_interval(reports)
                        reports = []
                        elapsed = max(time.perf_counter() - interval_start, 1e-9)
                        reporter.add_training_time(elapsed, tokens, steps)
                        diagnostics = {name: losses.pop(name) for name in list(losses)
                                       if name not in self._loss_names}
                        reporter.report_training(step, losses, tokens / elapsed, steps / elapsed,
                                                 self._learning_rate(), diagnostics)
                        interval_start = time.perf_counter()
                    pause_start = time.perf_counter()
                    if step % self.save_checkpoints_steps == 0 or last:
                        # Nothing is saved after a refused non-finite step.
                        nonfinite_count = self._check_nonfinite(nonfinite_count)
                        self._save()
                        saved_step = step
                    evaluate_now = last or (eval_every > 0 and step % eval_every == 0)
                    stop_early = False
                    if eval_dataset is not None and evaluate_now:
                        results, stop_early = self._evaluate_and_validate(
                            step, eval_dataset, eval_steps, validation, reporter)
                    if stop_early:
                        if step != saved_step:
                            self._save()
                        break
                    interval_start += time.perf_counter() - pause_start
        finally:
            reporter.close()
            self._sync_variables()
        if nonfinite_count:
            logging.warning("skipped %d batch(es) in all whose loss or gradient was not finite",
                            nonfinite_count)
        return results
