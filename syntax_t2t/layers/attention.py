"""Multi-head attention with every variant of the thesis, configured per layer and head.

One layer covers all the attention the models need:

* scaled dot-product attention (Vaswani et al. 2017) with boolean masks for
  padding and causality, as in T2T (projections without biases, queries
  scaled by 1/sqrt(d_k), masked logits pushed to -1e9);
* key biases from label embeddings (thesis eq. 3.2-3.3):
  `e_ij = q_i . (k_j + b_ij + t_ij) / sqrt(d_k)` for any set of label kinds
  (relative positions, tree distances, tree traversals), each with a table
  [L, d_k] shared by the heads; optional value biases
  `o_i = sum_j a_ij (v_j + F[label_ij])` (Shaw et al.), see `label_bias.py`;
* specialised heads (thesis 3.2): chosen heads project their queries and
  keys from a second input (POS-tag or dependency-label embeddings) while
  their values come from the token representations like every other head;
* a parse head (thesis 4.1-4.2): the float32 logits of one chosen head are
  returned, so that a model can train them against gold heads;
* parent-scaled heads (Pascal; Bugliarello and Okazaki 2020): chosen heads
  multiply their scaled scores by a normal density around each token's
  dependency parent before the softmax, with parent ignoring in training
  (no weights; see `parent_scaling.py`);
* a bi-affine head (SISA; Strubell et al. 2018): one head's logits come from
  a deep bi-affine scorer of the attended sequence (`biaffine.py`) instead of
  its query-key dot product; its values are projected like any other head's;
* phrase heads (MG-SA; Hao et al. 2019): chosen heads take their keys and
  values from a phrase memory [B, G, P, D] (`phrase_memory.py`) instead of
  the attended tokens: head h attends over the phrases of granularity
  `phrase_granularities[h]`, with its own query, key and value projections
  (seed eq. 4-7). Label biases apply to word heads only;
* the probabilities of every head, for analysis and parse decoding;
* a (keys, values) cache for incremental decoding, heads first ([B, H, S, d]).

Logits, softmax and the returned probabilities are float32 under any Keras
mixed-precision policy; the projections run in the compute dtype. The layer
is written in `keras.ops` and gives the same numbers on every backend.
"""

from typing import Any, Mapping, Optional, Sequence

import keras
import numpy as np
from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.layers import attention_cache, label_bias, parent_scaling
from syntax_t2t.layers.biaffine import BiaffineScorer

# T2T's masking bias: large enough to zero a probability, small enough for float32.
MASK_BIAS = -1e9


class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention with label biases, specialised heads and a parse head.

    Shapes: B batch, Sq queries, Sk keys, D model width, H heads, d = key_dim.

    Args:
        num_heads: H.
        key_dim: d, the size of each head's queries, keys and values
            (T2T: hidden_size / num_heads).
        dropout: attention dropout, applied to the probabilities in training.
        output_dim: width of the output; by default that of the queries.
        label_vocab_sizes: `{name: L}` for each kind of label whose key
            embeddings [L, d] bias the logits; `call` then needs
            `labels[name]`.
        value_bias_labels: the names in `label_vocab_sizes` that also get
            value embeddings [L, d].
        spec_heads: heads whose queries and keys are projected from
            `spec_inputs` instead of the attended sequence.
        parse_head: head whose float32 logits `call` returns as
            `details["head_logits"]`; None for none.
        parent_scaled_heads: heads whose scaled scores are multiplied by the
            density of a normal distribution around each query token's
            parent (Pascal); `call` then needs `parents`. Self-attention only.
        parent_variance: sigma^2 of that normal distribution.
        parent_weighting: "gaussian" (that density, seed eq. 6) or
            "parent_only" (1 on the parent word's subwords, 0 elsewhere:
            the seed's Table 7b); see `parent_scaling.py`.
        parent_ignoring: in training, the probability q that a token's
            row of parent weights is set to 1 (plain attention for that row).
        biaffine_head: head whose logits are the scores of a
            `BiaffineScorer` of the attended sequence (SISA); its queries and
            keys are not projected. Self-attention only. None for none.
        biaffine_size: width of the bi-affine scorer's projections; by
            default `key_dim`.
        phrase_heads: heads whose keys and values are projected from
            `phrase_memory` (MG-SA); `call` then needs `phrase_memory` and
            `phrase_mask`. Self-attention only.
        phrase_granularities: for each of `phrase_heads`, the index g of the
            granularity (the row of `phrase_memory`) it attends over.
        seed: seeds the parent-ignoring draws.
        kernel_initializer: initializer of the projections (T2T: Glorot
            uniform, "uniform_unit_scaling" with gain 1).
        label_initializer: initializer of the label embedding tables.
        **kwargs: `keras.layers.Layer` arguments (name, dtype, ...).
    """

    def __init__(self, num_heads: int, key_dim: int, dropout: float = 0.0,
                 output_dim: Optional[int] = None,
                 label_vocab_sizes: Optional[Mapping[str, int]] = None,
                 value_bias_labels: Sequence[str] = (), spec_heads: Sequence[int] = (),
                 parse_head: Optional[int] = None, parent_scaled_heads: Sequence[int] = (),
                 parent_variance: float = 1.0, parent_weighting: str = "gaussian",
                 parent_ignoring: float = 0.0, biaffine_head: Optional[int] = None,
                 biaffine_size: Optional[int] = None, phrase_heads: Sequence[int] = (),
                 phrase_granularities: Sequence[int] = (), seed: Optional[int] = None,
                 kernel_initializer: Any = "glorot_uniform",
                 label_initializer: Any = "glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)
        self.dropout = float(dropout)
        self.output_dim = output_dim
        self.label_vocab_sizes = {str(k): int(v) for k, v in dict(label_vocab_sizes or {}).items()}
        self.value_bias_labels = tuple(value_bias_labels)
        self.spec_heads = tuple(int(h) for h in spec_heads)
        self.parse_head = None if parse_head is None else int(parse_head)
        self.parent_scaled_heads = tuple(int(h) for h in parent_scaled_heads)
        self.parent_variance = float(parent_variance)
        self.parent_weighting = str(parent_weighting)
        self.parent_ignoring = float(parent_ignoring)
        self.biaffine_head = None if biaffine_head is None else int(biaffine_head)
        self.biaffine_size = None if biaffine_size is None else int(biaffine_size)
        self.phrase_heads = tuple(int(h) for h in phrase_heads)
        self.phrase_granularities = tuple(int(g) for g in phrase_granularities)
        self.seed = seed
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.label_initializer = keras.initializers.get(label_initializer)
        self._check_config()
        self._dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        scored = () if self.biaffine_head is None else (self.biaffine_head,)
        regular = tuple(h for h in range(self.num_heads) if h not in self.spec_heads + scored)
        self._num_regular_heads = len(regular)
        # Position of each head in concat([regular heads, spec heads, bi-affine head]).
        concatenated = regular + self.spec_heads + scored
        self._head_order = tuple(concatenated.index(h) for h in range(self.num_heads))
        self.biaffine = None
        if self.biaffine_head is not None:
            self.biaffine = BiaffineScorer(self.biaffine_size or self.key_dim,
                                           kernel_initializer=self.kernel_initializer,
                                           dtype=self.dtype_policy, name="biaffine")
        self._parent_seed = (keras.random.SeedGenerator(seed)
                             if self.parent_scaled_heads and self.parent_ignoring > 0 else None)

    def _check_config(self):
        where = f"attention layer {self.name!r}"
        if self.num_heads < 1 or self.key_dim < 1:
            raise ValueError(f"{where}: num_heads and key_dim must be positive, "
                             f"got {self.num_heads} and {self.key_dim}")
        single = tuple(h for h in (self.parse_head, self.biaffine_head) if h is not None)
        for head in self.spec_heads + self.parent_scaled_heads + single:
            if not 0 <= head < self.num_heads:
                raise ValueError(f"{where}: head {head} does not exist, "
                                 f"heads are 0 .. {self.num_heads - 1}")
        for name, heads in (("spec_heads", self.spec_heads),
                            ("parent_scaled_heads", self.parent_scaled_heads)):
            if len(set(heads)) != len(heads):
                raise ValueError(f"{where}: {name} {list(heads)} repeats a head")
        if self.biaffine_head is not None and self.biaffine_head in self.spec_heads:
            raise ValueError(f"{where}: head {self.biaffine_head} cannot be both a specialised "
                             f"and the bi-affine head")
        if not self.parent_variance > 0:
            raise ValueError(
                f"{where}: parent_variance must be positive, got {self.parent_variance}")
        if self.parent_weighting not in parent_scaling.WEIGHTINGS:
            raise ValueError(f"{where}: parent_weighting must be one of "
                             f"{', '.join(parent_scaling.WEIGHTINGS)}, got {self.parent_weighting!r}")
        if not 0.0 <= self.parent_ignoring <= 1.0:
            raise ValueError(
                f"{where}: parent_ignoring is a probability, got {self.parent_ignoring}")
        for head in self.phrase_heads:
            if not 0 <= head < self.num_heads:
                raise ValueError(f"{where}: phrase head {head} does not exist, "
                                 f"heads are 0 .. {self.num_heads - 1}")
            if head in self.spec_heads + single:
                raise ValueError(f"{where}: head {head} cannot be both a phrase head and a "
                                 f"specialised, parse or bi-affine head")
        if len(set(self.phrase_heads)) != len(self.phrase_heads):
            raise ValueError(f"{where}: phrase_heads {list(self.phrase_heads)} repeats a head")
        if len(self.phrase_granularities) != len(self.phrase_heads) or any(
                g < 0 for g in self.phrase_granularities):
            raise ValueError(f"{where}: phrase_granularities {list(self.phrase_granularities)} "
                             f"needs one index >= 0 per phrase head {list(self.phrase_heads)}")
        if self.biaffine_size is not None and self.biaffine_size < 1:
            raise ValueError(f"{where}: biaffine_size must be positive, got {self.biaffine_size}")
        for name, size in self.label_vocab_sizes.items():
            if size < 1:
                raise ValueError(
                    f"{where}: label kind {name!r} needs at least one label, got {size}")
        unknown = [n for n in self.value_bias_labels if n not in self.label_vocab_sizes]
        if unknown:
            raise ValueError(f"{where}: value_bias_labels {unknown} are not in "
                             f"label_vocab_sizes {sorted(self.label_vocab_sizes)}")

    def build(self, query_shape, memory_shape=None, spec_inputs_shape=None):
        """Creates the weights.

        Args:
            query_shape: [B, Sq, D_query].
            memory_shape: [B, Sk, D_memory] for cross-attention; None for
                self-attention.
            spec_inputs_shape: [B, S, D_spec], needed when there are
                specialised heads.
        """
        query_dim = int(query_shape[-1])
        memory_dim = query_dim if memory_shape is None else int(memory_shape[-1])
        output_dim = self.output_dim or query_dim
        heads, depth = self.num_heads, self.key_dim
        regular = self._num_regular_heads
        if regular:
            self.query_kernel = self._kernel("query_kernel", (query_dim, regular, depth))
            self.key_kernel = self._kernel("key_kernel", (memory_dim, regular, depth))
        self.value_kernel = self._kernel("value_kernel", (memory_dim, heads, depth))
        self.output_kernel = self._kernel("output_kernel", (heads, depth, output_dim))
        if self.spec_heads:
            if spec_inputs_shape is None:
                raise ValueError(
                    f"attention layer {self.name!r} has specialised heads "
                    f"{list(self.spec_heads)}: build it with spec_inputs_shape")
            spec_dim = int(spec_inputs_shape[-1])
            shape = (spec_dim, len(self.spec_heads), depth)
            self.spec_query_kernel = self._kernel("spec_query_kernel", shape)
            self.spec_key_kernel = self._kernel("spec_key_kernel", shape)
        if self.biaffine is not None:
            self.biaffine.build(query_shape)
        self.key_label_tables = {
            name: self.add_weight(name=f"{name}_key_embeddings", shape=(size, depth),
                                  initializer=self.label_initializer)
            for name, size in self.label_vocab_sizes.items()}
        self.value_label_tables = {
            name: self.add_weight(name=f"{name}_value_embeddings",
                                  shape=(self.label_vocab_sizes[name], depth),
                                  initializer=self.label_initializer)
            for name in self.value_bias_labels}
        self.built = True

    def _kernel(self, name, shape):
        return self.add_weight(name=name, shape=shape, initializer=self.kernel_initializer)

    def _project(self, inputs, kernel):
        """[B, S, D] x [D, h, d] -> [B, S, h, d] in the compute dtype."""
        return ops.einsum("bsd,dhk->bshk", inputs, ops.cast(kernel, self.compute_dtype))

    def _queries_or_keys(self, inputs, spec_inputs, kernel_name):
        """Queries or keys of all heads, [B, S, H, d]; spec heads from `spec_inputs`.

        The bi-affine head gets zeros: its logits come from the scorer alone.
        """
        parts = []
        if self._num_regular_heads:
            parts.append(self._project(inputs, getattr(self, kernel_name)))
        if self.spec_heads:
            parts.append(self._project(spec_inputs, getattr(self, "spec_" + kernel_name)))
        if self.biaffine is not None:
            shape = ops.shape(inputs)
            parts.append(ops.zeros((shape[0], shape[1], 1, self.key_dim), self.compute_dtype))
        if len(parts) == 1 and self._head_order == tuple(range(self.num_heads)):
            return parts[0]
        return ops.take(ops.concatenate(parts, axis=2), list(self._head_order), axis=2)

    def keys_and_values(self, source: Tensor, spec_inputs: Optional[Tensor] = None) -> tuple:
        """Keys and values of `source`: a cache entry.

        Args:
            source: [B, Sk, D_memory] (the memory, or the query sequence for
                self-attention).
            spec_inputs: [B, Sk, D_spec] when there are specialised heads.

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
        spec_inputs = self._spec_inputs(spec_inputs)
        keys = ops.transpose(self._queries_or_keys(source, spec_inputs, "key_kernel"),
                             (0, 2, 1, 3))
        values = ops.einsum("bsd,dhk->bhsk", source,
                            ops.cast(self.value_kernel, self.compute_dtype))
        return keys, values

    def _phrase_keys_and_values(self, keys, values, phrase_memory):
        """Replaces the phrase heads' keys and values by projections of the phrase memory.

        Args:
            keys, values: [B, H, S, d] from the tokens.
            phrase_memory: [B, G, S, D], S phrase slots per granularity.

        Returns:
            `(keys, values)`, each [B, H, S, d].
        """
        if phrase_memory is None:
            raise ValueError(f"attention layer {self.name!r} has phrase heads "
                             f"{list(self.phrase_heads)} but got no phrase_memory")
        memory = ops.take(ops.cast(phrase_memory, self.compute_dtype),
                          list(self.phrase_granularities), axis=1)  # [B, Hp, S, D]
        # Phrase heads are regular heads: their kernels are slices of the regular ones.
        regular = [h for h in range(self.num_heads) if self._head_order[h] < self._num_regular_heads]
        slots = [regular.index(h) for h in self.phrase_heads]
        key_kernel = ops.take(ops.cast(self.key_kernel, self.compute_dtype), slots, axis=1)
        value_kernel = ops.take(ops.cast(self.value_kernel, self.compute_dtype),
                                list(self.phrase_heads), axis=1)
        phrase_keys = ops.einsum("bhsd,dhk->bhsk", memory, key_kernel)
        phrase_values = ops.einsum("bhsd,dhk->bhsk", memory, value_kernel)
        # Head h takes slot h of concat([token heads, phrase heads]).
        order = [self.num_heads + self.phrase_heads.index(h) if h in self.phrase_heads else h
                 for h in range(self.num_heads)]
        return (ops.take(ops.concatenate([keys, phrase_keys], axis=1), order, axis=1),
                ops.take(ops.concatenate([values, phrase_values], axis=1), order, axis=1))

    def _spec_inputs(self, spec_inputs):
        if not self.spec_heads:
            return None
        if spec_inputs is None:
            raise ValueError(f"attention layer {self.name!r} has specialised heads "
                             f"{list(self.spec_heads)} but got no spec_inputs")
        return ops.cast(spec_inputs, self.compute_dtype)

    def _labels(self, labels, batch_size, query_length, key_length):
        """Checks that every configured label kind is given; broadcasts to [B, Sq, Sk]."""
        labels = labels or {}
        missing = sorted(set(self.label_vocab_sizes) - set(labels))
        if missing:
            raise ValueError(f"attention layer {self.name!r} needs labels {missing}, "
                             f"got {sorted(labels)}")
        shape = (batch_size, query_length, key_length)
        return {name: ops.broadcast_to(ops.cast(labels[name], "int32"), shape)
                for name in self.label_vocab_sizes}

    def _scale_by_parents(self, logits, parents, training):
        """Multiplies the logits of the parent-scaled heads by D (seed eq. 5-6)."""
        if parents is None:
            raise ValueError(f"attention layer {self.name!r} has parent-scaled heads "
                             f"{list(self.parent_scaled_heads)} but got no parents")
        weights = parent_scaling.scaling_weights(parents, ops.shape(logits)[-1],
                                                 self.parent_weighting, self.parent_variance)
        if training and self.parent_ignoring > 0:
            weights = parent_scaling.ignore_parents(weights, self.parent_ignoring,
                                                    self._parent_seed)
        chosen = np.array([h in self.parent_scaled_heads for h in range(self.num_heads)])
        return ops.where(chosen[None, :, None, None], logits * weights[:, None], logits)

    def call(self, query: Tensor, memory: Optional[Tensor] = None, *,
             attention_mask: Optional[Tensor] = None,
             labels: Optional[Mapping[str, Tensor]] = None, spec_inputs: Optional[Tensor] = None,
             parents: Optional[Tensor] = None, phrase_memory: Optional[Tensor] = None,
             phrase_mask: Optional[Tensor] = None, cache: Optional[attention_cache.Cache] = None,
             cache_update_index: Optional[Tensor] = None, return_probs: bool = False,
             training: bool = False) -> tuple:
        """Attends from `query` to `memory` (or to itself).

        Args:
            query: [B, Sq, D_query].
            memory: [B, Sk, D_memory] for cross-attention; None for
                self-attention.
            attention_mask: bool, broadcastable to [B, Sq, Sk]; True where a
                query may attend to a key (see `masks.py`).
            labels: `{name: int [B, Sq, Sk] or [Sq, Sk]}` label ids, one
                entry for every kind in `label_vocab_sizes` (other entries are
                ignored).
            spec_inputs: [B, S, D_spec], the sequence the specialised heads
                take queries and keys from (self-attention only).
            parents: float [B, Sq], the (middle) position of each query
                token's parent among the keys, for the parent-scaled heads;
                or [B, Sq, 2], the first and last position of the parent word
                (needed by `parent_weighting="parent_only"`).
            phrase_memory: [B, G, Sk, D], the phrase memory of every
                granularity (Sk phrase slots, as many as tokens), for the
                phrase heads.
            phrase_mask: bool [B, G, Sk], True for the slots that hold a
                phrase; replaces `attention_mask` for the phrase heads.
            cache: `(keys, values)`, each [B, H, Sk, d]. With
                `cache_update_index` the keys and values of `query` are
                written into them at that position (incremental
                self-attention, Sk = maximum length); without, they replace
                the projection of `memory` (precomputed encoder-decoder
                attention, `keys_and_values`); such a memory may have
                B / g rows, each serving g consecutive query rows (the
                beams of a sentence); `attention_mask` then has B / g rows
                and one query row (a padding mask [B / g, 1, Sk]), and
                the layer has no labels.
                An `attention_cache.InPlaceCache` is written in place.
            cache_update_index: int32 scalar, position of the first query.
            return_probs: also return the probabilities of every head.
            training: applies attention dropout and parent ignoring.

        Returns:
            `(outputs, details)`: outputs [B, Sq, D_out] in the compute dtype;
            details a dict with `"probs"` float32 [B, H, Sq, Sk] when
            `return_probs`, `"head_logits"` float32 [B, Sq, Sk] (masked,
            pre-softmax) when `parse_head` is set, and `"cache"` (the updated
            cache) when `cache` is given.
        """
        if self.spec_heads and memory is not None:
            raise ValueError(f"attention layer {self.name!r}: specialised heads need "
                             "self-attention, got a memory")
        if (self.parent_scaled_heads or self.biaffine is not None or self.phrase_heads) and (
                memory is not None or cache is not None):
            raise ValueError(f"attention layer {self.name!r}: parent-scaled, bi-affine and phrase "
                             "heads need full self-attention, without a memory or a cache")
        query = ops.cast(query, self.compute_dtype)
        spec_inputs = self._spec_inputs(spec_inputs)
        details = {}
        queries = self._queries_or_keys(query, spec_inputs, "query_kernel")
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
        else:
            keys, values = self.keys_and_values(query if memory is None else memory, spec_inputs)
            if cache is not None:
                parts = [ops.cast(part, self.compute_dtype) for part in self._cache_pair(cache)]
                cache = (attention_cache.InPlaceCache(*parts)
                         if isinstance(cache, attention_cache.InPlaceCache) else tuple(parts))
                details["cache"] = attention_cache.write(cache, cache_update_index, keys, values)
                keys, values = details["cache"]
            if self.phrase_heads:
                keys, values = self._phrase_keys_and_values(keys, values, phrase_memory)

        logits = ops.cast(ops.einsum("bqhd,bhkd->bhqk", queries, keys), "float32")
        shape = ops.shape(queries)
        labels = self._labels(labels, shape[0], shape[1], ops.shape(keys)[2])
        word_heads = ops.convert_to_tensor(np.array(
            [h not in self.phrase_heads for h in range(self.num_heads)], "float32"))
        if self.key_label_tables:
            names = list(self.key_label_tables)
            label_logits = ops.cast(label_bias.label_logits(
                queries, [self.key_label_tables[n] for n in names], [labels[n] for n in names]),
                "float32")
            logits += (word_heads[None, :, None, None] * label_logits if self.phrase_heads
                       else label_logits)
        if self.biaffine is not None:
            chosen = ops.convert_to_tensor(
                np.eye(self.num_heads, dtype="float32")[self.biaffine_head])
            logits += chosen[None, :, None, None] * self.biaffine(query)[:, None]
        if self.parent_scaled_heads:
            logits = self._scale_by_parents(logits, parents, training)
        if attention_mask is not None or self.phrase_heads:
            mask = (ops.ones((1, 1, 1, 1), "bool") if attention_mask is None
                    else ops.cast(attention_mask, "bool")[:, None, :, :])
            if self.phrase_heads:
                mask = self._phrase_head_mask(mask, phrase_mask)
            logits += ops.where(mask, 0.0, MASK_BIAS)
        probs = ops.softmax(logits, axis=-1)
        if return_probs:
            details["probs"] = probs if query_shape is None else self._ungroup(probs, query_shape)
        if self.parse_head is not None:
            head_logits = logits[:, self.parse_head]
            details["head_logits"] = (head_logits if query_shape is None else ops.reshape(
                head_logits, (query_shape[0], query_shape[1], -1)))

        weights = self._dropout_layer(ops.cast(probs, self.compute_dtype), training=training)
        context = ops.einsum("bhqk,bhkd->bqhd", weights, values)
        for name, table in self.value_label_tables.items():
            label_values = label_bias.label_values(weights, table, labels[name])  # [B, Sq, H, d]
            if self.phrase_heads:
                label_values *= ops.cast(word_heads[None, None, :, None], label_values.dtype)
            context += label_values
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
            raise ValueError(f"attention layer {self.name!r}: a cache is a (keys, values) pair "
                             f"of [B, H, Sk, d] tensors, got {type(cache).__name__}")
        return cache

    def _phrase_head_mask(self, mask, phrase_mask):
        """`mask` [B, 1, Sq, Sk] for word heads, `phrase_mask` for phrase heads: [B, H, Sq, Sk]."""
        if phrase_mask is None:
            raise ValueError(f"attention layer {self.name!r} has phrase heads "
                             f"{list(self.phrase_heads)} but got no phrase_mask")
        granularity = [self.phrase_granularities[self.phrase_heads.index(h)]
                       if h in self.phrase_heads else 0 for h in range(self.num_heads)]
        per_head = ops.take(ops.cast(phrase_mask, "bool"), granularity, axis=1)[:, :, None, :]
        is_phrase = np.array([h in self.phrase_heads for h in range(self.num_heads)])
        return ops.where(is_phrase[None, :, None, None], per_head, mask)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            key_dim=self.key_dim,
            dropout=self.dropout,
            output_dim=self.output_dim,
            label_vocab_sizes=dict(self.label_vocab_sizes),
            value_bias_labels=list(self.value_bias_labels),
            spec_heads=list(self.spec_heads),
            parse_head=self.parse_head,
            parent_scaled_heads=list(self.parent_scaled_heads),
            parent_variance=self.parent_variance,
            parent_weighting=self.parent_weighting,
            parent_ignoring=self.parent_ignoring,
            biaffine_head=self.biaffine_head,
            biaffine_size=self.biaffine_size,
            phrase_heads=list(self.phrase_heads),
            phrase_granularities=list(self.phrase_granularities),
            seed=self.seed,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            label_initializer=keras.initializers.serialize(self.label_initializer),
        )
        return config

