"""DiagonalParse (thesis 4.2): a self-attention head trained to find the previous token."""

from syntax_t2t import registry
from syntax_t2t.models.contract import PREVIOUS_TOKEN
from syntax_t2t.models.parse_head import ParseHeadTransformer


@registry.register_model("diagonal_parse")
class DiagonalParse(ParseHeadTransformer):
    """Joint translation and "diagonal parsing": each token's head is the previous token.

    The control experiment for DepParse: token i attends to position i - 1
    (token 1 to ROOT, thesis Table 5.1), so no trees are needed at all.
    """

    train_features = frozenset({"inputs", "targets"})
    decode_features = frozenset({"inputs"})
    head_gold = PREVIOUS_TOKEN
