"""The Transformer's learning-rate schedule (T2T's "noam" decay scheme).

    lr(step) = learning_rate * hidden_size ** -0.5
               * min(step * warmup_steps ** -1.5, step ** -0.5)

The rate rises linearly for `warmup_steps` updates, peaks at
`learning_rate * (hidden_size * warmup_steps) ** -0.5`, then decays with the
reciprocal square root of the step. As in T2T, `step` counts updates from 1:
Keras passes the optimizer's `iterations` (0 before the first update), so the
first update uses step 1 rather than a wasted rate of 0.
"""

from typing import Any

import keras
from keras import ops

from syntax_t2t.hparams import HParams


@keras.saving.register_keras_serializable(package="syntax_t2t")
class NoamSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up, then reciprocal square-root decay, scaled by model size.

    Args:
        learning_rate: the constant factor (hparams `learning_rate`).
        hidden_size: the model width; the rate scales with its inverse
            square root.
        warmup_steps: number of updates of linear warm-up (> 0).
    """

    def __init__(self, learning_rate: float, hidden_size: int, warmup_steps: int):
        if warmup_steps <= 0:
            raise ValueError(f"warmup_steps must be positive, got {warmup_steps}")
        if hidden_size <= 0:
            raise ValueError(f"hidden_size must be positive, got {hidden_size}")
        self.learning_rate = float(learning_rate)
        self.hidden_size = int(hidden_size)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step: Any) -> Any:
        """The rate for the update after `step` previous updates.

        Args:
            step: the optimizer's iteration count (0-based), any numeric
                scalar or tensor.

        Returns:
            A float32 scalar tensor.
        """
        step = ops.cast(step, "float32") + 1.0
        warmup = float(self.warmup_steps)
        return (self.learning_rate * self.hidden_size ** -0.5
                * ops.minimum(step * warmup ** -1.5, ops.rsqrt(step)))

    def get_config(self) -> dict:
        return {"learning_rate": self.learning_rate,
                "hidden_size": self.hidden_size,
                "warmup_steps": self.warmup_steps}


# T2T 1.5.6 (the thesis's version) multiplies its legacy "noam" decay by 5000
# and, for Adam, by an "optimizer correction" of 0.002, so `learning_rate=0.2`
# there peaks at 10 * 0.2 / sqrt(512 * 8000) ~ 9.9e-4 (Popel & Bojar 2018).
# Applying the same factor keeps the thesis's hparams meaning what they meant.
T2T_NOAM_SCALE = 5000.0 * 0.002


def learning_rate_schedule(hparams: HParams) -> NoamSchedule:
    """The schedule configured by `hparams` (`learning_rate`, `hidden_size`,
    `learning_rate_warmup_steps`), scaled as T2T 1.5.6 scales it."""
    return NoamSchedule(hparams.learning_rate * T2T_NOAM_SCALE, hparams.hidden_size,
                        hparams.learning_rate_warmup_steps)
