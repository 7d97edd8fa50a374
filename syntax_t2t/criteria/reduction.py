"""How an auxiliary loss is reduced relative to the translation loss.

The seeds write their auxiliary losses as sums over a sentence's items:
MG-SA's L_tag over its phrases (eq. 10, weighted by lambda in eq. 12), NSD's
L_dist over words and O(n^2) word pairs and L_ent_dist over words (eq.
17-20), added to a translation loss that is itself a sum over target words.
Their toolkits (T2T for MG-SA, OpenNMT for NSD) divide the whole objective
by the number of target tokens in the batch, which gives the per-token mean
translation loss `label_smoothed_cross_entropy` computes. Two reductions
(`models/contract.REDUCTIONS`, which the models check their hparams against):

* `"sum"`: the items' losses summed over the batch and divided by the
  batch's target tokens (padding excluded, `<EOS>` counted): the seed's
  balance, the toolkit's normalisation. Relative to `"mean"` this weighs the
  loss by (items per sentence) / (target tokens per sentence), e.g. about
  n / 2 for NSD's ranking term over n-word sentences.
* `"mean"`: the mean over the items (phrases, words, pairs), whatever
  their number: one unit of auxiliary loss weighs as much as one unit of
  per-token translation loss.
"""

from typing import Optional

from keras import ops

from syntax_t2t.models.contract import REDUCTIONS, Tensor

PAD_ID = 0


def target_tokens(targets: Tensor) -> Tensor:
    """float32 scalar: the batch's target tokens (`<EOS>` included, padding not)."""
    return ops.sum(ops.cast(ops.not_equal(ops.cast(targets, "int32"), PAD_ID), "float32"))


def reduce_loss(losses: Tensor, weights: Tensor, reduction: str,
                num_target_tokens: Optional[Tensor] = None) -> Tensor:
    """Reduces per-item losses to a scalar.

    Args:
        losses: float [...], one loss per item.
        weights: float of the same shape, 1 for real items and 0 for padding.
        reduction: one of `REDUCTIONS`.
        num_target_tokens: float32 scalar (`target_tokens`), needed by `"sum"`.

    Returns:
        float32 scalar; 0 without items.
    """
    total = ops.sum(ops.cast(losses, "float32") * ops.cast(weights, "float32"))
    if reduction == "mean":
        return total / ops.maximum(ops.sum(ops.cast(weights, "float32")), 1.0)
    if reduction == "sum":
        if num_target_tokens is None:
            raise ValueError("the 'sum' reduction divides by the batch's target tokens; "
                             "num_target_tokens is missing")
        return total / ops.maximum(num_target_tokens, 1.0)
    raise ValueError(f"reduction {reduction!r}: expected one of {', '.join(REDUCTIONS)}")
