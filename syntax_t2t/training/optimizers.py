"""The optimizer of a training run, and gradient clipping by global norm.

`optimizer="adam"`: Adam with T2T's settings (hparams `adam_beta1`,
`adam_beta2`, `adam_epsilon`) on the noam learning-rate schedule.
`optimizer="sgd"`: plain SGD at the constant rate `learning_rate`; with the
hparam `learning_rate_halving=true` the rate is halved whenever the dev loss
is worse than at the previous evaluation (Eriguchi et al. 2016, Section 4.2;
the trainer reports each dev loss to `HalvingSGD.observe_dev_loss`). Both are
wrapped in Keras's dynamic loss scaling under float16.

Clipping is done here rather than through Keras's `global_clipnorm` because
Keras clips each replica's partial gradient before summing them across
replicas; the global norm that T2T clips is that of the summed gradient. The
rule itself (`backend/clipping.py`) is shared with the JAX step.

TensorFlow is imported only by the functions of the TensorFlow trainer, so
that the JAX step (and `bin/bench` under JAX) build the same optimizer.
"""

from typing import Any, Sequence

import keras

from syntax_t2t.backend import clipping
from syntax_t2t.hparams import HParams, HParamsError
from syntax_t2t.training import precision, schedules


def make_optimizer(hparams: HParams, policy_name: str) -> keras.optimizers.Optimizer:
    """Builds the optimizer described by `hparams`.

    Args:
        hparams: needs `optimizer` ("adam" or "sgd") and `learning_rate`;
            Adam also `adam_beta1`, `adam_beta2`, `adam_epsilon` and the
            schedule's `hidden_size`, `learning_rate_warmup_steps`; SGD reads
            `learning_rate_halving` when present (default false).
        policy_name: the Keras dtype policy of the model; "mixed_float16"
            wraps the optimizer in a `keras.optimizers.LossScaleOptimizer`.

    Returns:
        An unbuilt Keras optimizer.

    Raises:
        HParamsError: an optimizer other than Adam or SGD is asked for.
    """
    name = hparams.optimizer.lower()
    if name == "adam":
        if hparams.learning_rate_warmup_steps < 1:
            # The schedule divides by it; SGD's constant rate has no warm-up to need it.
            raise HParamsError(f"hparam learning_rate_warmup_steps="
                               f"{hparams.learning_rate_warmup_steps} must be at least 1 with "
                               f"optimizer=adam (its schedule warms up over that many steps)")
        optimizer = keras.optimizers.Adam(
            learning_rate=schedules.learning_rate_schedule(hparams),
            beta_1=hparams.adam_beta1,
            beta_2=hparams.adam_beta2,
            epsilon=hparams.adam_epsilon)
    elif name == "sgd":
        if not hparams.learning_rate > 0:
            raise HParamsError(f"hparam learning_rate={hparams.learning_rate} must be positive")
        sgd = HalvingSGD if hparams.get("learning_rate_halving", False) else keras.optimizers.SGD
        optimizer = sgd(learning_rate=hparams.learning_rate)
    else:
        raise HParamsError(
            f"hparam optimizer={hparams.optimizer!r} is not supported; use 'adam' or 'sgd'")
    if precision.needs_loss_scaling(policy_name):
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


class HalvingSGD(keras.optimizers.SGD):
    """Plain SGD whose learning rate halves whenever the dev loss gets worse.

    The rate and the dev loss of the previous evaluation are optimizer
    variables, so a resumed run continues with both.

    Args:
        learning_rate: the initial rate (a float: the rate is a variable).
        **kwargs: `keras.optimizers.SGD` arguments.
    """

    def build(self, variables: Sequence[Any]) -> None:
        super().build(variables)
        self.previous_dev_loss = self.add_variable(
            shape=(), initializer=keras.initializers.Constant(float("inf")),
            name="previous_dev_loss")

    def observe_dev_loss(self, loss: float) -> bool:
        """Records an evaluation's dev loss; halves the rate if it is worse than the last one.

        Call it after building the optimizer, once per evaluation.

        Returns:
            Whether the rate was halved.
        """
        worse = float(loss) > float(self.previous_dev_loss.numpy())
        if worse:
            self.learning_rate = float(self.learning_rate) * 0.5
        self.previous_dev_loss.assign(float(loss))
        return worse


def loss_scale(optimizer: keras.optimizers.Optimizer) -> Any:
    """The factor by which the loss is multiplied before differentiation."""
    import tensorflow as tf

    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return tf.convert_to_tensor(optimizer.dynamic_scale)
    return tf.constant(1.0)


def dense_gradients(gradients: Sequence[Any]) -> list:
    """The gradients with every `tf.IndexedSlices` (an embedding lookup's) summed into a dense tensor.

    Keras's Adam on TensorFlow squares the slices of an `IndexedSlices` one by
    one, so a token that occurs k times in a batch adds the sum of its k
    squared partial gradients to the second moment instead of the square of
    their sum: not Adam, and not what the JAX step or gradient accumulation
    (which sum first) compute. Summing duplicates first makes all of them
    the same Adam.

    Args:
        gradients: list of tensors, `tf.IndexedSlices` or None.

    Returns:
        The list with dense tensors in place of the slices.
    """
    import tensorflow as tf

    return [tf.convert_to_tensor(gradient) if isinstance(gradient, tf.IndexedSlices) else gradient
            for gradient in gradients]


def clip_by_global_norm(gradients: Sequence[Any], clip_norm: float,
                        optimizer: keras.optimizers.Optimizer) -> list:
    """Clips one replica's gradients so that the summed gradient's norm is at most `clip_norm`.

    Called in a replica context. With several replicas the gradients are
    first summed across them; every replica then holds the same clipped total
    and hands the optimizer `1 / replicas` of it, because the optimizer sums
    the replicas' gradients once more.

    Args:
        gradients: list of this replica's gradients, possibly loss-scaled;
            None entries (variables without gradient) are kept as None.
        clip_norm: the bound on the global norm of the unscaled gradient.
        optimizer: the optimizer; its loss scale scales the bound, so that
            clipping commutes with unscaling (an infinite norm still yields
            non-finite gradients, which the loss-scale optimizer skips).

    Returns:
        The list of clipped gradients.
    """
    import tensorflow as tf

    replica_context = tf.distribute.get_replica_context()
    replicas = replica_context.num_replicas_in_sync if replica_context else 1
    present = [i for i, gradient in enumerate(gradients) if gradient is not None]
    # Sparse gradients (embedding lookups) repeat an index for every
    # occurrence of a token, and all-reducing them concatenates the replicas'
    # slices: their norm is not the norm of the summed gradient. Dense
    # tensors sum the duplicates first.
    clipped = [tf.convert_to_tensor(gradients[i]) for i in present]
    if replicas > 1:
        clipped = replica_context.all_reduce(tf.distribute.ReduceOp.SUM, clipped)
    bound = clip_norm * tf.cast(loss_scale(optimizer), tf.float32)
    clipped = clipping.clip_by_global_norm(clipped, bound)
    if replicas > 1:
        clipped = [gradient / replicas for gradient in clipped]
    gradients = list(gradients)
    for i, gradient in zip(present, clipped):
        gradients[i] = gradient
    return gradients

