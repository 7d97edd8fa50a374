"""The training losses of the models: translation and head selection."""

import math
from typing import Any, Optional

from keras import ops

#: A backend tensor (TensorFlow, JAX) or anything `keras.ops` converts (NumPy arrays).
Tensor = Any

PAD_ID = 0
# Attention logits at or below half of this are masked keys (layers/attention.py).
MASKED = -1e9


def label_smoothed_cross_entropy(logits: Tensor, targets: Tensor,
                                 label_smoothing: float) -> Tensor:
    """T2T's label-smoothed cross-entropy per target token, padding masked.

    The gold token gets probability `1 - eps` and every other token
    `eps / (V - 1)`. As T2T's `smoothing_cross_entropy`, the minimum value
    of the smoothed cross-entropy (the entropy of the soft targets) is
    subtracted, so a perfect model scores 0; this shifts the loss by a
    constant and leaves the gradients unchanged. With `eps = 0` the result
    is the plain negative log-likelihood per token. The soft targets are
    never materialised: the sum over the vocabulary is the gold term plus
    `eps / (V - 1)` times the sum of all log-probabilities.

    Args:
        logits: float [B, T, V].
        targets: int [B, T], 0 = padding.
        label_smoothing: eps in [0, 1).

    Returns:
        float32 scalar: the mean over non-padding target tokens.
    """
    logits = ops.cast(logits, "float32")
    targets = ops.cast(targets, "int32")
    vocab_size = ops.cast(ops.shape(logits)[-1], "float32")
    log_probs = ops.log_softmax(logits, axis=-1)
    confidence = 1.0 - label_smoothing
    low = label_smoothing / (vocab_size - 1.0)
    gold = ops.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]
    cross_entropy = -(confidence - low) * gold - low * ops.sum(log_probs, axis=-1)
    minimum = -(confidence * math.log(confidence)
                + (vocab_size - 1.0) * low * ops.log(low + 1e-20))
    weights = ops.cast(ops.not_equal(targets, PAD_ID), "float32")
    total = ops.sum((cross_entropy - minimum) * weights)
    return total / ops.maximum(ops.sum(weights), 1.0)


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


#: `parse_loss` values: what the parse head's cross-entropy is taken of.
PARSE_LOSSES = ("logits", "attention")
#: The default `parse_label_smoothing` of each form (`None` in the hparams).
PARSE_LABEL_SMOOTHING = {"logits": 0.0, "attention": 0.1}


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
