"""Gradient accumulation: one optimizer step from the gradients of several batches.

`update_freq=K` (fairseq's name; an hparam, or `bin/train --update_freq`)
trains on K batches per optimizer step, as if they were one batch K times
larger. The global step, the checkpoints and the learning-rate schedule count
optimizer steps.

Models' losses are means over target tokens, so the loss of a union of
batches weighs each batch's mean by its share of the tokens. The accumulator
therefore sums `tokens_k * gradient_k` and divides by the summed tokens at
the update: for a token-mean loss that is exactly the gradient of the union
batch (`tests/test_accumulation.py`); for other normalisations (tree2seq's
per-sentence loss) it is the same token-weighted average.

Each replica accumulates its own batches (on-read variables); the update then
runs as without accumulation. A batch whose loss or gradient is not finite
adds nothing (with `skip_nonfinite_batches`; otherwise training stops).

`GradientAccumulator` is the TensorFlow trainer's (it imports TensorFlow
when made); the JAX trainer accumulates by the same rule in
`backend/jax_accumulation.py`, and both take their batches from
`batches_of_one_update`.
"""

from typing import Any, Iterator, Optional, Sequence

from syntax_t2t.hparams import HParams


class GradientAccumulator:
    """Token-weighted sums of gradients over the batches of one optimizer step.

    Create under the strategy's scope; call `add` in a replica context and
    `advance` in the cross-replica one, once per batch.

    Args:
        variables: the trainable variables the gradients belong to.
        update_freq: batches per optimizer step K (at least 2).
    """

    def __init__(self, variables: Sequence[Any], update_freq: int):
        import tensorflow as tf

        if update_freq < 2:
            raise ValueError(f"update_freq={update_freq}: accumulation needs at least 2 batches")
        self.update_freq = update_freq
        # Batches trained on since the run started, mod K. Not checkpointed:
        # checkpoints are written at update boundaries only.
        self._batches = tf.Variable(0, dtype=tf.int64, trainable=False,
                                    name="accumulated_batches")
        local = dict(trainable=False, synchronization=tf.VariableSynchronization.ON_READ,
                     aggregation=tf.VariableAggregation.SUM)
        self._sums = [tf.Variable(tf.zeros(variable.shape, tf.float32), name="accumulated_gradient",
                                  **local)
                      for variable in variables]
        self._weight = tf.Variable(0.0, name="accumulated_tokens", **local)

    def completes_update(self) -> Any:
        """Whether the batch now trained on is the last of its optimizer step."""
        import tensorflow as tf

        return tf.equal((self._batches + 1) % self.update_freq, 0)

    def add(self, gradients: Sequence[Any], tokens: Any, finite: Any) -> list:
        """Adds one batch; returns the token-weighted mean gradients so far.

        Args:
            gradients: this replica's gradients of the batch (None allowed).
            tokens: the batch's target tokens, the weight of its gradients.
            finite: whether the batch's loss and gradients are finite; a
                batch that is not adds nothing.

        Returns:
            The accumulated mean gradients, with None where `gradients` has it.
        """
        import tensorflow as tf

        weight = tf.where(finite, tf.cast(tokens, tf.float32), 0.0)
        means = []
        total = self._weight.assign_add(weight)
        for accumulated, gradient in zip(self._sums, gradients):
            if gradient is None:
                means.append(None)
                continue
            gradient = tf.cast(tf.convert_to_tensor(gradient), tf.float32)
            # where, not a product: 0 * inf is NaN.
            summed = accumulated.assign_add(tf.where(finite, weight * gradient, 0.0))
            means.append(summed / tf.maximum(total, 1.0))
        return means

    def reset_if(self, condition: Any) -> None:
        """Empties the sums when `condition` holds (after the update); replica context."""
        import tensorflow as tf

        for accumulated in self._sums:
            accumulated.assign(tf.where(condition, tf.zeros_like(accumulated), accumulated))
        self._weight.assign(tf.where(condition, 0.0, self._weight))

    def has_tokens(self) -> Any:
        """Whether the batches of this step added anything (all may have been skipped)."""
        import tensorflow as tf

        return self._weight > 0.0

    def advance(self) -> Any:
        """Counts the batch trained on; cross-replica context. Returns whether it ended a step."""
        import tensorflow as tf

        completes = self.completes_update()
        self._batches.assign((self._batches + 1) % self.update_freq)
        return completes


def make_accumulator(hparams: HParams,
                     variables: Sequence[Any]) -> Optional[GradientAccumulator]:
    """The accumulator of `hparams.update_freq`, or None for one batch per step.

    Runs saved before `update_freq` existed train one batch per step.
    """
    update_freq = hparams.get("update_freq", 1)
    return GradientAccumulator(variables, update_freq) if update_freq > 1 else None


def batches_of_one_update(batch: Any, iterator: Iterator[Any],
                          update_freq: int) -> Iterator[Any]:
    """The batches of one optimizer step: `batch`, then `update_freq - 1` more from `iterator`."""
    yield batch
    for _ in range(update_freq - 1):
        yield next(iterator)
