"""Specialised attention heads (thesis 3.2), the common part of SpecPOS and SpecDep."""

from typing import Any, Mapping

from keras import ops

from syntax_t2t.hparams import HParams, HParamsError
from syntax_t2t.layers.attention_terms import AttentionTerm, SpecializedHeads
from syntax_t2t.layers.embedding import TokenEmbedding
from syntax_t2t.models.contract import ROOT_ID, Tensor
from syntax_t2t.models.transformer import (EOS_ID, PAD_ID, Features, Transformer,
                                           fit_length)

TAG_FEATURES = frozenset({"src_deprel", "src_upos", "src_xpos"})


class SpecializedHeadTransformer(Transformer):
    """Transformer with heads whose queries and keys come from tag embeddings.

    In encoder layer `spec_layer` (default 0), the heads `spec_heads`
    (default [0]) project their queries and keys from the embedding of a
    per-token tag sequence instead of the token representation; their values
    still come from the token representation (thesis Figure 3.4). The tag of
    the `<EOS>` position is the reserved `<EOS>` id, so it has its own
    embedding. Subclasses name the batch feature and vocabulary of the tags;
    an instance's `train_features` and `decode_features` include that feature.
    """

    #: Batch key of the tag ids, e.g. "src_deprel".
    tag_feature = None
    #: Key of the tag vocabulary in `vocab_sizes`, e.g. "deprel".
    tag_vocabulary = None

    def __init__(self, hparams: HParams, vocab_sizes: Mapping[str, int], **kwargs: Any):
        super().__init__(hparams, vocab_sizes, **kwargs)
        # The class attributes name the default tag set; keep the other
        # features (of combined models) and swap in the chosen tags.
        self.train_features = type(self).train_features - TAG_FEATURES | {self.tag_feature}
        self.decode_features = type(self).decode_features - TAG_FEATURES | {self.tag_feature}
        self.tag_embedding = TokenEmbedding(
            self.vocab_size(self.tag_vocabulary), self.hparams.hidden_size, name="tag_embedding")
        self.tag_embedding.build((None, None))

    def check_hparams(self) -> None:
        super().check_hparams()
        hp = self.hparams
        if not hp.spec_heads:
            raise HParamsError("spec_heads=[] names no head to specialise")
        if len(set(hp.spec_heads)) != len(hp.spec_heads):
            raise HParamsError(f"spec_heads={hp.spec_heads} repeats a head")
        self.check_encoder_position("spec_layer", hp.spec_layer, "spec_heads", hp.spec_heads)

    def encoder_attention_terms(self, layer_index: int) -> list[AttentionTerm]:
        terms = super().encoder_attention_terms(layer_index)
        if layer_index == self.hparams.spec_layer:
            terms.append(SpecializedHeads(self.hparams.spec_heads))
        return terms

    def spec_inputs(self, features: Features, source_ids: Tensor) -> Tensor:
        """Tag embeddings [B, S', D] aligned with `source_ids`."""
        if self.tag_feature not in features:
            raise KeyError(f"model {type(self).__name__} needs the batch feature "
                           f"{self.tag_feature!r}; the batch has {sorted(features)}")
        length = ops.shape(source_ids)[1] - (1 if self.prefix_root else 0)
        tags = fit_length(features[self.tag_feature], length, PAD_ID)
        if self.prefix_root:
            tags = ops.pad(tags, [[0, 0], [1, 0]], constant_values=ROOT_ID)
        tags = ops.where(ops.equal(source_ids, EOS_ID), EOS_ID, tags)
        return self.tag_embedding(tags)
