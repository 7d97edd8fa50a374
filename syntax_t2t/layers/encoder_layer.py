"""One encoder block of T2T's Transformer: self-attention and feed-forward."""

from typing import Any, Mapping, Optional, Sequence

import keras

from syntax_t2t.backend import Tensor

from syntax_t2t.layers.attention import MultiHeadAttention
from syntax_t2t.layers.attention_terms import serialize_term
from syntax_t2t.layers.feed_forward import FeedForward


class TransformerEncoderLayer(keras.layers.Layer):
    """Pre-norm encoder block with dropout-residual post-processing (T2T "n" / "da").

    `x = x + dropout(self_attention(norm(x)))`, then
    `x = x + dropout(feed_forward(norm(x)))`. The self-attention carries the
    block's syntax: its `attention_terms` (label biases, specialised heads,
    a parse head, parent-scaled heads, a bi-affine head, ...; see
    `layers/attention_terms/`).

    Args:
        hidden_size: D.
        filter_size: width of the feed-forward ReLU layer.
        num_heads: H; D must be divisible by H.
        attention_dropout: dropout on attention probabilities.
        relu_dropout: dropout inside the feed-forward block.
        residual_dropout: dropout on each sublayer output before the residual
            sum (T2T's layer_prepostprocess_dropout).
        attention_terms: the self-attention's `AttentionTerm`s (or their
            configs), used by this block only.
        layer_norm_epsilon: T2T uses 1e-6.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, hidden_size: int, filter_size: int, num_heads: int,
                 attention_dropout: float = 0.0, relu_dropout: float = 0.0,
                 residual_dropout: float = 0.0, attention_terms: Sequence[Any] = (),
                 layer_norm_epsilon: float = 1e-6, **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
        self.hidden_size = int(hidden_size)
        self.filter_size = int(filter_size)
        self.num_heads = int(num_heads)
        self.attention_dropout = float(attention_dropout)
        self.relu_dropout = float(relu_dropout)
        self.residual_dropout = float(residual_dropout)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        policy = self.dtype_policy
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=policy, name="attention_norm")
        self.self_attention = MultiHeadAttention(
            num_heads, hidden_size // num_heads, dropout=attention_dropout,
            terms=attention_terms, dtype=policy, name="self_attention")
        self.feed_forward_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=policy, name="feed_forward_norm")
        self.feed_forward = FeedForward(hidden_size, filter_size, relu_dropout, dtype=policy,
                                        name="feed_forward")
        self.residual_dropout_layer = keras.layers.Dropout(residual_dropout, dtype=policy)

    def build(self, inputs_shape, attention_inputs_shape=None):
        """Builds the block for inputs [B, S, D] (and the shapes of its attention inputs)."""
        self.attention_norm.build(inputs_shape)
        self.self_attention.build(inputs_shape, term_inputs_shape=attention_inputs_shape)
        self.feed_forward_norm.build(inputs_shape)
        self.feed_forward.build(inputs_shape)
        self.built = True

    def call(self, inputs: Tensor, *, attention_mask: Optional[Tensor] = None,
             attention_inputs: Optional[Mapping[str, Any]] = None, return_probs: bool = False,
             training: bool = False) -> tuple:
        """Runs the block.

        Args:
            inputs: [B, S, D].
            attention_mask: bool broadcastable to [B, S, S] (padding).
            attention_inputs: what the self-attention's terms read, by name
                (`MultiHeadAttention.call`'s `term_inputs`: label ids,
                specialised heads' inputs, parent positions, ...).
            return_probs: return the self-attention probabilities.
            training: applies dropout (and the terms' training behaviour).

        Returns:
            `(outputs [B, S, D], details)` with the self-attention's details
            (`"probs"`, `"head_logits"`).
        """
        attended, details = self.self_attention(
            self.attention_norm(inputs), attention_mask=attention_mask,
            term_inputs=attention_inputs, return_probs=return_probs, training=training)
        x = inputs + self.residual_dropout_layer(attended, training=training)
        transformed = self.feed_forward(self.feed_forward_norm(x), training=training)
        return x + self.residual_dropout_layer(transformed, training=training), details

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size, filter_size=self.filter_size,
            num_heads=self.num_heads, attention_dropout=self.attention_dropout,
            relu_dropout=self.relu_dropout, residual_dropout=self.residual_dropout,
            attention_terms=[serialize_term(term) for term in self.self_attention.terms],
            layer_norm_epsilon=self.layer_norm_epsilon)
        return config
