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

from typing import Any, Callable, Mapping

import keras

LossFunction = Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]]


def value_and_gradients(model: keras.Model, loss_fn: LossFunction, batch: Mapping[str, Any],
                        training: bool = False, total_key: str = "total"):
    """The model's outputs and losses on `batch`, and d losses[total_key] / d each trainable variable.

    Args:
        model: a built Keras model.
        loss_fn: `(batch, outputs) -> {name: scalar}`, e.g. `model.compute_losses`.
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
        import jax

        trainable = [variable.value for variable in model.trainable_variables]
        non_trainable = [variable.value for variable in model.non_trainable_variables]

        def total(trainable_values, non_trainable_values):
            mapping = list(zip(model.trainable_variables, trainable_values))
            mapping += list(zip(model.non_trainable_variables, non_trainable_values))
            with keras.StatelessScope(state_mapping=mapping) as scope:
                outputs = model(batch, training=training)
                losses = loss_fn(batch, outputs)
            updated = [scope.get_current_value(variable) for variable in model.non_trainable_variables]
            return losses[total_key], (outputs, losses, updated)

        (_, (outputs, losses, updated)), gradients = jax.value_and_grad(total, has_aux=True)(
            trainable, non_trainable)
        for variable, value in zip(model.non_trainable_variables, updated):
            if value is not None:
                variable.assign(value)
        return outputs, losses, gradients
    raise NotImplementedError(f"gradients on the {backend!r} backend: only tensorflow and jax are supported")
