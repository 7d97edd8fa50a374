"""Tree2Seq's objective (Eriguchi et al. 2016): BlackOut or the full softmax."""

from typing import Mapping

from keras import ops

from syntax_t2t.criteria.translation import PAD_ID, Translation
from syntax_t2t.models.contract import Features, Tensor


class Tree2SeqLoss(Translation):
    """`"nmt"`, the mean token loss, and `"total"`, the objective (models/tree2seq.py).

    The token loss is BlackOut's where the outputs hold `"softmax_inputs"`
    (training with `softmax=blackout`: the model's output layer samples it),
    otherwise the label-smoothed cross-entropy of the full softmax. `"nmt"`
    is its mean per target token; `"total"` its mean per sentence
    (`loss_normalization="sentence"`, the scale of the paper's SGD) or per
    token.
    """

    def translation_loss(self, features: Features, outputs: Mapping[str, Tensor]) -> Tensor:
        if "softmax_inputs" in outputs:
            return self.model.output_layer.loss(outputs["softmax_inputs"], features["targets"])
        return super().translation_loss(features, outputs)

    def __call__(self, features: Features, outputs: Mapping[str, Tensor]) -> dict[str, Tensor]:
        nmt = self.translation_loss(features, outputs)
        if self.model.hparams.loss_normalization == "token":
            return {"nmt": nmt, "total": nmt}
        is_token = ops.not_equal(ops.cast(features["targets"], "int32"), PAD_ID)
        tokens = ops.sum(ops.cast(is_token, "float32"))
        sentences = ops.sum(ops.cast(ops.any(is_token, axis=1), "float32"))
        return {"nmt": nmt, "total": nmt * tokens / ops.maximum(sentences, 1.0)}
