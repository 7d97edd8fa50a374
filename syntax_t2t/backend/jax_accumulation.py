"""Token-weighted gradient accumulation (`update_freq`) on the JAX backend.

    step = JaxAccumulatingStep(model, optimizer, update_freq=3, clip_grad_norm=1.0)
    state = step.initial_state()
    for batch in batches:          # 3 calls make one optimizer update
        state, report = step(state, batch)

The rule is `training/accumulation.py`'s, which the TensorFlow trainer
follows: each batch adds `tokens * gradient` to a running sum (nothing when
its loss or gradient is not finite), and the last batch of an update applies
the sum divided by the summed tokens, clipped by the global norm, so that
for a token-mean loss the update equals that of one batch holding every
batch's examples (`tests/test_accumulation.py`). The update is skipped when
no batch added tokens, and, unless non-finite batches are skipped, once any
batch was refused. The state's `step` counts optimizer updates, as the
global step does.

The forward and backward pass, the loss scaling, the finiteness check and
the report are `JaxTrainStep`'s; one compiled program per batch shape serves
every batch of an update (whether it completes the update is a traced
condition, not a second program).

Import it only under the JAX backend: it imports `jax`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import keras
from keras import ops

from syntax_t2t.backend import clipping
from syntax_t2t.backend.gradients import stateless_value_and_gradients
from syntax_t2t.backend.jax_train_step import JaxTrainStep, TrainState


class AccumulationState(NamedTuple):
    """A `TrainState` and the update being accumulated; a JAX pytree.

    Attributes:
        train: the weights, optimizer variables and counters.
        sums: float32 arrays, `sum(tokens * gradient)` over this update's batches.
        weight: float32 scalar, the tokens summed so far.
        batches: int32 scalar, the batches of this update taken so far.
    """

    train: TrainState
    sums: list
    weight: Any
    batches: Any


class JaxAccumulatingStep(JaxTrainStep):
    """`JaxTrainStep` whose update is made of `update_freq` batches.

    Args:
        model: a built Keras model.
        optimizer: a Keras optimizer built on the model's trainable variables.
        update_freq: batches per optimizer update (at least 2).
        **kwargs: `JaxTrainStep`'s keyword arguments.
    """

    def __init__(self, model: keras.Model, optimizer: keras.optimizers.Optimizer,
                 update_freq: int, **kwargs: Any):
        if update_freq < 2:
            raise ValueError(f"update_freq={update_freq}: accumulation needs at least 2 batches")
        self.update_freq = int(update_freq)
        super().__init__(model, optimizer, **kwargs)

    def initial_state(self) -> AccumulationState:  # type: ignore[override]
        """The variables' current values, zero counters and an empty update."""
        return AccumulationState(
            train=super().initial_state(),
            sums=[jax.numpy.zeros(variable.shape, "float32")
                  for variable in self.model.trainable_variables],
            weight=jax.numpy.zeros((), "float32"),
            batches=jax.numpy.zeros((), "int32"))

    def write_back(self, state: AccumulationState) -> None:  # type: ignore[override]
        super().write_back(state.train)

    @staticmethod
    def counters(state: AccumulationState) -> dict[str, int]:  # type: ignore[override]
        return JaxTrainStep.counters(state.train)

    def _update(self, state: AccumulationState, batch: dict[str, Any]):  # type: ignore[override]
        train = state.train
        scale = self._loss_scale(train.optimizer)
        outputs, losses, non_trainable, gradients = stateless_value_and_gradients(
            self.model, self.loss_fn, train.trainable, train.non_trainable, batch,
            training=True, loss_scale=scale)
        report = self._report(batch, outputs, losses)
        finite = self._finite(losses["total"], gradients)
        weight = ops.where(finite, report["tokens"], 0.0)
        # where, not a product alone: 0 * inf is NaN.
        sums = [total + ops.where(finite, weight * ops.cast(gradient, "float32"), 0.0)
                for total, gradient in zip(state.sums, gradients)]
        summed_weight = state.weight + weight
        means = [total / ops.maximum(summed_weight, 1.0) for total in sums]
        if self.clip_grad_norm > 0:
            bound = self.clip_grad_norm if scale is None else self.clip_grad_norm * scale
            means = clipping.clip_by_global_norm(means, bound)
        completes = ops.equal(state.batches + 1, self.update_freq)
        apply = ops.logical_and(completes, summed_weight > 0.0)
        if not self.skip_nonfinite_batches:
            apply = ops.logical_and(apply, ops.logical_and(finite, train.nonfinite_step < 0))

        trainable, optimizer = self._apply_if(apply, train, means)
        first_refused = ops.logical_and(ops.logical_not(finite), train.nonfinite_step < 0)
        report["finite"] = ops.cast(finite, "float32")
        new_train = TrainState(
            trainable=list(trainable), non_trainable=list(non_trainable),
            optimizer=list(optimizer), step=train.step + ops.cast(completes, "int32"),
            nonfinite_batches=train.nonfinite_batches + ops.cast(ops.logical_not(finite), "int32"),
            nonfinite_step=ops.where(first_refused, train.step + 1, train.nonfinite_step))
        keep = ops.logical_not(completes)
        new_state = AccumulationState(
            train=new_train,
            sums=[ops.where(keep, total, 0.0) for total in sums],
            weight=ops.where(keep, summed_weight, 0.0),
            batches=ops.where(completes, 0, state.batches + 1))
        return new_state, report
