"""Clipping gradients by their global norm: the one rule both train steps follow.

The TensorFlow trainer (`training/trainer.py`, through
`training/optimizers.clip_by_global_norm`, which first sums the replicas'
gradients) and the JAX step (`jax_train_step.py`) clip with this function,
so that a run clips alike on either backend. It lives in `backend/`, below
`training/`, because the JAX step may not import the trainer's room.

The rule is T2T's (`tf.clip_by_global_norm`): every gradient is multiplied
by `bound / max(norm, bound)`, and an infinite or NaN norm makes every
gradient NaN, so that the step's non-finite check refuses the update rather
than applying a gradient scaled to zero.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from keras import ops

#: A tensor of the running backend, or anything `keras.ops` converts to one.
Tensor = Any


def global_norm(gradients: Sequence[Optional[Tensor]]) -> Tensor:
    """The Euclidean norm of all gradients together, in float32.

    Args:
        gradients: tensors of any shapes; None entries (variables without a
            gradient) count as zeros.

    Returns:
        A float32 scalar.
    """
    squares = [ops.sum(ops.square(ops.cast(gradient, "float32")))
               for gradient in gradients if gradient is not None]
    if not squares:
        return ops.convert_to_tensor(0.0, "float32")
    return ops.sqrt(ops.sum(ops.stack(squares)))


def clip_by_global_norm(gradients: Sequence[Optional[Tensor]],
                        bound: float | Tensor) -> list[Optional[Tensor]]:
    """Scales `gradients` so that their global norm is at most `bound`.

    Args:
        gradients: tensors (dense; None entries are kept as None).
        bound: the largest global norm let through (> 0); a float or a
            float32 scalar tensor (a loss-scaled bound is one).

    Returns:
        The gradients, each times `bound / max(norm, bound)`, in their own
        dtypes; all NaN when the norm is not finite.
    """
    norm = global_norm(gradients)
    bound = ops.cast(bound, "float32")
    scale = bound * ops.minimum(1.0 / norm, 1.0 / bound)
    # 0 * inf is NaN: an infinite norm poisons the scale instead of zeroing the update.
    scale = scale + (norm - norm)
    return [None if gradient is None else gradient * ops.cast(scale, gradient.dtype)
            for gradient in gradients]
