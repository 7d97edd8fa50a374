"""The translation criterion: T2T's label-smoothed cross-entropy per target token."""

import math
from typing import Any, Mapping, Optional

from keras import ops

from syntax_t2t.criteria.base import Criterion
from syntax_t2t.models.contract import Features, Tensor

PAD_ID = 0


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


class Translation(Criterion):
    """`"nmt"`, the label-smoothed cross-entropy of `outputs["logits"]`, which is the `"total"`.

    The smoothing is the model's `hparams.label_smoothing`.
    """

    def __init__(self, model: Any, label_smoothing: Optional[float] = None):
        super().__init__(model)
        self._label_smoothing = label_smoothing

    @property
    def label_smoothing(self) -> float:
        """The smoothing given, else the model's `hparams.label_smoothing` (read per call)."""
        if self._label_smoothing is not None:
            return self._label_smoothing
        return self.model.hparams.label_smoothing

    def translation_loss(self, features: Features, outputs: Mapping[str, Tensor]) -> Tensor:
        """The `"nmt"` loss: float32 scalar, the mean per target token."""
        return label_smoothed_cross_entropy(outputs["logits"], features["targets"],
                                            self.label_smoothing)

    def __call__(self, features: Features, outputs: Mapping[str, Tensor]) -> dict[str, Tensor]:
        nmt = self.translation_loss(features, outputs)
        return {"nmt": nmt, "total": nmt}
