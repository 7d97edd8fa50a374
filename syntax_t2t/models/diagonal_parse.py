"""DiagonalParse (thesis 4.2): a self-attention head trained to find the previous token."""

from keras import ops

from syntax_t2t import registry
from syntax_t2t.models.losses import Tensor
from syntax_t2t.models.parse_head import ParseHeadTransformer
from syntax_t2t.models.transformer import EOS_ID, PAD_ID, Features


@registry.register_model("diagonal_parse")
class DiagonalParse(ParseHeadTransformer):
    """Joint translation and "diagonal parsing": each token's head is the previous token.

    The control experiment for DepParse: token i attends to position i - 1
    (token 1 to ROOT, thesis Table 5.1), so no trees are needed at all.
    """

    train_features = frozenset({"inputs", "targets"})
    decode_features = frozenset({"inputs"})

    def gold_head_positions(self, features: Features, source_ids: Tensor) -> Tensor:
        # Position p >= 1 holds inputs[p - 1]; its head is position p - 1.
        words = source_ids[:, 1:]
        is_word = ops.logical_and(ops.not_equal(words, PAD_ID), ops.not_equal(words, EOS_ID))
        previous = ops.arange(ops.shape(words)[1], dtype="int32")[None, :]
        heads = ops.where(is_word, previous, -1)
        return ops.pad(heads, [[0, 0], [1, 0]], constant_values=-1)
