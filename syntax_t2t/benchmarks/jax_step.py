"""The benchmark's train step under `KERAS_BACKEND=jax`: the JAX train step on a fixed batch.

The same model, optimizer (`training/optimizers.make_optimizer`), clipping
and loss scaling as the TensorFlow `training_throughput.TrainStep`, with the
same interface, so that `measure_training` times either. JAX compiles the
whole step with XLA, always: `jit_compile` is accepted for the interface and
has no effect. The step's state stays on the device between calls; the
model's variables keep their initial values (nothing here reads them back).
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Optional

import jax
import keras
import numpy as np

from syntax_t2t import criteria, registry
from syntax_t2t.backend.jax_train_step import JaxTrainStep
from syntax_t2t.benchmarks import batches as batches_lib
from syntax_t2t.hparams import HParams
from syntax_t2t.training import optimizers, precision


class JaxStep:
    """A model, its optimizer and its jitted train step on one fixed batch.

    Args:
        model_name: a registered model.
        hparams: the `HParams` to build it with (`clip_grad_norm` included).
        vocab_sizes: the problem's vocabulary sizes.
        batch: `{feature: np.int32 [B, L]}` holding at least the model's
            train features.
        policy_name: Keras dtype policy ("float32", "mixed_bfloat16", ...).
        jit_compile: ignored (JAX always compiles the step).
        seed: seeds the initialisation; None leaves the seeds as they are.

    Raises:
        batches.UnsupportedCase: the batch lacks a feature the model trains on.
    """

    def __init__(self, model_name: str, hparams: HParams, vocab_sizes: Mapping[str, int],
                 batch: Mapping[str, np.ndarray], policy_name: str = "float32",
                 jit_compile: bool = True, seed: Optional[int] = 0):
        del jit_compile  # always compiled
        if seed is not None:
            keras.utils.set_random_seed(seed)
        self.hparams = hparams
        with precision.dtype_policy(policy_name):
            self.model = registry.model(model_name)(hparams, vocab_sizes)
        missing = sorted(set(self.model.train_features) - set(batch))
        if missing:
            raise batches_lib.UnsupportedCase(f"model {model_name} needs {', '.join(missing)}, "
                                              f"which the synthetic batches lack")
        self.set_batch(batch)
        self.optimizer = optimizers.make_optimizer(hparams, policy_name)
        with precision.dtype_policy(policy_name):
            self.model(self.batch, training=False)
        self.optimizer.build(self.model.trainable_variables)
        self._step = JaxTrainStep(self.model, self.optimizer,
                                  clip_grad_norm=hparams.clip_grad_norm,
                                  loss_fn=criteria.for_model(self.model))
        self._state = self._step.initial_state()

    def set_batch(self, batch: Mapping[str, np.ndarray]) -> None:
        """Makes `batch` (`{feature: np.int32 [B, L]}`) the one every later step trains on."""
        features = {key: batch[key] for key in sorted(self.model.train_features)}
        # Features computed with NumPy in the input pipeline are computed once here.
        derived = self.model.derived_features
        if derived is not None:
            features.update(derived.compute(features))
        # On the device once, as the TensorFlow step's constants are.
        self.batch: dict[str, Any] = {key: jax.device_put(np.asarray(value))
                                      for key, value in features.items()}
        self.target_tokens = batches_lib.target_tokens(features)

    def run(self, steps: int) -> float:
        """Runs `steps` train steps and waits for the last; returns the seconds per step."""
        start = time.perf_counter()
        for _ in range(steps):
            self._state, report = self._step(self._state, self.batch)
        report["total"].block_until_ready()
        return (time.perf_counter() - start) / steps

    def parameter_count(self) -> int:
        return int(sum(np.prod(variable.shape) for variable in self.model.trainable_variables))
