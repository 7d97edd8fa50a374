"""Parse heads (thesis 4.1-4.2), the common part of DepParse and DiagonalParse."""

from typing import Optional

from syntax_t2t.hparams import HParamsError
from syntax_t2t.models.contract import (HEAD_SUPERVISION, SupervisedHead,
                                        check_parse_loss_hparams)
from syntax_t2t.models.transformer import Transformer


class ParseHeadTransformer(Transformer):
    """Transformer with one encoder head trained to attend to each token's head.

    The source is `<ROOT>`-prefixed inside the model (position 0 = ROOT,
    token i at position i), so a head value is directly a position. Head
    `parse_head` of encoder layer `parse_layer` is read as a head-selection
    parser: row i of its attention is the distribution of token i's head.
    Its criterion (`criteria/head_supervision.py`) adds `parse_loss_weight`
    times the cross-entropy of those rows against the gold heads (rows of
    ROOT, `<EOS>` and padding excluded), in the form `parse_loss` selects.
    The head's logits are returned as `"parse_logits"` at decoding time too,
    so the model parses without gold trees. Subclasses name the gold
    (`head_gold`, one of `contract.GOLD_KINDS`).
    """

    prefix_root = True
    criterion = HEAD_SUPERVISION
    #: What the head is trained to find (`contract.GOLD_KINDS`).
    head_gold: str = ""

    def check_hparams(self) -> None:
        super().check_hparams()
        hp = self.hparams
        self.check_encoder_position("parse_layer", hp.parse_layer, "parse_head", [hp.parse_head])
        if hp.parse_loss_weight < 0:
            raise HParamsError(f"parse_loss_weight={hp.parse_loss_weight} must be >= 0")
        check_parse_loss_hparams(hp)

    def parse_head(self, layer_index: int) -> Optional[int]:
        return self.hparams.parse_head if layer_index == self.hparams.parse_layer else None

    def supervised_head(self) -> SupervisedHead:
        """The parse head's `"parse_logits"` against `head_gold`, as the hparams say."""
        hp = self.hparams
        return SupervisedHead("parse_logits", self.head_gold, hp.parse_loss_weight,
                              hp.parse_loss, hp.parse_label_smoothing)
