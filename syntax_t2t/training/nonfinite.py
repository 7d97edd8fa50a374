"""Guarding the weights against a non-finite loss or gradient.

A NaN or an infinity in one update spreads to every weight at once, and the
next checkpoint would save the ruin. So the train step checks the loss (and,
without loss scaling, the gradient's global norm) of every replica and
applies the update only when all of them are finite:

* by default the first non-finite step also blocks every later update, and
  the trainer, which reads the flag whenever it reports or saves, stops with
  `NonFiniteLossError` naming that step, before anything is saved: the last
  checkpoint keeps the last good weights;
* asked to skip such batches, the step leaves the weights untouched for that
  batch only and counts it.

Under float16 loss scaling non-finite *gradients* are expected now and then
(the loss scale is too high); Keras's loss-scale optimizer skips those
updates and lowers the scale, so only the loss itself is checked there.

The checks here are the TensorFlow trainer's (TensorFlow is imported by
them); the JAX step makes the same ones (`backend/jax_train_step.py`), and
both trainers raise `NonFiniteLossError`.
"""

from typing import Any, Optional, Sequence

import keras


class NonFiniteLossError(ArithmeticError):
    """Training met a non-finite loss or gradient and stopped.

    Attributes:
        step: the global step whose update was refused (1-based: the first
            update is step 1).
        last_checkpoint: the newest checkpoint, or None.
    """

    def __init__(self, step: int, last_checkpoint: Optional[str]):
        self.step = step
        self.last_checkpoint = last_checkpoint
        kept = (f"the last checkpoint, {last_checkpoint}, holds the last good weights"
                if last_checkpoint else "no checkpoint had been saved yet")
        super().__init__(
            f"the loss or its gradient is not finite (NaN or infinite) at step {step}; training "
            f"stopped without applying that update and saved nothing after it: {kept}. Lower the "
            f"learning rate or lengthen its warm-up, check the data, or skip such batches "
            f"(bin/train --skip_nonfinite_batches)")


def all_finite(loss: Any, gradients: Sequence[Any], optimizer: keras.optimizers.Optimizer) -> Any:
    """Whether the loss (and gradients) of every replica are finite; call in a replica context.

    Args:
        loss: this replica's unscaled loss.
        gradients: this replica's gradients (None entries allowed).
        optimizer: the optimizer; a loss-scale optimizer checks gradients itself.

    Returns:
        A scalar bool tensor, the same on every replica.
    """
    import tensorflow as tf

    checks = [tf.math.is_finite(loss)]
    if not isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        # Tensor by tensor: a global norm would overflow for large finite values.
        for gradient in gradients:
            if isinstance(gradient, tf.IndexedSlices):
                gradient = gradient.values
            if gradient is not None:
                checks.append(tf.reduce_all(tf.math.is_finite(gradient)))
    finite = tf.reduce_all(tf.stack(checks))
    context = tf.distribute.get_replica_context()
    if context.num_replicas_in_sync > 1:
        failures = context.all_reduce(tf.distribute.ReduceOp.SUM,
                                      tf.cast(tf.logical_not(finite), tf.float32))
        finite = failures < 0.5
    return finite


def apply_if(condition: Any, optimizer: keras.optimizers.Optimizer, gradients: Sequence[Any],
             variables: Sequence[Any]) -> None:
    """`optimizer.apply(gradients, variables)` when `condition` holds; call in a replica context.

    Optimizers synchronise replicas with `merge_call`, which TensorFlow does
    not allow inside a `tf.cond` in a replica context; as Keras's loss-scale
    optimizer does, the condition is then evaluated in the cross-replica
    context and the update runs on every replica from there.

    Args:
        condition: scalar bool tensor, equal on every replica.
        optimizer: a built Keras optimizer.
        gradients: this replica's gradients.
        variables: the variables they belong to.
    """
    import tensorflow as tf

    def apply():
        optimizer.apply(gradients, variables)
        return tf.constant(True)

    if tf.__internal__.distribute.strategy_supports_no_merge_call():
        tf.cond(condition, apply, lambda: tf.constant(False))
        return

    def in_cross_replica_context(strategy, condition, gradients):
        # Every replica holds the same condition; take the first one's.
        condition = strategy.experimental_local_results(condition)[0]

        def apply_on_every_replica():
            strategy.extended.call_for_each_replica(optimizer.apply, args=(gradients, variables))
            return tf.constant(True)

        tf.cond(condition, apply_on_every_replica, lambda: tf.constant(False))

    tf.distribute.get_replica_context().merge_call(in_cross_replica_context,
                                                   args=(condition, gradients))
