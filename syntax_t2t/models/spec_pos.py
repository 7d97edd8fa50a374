"""SpecPOS (thesis 3.2): a specialised head guided by POS tags."""

from syntax_t2t import registry
from syntax_t2t.hparams import HParamsError
from syntax_t2t.models.specialized_head import SpecializedHeadTransformer

POS_TAG_SETS = ("upos", "xpos")


@registry.register_model("spec_pos")
class SpecPos(SpecializedHeadTransformer):
    """Specialised heads with queries and keys from POS-tag embeddings.

    The hparam `pos` picks the tag set: "xpos" (default; the PDT
    morphological tags for Czech, as in the thesis) or "upos". The batch
    feature needed is `src_<pos>`: the class attributes show the default,
    an instance's those of its hparams.
    """

    train_features = frozenset({"inputs", "targets", "src_xpos"})
    decode_features = frozenset({"inputs", "src_xpos"})

    @property
    def tag_feature(self) -> str:
        return f"src_{self.hparams.pos}"

    @property
    def tag_vocabulary(self) -> str:
        return self.hparams.pos

    def check_hparams(self) -> None:
        super().check_hparams()
        if self.hparams.pos not in POS_TAG_SETS:
            raise HParamsError(
                f"pos={self.hparams.pos!r}: expected one of {', '.join(POS_TAG_SETS)}")
