"""NSD's distance-aware losses (Ma et al. 2019, eq. 17-20): translation plus the distance terms."""

from typing import Any, Mapping

from keras import ops

from syntax_t2t.criteria.reduction import reduce_loss, target_tokens
from syntax_t2t.criteria.translation import Translation
from syntax_t2t.models.contract import Features, Tensor


def distance_losses(logits: Tensor, gold_ids: Tensor, max_distance: int,
                    entropy_reduction: str = "mean", distance_reduction: str = "mean",
                    num_target_tokens: Any = None) -> tuple[Tensor, Tensor]:
    """The distance-aware losses of the seed's eq. 19-20 for one side.

    The predicted distance of word i is the expectation of its softmax,
    `d^_i = sum_c p(c | h_i) (c - k - 1)`, which keeps L_dist differentiable.
    L_dist is the squared error over words plus the ranking hinge
    `[1 - sign(d_i - d_j)(d^_i - d^_j)]_+` over word pairs i < j (pairs of
    equal gold distances have sign 0 and cost 1, as in the equation).
    Reductions (`criteria/reduction.py`): `"sum"` sums each term over the
    batch and divides by its target tokens (the seed's sums, as OpenNMT
    normalised them); `"mean"` averages the cross-entropy and the squared
    error over words and the hinge over pairs.

    Args:
        logits: float [B, S, 2k + 1] scores of the distance ids 1 .. 2k + 1
            (gold distance d has id d + k + 1).
        gold_ids: int [B, S], 0 = no word.
        max_distance: k.
        entropy_reduction, distance_reduction: of L_ent_dist and L_dist.
        num_target_tokens: float32 scalar, for the `"sum"` reductions.

    Returns:
        `(L_ent_dist, L_dist)`, float32 scalars.
    """
    logits = ops.cast(logits, "float32")
    gold_ids = ops.cast(gold_ids, "int32")
    words = ops.cast(gold_ids > 0, "float32")
    log_probs = ops.log_softmax(logits, axis=-1)
    classes = ops.maximum(gold_ids - 1, 0)
    cross_entropy = -ops.take_along_axis(log_probs, classes[..., None], axis=-1)[..., 0]
    entropy_loss = reduce_loss(cross_entropy, words, entropy_reduction, num_target_tokens)

    values = ops.arange(-max_distance, max_distance + 1, dtype="float32")
    predicted = ops.sum(ops.softmax(logits, axis=-1) * values, axis=-1)  # [B, S]
    gold = ops.cast(gold_ids - max_distance - 1, "float32")
    squared = reduce_loss(ops.square(gold - predicted), words, distance_reduction,
                          num_target_tokens)
    gold_order = ops.sign(gold[:, :, None] - gold[:, None, :])
    hinge = ops.relu(1.0 - gold_order * (predicted[:, :, None] - predicted[:, None, :]))
    positions = ops.arange(ops.shape(gold_ids)[1], dtype="int32")
    later = ops.cast(positions[None, :] > positions[:, None], "float32")  # [i, j]: j > i
    pairs = words[:, :, None] * words[:, None, :] * later[None]
    ranking = reduce_loss(hinge, pairs, distance_reduction, num_target_tokens)
    return entropy_loss, squared + ranking


class SyntacticDistances(Translation):
    """`"nmt"`, per predicting side `nsd[_target]_entropy` (and `nsd[_target]_distance`), `"total"`.

    `"total"` = nmt + `nsd_loss_weight` * the sum of the distance terms; the
    gold distance ids are the model's (`NSD.source_distance_ids`,
    `NSD.target_distance_ids`: d_D on the device, d_S, d_G, d_R derived on
    the host), the reductions its `loss_reductions`.
    """

    def __call__(self, features: Features, outputs: Mapping[str, Tensor]) -> dict[str, Tensor]:
        result = super().__call__(features, outputs)
        model = self.model
        hp = model.hparams
        terms = []
        for prefix, key, gold_ids in (("nsd", "nsd_logits", model.source_distance_ids),
                                      ("nsd_target", "nsd_target_logits",
                                       model.target_distance_ids)):
            if key not in outputs:
                continue
            gold = gold_ids(features, ops.shape(outputs[key])[1])
            entropy_loss, distance_loss = distance_losses(
                outputs[key], gold, hp.nsd_max_distance, *model.loss_reductions,
                num_target_tokens=target_tokens(features["targets"]))
            result[f"{prefix}_entropy"] = entropy_loss
            terms.append(entropy_loss)
            if hp.nsd_distance_loss:
                result[f"{prefix}_distance"] = distance_loss
                terms.append(distance_loss)
        if terms:
            result["total"] = result["nmt"] + hp.nsd_loss_weight * sum(terms[1:], terms[0])
        return result
