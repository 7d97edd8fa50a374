"""Training throughput of every registered model against `transformer`, in one process.

Every case trains on the same fixed batch with the same hparams set; the only
differences are the model and, for the relative cases, the two overrides
that turn a set into its `transformer_relative` counterpart. Each case's
train step is the trainer's single-device step (forward, losses, backward,
optimizer update in one `tf.function`), compiled and warmed up before any
timing; then every case runs one block of steps per repetition, in turn.

A case's ratio is the median, over repetitions, of its step time divided by
its baseline's step time in the same repetition: `transformer` with the same
hparams (with relative positions for a relative case), so that a slow phase
of the machine cancels out.

Under `KERAS_BACKEND=jax` each case's step is `jax_step.JaxStep` instead
(the JAX train step of `backend/jax_train_step.py`, always XLA-compiled);
TensorFlow is imported only by the TensorFlow step.

A model of another architecture whose hparams the transformer sets lack
(`tree2seq`'s LSTMs) is timed with a set of its own (`OWN_HPARAMS_FAMILIES`:
`tree2seq_tiny` in a `transformer_tiny` run) on the same batch; its ratio to
`transformer` is reported for scale, never as a syntax-variant target.
"""

import dataclasses
import time
from typing import Optional

import keras

from syntax_t2t import criteria, registry
from syntax_t2t.hparams import HParamsError
from syntax_t2t.benchmarks import batches as batches_lib
from syntax_t2t.benchmarks import measure
from syntax_t2t.benchmarks.batches import UnsupportedCase
from syntax_t2t.training import optimizers, precision

BASELINE = "transformer"
#: The syntax-aware variants of the thesis: the step-time target applies to them.
THESIS_VARIANTS = ("tree_distance", "tree_traversal", "spec_pos", "spec_dep", "dep_parse",
                   "diagonal_parse")
#: What `transformer_relative` changes in `transformer_base`, applied to any set.
RELATIVE_OVERRIDES = {"max_relative_position": 20, "position_encoding": "none",
                      "relative_value_bias": True}
RELATIVE_SUFFIX = "+relative"
#: Models whose hparams the transformer sets lack: `{model: family}`; the
#: model is timed with `<family>_<size>`, the size that of the run's set.
OWN_HPARAMS_FAMILIES = {"tree2seq": "tree2seq", "anmt": "tree2seq"}
#: Sizes a set name can end in; any other set maps to `<family>_base`.
SIZES = ("tiny", "small", "base")


@dataclasses.dataclass(frozen=True)
class Case:
    """One model configuration to time.

    Attributes:
        model: the registered model name.
        relative: apply `RELATIVE_OVERRIDES` (Shaw et al. relative positions).
        hparams_set: a registered set of the model's own, used instead of
            the run's (a different architecture); None = the run's set.
    """

    model: str
    relative: bool = False
    hparams_set: Optional[str] = None

    @property
    def label(self):
        return self.model + (RELATIVE_SUFFIX if self.relative else "")

    @property
    def baseline(self):
        return Case(BASELINE, self.relative)

    @property
    def thesis_variant(self):
        return self.model in THESIS_VARIANTS and self.hparams_set is None

    def hparams(self, base_hparams):
        if self.hparams_set is not None:
            return registry.hparams(self.hparams_set)
        hparams = base_hparams.copy()
        if self.relative:
            hparams.override(RELATIVE_OVERRIDES)
        return hparams


def own_hparams_sets(base_set_name):
    """`{model: hparams set}` for the models of `OWN_HPARAMS_FAMILIES`, sized as the run's set.

    `transformer_tiny` gives `{"tree2seq": "tree2seq_tiny"}`; a set whose
    name ends in no size of `SIZES` maps to the family's `_base` set. A
    model whose set is not registered is left out (it is then built with
    the run's set and reported as skipped if it cannot be).
    """
    suffix = base_set_name.rsplit("_", 1)[-1]
    size = suffix if suffix in SIZES else "base"
    sets = {}
    for model, family in OWN_HPARAMS_FAMILIES.items():
        name = f"{family}_{size}"
        if name in registry.hparams_sets:
            sets[model] = name
    return sets


def default_cases(models=None, hparams_sets=None):
    """Every registered model, plus the relative combinations of the thesis variants.

    Args:
        models: model names to include (default: all registered);
            `transformer` is always included, as the baseline.
        hparams_sets: `{model: set}` for models timed with a set of their
            own (see `own_hparams_sets`); not for `transformer`.
    """
    hparams_sets = dict(hparams_sets or {})
    if BASELINE in hparams_sets:
        raise ValueError(f"{BASELINE} is the baseline: it always uses the run's hparams set")
    names = list(models) if models else registry.models.names()
    names = [BASELINE] + [name for name in names if name != BASELINE]
    cases = [Case(name, hparams_set=hparams_sets.get(name)) for name in names]
    relative = [name for name in names if name == BASELINE or name in THESIS_VARIANTS]
    return cases + [Case(name, relative=True) for name in relative]


class TrainStep:
    """A model, its optimizer and its compiled train step on one fixed batch.

    The step is traced once for batches of any size and length, as the
    trainer's is (its input signature leaves both open): `set_batch` moves
    the step to another batch without tracing again.

    Args:
        model_name: a registered model.
        hparams: the `HParams` to build it with.
        vocab_sizes: the problem's vocabulary sizes.
        batch: `{feature: np.int32 [B, L]}` holding at least the model's
            train features.
        policy_name: Keras dtype policy ("float32", "mixed_bfloat16", ...).
        jit_compile: compile the step with XLA.
        seed: seeds the initialisation and dropout; None leaves the seeds as
            they are. Seeding clears TensorFlow's kernel caches, so the next
            call of every step compiled before is slow again (seconds): seed
            once, before building several steps (as `build_steps` does).

    Raises:
        UnsupportedCase: the batch lacks a feature the model trains on.
    """

    def __init__(self, model_name, hparams, vocab_sizes, batch, policy_name="float32",
                 jit_compile=False, seed=0):
        import tensorflow as tf

        if seed is not None:
            keras.utils.set_random_seed(seed)
        self.hparams = hparams
        with precision.dtype_policy(policy_name):
            self.model = registry.model(model_name)(hparams, vocab_sizes)
        missing = sorted(set(self.model.train_features) - set(batch))
        if missing:
            raise UnsupportedCase(f"model {model_name} needs {', '.join(missing)}, which the "
                                  f"synthetic batches lack")
        self.set_batch(batch)
        self.criterion = criteria.for_model(self.model)
        self.optimizer = optimizers.make_optimizer(hparams, policy_name)
        with precision.dtype_policy(policy_name):
            self.model(self.batch, training=False)
            self.optimizer.build(self.model.trainable_variables)
        signature = {key: tf.TensorSpec([None] * len(value.shape), value.dtype, name=key)
                     for key, value in self.batch.items()}
        self._step = tf.function(self._train_step, jit_compile=jit_compile,
                                 input_signature=[signature])

    def set_batch(self, batch):
        """Makes `batch` (`{feature: np.int32 [B, L]}`) the one every later step trains on."""
        import tensorflow as tf

        features = {key: batch[key] for key in sorted(self.model.train_features)}
        # Features computed with NumPy in the input pipeline are computed once here.
        derived = self.model.derived_features
        if derived is not None:
            features.update(derived.compute(features))
        self.batch = {key: tf.constant(value) for key, value in features.items()}
        self.target_tokens = batches_lib.target_tokens(features)

    def _train_step(self, batch):
        import tensorflow as tf

        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = self.model(batch, training=True)
            loss = self.criterion(batch, outputs)["total"]
            scaled = self.optimizer.scale_loss(loss)
        gradients = optimizers.dense_gradients(tape.gradient(scaled, variables))
        if self.hparams.clip_grad_norm > 0:
            gradients = optimizers.clip_by_global_norm(
                gradients, self.hparams.clip_grad_norm, self.optimizer)
        self.optimizer.apply(gradients, variables)
        return loss

    def run(self, steps):
        """Runs `steps` train steps and waits for the last; returns the seconds per step."""
        start = time.perf_counter()
        for _ in range(steps):
            loss = self._step(self.batch)
        loss.numpy()
        return (time.perf_counter() - start) / steps

    def parameter_count(self):
        return int(sum(variable.numpy().size for variable in self.model.trainable_variables))


def step_class():
    """The train step class of the running Keras backend.

    `TrainStep` on TensorFlow, `jax_step.JaxStep` on JAX.
    """
    if keras.backend.backend() == "jax":
        from syntax_t2t.benchmarks.jax_step import JaxStep

        return JaxStep
    return TrainStep


def build_steps(cases, base_hparams, vocab_sizes, batch, warmup_steps, policy_name="float32",
                jit_compile=False, seed=0):
    """Builds and warms up each case's train step, measuring its memory on the way.

    Returns:
        `(steps, memory, skipped)`: `{label: TrainStep}`, `{label: MiB or
        None}` (the extra peak memory of the first warm-up step after
        compilation) and `{label: reason}` for cases that cannot run.
    """
    steps, memory, skipped = {}, {}, {}
    if cases and seed is not None:
        keras.utils.set_random_seed(seed)  # once: see `TrainStep`
    make_step = step_class()
    for case in cases:
        try:
            step = make_step(case.model, case.hparams(base_hparams), vocab_sizes, batch,
                             policy_name=policy_name, jit_compile=jit_compile, seed=None)
        except (UnsupportedCase, HParamsError, AttributeError) as error:
            # A model that needs hparams the set does not define (an RNN's
            # own set) or a choice it leaves open cannot be timed with it;
            # the report says why instead of dropping the model silently.
            skipped[case.label] = f"{type(error).__name__}: {error}"
            continue
        step.run(1)  # traces and compiles: not part of the memory of a step
        memory[case.label] = measure.peak_memory_mib(lambda step=step: step.run(1))
        if warmup_steps > 2:
            step.run(warmup_steps - 2)
        steps[case.label] = step
    return steps, memory, skipped


def measure_training(cases, base_hparams, vocab_sizes, batch, *, warmup_steps=2, repetitions=5,
                     steps_per_repetition=2, policy_name="float32", jit_compile=False, seed=0,
                     extra_runners=None, steps=None):
    """Times every case's train step on `batch`, interleaved.

    Args:
        cases: `Case`s; each one's baseline must be among them.
        base_hparams: the hparams set every case starts from.
        vocab_sizes: the problem's vocabulary sizes.
        batch: the fixed batch, `{feature: np.int32 [B, L]}`.
        warmup_steps: untimed steps per case (at least 2: the first compiles,
            the second measures memory).
        repetitions: timed rounds.
        steps_per_repetition: steps per case per round.
        policy_name, jit_compile, seed: see `TrainStep`.
        extra_runners: `{name: callable returning seconds per step}` timed in
            the same rounds (the PyTorch peer).
        steps: `{label: TrainStep}` built before (e.g. by an earlier call),
            reused for the cases they cover: moved to `batch`, their first
            step there measures memory, and they skip compilation.

    Returns:
        dict with `"cases"`: `{label: {"step_time": Summary dict, "tokens_per_second",
        "ratio": Summary dict of per-round ratios to the baseline, "baseline",
        "peak_memory_mib", "parameters", "thesis_variant", "model",
        "relative", "hparams_set" (the case's own set, or None), "cpu_time"
        (process CPU seconds per step, Summary dict) and "cpu_ratio" (per
        round, to the baseline)}}`; `"skipped"`: `{label: reason}`;
        `"timings"` and `"extra"`: `{name: [seconds per step per round]}`
        of the cases and of `extra_runners`; `"cpu"`: the same in process
        CPU seconds, for both; `"steps"`: `{label: TrainStep}` (for reuse).
    """
    reused = {case.label: steps[case.label] for case in cases if case.label in (steps or {})}
    reused_memory = {}
    for label, step in reused.items():
        step.set_batch(batch)
        reused_memory[label] = measure.peak_memory_mib(lambda step=step: step.run(1))
        step.run(max(1, warmup_steps - 2))
    steps, memory, skipped = build_steps(
        [case for case in cases if case.label not in reused], base_hparams, vocab_sizes, batch,
        warmup_steps, policy_name, jit_compile, seed)
    memory.update(reused_memory)
    steps = {case.label: (reused.get(case.label) or steps[case.label]) for case in cases
             if case.label in reused or case.label in steps}
    runners = {label: (lambda step=step: step.run(steps_per_repetition))
               for label, step in steps.items()}
    extra_runners = dict(extra_runners or {})
    # One untimed round once everything is built: whatever building a later
    # case left to redo for an earlier one does not land in a timed round.
    measure.interleaved({label: (lambda step=step: step.run(1)) for label, step in steps.items()},
                        1)
    all_runners = {**runners, **extra_runners}
    cpu = {name: [] for name in all_runners}
    timings = measure.interleaved(
        {name: measure.with_cpu_time(runner, cpu[name], steps_per_repetition)
         for name, runner in all_runners.items()}, repetitions)
    results = {}
    for case in cases:
        if case.label not in steps:
            continue
        times = timings[case.label]
        baseline = timings.get(case.baseline.label)
        cpu_times, cpu_baseline = cpu[case.label], cpu.get(case.baseline.label)
        step = steps[case.label]
        summary = measure.Summary.of(times)
        results[case.label] = {
            "model": case.model,
            "relative": case.relative,
            "thesis_variant": case.thesis_variant,
            # A set of its own: another architecture, its ratio only for scale.
            "hparams_set": case.hparams_set,
            "baseline": case.baseline.label,
            "step_time": summary.as_dict(),
            "tokens_per_second": step.target_tokens / summary.median,
            "ratio": (measure.Summary.of([t / b for t, b in zip(times, baseline)]).as_dict()
                      if baseline else None),
            "cpu_time": measure.Summary.of(cpu_times).as_dict(),
            "cpu_ratio": (measure.Summary.of([t / b for t, b in zip(cpu_times, cpu_baseline)])
                          .as_dict() if cpu_baseline else None),
            "peak_memory_mib": memory[case.label],
            "parameters": step.parameter_count(),
        }
    return {"cases": results, "skipped": skipped,
            "timings": {label: timings[label] for label in steps},
            "extra": {name: timings[name] for name in extra_runners},
            "cpu": cpu, "steps": steps}


def measure_settings(settings, base_hparams, vocab_sizes, batch, *, model=BASELINE,
                     warmup_steps=2, repetitions=5, steps_per_repetition=2, seed=0):
    """One model's step time under several precision/XLA settings, interleaved.

    Args:
        settings: `{name: (policy_name, jit_compile)}`; the first is the
            reference the others' ratios are taken to.
        Other arguments: as `measure_training`.

    Returns:
        `{name: {"step_time": Summary dict, "ratio": Summary dict to the first}}`.
    """
    steps = {}
    keras.utils.set_random_seed(seed)  # once: see `TrainStep`
    make_step = step_class()
    for name, (policy_name, jit_compile) in settings.items():
        step = make_step(model, base_hparams, vocab_sizes, batch, policy_name=policy_name,
                         jit_compile=jit_compile, seed=None)
        step.run(warmup_steps)
        steps[name] = step
    measure.interleaved({name: (lambda step=step: step.run(1)) for name, step in steps.items()},
                        1)  # untimed, as in `measure_training`
    timings = measure.interleaved(
        {name: (lambda step=step: step.run(steps_per_repetition)) for name, step in steps.items()},
        repetitions)
    reference = timings[next(iter(settings))]
    return {name: {"step_time": measure.Summary.of(times).as_dict(),
                   "ratio": measure.Summary.of([t / r for t, r in zip(times, reference)]).as_dict()}
            for name, times in timings.items()}
