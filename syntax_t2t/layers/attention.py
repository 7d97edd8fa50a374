"""Multi-head attention: a small core, and the syntax variants as pluggable terms.

The core is scaled dot-product attention as in T2T (Vaswani et al. 2017):
projections without biases, queries scaled by 1/sqrt(d_k), boolean masks for
padding and causality with masked logits pushed to -1e9, the softmax,
attention dropout, the probabilities of every head for analysis, a
(keys, values) cache for incremental decoding (heads first, [B, H, S, d]),
and the output projection.

What each syntax model changes is an `AttentionTerm` in its own file of
`layers/attention_terms/` (their hooks and the order the core calls them in
are documented there): label biases of keys and values (thesis eq. 3.2-3.3,
Shaw et al.), specialised heads (thesis 3.2), a parse head (thesis 4.1-4.2),
parent-scaled heads (Pascal), a bi-affine head (SISA) and phrase heads
(MG-SA). A new head kind is a new term, not a branch here.

Logits, softmax and the returned probabilities are float32 under any Keras
mixed-precision policy; the projections run in the compute dtype. The layer
is written in `keras.ops` and gives the same numbers on every backend.
"""

from typing import Any, Mapping, Optional, Sequence

import keras
import numpy as np
from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.layers import attention_cache
from syntax_t2t.layers.attention_terms.base import (AttentionCall, AttentionTerm,
                                                    deserialize_term, head_indicator,
                                                    serialize_term)

# T2T's masking bias: large enough to zero a probability, small enough for float32.
MASK_BIAS = -1e9


class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention whose syntax variants are `AttentionTerm`s.

    Shapes: B batch, Sq queries, Sk keys, D model width, H heads, d = key_dim.

    Args:
        num_heads: H.
        key_dim: d, the size of each head's queries, keys and values
            (T2T: hidden_size / num_heads).
        dropout: attention dropout, applied to the probabilities in training.
        output_dim: width of the output; by default that of the queries.
        terms: the layer's `AttentionTerm`s (or their configs), each used by
            this layer only; their hooks run in this order.
        kernel_initializer: initializer of the projections, the terms'
            included (T2T: Glorot uniform, "uniform_unit_scaling" with gain 1).
        embedding_initializer: initializer of the embedding tables that
            terms add (label biases).
        **kwargs: `keras.layers.Layer` arguments (name, dtype, ...).

    Raises:
        ValueError: a term names a head that does not exist, or two terms
            claim the queries and keys (or keys and values) of one head.
    """

    def __init__(self, num_heads: int, key_dim: int, dropout: float = 0.0,
                 output_dim: Optional[int] = None, terms: Sequence[Any] = (),
                 kernel_initializer: Any = "glorot_uniform",
                 embedding_initializer: Any = "glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)
        self.dropout = float(dropout)
        self.output_dim = output_dim
        self.terms = tuple(deserialize_term(term) for term in terms)
        self._check_terms()
        # Each unseeded initializer and random layer draws its seed here, in
        # this order: the same seed gives the same weights as before terms
        # existed (when the label tables' initializer was the layer's own).
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.embedding_initializer = keras.initializers.get(embedding_initializer)
        self._dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        owned = []
        for term in self.terms:
            owned.extend(term.attach(self))
        # Tracked here so that their weights and random states are the layer's.
        self._term_state = owned
        supplied = tuple(h for term in self.terms for h in term.query_key_heads)
        self.projected_heads = tuple(h for h in range(self.num_heads) if h not in supplied)
        # Position of each head in concat([projected heads, each term's heads]).
        concatenated = self.projected_heads + supplied
        self._head_order = tuple(concatenated.index(h) for h in range(self.num_heads))
        replaced = tuple(h for term in self.terms for h in term.key_value_heads)
        self._token_heads = ~head_indicator(replaced, self.num_heads)

    @property
    def where(self) -> str:
        """The layer, as its messages name it."""
        return f"attention layer {self.name!r}"

    @property
    def input_names(self) -> tuple:
        """The `term_inputs` entries the layer's terms read."""
        return tuple(dict.fromkeys(name for term in self.terms for name in term.input_names))

    def term(self, kind: type) -> Optional[AttentionTerm]:
        """The layer's first term of class `kind`, or None."""
        return next((term for term in self.terms if isinstance(term, kind)), None)

    def _check_terms(self):
        if self.num_heads < 1 or self.key_dim < 1:
            raise ValueError(f"{self.where}: num_heads and key_dim must be positive, "
                             f"got {self.num_heads} and {self.key_dim}")
        for term in self.terms:
            term.check(self.num_heads, self.where)
        # One source per head for its queries and keys, and one for its keys and values.
        for claim in ("query_key_heads", "key_value_heads"):
            owner = {}
            for term in self.terms:
                for head in getattr(term, claim):
                    if head in owner:
                        raise ValueError(f"{self.where}: head {head} cannot be both a "
                                         f"{owner[head].kind} head and a {term.kind} head")
                    owner[head] = term
        for term in self.terms:
            term.check_terms(self.terms, self.where)

    def build(self, query_shape, memory_shape=None, term_inputs_shape=None):
        """Creates the weights.

        Args:
            query_shape: [B, Sq, D_query].
            memory_shape: [B, Sk, D_memory] for cross-attention; None for
                self-attention.
            term_inputs_shape: `{name: shape}` of the `term_inputs` entries
                that terms project (specialised heads: `"spec_inputs"`).
        """
        query_dim = int(query_shape[-1])
        memory_dim = query_dim if memory_shape is None else int(memory_shape[-1])
        output_dim = self.output_dim or query_dim
        heads, depth = self.num_heads, self.key_dim
        projected = len(self.projected_heads)
        if projected:
            self.query_kernel = self.add_kernel("query_kernel", (query_dim, projected, depth))
            self.key_kernel = self.add_kernel("key_kernel", (memory_dim, projected, depth))
        self.value_kernel = self.add_kernel("value_kernel", (memory_dim, heads, depth))
        self.output_kernel = self.add_kernel("output_kernel", (heads, depth, output_dim))
        for term in self.terms:
            term.build(query_shape, dict(term_inputs_shape or {}))
        self.built = True

    def add_kernel(self, name: str, shape: Sequence[int]) -> keras.Variable:
        """A new projection weight of the layer (terms make theirs here too)."""
        return self.add_weight(name=name, shape=shape, initializer=self.kernel_initializer)

    def project(self, inputs: Tensor, kernel: Tensor) -> Tensor:
        """[B, S, D] x [D, h, d] -> [B, S, h, d] in the compute dtype."""
        return ops.einsum("bsd,dhk->bshk", inputs, ops.cast(kernel, self.compute_dtype))

    def _queries_or_keys(self, which, source, inputs):
        """Queries or keys of all heads, [B, S, H, d]; terms give those of their heads."""
        parts = []
        if self.projected_heads:
            kernel = self.query_kernel if which == "query" else self.key_kernel
            parts.append(self.project(source, kernel))
        for term in self.terms:
            if term.query_key_heads:
                parts.append(term.queries_or_keys(which, source, inputs))
        if len(parts) == 1 and self._head_order == tuple(range(self.num_heads)):
            return parts[0]
        return ops.take(ops.concatenate(parts, axis=2), list(self._head_order), axis=2)

    def keys_and_values(self, source: Tensor,
                        term_inputs: Optional[Mapping[str, Any]] = None) -> tuple:
        """Keys and values of `source`: a cache entry.

        Args:
            source: [B, Sk, D_memory] (the memory, or the query sequence for
                self-attention).
            term_inputs: what the terms that give keys read (specialised
                heads: `"spec_inputs"` [B, Sk, D_spec]).

        Returns:
            `(keys, values)`, each [B, H, Sk, d] in the compute dtype. Pass
            the pair as `cache` without `cache_update_index` to attend to
            precomputed memory (encoder-decoder attention during decoding).
            Heads come first, the layout of the batched matmuls of `call`,
            so a cache is never transposed at a decoding step; and they
            stay two tensors, not one stacked [B, 2, ...]: slicing a stacked
            entry copies both halves (and, in training, its gradient builds
            a zero-padded tensor of the stack's size).
        """
        source = ops.cast(source, self.compute_dtype)
        keys = ops.transpose(self._queries_or_keys("key", source, dict(term_inputs or {})),
                             (0, 2, 1, 3))
        values = ops.einsum("bsd,dhk->bhsk", source,
                            ops.cast(self.value_kernel, self.compute_dtype))
        return keys, values

    def _check_call(self, memory, cache, inputs):
        for term in self.terms:
            if term.self_attention_only and memory is not None:
                raise ValueError(f"{self.where}: {term.kind} heads need self-attention, "
                                 "got a memory")
            if term.whole_sequence_only and (memory is not None or cache is not None):
                raise ValueError(f"{self.where}: {term.kind} heads need full self-attention, "
                                 "without a memory or a cache")
            term.check_inputs(inputs, self.where)

    def call(self, query: Tensor, memory: Optional[Tensor] = None, *,
             attention_mask: Optional[Tensor] = None,
             term_inputs: Optional[Mapping[str, Any]] = None,
             cache: Optional[attention_cache.Cache] = None,
             cache_update_index: Optional[Tensor] = None, return_probs: bool = False,
             training: bool = False) -> tuple:
        """Attends from `query` to `memory` (or to itself).

        Args:
            query: [B, Sq, D_query].
            memory: [B, Sk, D_memory] for cross-attention; None for
                self-attention.
            attention_mask: bool, broadcastable to [B, Sq, Sk]; True where a
                query may attend to a key (see `masks.py`).
            term_inputs: what the terms read, by the names of their
                `input_names` (`"labels"`, `"spec_inputs"`, `"parents"`,
                `"phrase_memory"`, `"phrase_mask"`; see each term); other
                entries are ignored.
            cache: `(keys, values)`, each [B, H, Sk, d]. With
                `cache_update_index` the keys and values of `query` are
                written into them at that position (incremental
                self-attention, Sk = maximum length); without, they replace
                the projection of `memory` (precomputed encoder-decoder
                attention, `keys_and_values`); such a memory may have
                B / g rows, each serving g consecutive query rows (the
                beams of a sentence); `attention_mask` then has B / g rows
                and one query row (a padding mask [B / g, 1, Sk]), and
                the layer has no label biases.
                An `attention_cache.InPlaceCache` is written in place.
            cache_update_index: int32 scalar, position of the first query.
            return_probs: also return the probabilities of every head.
            training: applies attention dropout (and the terms' training
                behaviour, such as parent ignoring).

        Returns:
            `(outputs, details)`: outputs [B, Sq, D_out] in the compute dtype;
            details a dict with `"probs"` float32 [B, H, Sq, Sk] when
            `return_probs`, `"cache"` (the updated cache) when `cache` is
            given, and what the terms report (a parse head:
            `"head_logits"` float32 [B, Sq, Sk]).
        """
        inputs = dict(term_inputs or {})
        self._check_call(memory, cache, inputs)
        query = ops.cast(query, self.compute_dtype)
        details = {}
        queries = self._queries_or_keys("query", query, inputs)
        queries *= ops.cast(self.key_dim ** -0.5, self.compute_dtype)

        query_shape = None  # [B, Sq, H, d] of queries grouped on a memory row
        if cache is not None and cache_update_index is None:
            keys, values = (ops.cast(part, self.compute_dtype) for part in self._cache_pair(cache))
            details["cache"] = cache
            # A memory row may serve several consecutive query rows (a
            # sentence's beams): their queries are stacked on it rather than
            # the memory repeated, which reads it once (each query's products
            # are the same).
            query_shape = ops.shape(queries)
            queries = ops.reshape(queries, (ops.shape(keys)[0], -1, self.num_heads, self.key_dim))
            state = AttentionCall(query, inputs, training, self._token_heads, query_shape)
        else:
            keys, values = self.keys_and_values(query if memory is None else memory, inputs)
            if cache is not None:
                parts = [ops.cast(part, self.compute_dtype) for part in self._cache_pair(cache)]
                cache = (attention_cache.InPlaceCache(*parts)
                         if isinstance(cache, attention_cache.InPlaceCache) else tuple(parts))
                details["cache"] = attention_cache.write(cache, cache_update_index, keys, values)
                keys, values = details["cache"]
            state = AttentionCall(query, inputs, training, self._token_heads)
            for term in self.terms:
                keys, values = term.keys_and_values(state, keys, values)

        logits = ops.cast(ops.einsum("bqhd,bhkd->bhqk", queries, keys), "float32")
        for term in self.terms:
            addition = term.add_to_logits(state, queries, keys)
            if addition is not None:
                logits += addition
        for term in self.terms:
            logits = term.scale_logits(state, logits)
        mask = None if attention_mask is None else ops.cast(attention_mask, "bool")[:, None, :, :]
        for term in self.terms:
            mask = term.mask(state, mask)
        if mask is not None:
            logits += ops.where(mask, 0.0, MASK_BIAS)
        probs = ops.softmax(logits, axis=-1)
        if return_probs:
            details["probs"] = probs if query_shape is None else self._ungroup(probs, query_shape)
        for term in self.terms:
            term.report(state, logits, probs, details)

        weights = self._dropout_layer(ops.cast(probs, self.compute_dtype), training=training)
        context = ops.einsum("bhqk,bhkd->bqhd", weights, values)
        for term in self.terms:
            context = term.add_to_context(state, weights, context)
        if query_shape is not None:
            context = ops.reshape(context, query_shape)
        output_kernel = ops.cast(self.output_kernel, self.compute_dtype)
        outputs = ops.einsum("bqhd,hdo->bqo", context, output_kernel)
        return outputs, details

    def _ungroup(self, tensor, query_shape):
        """[B / g, H, g * Sq, Sk] of grouped queries -> [B, H, Sq, Sk] (`query_shape` [B, Sq, ...])."""
        shape = ops.shape(tensor)
        tensor = ops.reshape(tensor, (shape[0], self.num_heads, -1, query_shape[1], shape[3]))
        return ops.reshape(ops.transpose(tensor, (0, 2, 1, 3, 4)),
                           (query_shape[0], self.num_heads, query_shape[1], shape[3]))

    def _cache_pair(self, cache):
        if not (isinstance(cache, (tuple, list)) and len(cache) == 2):
            raise ValueError(f"{self.where}: a cache is a (keys, values) pair "
                             f"of [B, H, Sk, d] tensors, got {type(cache).__name__}")
        return cache

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            key_dim=self.key_dim,
            dropout=self.dropout,
            output_dim=self.output_dim,
            terms=[serialize_term(term) for term in self.terms],
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            embedding_initializer=keras.initializers.serialize(self.embedding_initializer),
        )
        return config
