"""The training loop: a compiled, distributed train step with checkpoints and progress.

    trainer = Trainer(lambda: registry.model("dep_parse")(hparams, vocab_sizes),
                      hparams, output_dir, jit_compile=True)
    trainer.train(train_dataset, train_steps=250_000,
                  eval_dataset=dev_dataset, eval_every=1000, eval_steps=100)

The model follows the models contract (`models/contract.py`,
docs/design.md): `train_features`, `derived_features`, `call(features,
training)` -> `{"logits", ...}`; its criterion (`criteria.for_model`, or
the one handed in) turns the outputs into `{"nmt", maybe "parse", "total"}`,
the scalars logged beside them and the counts evaluation sums (UAS).

Everything per step happens inside one `tf.function`: the forward and
backward pass on every replica, the optimizer update, and the running sums
that progress reports read. With `jit_compile` XLA compiles the whole step on
a single device, and each replica's forward and backward pass with several
(an XLA program runs on one device). The Python loop only fetches the next
batch and calls the step; it reads values back every `log_step_count_steps`
steps. Reported throughput leaves out the time spent saving and evaluating.

`train_steps` is the global step to stop at, as in T2T: a run resumed at step
k trains `train_steps - k` more steps. With the hparam `update_freq=K` a step
is K calls of the compiled function, one per batch, whose gradients
`accumulation.py` sums into one update.

Faults:

* Checkpoints hold, besides the weights, the optimizer and the step, the
  dropout generators' state and the position of the training input (where
  TensorFlow can save it: one replica, no Python generator in the pipeline),
  so a resumed run continues the same shuffled stream with the same random
  draws; with `tf.config.experimental.enable_op_determinism` and a seeded
  input it ends with the very weights of an uninterrupted run.
* SIGINT or SIGTERM stops training after the current step, saves a
  checkpoint and raises `TrainingInterrupted` (`stop_signals.py`).
* A non-finite loss or gradient is never applied: training stops with
  `NonFiniteLossError` naming the step, keeping the last good checkpoint, or,
  with `skip_nonfinite_batches`, skips that batch and counts it
  (`nonfinite.py`).
"""

import time
from typing import Any, Callable, Optional

import keras
import tensorflow as tf
from absl import logging

from syntax_t2t import criteria
from syntax_t2t.criteria.base import Criterion
from syntax_t2t.hparams import HParams
from syntax_t2t.models.contract import ModelContract
from syntax_t2t.training import (accumulation, checkpoints, distribution, evaluation_counts,
                                 metrics, nonfinite, optimizers, precision, progress)
from syntax_t2t.training.stop_signals import StopSignals, TrainingInterrupted
from syntax_t2t.training.validation import Validation, nothing_to_train

#: A batch: feature name -> tensor.
Batch = dict[str, Any]


class ModelContractError(TypeError):
    """A model, its outputs or its losses do not follow the models contract."""


class Trainer:
    """Trains one model, resuming from and saving to `output_dir`.

    Args:
        build_model: a no-argument callable returning the Keras model; it is
            called under the distribution strategy's scope and the dtype
            policy, as variables must be created there.
        hparams: the run's `HParams` (optimizer, schedule, `clip_grad_norm`).
        output_dir: where checkpoints and TensorBoard summaries go.
        strategy: a `tf.distribute.Strategy`; the default strategy if None.
        policy_name: Keras dtype policy: "float32", "mixed_float16" or
            "mixed_bfloat16".
        jit_compile: compile the train step with XLA (evaluation, a few
            batches of many shapes, is not: XLA compiles a program per shape).
        keep_checkpoint_max: how many of the newest checkpoints to keep.
        save_checkpoints_steps: save every this many steps (and at the end).
        log_step_count_steps: report progress every this many steps.
        skip_nonfinite_batches: skip (and count) a batch whose loss or
            gradient is not finite instead of stopping with
            `NonFiniteLossError`.
        criterion: what the model is trained against; the criterion the
            model declares (`criteria.for_model`) if None.

    Raises:
        ModelContractError: the model does not derive from `ModelContract`.
    """

    def __init__(self, build_model: Callable[[], keras.Model], hparams: HParams, output_dir: str,
                 *, strategy: Optional[tf.distribute.Strategy] = None,
                 policy_name: str = "float32", jit_compile: bool = False,
                 keep_checkpoint_max: int = 20, save_checkpoints_steps: int = 1000,
                 log_step_count_steps: int = 100, skip_nonfinite_batches: bool = False,
                 criterion: Optional[Criterion] = None):
        self.hparams = hparams
        self.output_dir = output_dir
        self.strategy = strategy or tf.distribute.get_strategy()
        self.policy_name = policy_name
        self.jit_compile = jit_compile
        self.save_checkpoints_steps = save_checkpoints_steps
        self.log_step_count_steps = log_step_count_steps
        self.skip_nonfinite_batches = skip_nonfinite_batches
        self._chief = distribution.is_chief(self.strategy)
        with self.strategy.scope():
            with precision.dtype_policy(policy_name):
                self.model = build_model()
            if not isinstance(self.model, ModelContract):
                raise ModelContractError(
                    f"model {type(self.model).__name__} does not follow the models contract: "
                    f"derive it from syntax_t2t.models.contract.ModelContract")
            self.criterion = criterion or criteria.for_model(self.model)
            self.optimizer = optimizers.make_optimizer(hparams, policy_name)
            self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
            # Batches refused for a non-finite loss, and the first one's step
            # (-1: none yet); counted per process, not checkpointed.
            self._nonfinite_batches = tf.Variable(0, dtype=tf.int64, trainable=False,
                                                  name="nonfinite_batches")
            self._nonfinite_step = tf.Variable(-1, dtype=tf.int64, trainable=False,
                                               name="nonfinite_step")
        self.keep_checkpoint_max = keep_checkpoint_max
        self.checkpoint = None  # created by `train`, with the input's iterator
        self._feature_keys = tuple(sorted(self.model.train_features))
        self._loss_names = None
        self._diagnostic_names = ()
        self._sums = None
        self._train_step = None
        self._eval_step = None
        self._accumulator = None  # with update_freq > 1 (accumulation.py), made by `build`
        self._xla_functions = {}

    # Building ------------------------------------------------------------

    def _select_features(self, dataset):
        """Keeps only the batch keys the model trains on."""
        missing = [key for key in self._feature_keys if key not in dataset.element_spec]
        if missing:
            raise ModelContractError(
                f"model {type(self.model).__name__} needs batch features {', '.join(missing)}, "
                f"which the dataset does not provide "
                f"(it has {', '.join(sorted(dataset.element_spec))})")
        keys = self._feature_keys
        dataset = dataset.map(lambda batch: {key: batch[key] for key in keys},
                              num_parallel_calls=tf.data.AUTOTUNE)
        # Features the model computes with NumPy (pipeline.DerivedFeatures).
        derived = self.model.derived_features
        return dataset if derived is None else derived.add_to(dataset)

    def _local_batch(self, distributed_batch):
        """One replica's share of a distributed batch (for building eagerly)."""
        return tf.nest.map_structure(
            lambda value: self.strategy.experimental_local_results(value)[0], distributed_batch)

    def build(self, batch: Batch) -> None:
        """Creates the model's and optimizer's variables by running one batch eagerly.

        Also checks the model's outputs and losses against the contract, so
        that a broken model fails before the first compiled step.

        Args:
            batch: a dict of the model's train features (one replica's batch).
        """
        if self._loss_names is not None:
            return
        # Layers that create sublayers when built take the policy then.
        with self.strategy.scope(), precision.dtype_policy(self.policy_name):
            outputs = self.model(batch, training=False)
            if not isinstance(outputs, dict) or "logits" not in outputs:
                raise ModelContractError(
                    f"model {type(self.model).__name__} must return a dict with 'logits', got "
                    f"{sorted(outputs) if isinstance(outputs, dict) else type(outputs).__name__}")
            losses = self.criterion(batch, outputs)
            if "total" not in losses:
                raise ModelContractError(
                    f"the criterion {type(self.criterion).__name__} of model "
                    f"{type(self.model).__name__} must return 'total', got {sorted(losses)}")
            diagnostics = self._diagnostics(batch, outputs, losses)
            self._diagnostic_names = tuple(sorted(diagnostics))
            self.optimizer.build(self.model.trainable_variables)
            self._accumulator = accumulation.make_accumulator(self.hparams,
                                                              self.model.trainable_variables)
            # Running sums of the current reporting interval; not checkpointed.
            self._sums = {name: tf.Variable(0.0, trainable=False, name=f"sum_{name}")
                          for name in tuple(sorted(losses)) + self._diagnostic_names
                          + ("tokens", "steps", "finite_steps")}
        # Set last: it marks the trainer as built.
        self._loss_names = tuple(sorted(losses))

    def _diagnostics(self, batch, outputs, losses):
        """The criterion's diagnostics (scalars logged beside the losses)."""
        return {name: tf.cast(value, tf.float32)
                for name, value in self.criterion.diagnostics(batch, outputs, losses).items()}

    # Compiled steps --------------------------------------------------------

    def _losses_and_gradients(self, batch):
        """One replica's forward and backward pass."""
        replicas = tf.distribute.get_replica_context().num_replicas_in_sync
        with tf.GradientTape() as tape:
            outputs = self.model(batch, training=True)
            losses = self.criterion(batch, outputs)
            # The optimizer sums the replicas' gradients: each contributes its
            # share of the mean.
            loss = self.optimizer.scale_loss(losses["total"] / replicas)
        gradients = optimizers.dense_gradients(tape.gradient(loss, self.model.trainable_variables))
        report = {name: tf.cast(losses[name], tf.float32) for name in self._loss_names}
        report.update(self._diagnostics(batch, outputs, losses))
        report["tokens"] = metrics.target_token_count(batch["targets"])
        return report, gradients

    def _replica_train_step(self, batch):
        report, gradients = self._replica_compiled(self._losses_and_gradients)(batch)
        finite = nonfinite.all_finite(report["total"], gradients, self.optimizer)
        apply = finite
        if self._accumulator is not None:
            gradients = self._accumulator.add(gradients, report["tokens"], finite)
            completes = self._accumulator.completes_update()
            apply = tf.logical_and(completes, self._accumulator.has_tokens())
        if self.hparams.clip_grad_norm > 0:
            gradients = optimizers.clip_by_global_norm(
                gradients, self.hparams.clip_grad_norm, self.optimizer)
        if not self.skip_nonfinite_batches:
            # After a non-finite step nothing is applied until the loop stops.
            apply = tf.logical_and(apply, tf.logical_and(finite, self._nonfinite_step < 0))
        nonfinite.apply_if(apply, self.optimizer, gradients, self.model.trainable_variables)
        if self._accumulator is not None:
            self._accumulator.reset_if(completes)
        report["finite"] = tf.cast(finite, tf.float32)
        return report

    def _distributed_train_step(self, batch):
        per_replica = self.strategy.run(self._replica_train_step, args=(batch,))
        # Every replica holds the same verdict (see nonfinite.all_finite).
        finite = self.strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica["finite"],
                                      axis=None) > 0.5
        for name in self._loss_names + self._diagnostic_names:
            mean = self.strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica[name], axis=None)
            self._sums[name].assign_add(tf.where(finite, mean, 0.0))
        tokens = self.strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica["tokens"], axis=None)
        self._sums["tokens"].assign_add(tokens)
        self._sums["steps"].assign_add(1.0 / self._update_freq)
        self._sums["finite_steps"].assign_add(tf.cast(finite, tf.float32))
        first_nonfinite = tf.logical_and(tf.logical_not(finite), self._nonfinite_step < 0)
        self._nonfinite_step.assign(
            tf.where(first_nonfinite, self.global_step + 1, self._nonfinite_step))
        self._nonfinite_batches.assign_add(tf.cast(tf.logical_not(finite), tf.int64))
        if self._accumulator is None:
            self.global_step.assign_add(1)
        else:
            self.global_step.assign_add(tf.cast(self._accumulator.advance(), tf.int64))

    @property
    def _update_freq(self):
        return 1 if self._accumulator is None else self._accumulator.update_freq

    def _eval_counts(self, batch):
        """One replica's losses and metric counts."""
        outputs = self.model(batch, training=False)
        losses = self.criterion(batch, outputs)
        counts = {f"loss/{name}": tf.cast(losses[name], tf.float32) for name in self._loss_names}
        counts.update({f"diagnostics/{name}": value
                       for name, value in self._diagnostics(batch, outputs, losses).items()})
        counts["batches"] = tf.constant(1.0)
        counts["correct_tokens"], counts["target_tokens"] = metrics.token_accuracy_counts(
            outputs["logits"], batch["targets"])
        # The criterion's counts: a supervised head's attachments (UAS).
        counts.update({name: tf.cast(value, tf.float32)
                       for name, value in self.criterion.eval_counts(batch, outputs).items()})
        return counts

    def _distributed_eval_step(self, batch):
        per_replica = self.strategy.run(self._eval_counts, args=(batch,))
        # Losses are per-batch means: their sum over replicas, divided by the
        # number of replica batches at the end, is the mean over batches.
        return {name: self.strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)
                for name, value in per_replica.items()}

    def _replicated(self):
        return self.strategy.num_replicas_in_sync > 1

    def _compile(self, function, distributed_dataset, jit_compile):
        """The step as one `tf.function`, XLA-compiled as a whole on a single device."""
        return tf.function(function, jit_compile=jit_compile and not self._replicated(),
                           input_signature=[distributed_dataset.element_spec])

    def _replica_compiled(self, function):
        """`function` XLA-compiled per replica when several replicas run it.

        Call it in a replica context (inside `strategy.run`).

        XLA compiles a program for one device, so with several replicas only
        the per-replica work (the model's forward and backward pass) is
        compiled, and the cross-replica sums and the update stay outside.
        """
        if not (self.jit_compile and self._replicated()):
            return function
        # One function per replica: a trace captures the replica's own copies
        # of the variables, on its own device.
        replica = tf.get_static_value(tf.distribute.get_replica_context().replica_id_in_sync_group)
        key = (function.__name__, int(replica))
        if key not in self._xla_functions:
            self._xla_functions[key] = tf.function(function, jit_compile=True)
        return self._xla_functions[key]

    # Loops ---------------------------------------------------------------

    def evaluate(self, dataset: tf.data.Dataset, steps: int) -> dict[str, float]:
        """Evaluates on at most `steps` batches of `dataset` (all when `steps <= 0`).

        Returns:
            `{"loss/<name>": mean over batches, "token_accuracy": ..., "uas": ...}`
            (UAS only for models with a parse head).
        """
        dataset = self._select_features(dataset)
        if steps > 0:
            dataset = dataset.take(steps)
        distributed = self.strategy.experimental_distribute_dataset(dataset)
        totals = {}
        for batch in distributed:
            if self._loss_names is None:
                self.build(self._local_batch(batch))
            if self._eval_step is None:
                # Not XLA: XLA compiles a program per batch shape, and the
                # few dev batches (partial ones included) come in many shapes.
                self._eval_step = self._compile(self._distributed_eval_step, distributed,
                                                jit_compile=False)
            for name, value in self._eval_step(batch).items():
                totals[name] = totals.get(name, 0.0) + float(value)
        return evaluation_counts.results_of(totals)

    def _read_interval(self):
        """Means of the losses (diagnostics included) and sums of tokens/steps since the last read.

        Resets the sums.

        Batches refused for a non-finite loss are left out of the means (NaN
        when the interval had no other).
        """
        values = {name: float(variable.numpy()) for name, variable in self._sums.items()}
        for variable in self._sums.values():
            variable.assign(0.0)
        finite_steps = values["finite_steps"]
        losses = {name: values[name] / finite_steps if finite_steps else float("nan")
                  for name in self._loss_names + self._diagnostic_names}
        return losses, values["tokens"], values["steps"]

    @property
    def nonfinite_batches(self) -> int:
        """How many batches this trainer refused for a non-finite loss or gradient."""
        return int(self._nonfinite_batches.numpy())

    def _check_nonfinite(self, reported):
        """Stops at a non-finite step, or logs newly skipped batches; returns the count so far.

        Args:
            reported: the count logged before.

        Raises:
            NonFiniteLossError: a step was not finite and skipping is off.
        """
        count = self.nonfinite_batches
        if count and not self.skip_nonfinite_batches:
            raise nonfinite.NonFiniteLossError(int(self._nonfinite_step.numpy()),
                                               self.checkpoint.latest)
        if count > reported:
            logging.warning("skipped %d batch(es) whose loss or gradient was not finite "
                            "(%d so far)", count - reported, count)
        return count

    def _prepare_input(self, distributed, iterator, first_batch):
        """Creates the checkpoint and restores the newest one.

        Returns:
            The input iterator to go on with and the first batch to train on.
        """
        self.checkpoint = checkpoints.TrainingCheckpoint(
            distribution.writable_directory(self.strategy, self.output_dir),
            self.model, self.optimizer, self.global_step, self.keep_checkpoint_max,
            data_iterator=iterator)
        if self._chief:
            self.checkpoint.remove_partial_saves()
        restored = self.checkpoint.restore_latest()
        position = self.checkpoint.input_position
        if restored is not None and "data" in self.checkpoint.restored_parts:
            # The iterator is back at the saved position; the batch read to
            # build the model was the start of the stream.
            return iterator, next(iterator)
        if position is not None and position.restore_error is not None:
            # A failed restore leaves the iterator unusable.
            iterator = position.iterator = iter(distributed)
            return iterator, next(iterator)
        return iterator, first_batch

    def _stop_on_signal(self, signal_number, step, saved_step):
        """Saves the step reached (unless it is saved already) and raises `TrainingInterrupted`."""
        path = self.checkpoint.latest
        if step != saved_step:
            self._check_nonfinite(self.nonfinite_batches)
            path = self.checkpoint.save()
        raise TrainingInterrupted(signal_number, step, path)

    def _learning_rate(self):
        # The rate the next update will use (a schedule's value at the
        # optimizer's iterations; a loss-scale optimizer reports the rate of
        # the optimizer it wraps).
        return float(self.optimizer.learning_rate)

    def _observe_dev_loss(self, results):
        """Lets an optimizer that adapts to the dev loss (optimizers.HalvingSGD) see it."""
        optimizer = getattr(self.optimizer, "inner_optimizer", self.optimizer)
        if hasattr(optimizer, "observe_dev_loss") and "loss/total" in results:
            if optimizer.observe_dev_loss(results["loss/total"]):
                logging.info("dev loss %.4f is worse than at the previous evaluation: learning "
                             "rate halved to %.3g", results["loss/total"], self._learning_rate())

    def train(self, train_dataset: tf.data.Dataset, train_steps: int,
              eval_dataset: Optional[tf.data.Dataset] = None, eval_every: int = 0,
              eval_steps: int = 100, validation: Optional[Validation] = None) -> dict[str, float]:
        """Trains until the global step reaches `train_steps`, resuming from the newest checkpoint.

        Args:
            train_dataset: batches (dicts of int32 tensors); repeated forever.
            train_steps: the global step to stop at.
            eval_dataset: dev batches, or None for no evaluation.
            eval_every: evaluate every this many steps (and at the end);
                0 evaluates only at the end.
            eval_steps: dev batches per evaluation (all when <= 0).
            validation: a `validation.Validation` told of every evaluation
                (history, dev-set BLEU, best checkpoint, early stopping), or
                None.

        Returns:
            The results of the last evaluation (see `evaluate`), or {} when
            there is no `eval_dataset` or nothing was left to train.

        Raises:
            TrainingInterrupted: SIGINT or SIGTERM arrived; the step reached
                was saved.
            NonFiniteLossError: a step's loss or gradient was not finite
                (without `skip_nonfinite_batches`); nothing after the last
                good step was saved.
        """
        train_dataset = self._select_features(train_dataset).repeat()
        # The input position is checkpointed (checkpoints.py); state
        # outside the pipeline, such as the counters of dropped examples
        # (pipeline.PipelineCounters), counts per process and is not saved.
        options = tf.data.Options()
        options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.IGNORE
        train_dataset = train_dataset.with_options(options)
        distributed = self.strategy.experimental_distribute_dataset(train_dataset)
        iterator = iter(distributed)
        first_batch = next(iterator, None)
        if first_batch is None:
            raise ValueError("the training dataset yields no batch")
        self.build(self._local_batch(first_batch))
        iterator, batch = self._prepare_input(distributed, iterator, first_batch)
        step = int(self.global_step.numpy())
        if nothing_to_train(validation, step, train_steps):
            return {}
        logging.info("training from step %d to %d", step, train_steps)
        if (validation is not None and eval_dataset is not None and self._chief
                and validation.missing_evaluation(step, eval_every)):
            # Killed between saving this step and evaluating it: evaluate now.
            results, stop_early = validation.after_evaluation(
                step, self.evaluate(eval_dataset, eval_steps), self.model)
            if stop_early:
                return results
        if self._train_step is None:
            self._train_step = self._compile(self._distributed_train_step, distributed,
                                             jit_compile=self.jit_compile)
        reporter = progress.ProgressReporter(self.output_dir if self._chief else None, train_steps)
        schedule = progress.ReportSchedule(self.log_step_count_steps, train_steps)
        results = {}
        saved_step, nonfinite_count = step, self.nonfinite_batches
        interval_start = time.perf_counter()
        try:
            with StopSignals() as stop:
                while step < train_steps:
                    if stop.received is not None:
                        self._stop_on_signal(stop.received, step, saved_step)
                    # Read only now: a signal's checkpoint then holds the position
                    # after the last batch trained on, not one past it.
                    batch = next(iterator) if batch is None else batch
                    for part in accumulation.batches_of_one_update(batch, iterator,
                                                                   self._update_freq):
                        self._train_step(part)
                    batch = None
                    step += 1
                    last = step == train_steps
                    if schedule.due(step):
                        nonfinite_count = self._check_nonfinite(nonfinite_count)
                        losses, tokens, steps = self._read_interval()
                        elapsed = max(time.perf_counter() - interval_start, 1e-9)
                        reporter.add_training_time(elapsed, tokens, steps)
                        diagnostics = {name: losses.pop(name) for name in self._diagnostic_names}
                        reporter.report_training(step, losses, tokens / elapsed, steps / elapsed,
                                                 self._learning_rate(), diagnostics)
                        interval_start = time.perf_counter()
                    pause_start = time.perf_counter()
                    if step % self.save_checkpoints_steps == 0 or last:
                        # Nothing is saved after a refused non-finite step.
                        nonfinite_count = self._check_nonfinite(nonfinite_count)
                        self.checkpoint.save()
                        saved_step = step
                    evaluate_now = last or (eval_every > 0 and step % eval_every == 0)
                    stop_early = False
                    if eval_dataset is not None and evaluate_now:
                        results = self.evaluate(eval_dataset, eval_steps)
                        if validation is not None and self._chief:
                            results, stop_early = validation.after_evaluation(
                                step, results, self.model)
                        reporter.report_evaluation(step, results)
                        self._observe_dev_loss(results)
                    if stop_early:
                        if step != saved_step:
                            self.checkpoint.save()
                        break
                    interval_start += time.perf_counter() - pause_start
        finally:
            reporter.close()
        if nonfinite_count:
            logging.warning("skipped %d batch(es) in all whose loss or gradient was not finite",
                            nonfinite_count)
        return results
