"""SISA (Strubell et al. 2018), the Pascal paper's syntactically-informed self-attention baseline.

In encoder layer `sisa_layer` (default 0), head `sisa_head` computes its
attention logits with a deep bi-affine scorer (a feed-forward projection of
each token as dependent and as head, then `[dep; 1]^T U head`, see
`layers/biaffine.py`) instead of the query-key dot product; its values are
projected like any other head's. Row t of that head's attention is read as
the distribution of token t's parent and trained with cross-entropy against
the gold parent, weighted by `sisa_loss_weight`; the model maximises the
joint likelihood of translations and parents.

There is no `<ROOT>` token (as in the seed): the parent of a token is the
*first subword* of its parent word, and a token of a word attached to ROOT
points at the first subword of its own word (its word is its own parent).
Rows of `<EOS>` and padding are not supervised, padded keys are masked, and
the loss is the negative log-softmax of each row at the gold parent. The
head's logits are returned as `"sisa_logits"` [B, S, S]: they are not
`<ROOT>`-prefixed parse logits. Decoding needs no tree.
"""

from typing import Any, Mapping, Optional

from keras import ops

from syntax_t2t import registry
from syntax_t2t.hparams import HParams, HParamsError
from syntax_t2t.layers.attention_terms import AttentionTerm, BiaffineHead
from syntax_t2t.models import word_positions
from syntax_t2t.models.contract import (HEAD_SUPERVISION, PARENTS, SupervisedHead, Tensor,
                                        check_parse_loss_hparams)
from syntax_t2t.models.transformer import Transformer


def parent_targets(heads: Tensor, words: Optional[Tensor] = None) -> Tensor:
    """The 0-based position of each token's parent, as SISA is trained on it.

    Args:
        heads: int [B, S], 1-based head positions (the first subword of the
            head word), 0 = ROOT, -1 = no tree node (`<EOS>`, padding).
        words: int [B, S], the 1-based word of each token (0 = none), or None
            when every token is a word of its own.

    Returns:
        int32 [B, S]: `head - 1`; for a token attached to ROOT the first
        position of its own word; -1 where there is no tree node.
    """
    heads = ops.cast(heads, "int32")
    own = (ops.arange(ops.shape(heads)[1], dtype="int32")[None, :] if words is None
           else word_positions.first_positions(words))
    own = ops.broadcast_to(own, ops.shape(heads))
    return ops.where(heads > 0, heads - 1, ops.where(heads == 0, own, -1))


@registry.register_model("sisa")
class Sisa(Transformer):
    """Transformer with one bi-affine encoder head supervised to attend to parents.

    Trees are needed for training only (`src_heads`; with
    `source_word_positions`, also `src_word_position`).
    """

    train_features = frozenset({"inputs", "targets", "src_heads"})
    decode_features = frozenset({"inputs"})
    head_logits_key = "sisa_logits"
    criterion = HEAD_SUPERVISION
    #: Reads `src_word_position` with `source_word_positions` (bin/train warns when off).
    reads_word_positions = True

    def __init__(self, hparams: HParams, vocab_sizes: Mapping[str, int], **kwargs: Any):
        super().__init__(hparams, vocab_sizes, **kwargs)
        if self.hparams.source_word_positions:
            self.train_features = type(self).train_features | {word_positions.WORD_POSITION}

    def check_hparams(self) -> None:
        super().check_hparams()
        hp = self.hparams
        self.check_encoder_position("sisa_layer", hp.sisa_layer, "sisa_head", [hp.sisa_head])
        if hp.sisa_size < 0:
            raise HParamsError(f"sisa_size={hp.sisa_size} must be >= 0 (0 = the head size)")
        if hp.sisa_loss_weight < 0:
            raise HParamsError(f"sisa_loss_weight={hp.sisa_loss_weight} must be >= 0")
        check_parse_loss_hparams(hp)

    def encoder_attention_terms(self, layer_index: int) -> list[AttentionTerm]:
        terms = super().encoder_attention_terms(layer_index)
        hp = self.hparams
        if layer_index == hp.sisa_layer:
            terms.append(BiaffineHead(hp.sisa_head, size=hp.sisa_size or None))
        return terms

    def parse_head(self, layer_index: int) -> Optional[int]:
        hp = self.hparams
        return hp.sisa_head if layer_index == hp.sisa_layer else super().parse_head(layer_index)

    def supervised_head(self) -> SupervisedHead:
        """The bi-affine head's `"sisa_logits"` against the parents (`parent_targets`).

        The parent loss, in the `parse_loss` form, weighs `sisa_loss_weight`.
        """
        hp = self.hparams
        return SupervisedHead(self.head_logits_key, PARENTS, hp.sisa_loss_weight,
                              hp.parse_loss, hp.parse_label_smoothing)
