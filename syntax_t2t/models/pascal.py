"""Pascal (Bugliarello and Okazaki 2020): parent-scaled self-attention heads.

In encoder layer `pascal_layer` (default 0, the first: Table 7a), the heads
0 .. `pascal_heads` - 1 multiply their scaled scores by the density of
N(j | p_t, `pascal_variance`) around the middle position p_t of token t's
parent word, then take the softmax (seed eq. 4-6). The model has no
weights beyond the Transformer's. Parent ignoring (`parent_ignoring` = q)
sets each row of those densities to 1 with probability q in training.
`pascal_weighting="parent_only"` replaces the density by 1 on the subwords
of the parent word and 0 elsewhere: the seed's Table 7b "parent-only" row
(`layers/parent_scaling.py`; runs saved before the option read "gaussian").

Parents come from `src_heads` on the device (`layers/parent_scaling.py`); on
subword problems set `source_word_positions=true` so that the middles are
those of the subwords of each parent word. The `<EOS>` position is its own
parent. The seed's settings per corpus are the hparams sets of
`hparams/pascal.py`.
"""

from typing import Any, Mapping

from keras import ops

from syntax_t2t import registry
from syntax_t2t.hparams import HParams, HParamsError
from syntax_t2t.layers import parent_scaling
from syntax_t2t.layers.attention_terms import AttentionTerm, ParentScaledHeads
from syntax_t2t.models import word_positions
from syntax_t2t.models.contract import Tensor
from syntax_t2t.models.transformer import Features, Transformer


@registry.register_model("pascal")
class Pascal(Transformer):
    """Transformer whose encoder has parent-scaled self-attention heads.

    Trees are needed for training and decoding (`src_heads`; with
    `source_word_positions`, also `src_word_position`).
    """

    train_features = frozenset({"inputs", "targets", "src_heads"})
    decode_features = frozenset({"inputs", "src_heads"})
    #: Reads `src_word_position` with `source_word_positions` (bin/train warns when off).
    reads_word_positions = True

    def __init__(self, hparams: HParams, vocab_sizes: Mapping[str, int], **kwargs: Any):
        super().__init__(hparams, vocab_sizes, **kwargs)
        word_positions.with_word_positions(self)

    def check_hparams(self) -> None:
        super().check_hparams()
        hp = self.hparams
        if not 1 <= hp.pascal_heads <= hp.num_heads:
            raise HParamsError(f"pascal_heads={hp.pascal_heads}: a layer has 1 .. {hp.num_heads} "
                               f"heads to scale")
        self.check_encoder_position("pascal_layer", hp.pascal_layer, "pascal_heads", [])
        if not hp.pascal_variance > 0:
            raise HParamsError(f"pascal_variance={hp.pascal_variance} must be positive")
        if self.parent_weighting not in parent_scaling.WEIGHTINGS:
            raise HParamsError(f"pascal_weighting={self.parent_weighting!r}: expected one of "
                               f"{', '.join(parent_scaling.WEIGHTINGS)}")
        if not 0.0 <= hp.parent_ignoring <= 1.0:
            raise HParamsError(f"parent_ignoring={hp.parent_ignoring} is a probability in [0, 1]")

    def encoder_attention_terms(self, layer_index: int) -> list[AttentionTerm]:
        terms = super().encoder_attention_terms(layer_index)
        hp = self.hparams
        if layer_index == hp.pascal_layer:
            terms.append(ParentScaledHeads(range(hp.pascal_heads), variance=hp.pascal_variance,
                                           weighting=self.parent_weighting,
                                           ignoring=hp.parent_ignoring))
        return terms

    @property
    def parent_weighting(self) -> str:
        return self.hparams.get("pascal_weighting", "gaussian")

    def source_parents(self, features: Features, source_ids: Tensor) -> Tensor:
        """Each source token's parent word: its middle position, float32 [B, S], or
        for "parent_only" its first and last position, float32 [B, S, 2]."""
        heads = self.source_heads(features, source_ids)
        words = word_positions.word_positions(self, features, ops.shape(source_ids)[1])
        if self.parent_weighting == "parent_only":
            return parent_scaling.parent_spans(heads, words)
        return parent_scaling.parent_positions(heads, words)
