"""One decoder block of T2T's Transformer, with a key/value cache for decoding."""

from typing import Any, Mapping, Optional, Sequence

import keras

from syntax_t2t.backend import Tensor

from syntax_t2t.layers.attention import MultiHeadAttention
from syntax_t2t.layers.attention_terms import serialize_term
from syntax_t2t.layers.feed_forward import FeedForward


class TransformerDecoderLayer(keras.layers.Layer):
    """Pre-norm decoder block: causal self-attention, encoder-decoder attention, feed-forward.

    Each sublayer is `x = x + dropout(sublayer(norm(x)))` (T2T "n" / "da").
    For incremental decoding the self-attention keeps its keys and values in
    fixed-size `(keys, values)` caches [B, H, T_max, d] written at the current step, and
    the encoder-decoder attention reads keys and values computed once from
    the encoder output (`memory_cache`), so a step costs O(T_max), not a
    re-run of the prefix.

    Args:
        hidden_size: D.
        filter_size: width of the feed-forward ReLU layer.
        num_heads: H; D must be divisible by H.
        attention_dropout: dropout on attention probabilities.
        relu_dropout: dropout inside the feed-forward block.
        residual_dropout: dropout on each sublayer output before the residual sum.
        self_attention_terms: `AttentionTerm`s of the self-attention (T2T's
            `transformer_relative` gives the decoder relative positions, a
            `LabelBias`); they read `labels` only (see `call`).
        layer_norm_epsilon: T2T uses 1e-6.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, hidden_size: int, filter_size: int, num_heads: int,
                 attention_dropout: float = 0.0, relu_dropout: float = 0.0,
                 residual_dropout: float = 0.0, self_attention_terms: Sequence[Any] = (),
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
        policy, key_dim = self.dtype_policy, hidden_size // num_heads

        def norm(name):
            return keras.layers.LayerNormalization(
                epsilon=self.layer_norm_epsilon, dtype=policy, name=name)

        self.self_attention_norm = norm("self_attention_norm")
        self.self_attention = MultiHeadAttention(
            num_heads, key_dim, dropout=attention_dropout, terms=self_attention_terms,
            dtype=policy, name="self_attention")
        self.cross_attention_norm = norm("cross_attention_norm")
        self.cross_attention = MultiHeadAttention(
            num_heads, key_dim, dropout=attention_dropout, dtype=policy, name="cross_attention")
        self.feed_forward_norm = norm("feed_forward_norm")
        self.feed_forward = FeedForward(hidden_size, filter_size, relu_dropout, dtype=policy,
                                        name="feed_forward")
        self.residual_dropout_layer = keras.layers.Dropout(residual_dropout, dtype=policy)

    def build(self, inputs_shape, memory_shape=None):
        """Builds the block for inputs [B, T, D] and memory [B, S, D_memory]."""
        memory_shape = inputs_shape if memory_shape is None else memory_shape
        for norm in (self.self_attention_norm, self.cross_attention_norm, self.feed_forward_norm):
            norm.build(inputs_shape)
        self.self_attention.build(inputs_shape)
        self.cross_attention.build(inputs_shape, memory_shape)
        self.feed_forward.build(inputs_shape)
        self.built = True

    def memory_cache(self, memory: Tensor) -> tuple:
        """Encoder-decoder keys and values of `memory` [B, S, D]: a pair of [B, H, S, d]."""
        return self.cross_attention.keys_and_values(memory)

    def call(self, inputs: Tensor, memory: Optional[Tensor] = None, *,
             self_attention_mask: Optional[Tensor] = None, memory_mask: Optional[Tensor] = None,
             labels: Optional[Mapping[str, Tensor]] = None,
             self_attention_cache: Optional[tuple] = None,
             cache_update_index: Optional[Tensor] = None, memory_cache: Optional[tuple] = None,
             training: bool = False) -> tuple:
        """Runs the block.

        Args:
            inputs: [B, T, D] decoder states (T = 1 when decoding step by step).
            memory: [B, S, D_memory] encoder output; may be None when
                `memory_cache` is given.
            self_attention_mask: bool broadcastable to [B, T, T_keys]
                (causal, see `masks.causal_mask`).
            memory_mask: bool broadcastable to [B, T, S] (source padding).
            labels: label ids of the self-attention's label biases (its
                terms' `"labels"` input).
            self_attention_cache: `(keys, values)` [B, H, T_max, d], with
                `cache_update_index`, for incremental decoding.
            cache_update_index: int32 scalar, the position of `inputs[:, 0]`.
            memory_cache: `(keys, values)` [B, H, S, d] from `memory_cache`.
            training: applies dropout.

        Returns:
            `(outputs [B, T, D], details)`; details holds
            `"self_attention_cache"` when a cache was given.
        """
        if memory is None and memory_cache is None:
            raise ValueError(f"decoder layer {self.name!r} needs a memory or a memory_cache")
        attended, self_details = self.self_attention(
            self.self_attention_norm(inputs), attention_mask=self_attention_mask,
            term_inputs=None if labels is None else {"labels": labels},
            cache=self_attention_cache, cache_update_index=cache_update_index,
            training=training)
        x = inputs + self.residual_dropout_layer(attended, training=training)
        attended, _ = self.cross_attention(
            self.cross_attention_norm(x), memory if memory_cache is None else None,
            attention_mask=memory_mask, cache=memory_cache, training=training)
        x = x + self.residual_dropout_layer(attended, training=training)
        transformed = self.feed_forward(self.feed_forward_norm(x), training=training)
        outputs = x + self.residual_dropout_layer(transformed, training=training)
        details = {}
        if "cache" in self_details:
            details["self_attention_cache"] = self_details["cache"]
        return outputs, details

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size, filter_size=self.filter_size,
            num_heads=self.num_heads, attention_dropout=self.attention_dropout,
            relu_dropout=self.relu_dropout, residual_dropout=self.residual_dropout,
            self_attention_terms=[serialize_term(term) for term in self.self_attention.terms],
            layer_norm_epsilon=self.layer_norm_epsilon)
        return config
