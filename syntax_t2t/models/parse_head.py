"""Parse heads (thesis 4.1-4.2), the common part of DepParse and DiagonalParse."""

import tensorflow as tf

from syntax_t2t.hparams import HParamsError
from syntax_t2t.models import losses
from syntax_t2t.models.transformer import Transformer


class ParseHeadTransformer(Transformer):
    """Transformer with one encoder head trained to attend to each token's head.

    The source is `<ROOT>`-prefixed inside the model (position 0 = ROOT,
    token i at position i), so a head value is directly a position. Head
    `parse_head` of encoder layer `parse_layer` is read as a head-selection
    parser: row i of its attention is the distribution of token i's head.
    Training adds `parse_loss_weight` times the cross-entropy of those rows
    against the gold heads (rows of ROOT, `<EOS>` and padding excluded). The
    head's logits are returned as `"parse_logits"` at decoding time too, so
    the model parses without gold trees. Subclasses define the gold heads.
    """

    prefix_root = True

    def check_hparams(self):
        super().check_hparams()
        hp = self.hparams
        self.check_encoder_position("parse_layer", hp.parse_layer, "parse_head", [hp.parse_head])
        if hp.parse_loss_weight < 0:
            raise HParamsError(f"parse_loss_weight={hp.parse_loss_weight} must be >= 0")

    def parse_head(self, layer_index):
        return self.hparams.parse_head if layer_index == self.hparams.parse_layer else None

    def gold_head_positions(self, features, source_ids):
        """The position of each position's gold head, -1 where there is none.

        Args:
            features: the batch.
            source_ids: int32 [B, S + 1], the `<ROOT>`-prefixed source.

        Returns:
            int32 [B, S + 1]; -1 for ROOT (position 0), `<EOS>` and padding.
        """
        raise NotImplementedError

    def compute_losses(self, features, outputs):
        """`"nmt"`, `"parse"` and `"total"` = nmt + parse_loss_weight * parse."""
        result = super().compute_losses(features, outputs)
        gold = self.gold_head_positions(features, self.source_ids(features))
        parse = losses.head_selection_cross_entropy(outputs["parse_logits"], gold)
        result["parse"] = parse
        weight = tf.cast(self.hparams.parse_loss_weight, tf.float32)
        result["total"] = result["nmt"] + weight * parse
        return result
