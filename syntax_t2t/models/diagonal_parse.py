"""DiagonalParse (thesis 4.2): a self-attention head trained to find the previous token."""

import tensorflow as tf

from syntax_t2t import registry
from syntax_t2t.models.parse_head import ParseHeadTransformer
from syntax_t2t.models.transformer import EOS_ID, PAD_ID


@registry.register_model("diagonal_parse")
class DiagonalParse(ParseHeadTransformer):
    """Joint translation and "diagonal parsing": each token's head is the previous token.

    The control experiment for DepParse: token i attends to position i - 1
    (token 1 to ROOT, thesis Table 5.1), so no trees are needed at all.
    """

    train_features = frozenset({"inputs", "targets"})
    decode_features = frozenset({"inputs"})

    def gold_head_positions(self, features, source_ids):
        # Position p >= 1 holds inputs[p - 1]; its head is position p - 1.
        words = source_ids[:, 1:]
        is_word = tf.not_equal(words, PAD_ID) & tf.not_equal(words, EOS_ID)
        previous = tf.broadcast_to(tf.range(tf.shape(words)[1])[None], tf.shape(words))
        heads = tf.where(is_word, previous, -1)
        return tf.pad(heads, [[0, 0], [1, 0]], constant_values=-1)
