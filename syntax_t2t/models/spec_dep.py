"""SpecDep (thesis 3.2): a specialised head guided by dependency labels."""

from syntax_t2t import registry
from syntax_t2t.models.specialized_head import SpecializedHeadTransformer


@registry.register_model("spec_dep")
class SpecDep(SpecializedHeadTransformer):
    """Specialised heads with queries and keys from dependency-label embeddings.

    The thesis's best encoder enrichment (+0.95 to +1.06 BLEU): each token's
    label (its relation to its head, `src_deprel`) drives where the head looks.
    """

    train_features = frozenset({"inputs", "targets", "src_deprel"})
    decode_features = frozenset({"inputs", "src_deprel"})
    tag_feature = "src_deprel"
    tag_vocabulary = "deprel"
