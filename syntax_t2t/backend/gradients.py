"""A model's losses and their gradients, computed the way the running backend differentiates.

TensorFlow records the forward pass on a `GradientTape`; JAX differentiates a
pure function of the variables' values, so the forward pass runs inside a
`keras.StatelessScope` that maps each variable to a traced value. The loss
function is called inside the same scope because some criteria read model
variables themselves (a sampled softmax's output embedding, say): outside the
scope they would see the stored values, not the traced ones, and JAX would
return no gradient for them.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

import keras

#: A criterion as a function: `(batch, outputs) -> {name: scalar}` with a "total".
LossFunction = Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]]


@runtime_checkable
class DiagnosingLossFunction(Protocol):
    """A `LossFunction` that also has scalars to log beside the losses (`criteria.Criterion`)."""

    def __call__(self, batch: Mapping[str, Any],
                 outputs: Mapping[str, Any]) -> Mapping[str, Any]: ...

    def diagnostics(self, batch: Mapping[str, Any], outputs: Mapping[str, Any],
                    losses: Mapping[str, Any]) -> Mapping[str, Any]: ...


def value_and_gradients(model: keras.Model, loss_fn: LossFunction, batch: Mapping[str, Any],
                        training: bool = False, total_key: str = "total"):
    """The model's outputs and losses on `batch`, and d losses[total_key] / d each trainable variable.

    Args:
        model: a built Keras model.
        loss_fn: `(batch, outputs) -> {name: scalar}`, e.g. the model's criterion
            (`criteria.for_model(model)`).
        batch: the model's input features.
        training: passed to the model's `call`.
        total_key: the loss that is differentiated.

    Returns:
        `(outputs, losses, gradients)`, with `gradients` in the order of
        `model.trainable_variables`. On JAX the non-trainable state the pass
        changed (seed generators) is written back to the model's variables.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            outputs = model(batch, training=training)
            losses = loss_fn(batch, outputs)
        gradients = tape.gradient(losses[total_key], model.trainable_variables)
        return outputs, losses, gradients
    if backend == "jax":
        outputs, losses, updated, gradients = stateless_value_and_gradients(
            model, loss_fn, [variable.value for variable in model.trainable_variables],
            [variable.value for variable in model.non_trainable_variables], batch,
            training=training, total_key=total_key)
        for variable, value in zip(model.non_trainable_variables, updated):
            variable.assign(value)
        return outputs, losses, gradients
    raise NotImplementedError(f"gradients on the {backend!r} backend: only tensorflow and jax are supported")


def stateless_value_and_gradients(model: keras.Model, loss_fn: LossFunction,
                                  trainable_values: Sequence[Any],
                                  non_trainable_values: Sequence[Any], batch: Mapping[str, Any], *,
                                  training: bool = False, total_key: str = "total",
                                  loss_scale: Any = None):
    """JAX only: outputs, losses and gradients as a pure function of the variables' values.

    Nothing is read from or written to the model's variables, so the call can
    be traced by `jax.jit` (the JAX train step does).

    Args:
        model: a built Keras model.
        loss_fn: `(batch, outputs) -> {name: scalar}`.
        trainable_values: one array per `model.trainable_variables`.
        non_trainable_values: one array per `model.non_trainable_variables`.
        batch: the model's input features.
        training: passed to the model's `call`.
        total_key: the loss that is differentiated.
        loss_scale: a scalar the differentiated loss is multiplied by
            (float16 loss scaling), or None; the returned losses are unscaled.

    Returns:
        `(outputs, losses, non_trainable_values, gradients)`: the
        non-trainable values after the pass (seed generators advanced by
        dropout), and the gradients in the order of `trainable_values`.
    """
    import jax

    def objective(trainable):
        mapping = list(zip(model.trainable_variables, trainable))
        mapping += list(zip(model.non_trainable_variables, non_trainable_values))
        with keras.StatelessScope(state_mapping=mapping) as scope:
            outputs = model(batch, training=training)
            losses = loss_fn(batch, outputs)
        updated = [scope.get_current_value(variable) for variable in model.non_trainable_variables]
        updated = [old if new is None else new for old, new in zip(non_trainable_values, updated)]
        total = losses[total_key] if loss_scale is None else losses[total_key] * loss_scale
        return total, (outputs, losses, updated)

    (_, (outputs, losses, updated)), gradients = jax.value_and_grad(objective, has_aux=True)(
        list(trainable_values))
    return outputs, losses, updated, gradients
