"""Keras layers of the Transformer and its syntax-aware variants, one per file.

`attention.py` is the attention core; each syntax variant of attention is a
term in its own file of `attention_terms/`. `tree_labels` and `label_bias`
are the tensor functions behind the label biases; `masks` builds boolean
attention masks.
"""

from syntax_t2t.layers.attention import MultiHeadAttention
from syntax_t2t.layers.decoder_layer import TransformerDecoderLayer
from syntax_t2t.layers.embedding import TokenEmbedding
from syntax_t2t.layers.encoder_layer import TransformerEncoderLayer
from syntax_t2t.layers.feed_forward import FeedForward
from syntax_t2t.layers.position_encoding import SinusoidalPositionEncoding

__all__ = [
    "FeedForward",
    "MultiHeadAttention",
    "SinusoidalPositionEncoding",
    "TokenEmbedding",
    "TransformerDecoderLayer",
    "TransformerEncoderLayer",
]
