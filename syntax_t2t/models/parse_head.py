"""Parse heads (thesis 4.1-4.2), the common part of DepParse and DiagonalParse."""

from typing import Mapping, Optional

from keras import ops

from syntax_t2t.hparams import HParams, HParamsError
from syntax_t2t.models import losses
from syntax_t2t.models.losses import Tensor
from syntax_t2t.models.transformer import Features, Transformer


class SupervisedHeadLosses:
    """The loss and diagnostics of a Transformer with one supervised attention head.

    The head's scores are `outputs[self.head_logits_key]` and the gold is
    `self.gold_head_positions(features, source_ids)`; subclasses say how
    much the head's loss weighs (`parse_loss_weight`). Used by the parse
    heads below and by SISA's bi-affine head.
    """

    def parse_loss_weight(self) -> float:
        """The weight of the head's loss in the total."""
        raise NotImplementedError

    def compute_losses(self, features: Features, outputs: Mapping[str, Tensor]) -> dict:
        """`"nmt"`, `"parse"` and `"total"` = nmt + parse_loss_weight * parse."""
        result = super().compute_losses(features, outputs)
        gold = self.gold_head_positions(features, self.source_ids(features))
        parse = losses.parse_loss(outputs[self.head_logits_key], gold, self.hparams.parse_loss,
                                  self.hparams.parse_label_smoothing)
        result["parse"] = parse
        weight = ops.cast(self.parse_loss_weight(), "float32")
        result["total"] = result["nmt"] + weight * parse
        return result

    def training_diagnostics(self, features: Features, outputs: Mapping[str, Tensor],
                             losses_: Mapping[str, Tensor]) -> dict:
        """Scalars logged beside the losses (training log and TensorBoard).

        `"parse_share"`: the weighted parse loss's share of the total loss;
        `"parse_entropy"`: the mean entropy (nats) of the parse head's rows,
        to see whether the head is still near uniform attention.
        """
        gold = self.gold_head_positions(features, self.source_ids(features))
        weighted = ops.cast(self.parse_loss_weight(), "float32") * losses_["parse"]
        return {"parse_share": weighted / ops.maximum(losses_["total"], 1e-9),
                "parse_entropy": losses.attention_entropy(outputs[self.head_logits_key], gold)}


class ParseHeadTransformer(SupervisedHeadLosses, Transformer):
    """Transformer with one encoder head trained to attend to each token's head.

    The source is `<ROOT>`-prefixed inside the model (position 0 = ROOT,
    token i at position i), so a head value is directly a position. Head
    `parse_head` of encoder layer `parse_layer` is read as a head-selection
    parser: row i of its attention is the distribution of token i's head.
    Training adds `parse_loss_weight` times the cross-entropy of those rows
    against the gold heads (rows of ROOT, `<EOS>` and padding excluded), in
    the form `parse_loss` selects (`losses.parse_loss`). The
    head's logits are returned as `"parse_logits"` at decoding time too, so
    the model parses without gold trees. Subclasses define the gold heads.
    """

    prefix_root = True

    def check_hparams(self) -> None:
        super().check_hparams()
        hp = self.hparams
        self.check_encoder_position("parse_layer", hp.parse_layer, "parse_head", [hp.parse_head])
        if hp.parse_loss_weight < 0:
            raise HParamsError(f"parse_loss_weight={hp.parse_loss_weight} must be >= 0")
        check_parse_loss_hparams(hp)

    def parse_loss_weight(self) -> float:
        return self.hparams.parse_loss_weight

    def parse_head(self, layer_index: int) -> Optional[int]:
        return self.hparams.parse_head if layer_index == self.hparams.parse_layer else None

    def gold_head_positions(self, features: Features, source_ids: Tensor) -> Tensor:
        """The position of each position's gold head, -1 where there is none.

        Args:
            features: the batch.
            source_ids: int32 [B, S + 1], the `<ROOT>`-prefixed source.

        Returns:
            int32 [B, S + 1]; -1 for ROOT (position 0), `<EOS>` and padding.
        """
        raise NotImplementedError


def check_parse_loss_hparams(hp: HParams) -> None:
    """Raises `HParamsError` for an unknown `parse_loss` or a smoothing outside [0, 1)."""
    if hp.parse_loss not in losses.PARSE_LOSSES:
        raise HParamsError(f"parse_loss={hp.parse_loss!r}: expected one of "
                           f"{', '.join(losses.PARSE_LOSSES)}")
    smoothing = hp.parse_label_smoothing
    if smoothing is not None and not 0.0 <= smoothing < 1.0:
        raise HParamsError(f"parse_label_smoothing={smoothing} must be in [0, 1)")
