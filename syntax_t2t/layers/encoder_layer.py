"""One encoder block of T2T's Transformer: self-attention and feed-forward."""

from typing import Mapping, Optional, Sequence

import keras

from syntax_t2t.backend import Tensor

from syntax_t2t.layers.attention import MultiHeadAttention
from syntax_t2t.layers.feed_forward import FeedForward


class TransformerEncoderLayer(keras.layers.Layer):
    """Pre-norm encoder block with dropout-residual post-processing (T2T "n" / "da").

    `x = x + dropout(self_attention(norm(x)))`, then
    `x = x + dropout(feed_forward(norm(x)))`. The self-attention takes every
    syntax option of `MultiHeadAttention` (label biases, specialised heads,
    a parse head, parent-scaled heads, a bi-affine head).

    Args:
        hidden_size: D.
        filter_size: width of the feed-forward ReLU layer.
        num_heads: H; D must be divisible by H.
        attention_dropout: dropout on attention probabilities.
        relu_dropout: dropout inside the feed-forward block.
        residual_dropout: dropout on each sublayer output before the residual
            sum (T2T's layer_prepostprocess_dropout).
        label_vocab_sizes: see `MultiHeadAttention`.
        value_bias_labels: see `MultiHeadAttention`.
        spec_heads: see `MultiHeadAttention`.
        parse_head: see `MultiHeadAttention`.
        parent_scaled_heads: see `MultiHeadAttention` (Pascal).
        parent_variance: see `MultiHeadAttention`.
        parent_weighting: see `MultiHeadAttention`.
        parent_ignoring: see `MultiHeadAttention`.
        biaffine_head: see `MultiHeadAttention` (SISA).
        biaffine_size: see `MultiHeadAttention`.
        layer_norm_epsilon: T2T uses 1e-6.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, hidden_size: int, filter_size: int, num_heads: int,
                 attention_dropout: float = 0.0, relu_dropout: float = 0.0,
                 residual_dropout: float = 0.0,
                 label_vocab_sizes: Optional[Mapping[str, int]] = None,
                 value_bias_labels: Sequence[str] = (), spec_heads: Sequence[int] = (),
                 parse_head: Optional[int] = None, parent_scaled_heads: Sequence[int] = (),
                 parent_variance: float = 1.0, parent_weighting: str = "gaussian",
                 parent_ignoring: float = 0.0, biaffine_head: Optional[int] = None,
                 biaffine_size: Optional[int] = None, layer_norm_epsilon: float = 1e-6, **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
        self.hidden_size = int(hidden_size)
        self.filter_size = int(filter_size)
        self.num_heads = int(num_heads)
        self.attention_dropout = float(attention_dropout)
        self.relu_dropout = float(relu_dropout)
        self.residual_dropout = float(residual_dropout)
        self.label_vocab_sizes = dict(label_vocab_sizes or {})
        self.value_bias_labels = tuple(value_bias_labels)
        self.spec_heads = tuple(spec_heads)
        self.parse_head = parse_head
        self.parent_scaled_heads = tuple(parent_scaled_heads)
        self.parent_variance = float(parent_variance)
        self.parent_weighting = str(parent_weighting)
        self.parent_ignoring = float(parent_ignoring)
        self.biaffine_head = biaffine_head
        self.biaffine_size = biaffine_size
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        policy = self.dtype_policy
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=policy, name="attention_norm")
        self.self_attention = MultiHeadAttention(
            num_heads, hidden_size // num_heads, dropout=attention_dropout,
            label_vocab_sizes=self.label_vocab_sizes, value_bias_labels=self.value_bias_labels,
            spec_heads=self.spec_heads, parse_head=parse_head,
            parent_scaled_heads=self.parent_scaled_heads, parent_variance=self.parent_variance,
            parent_weighting=self.parent_weighting, parent_ignoring=self.parent_ignoring,
            biaffine_head=biaffine_head,
            biaffine_size=biaffine_size, dtype=policy, name="self_attention")
        self.feed_forward_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=policy, name="feed_forward_norm")
        self.feed_forward = FeedForward(hidden_size, filter_size, relu_dropout, dtype=policy,
                                        name="feed_forward")
        self.residual_dropout_layer = keras.layers.Dropout(residual_dropout, dtype=policy)

    def build(self, inputs_shape, spec_inputs_shape=None):
        """Builds the block for inputs [B, S, D] (and spec inputs [B, S, D_spec])."""
        self.attention_norm.build(inputs_shape)
        self.self_attention.build(inputs_shape, spec_inputs_shape=spec_inputs_shape)
        self.feed_forward_norm.build(inputs_shape)
        self.feed_forward.build(inputs_shape)
        self.built = True

    def call(self, inputs: Tensor, *, attention_mask: Optional[Tensor] = None,
             labels: Optional[Mapping[str, Tensor]] = None, spec_inputs: Optional[Tensor] = None,
             parents: Optional[Tensor] = None, return_probs: bool = False,
             training: bool = False) -> tuple:
        """Runs the block.

        Args:
            inputs: [B, S, D].
            attention_mask: bool broadcastable to [B, S, S] (padding).
            labels: label ids for the self-attention's label biases.
            spec_inputs: [B, S, D_spec] for specialised heads.
            parents: float [B, S] parent positions (or [B, S, 2] parent
                spans) for parent-scaled heads.
            return_probs: return the self-attention probabilities.
            training: applies dropout (and parent ignoring).

        Returns:
            `(outputs [B, S, D], details)` with the self-attention's details
            (`"probs"`, `"head_logits"`).
        """
        attended, details = self.self_attention(
            self.attention_norm(inputs), attention_mask=attention_mask, labels=labels,
            spec_inputs=spec_inputs, parents=parents, return_probs=return_probs,
            training=training)
        x = inputs + self.residual_dropout_layer(attended, training=training)
        transformed = self.feed_forward(self.feed_forward_norm(x), training=training)
        return x + self.residual_dropout_layer(transformed, training=training), details

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size, filter_size=self.filter_size,
            num_heads=self.num_heads, attention_dropout=self.attention_dropout,
            relu_dropout=self.relu_dropout, residual_dropout=self.residual_dropout,
            label_vocab_sizes=dict(self.label_vocab_sizes),
            value_bias_labels=list(self.value_bias_labels),
            spec_heads=list(self.spec_heads), parse_head=self.parse_head,
            parent_scaled_heads=list(self.parent_scaled_heads),
            parent_variance=self.parent_variance, parent_weighting=self.parent_weighting,
            parent_ignoring=self.parent_ignoring,
            biaffine_head=self.biaffine_head, biaffine_size=self.biaffine_size,
            layer_norm_epsilon=self.layer_norm_epsilon)
        return config
