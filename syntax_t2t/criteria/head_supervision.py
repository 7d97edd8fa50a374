"""Head supervision (thesis 4.1-4.2, SISA): an encoder attention head trained as a head selector.

fairseq's `label_smoothed_cross_entropy_with_alignment` supervises an
attention with gold alignments beside the translation loss; here the gold
is each position's head (`head_gold.py`), the head's rows are read as
Dozat and Manning's head-selection distributions, and the total is
`nmt + weight * parse` (`models/contract.SupervisedHead`: the weight, the
`parse_loss` form and its smoothing).
"""

import math
from typing import Any, Mapping, Optional

from keras import ops

from syntax_t2t.criteria import head_gold
from syntax_t2t.criteria.translation import Translation
from syntax_t2t.models.contract import PARSE_LOSSES, Features, SupervisedHead, Tensor

# Attention logits at or below half of this are masked keys (layers/attention.py).
MASKED = -1e9
#: The default `parse_label_smoothing` of each form (`None` in the hparams).
PARSE_LABEL_SMOOTHING = {"logits": 0.0, "attention": 0.1}


def head_selection_cross_entropy(logits: Tensor, gold_heads: Tensor,
                                 label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy of attention rows against gold head positions (thesis 4.1).

    Row i of `logits` is the parse head's pre-softmax attention of position i
    over all positions; its softmax is read as the distribution of i's head
    (Dozat and Manning's head selection). With `label_smoothing` eps the
    gold column gets `1 - eps` and each other column `eps / (S - 1)`, minus
    the soft targets' entropy, as T2T's `smoothing_cross_entropy` does with
    the n unmasked columns as its vocabulary.

    Args:
        logits: float [B, S, S], masked where keys are padding.
        gold_heads: int [B, S], the position of each position's head, or -1
            for rows without one (the `<ROOT>` position, `<EOS>`, padding).
        label_smoothing: eps in [0, 1).

    Returns:
        float32 scalar: the mean over rows with a gold head (0 if none).
    """
    gold_heads = ops.cast(gold_heads, "int32")
    weights = ops.cast(gold_heads >= 0, "float32")
    logits = ops.cast(logits, "float32")
    labels = ops.maximum(gold_heads, 0)
    if label_smoothing:
        # Smoothing spreads over the columns that can be a head: masked
        # (padding) keys are no candidates.
        valid = ops.cast(logits > MASKED / 2, "float32")
        columns = ops.sum(valid, axis=-1)
        log_probs = ops.log_softmax(logits, axis=-1)
        confidence = 1.0 - label_smoothing
        low = label_smoothing / ops.maximum(columns - 1.0, 1.0)
        gold = ops.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
        cross_entropy = (-(confidence - low) * gold
                         - low * ops.sum(log_probs * valid, axis=-1))
        cross_entropy += (confidence * math.log(confidence)
                          + (columns - 1.0) * low * ops.log(low + 1e-20))
    else:
        # Not `ops.sparse_categorical_crossentropy`: on TensorFlow it undoes a
        # softmax it finds behind its input, which the "attention" form's
        # probabilities are.
        log_probs = ops.log_softmax(logits, axis=-1)
        cross_entropy = -ops.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
    return ops.sum(cross_entropy * weights) / ops.maximum(ops.sum(weights), 1.0)


def parse_loss(logits: Tensor, gold_heads: Tensor, form: str,
               label_smoothing: Optional[float] = None) -> Tensor:
    """The parse head's loss in one of two formulations.

    `"logits"`: cross-entropy of softmax(logits), the head's own attention
    distribution, against the gold heads (Dozat and Manning's head
    selection; the form the thesis's text describes).

    `"attention"`: cross-entropy of softmax(p) where p = softmax(logits) are
    the head's attention *probabilities*, with label smoothing 0.1 by
    default. This is what a public T2T usr_dir matching the thesis's names
    trains: its `parsing()` returns the post-softmax attention weights of the
    parse head as "logits" to T2T's `padded_cross_entropy`. Since p lies in
    [0, 1], softmax(p) is nearly uniform and the gradient is much weaker than
    the `"logits"` form's (about a tenth at uniform attention); padding
    columns (p = 0) take part in that softmax as they did there.

    Args:
        logits: float [B, S, S], the head's masked pre-softmax scores.
        gold_heads: int [B, S], head positions, -1 for rows without one.
        form: one of `PARSE_LOSSES`.
        label_smoothing: eps, or None for the form's default.

    Returns:
        float32 scalar, the mean over rows with a gold head.

    Raises:
        ValueError: an unknown form.
    """
    if form not in PARSE_LOSSES:
        raise ValueError(f"parse_loss={form!r}: expected one of {', '.join(PARSE_LOSSES)}")
    if label_smoothing is None:
        label_smoothing = PARSE_LABEL_SMOOTHING[form]
    if form == "attention":
        logits = ops.softmax(ops.cast(logits, "float32"), axis=-1)
    return head_selection_cross_entropy(logits, gold_heads, label_smoothing)


def attention_entropy(logits: Tensor, gold_heads: Tensor) -> Tensor:
    """Mean entropy (nats) of the head's attention rows that have a gold head.

    Args:
        logits: float [B, S, S], the head's masked pre-softmax scores.
        gold_heads: int [B, S], -1 for rows that are not scored.

    Returns:
        float32 scalar (0 when no row is scored).
    """
    logits = ops.cast(logits, "float32")
    probs = ops.softmax(logits, axis=-1)
    entropy = -ops.sum(probs * ops.log_softmax(logits, axis=-1), axis=-1)
    weights = ops.cast(ops.cast(gold_heads, "int32") >= 0, "float32")
    return ops.sum(entropy * weights) / ops.maximum(ops.sum(weights), 1.0)


class HeadSupervision(Translation):
    """`"nmt"`, `"parse"` and `"total"` = nmt + weight * parse for `model.supervised_head()`.

    Diagnostics: `"parse_share"`, the weighted parse loss's share of the
    total, and `"parse_entropy"`, the mean entropy (nats) of the head's
    scored rows, to see whether the head is still near uniform attention.
    Evaluation counts the head's attachments against the same gold.
    """

    def __init__(self, model: Any):
        super().__init__(model)
        if model.supervised_head() is None:
            raise ValueError(f"model {type(model).__name__} supervises no attention head")

    @property
    def head(self) -> SupervisedHead:
        """The model's supervised head, read from its hparams when the losses are taken."""
        return self.model.supervised_head()

    def gold(self, features: Features) -> Tensor:
        """int32 [B, S'], the gold head position of each row of the head's logits."""
        return head_gold.gold_head_positions(self.model, features)

    def __call__(self, features: Features, outputs: Mapping[str, Tensor]) -> dict[str, Tensor]:
        result = super().__call__(features, outputs)
        head = self.head
        parse = parse_loss(outputs[head.logits_key], self.gold(features), head.form,
                           head.label_smoothing)
        result["parse"] = parse
        weight = ops.cast(head.weight, "float32")
        result["total"] = result["nmt"] + weight * parse
        return result

    def diagnostics(self, features: Features, outputs: Mapping[str, Tensor],
                    losses: Mapping[str, Tensor]) -> dict[str, Tensor]:
        weighted = ops.cast(self.head.weight, "float32") * losses["parse"]
        return {"parse_share": weighted / ops.maximum(losses["total"], 1e-9),
                "parse_entropy": attention_entropy(outputs[self.head.logits_key],
                                                   self.gold(features))}

    def eval_counts(self, features: Features, outputs: Mapping[str, Tensor]) -> dict[str, Tensor]:
        return head_gold.attachment_counts(outputs[self.head.logits_key], self.gold(features))
