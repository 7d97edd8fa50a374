"""DepParse (thesis 4.1): a self-attention head trained as a dependency parser."""

from syntax_t2t import registry
from syntax_t2t.models.contract import DEPENDENCY_HEADS
from syntax_t2t.models.parse_head import ParseHeadTransformer


@registry.register_model("dep_parse")
class DepParse(ParseHeadTransformer):
    """Joint translation and dependency parsing from one encoder head.

    The gold head of token i (position i of the `<ROOT>`-prefixed source) is
    `src_heads[i - 1]`, already a position (0 = ROOT). Trees are needed for
    training only: decoding reads `inputs` alone.
    """

    train_features = frozenset({"inputs", "targets", "src_heads"})
    decode_features = frozenset({"inputs"})
    head_gold = DEPENDENCY_HEADS
