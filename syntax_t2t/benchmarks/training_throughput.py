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
"""

import dataclasses
import time

import keras
import tensorflow as tf

from syntax_t2t import registry
from syntax_t2t.hparams import HParamsError
from syntax_t2t.benchmarks import batches as batches_lib
from syntax_t2t.benchmarks import measure
from syntax_t2t.training import optimizers, precision

BASELINE = "transformer"
#: The syntax-aware variants of the thesis: the step-time target applies to them.
THESIS_VARIANTS = ("tree_distance", "tree_traversal", "spec_pos", "spec_dep", "dep_parse",
                   "diagonal_parse")
#: What `transformer_relative` changes in `transformer_base`, applied to any set.
RELATIVE_OVERRIDES = {"max_relative_position": 20, "position_encoding": "none"}
RELATIVE_SUFFIX = "+relative"


class UnsupportedCase(ValueError):
    """A model cannot train on the benchmark's batches (missing features)."""


@dataclasses.dataclass(frozen=True)
class Case:
    """One model configuration to time.

    Attributes:
        model: the registered model name.
        relative: apply `RELATIVE_OVERRIDES` (Shaw et al. relative positions).
    """

    model: str
    relative: bool = False

    @property
    def label(self):
        return self.model + (RELATIVE_SUFFIX if self.relative else "")

    @property
    def baseline(self):
        return Case(BASELINE, self.relative)

    @property
    def thesis_variant(self):
        return self.model in THESIS_VARIANTS

    def hparams(self, base_hparams):
        hparams = base_hparams.copy()
        if self.relative:
            hparams.override(RELATIVE_OVERRIDES)
        return hparams


def default_cases(models=None):
    """Every registered model, plus the relative combinations of the thesis variants.

    Args:
        models: model names to include (default: all registered);
            `transformer` is always included, as the baseline.
    """
    names = list(models) if models else registry.models.names()
    names = [BASELINE] + [name for name in names if name != BASELINE]
    cases = [Case(name) for name in names]
    relative = [name for name in names if name == BASELINE or name in THESIS_VARIANTS]
    return cases + [Case(name, relative=True) for name in relative]


class TrainStep:
    """A model, its optimizer and its compiled train step on one fixed batch.

    Args:
        model_name: a registered model.
        hparams: the `HParams` to build it with.
        vocab_sizes: the problem's vocabulary sizes.
        batch: `{feature: np.int32 [B, L]}` holding at least the model's
            train features.
        policy_name: Keras dtype policy ("float32", "mixed_bfloat16", ...).
        jit_compile: compile the step with XLA.
        seed: seeds the initialisation and dropout.

    Raises:
        UnsupportedCase: the batch lacks a feature the model trains on.
    """

    def __init__(self, model_name, hparams, vocab_sizes, batch, policy_name="float32",
                 jit_compile=False, seed=0):
        keras.utils.set_random_seed(seed)
        self.hparams = hparams
        with precision.dtype_policy(policy_name):
            self.model = registry.model(model_name)(hparams, vocab_sizes)
        missing = sorted(set(self.model.train_features) - set(batch))
        if missing:
            raise UnsupportedCase(f"model {model_name} needs {', '.join(missing)}, which the "
                                  f"synthetic batches lack")
        features = {key: batch[key] for key in sorted(self.model.train_features)}
        # Features computed with NumPy in the input pipeline are computed once here.
        derived = getattr(self.model, "derived_features", None)
        if derived is not None:
            features.update(derived.compute(features))
        self.batch = {key: tf.constant(value) for key, value in features.items()}
        self.target_tokens = batches_lib.target_tokens(features)
        self.optimizer = optimizers.make_optimizer(hparams, policy_name)
        with precision.dtype_policy(policy_name):
            self.model(self.batch, training=False)
            self.optimizer.build(self.model.trainable_variables)
        self._step = tf.function(self._train_step, jit_compile=jit_compile)

    def _train_step(self, batch):
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = self.model(batch, training=True)
            loss = self.model.compute_losses(batch, outputs)["total"]
            scaled = self.optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled, variables)
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


def build_steps(cases, base_hparams, vocab_sizes, batch, warmup_steps, policy_name="float32",
                jit_compile=False, seed=0):
    """Builds and warms up each case's train step, measuring its memory on the way.

    Returns:
        `(steps, memory, skipped)`: `{label: TrainStep}`, `{label: MiB or
        None}` (the extra peak memory of the first warm-up step after
        compilation) and `{label: reason}` for cases that cannot run.
    """
    steps, memory, skipped = {}, {}, {}
    for case in cases:
        try:
            step = TrainStep(case.model, case.hparams(base_hparams), vocab_sizes, batch,
                             policy_name=policy_name, jit_compile=jit_compile, seed=seed)
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
                     extra_runners=None):
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

    Returns:
        dict with `"cases"`: `{label: {"step_time": Summary dict, "tokens_per_second",
        "ratio": Summary dict of per-round ratios to the baseline, "baseline",
        "peak_memory_mib", "parameters", "thesis_variant", "model",
        "relative"}}`, `"skipped"`: `{label: reason}`, and `"timings"` and
        `"extra"`: `{name: [seconds per step per round]}` of the cases and of
        `extra_runners`.
    """
    steps, memory, skipped = build_steps(cases, base_hparams, vocab_sizes, batch, warmup_steps,
                                         policy_name, jit_compile, seed)
    runners = {label: (lambda step=step: step.run(steps_per_repetition))
               for label, step in steps.items()}
    extra_runners = dict(extra_runners or {})
    timings = measure.interleaved({**runners, **extra_runners}, repetitions)
    results = {}
    for case in cases:
        if case.label not in steps:
            continue
        times = timings[case.label]
        baseline = timings.get(case.baseline.label)
        step = steps[case.label]
        summary = measure.Summary.of(times)
        results[case.label] = {
            "model": case.model,
            "relative": case.relative,
            "thesis_variant": case.thesis_variant,
            "baseline": case.baseline.label,
            "step_time": summary.as_dict(),
            "tokens_per_second": step.target_tokens / summary.median,
            "ratio": (measure.Summary.of([t / b for t, b in zip(times, baseline)]).as_dict()
                      if baseline else None),
            "peak_memory_mib": memory[case.label],
            "parameters": step.parameter_count(),
        }
    return {"cases": results, "skipped": skipped,
            "timings": {label: timings[label] for label in steps},
            "extra": {name: timings[name] for name in extra_runners}}


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
    for name, (policy_name, jit_compile) in settings.items():
        step = TrainStep(model, base_hparams, vocab_sizes, batch, policy_name=policy_name,
                         jit_compile=jit_compile, seed=seed)
        step.run(warmup_steps)
        steps[name] = step
    timings = measure.interleaved(
        {name: (lambda step=step: step.run(steps_per_repetition)) for name, step in steps.items()},
        repetitions)
    reference = timings[next(iter(settings))]
    return {name: {"step_time": measure.Summary.of(times).as_dict(),
                   "ratio": measure.Summary.of([t / r for t, r in zip(times, reference)]).as_dict()}
            for name, times in timings.items()}
