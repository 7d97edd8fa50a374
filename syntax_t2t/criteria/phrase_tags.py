"""MG-SA's phrase-tag supervision (Hao et al. 2019, eq. 9-12): translation plus lambda * L_tag."""

from typing import Any, Mapping

from keras import ops

from syntax_t2t.criteria.reduction import reduce_loss, target_tokens
from syntax_t2t.criteria.translation import Translation
from syntax_t2t.models.contract import Features, Tensor
from syntax_t2t.models.mgsa import phrase_tags
from syntax_t2t.models.transformer import fit_length


def phrase_tag_loss(logits: Tensor, tags: Tensor, reduction: str = "mean",
                    num_target_tokens: Any = None) -> Tensor:
    """Cross-entropy of the phrase tags over the slots that hold a phrase.

    Args:
        logits: float [B, K, S, T].
        tags: int [B, K, S]; 0 = no phrase.
        reduction: `"mean"` over the phrases, or `"sum"` over them divided by
            the batch's target tokens (`criteria/reduction.py`).
        num_target_tokens: float32 scalar, for `"sum"`.

    Returns:
        float32 scalar (0 without phrases).
    """
    tags = ops.cast(tags, "int32")
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    losses = -ops.take_along_axis(log_probs, tags[..., None], axis=-1)[..., 0]
    return reduce_loss(losses, tags > 0, reduction, num_target_tokens)


class PhraseTags(Translation):
    """`"nmt"`, `"phrase_tag"` and `"total"` = nmt + `mgsa_tag_loss_weight` * phrase_tag.

    The gold tag of each phrase slot comes from the host-derived phrase
    structure (`MGSA.syntactic_features`) and the batch's `src_upos`
    (`models/mgsa.phrase_tags`); L_tag is reduced by
    `mgsa_tag_loss_reduction`. A model without the tag classifier (n-gram
    partitions, a weight of 0) trains on translation alone.
    """

    def __call__(self, features: Features, outputs: Mapping[str, Tensor]) -> dict[str, Tensor]:
        result = super().__call__(features, outputs)
        model = self.model
        if "phrase_tag_logits" not in outputs:
            return result
        length = ops.shape(outputs["phrase_tag_logits"])[2]
        _, tag_heads, tag_kinds = model.syntactic_features(features, length)
        tags = phrase_tags(tag_heads, tag_kinds, fit_length(features["src_upos"], length, 0),
                           model.vocab_size("upos"))
        result["phrase_tag"] = phrase_tag_loss(
            outputs["phrase_tag_logits"], tags, model.tag_loss_reduction,
            target_tokens(features["targets"]))
        result["total"] = (result["nmt"]
                           + model.hparams.mgsa_tag_loss_weight * result["phrase_tag"])
        return result
