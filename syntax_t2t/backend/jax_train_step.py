"""The train step on the JAX backend: one `jax.jit`-compiled update of a state pytree.

    step = JaxTrainStep(model, optimizer, clip_grad_norm=hparams.clip_grad_norm,
                        loss_fn=criteria.for_model(model))
    state = step.initial_state()
    for batch in batches:
        state, report = step(state, batch)
    step.write_back(state)  # before saving weights or evaluating

It does what the TensorFlow trainer's single-replica step does
(`training/trainer.py`), in the same order:

1. the forward pass and the criterion (handed in as `loss_fn`) in a
   `keras.StatelessScope` and their gradient by `jax.value_and_grad`
   (`gradients.stateless_value_and_gradients`), the loss multiplied by the
   loss scale under float16;
2. a step is finite when its loss is and, without loss scaling, every
   gradient is (a loss-scale optimizer checks the gradients itself: it skips
   such an update and lowers the scale);
3. clipping by the global norm (`clipping.py`), the bound multiplied by the
   loss scale so that clipping commutes with unscaling;
4. the optimizer's `stateless_apply` when the step is finite and, unless
   non-finite batches are skipped, no earlier step was refused (the trainer
   then stops at its next check, saving nothing after the refused step).

Everything the step changes lives in a `TrainState` passed in and out:
the trainable and non-trainable values (the seed generators that dropout
advances), the optimizer's variables (its iteration count and loss scale
included) and the step counters. The state's buffers are donated to the
compiled step, so a state must not be used once it has been passed in; the
Keras variables keep their values until `write_back` copies the state into
them. Token-weighted accumulation (`update_freq`) and several devices are
the trainer's business on JAX and not done here.

Import it only under the JAX backend: it imports `jax`.
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Optional

import jax
import keras
from keras import ops

from syntax_t2t import registry
from syntax_t2t.backend import clipping
from syntax_t2t.backend.gradients import (DiagnosingLossFunction, LossFunction,
                                          stateless_value_and_gradients)

#: Target id that marks padding (every vocabulary's id 0, data/vocab.py).
PAD_ID = 0


class TrainState(NamedTuple):
    """What one train step reads and writes; a JAX pytree.

    Attributes:
        trainable: one array per `model.trainable_variables`.
        non_trainable: one array per `model.non_trainable_variables`.
        optimizer: one array per `optimizer.variables`.
        step: int32 scalar, the steps taken (the trainer's global step).
        nonfinite_batches: int32 scalar, the batches refused for a
            non-finite loss or gradient.
        nonfinite_step: int32 scalar, the 1-based step of the first refused
            batch, or -1.
    """

    trainable: list
    non_trainable: list
    optimizer: list
    step: Any
    nonfinite_batches: Any
    nonfinite_step: Any


class JaxTrainStep:
    """A model's and optimizer's train step, compiled once per batch shape.

    Args:
        model: a built Keras model (called once on a batch).
        optimizer: a Keras optimizer built on `model.trainable_variables`;
            a `keras.optimizers.LossScaleOptimizer` scales the loss.
        clip_grad_norm: clip the gradient to this global norm; 0 turns
            clipping off (the hparam of the same name).
        skip_nonfinite_batches: refuse only the non-finite batch itself,
            rather than every update after it.
        loss_fn: the criterion, `(batch, outputs) -> {name: scalar}` with a
            "total" loss; one with `diagnostics(batch, outputs, losses)`
            (`criteria.Criterion`) has those reported too. By default the
            criterion the model declares (`registry.criterion_for`: the
            built-ins are registered once `syntax_t2t.criteria` is imported).
        jit: compile the step (off only to debug it).
    """

    def __init__(self, model: keras.Model, optimizer: keras.optimizers.Optimizer, *,
                 clip_grad_norm: float = 0.0, skip_nonfinite_batches: bool = False,
                 loss_fn: Optional[LossFunction] = None, jit: bool = True):
        if keras.backend.backend() != "jax":
            raise RuntimeError(f"JaxTrainStep needs KERAS_BACKEND=jax, not "
                               f"{keras.backend.backend()!r}")
        if not model.built or not optimizer.built:
            raise ValueError("build the model (call it on a batch) and the optimizer "
                             "(optimizer.build(model.trainable_variables)) first")
        self.model = model
        self.optimizer = optimizer
        self.clip_grad_norm = float(clip_grad_norm)
        self.skip_nonfinite_batches = skip_nonfinite_batches
        self.loss_fn = loss_fn if loss_fn is not None else registry.criterion_for(model)
        self._loss_scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        self._step = jax.jit(self._update, donate_argnums=0) if jit else self._update

    def _apply_if(self, apply: Any, state: TrainState, gradients: list) -> tuple[list, list]:
        """The trainable and optimizer values after the update where `apply` holds, else as they were."""

        def applied():
            return self.optimizer.stateless_apply(state.optimizer, gradients, state.trainable)

        def kept():
            return list(state.trainable), list(state.optimizer)

        return jax.lax.cond(apply, applied, kept)

    def initial_state(self) -> TrainState:
        """A state holding copies of the variables' current values and zero counters."""
        def copies(variables):
            return [jax.numpy.array(variable.value, copy=True) for variable in variables]

        return TrainState(
            trainable=copies(self.model.trainable_variables),
            non_trainable=copies(self.model.non_trainable_variables),
            optimizer=copies(self.optimizer.variables),
            step=jax.numpy.zeros((), "int32"),
            nonfinite_batches=jax.numpy.zeros((), "int32"),
            nonfinite_step=jax.numpy.full((), -1, "int32"))

    def __call__(self, state: TrainState,
                 batch: Mapping[str, Any]) -> tuple[TrainState, dict[str, Any]]:
        """One update on `batch`.

        Args:
            state: the state after the previous step; donated (do not use it
                again).
            batch: the model's features (numpy or JAX arrays), derived ones
                included.

        Returns:
            `(state, report)`: the new state and float32 scalars: each loss,
            the criterion's diagnostics if it has them, "tokens"
            (non-padding targets) and "finite" (1.0 when the step was
            finite, whether or not it was applied).
        """
        return self._step(state, dict(batch))

    def write_back(self, state: TrainState) -> None:
        """Copies the state's values into the model's and optimizer's variables.

        Copies, because the state's own buffers are donated to the next step.
        """
        for variables, values in ((self.model.trainable_variables, state.trainable),
                                  (self.model.non_trainable_variables, state.non_trainable),
                                  (self.optimizer.variables, state.optimizer)):
            for variable, value in zip(variables, values):
                variable.assign(jax.numpy.array(value, copy=True))

    @staticmethod
    def counters(state: TrainState) -> dict[str, int]:
        """`{"step", "nonfinite_batches", "nonfinite_step"}` as Python ints (waits for the step)."""
        return {"step": int(state.step), "nonfinite_batches": int(state.nonfinite_batches),
                "nonfinite_step": int(state.nonfinite_step)}

    # The compiled function -------------------------------------------------

    def _loss_scale(self, optimizer_values):
        if not self._loss_scaling:
            return None
        # Read inside the scope: the traced value of this step, not the variable's.
        mapping = list(zip(self.optimizer.variables, optimizer_values))
        with keras.StatelessScope(state_mapping=mapping):
            return ops.convert_to_tensor(self.optimizer.dynamic_scale.value, "float32")

    def _report(self, batch, outputs, losses):
        report = {name: ops.cast(value, "float32") for name, value in losses.items()}
        if isinstance(self.loss_fn, DiagnosingLossFunction):
            report.update({name: ops.cast(value, "float32")
                           for name, value in self.loss_fn.diagnostics(batch, outputs,
                                                                       losses).items()})
        report["tokens"] = ops.sum(ops.cast(ops.not_equal(batch["targets"], PAD_ID), "float32"))
        return report

    def _finite(self, total, gradients):
        checks = [ops.all(ops.isfinite(total))]
        if not self._loss_scaling:
            # Tensor by tensor: a global norm would overflow for large finite values.
            checks += [ops.all(ops.isfinite(gradient)) for gradient in gradients]
        return ops.all(ops.stack(checks))

    def _update(self, state: TrainState, batch: dict[str, Any]):
        scale = self._loss_scale(state.optimizer)
        outputs, losses, non_trainable, gradients = stateless_value_and_gradients(
            self.model, self.loss_fn, state.trainable, state.non_trainable, batch,
            training=True, loss_scale=scale)
        report = self._report(batch, outputs, losses)
        finite = self._finite(losses["total"], gradients)
        if self.clip_grad_norm > 0:
            bound = self.clip_grad_norm if scale is None else self.clip_grad_norm * scale
            gradients = clipping.clip_by_global_norm(gradients, bound)
        apply = finite
        if not self.skip_nonfinite_batches:
            apply = ops.logical_and(apply, state.nonfinite_step < 0)

        trainable, optimizer = self._apply_if(apply, state, gradients)
        first_refused = ops.logical_and(ops.logical_not(finite), state.nonfinite_step < 0)
        report["finite"] = ops.cast(finite, "float32")
        new_state = TrainState(
            trainable=list(trainable), non_trainable=list(non_trainable),
            optimizer=list(optimizer), step=state.step + 1,
            nonfinite_batches=state.nonfinite_batches + ops.cast(ops.logical_not(finite), "int32"),
            nonfinite_step=ops.where(first_refused, state.step + 1, state.nonfinite_step))
        return new_state, report

