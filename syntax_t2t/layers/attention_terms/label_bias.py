"""Label biases of keys and values (thesis eq. 3.2-3.3; Shaw et al. 2018), as an attention term.

`e_ij = q_i . (k_j + b_ij + t_ij) / sqrt(d_k)` for any set of label kinds
(relative positions, tree distances, tree traversals), each with a key table
[L, d_k] shared by the heads; optionally `o_i = sum_j a_ij (v_j + F[label_ij])`
with a value table per kind. The per-label kernels that avoid [B, Sq, Sk, d]
tensors are in `layers/label_bias.py`. Heads whose keys are not the attended
tokens (phrase heads) get no label bias: their keys are not the positions
the labels are of.
"""

from typing import Any, Mapping, Optional, Sequence

import keras
import numpy as np
from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.layers import label_bias
from syntax_t2t.layers.attention_terms.base import AttentionCall, AttentionTerm


@keras.saving.register_keras_serializable(package="syntax_t2t")
class LabelBias(AttentionTerm):
    """Key (and value) biases from label embeddings, on every token head.

    Reads `term_inputs["labels"]`: `{name: int [B, Sq, Sk] or [Sq, Sk]}`,
    one entry for every kind in `label_vocab_sizes` (others are ignored).
    Its weights are the layer's `<name>_key_embeddings` and
    `<name>_value_embeddings`, [L, d] each, made by the layer's
    `embedding_initializer`.

    Args:
        label_vocab_sizes: `{name: L}` for each kind of label whose key
            embeddings [L, d] bias the logits.
        value_bias_labels: the names in `label_vocab_sizes` that also get
            value embeddings [L, d].
    """

    kind = "label-biased"
    input_names = ("labels",)

    def __init__(self, label_vocab_sizes: Mapping[str, int], value_bias_labels: Sequence[str] = ()):
        super().__init__()
        self.label_vocab_sizes = {str(k): int(v) for k, v in dict(label_vocab_sizes).items()}
        self.value_bias_labels = tuple(value_bias_labels)
        self.key_tables = {}
        self.value_tables = {}

    def describe(self) -> str:
        return f"label biases {sorted(self.label_vocab_sizes)}"

    def check(self, num_heads: int, where: str) -> None:
        super().check(num_heads, where)
        for name, size in self.label_vocab_sizes.items():
            if size < 1:
                raise ValueError(
                    f"{where}: label kind {name!r} needs at least one label, got {size}")
        unknown = [n for n in self.value_bias_labels if n not in self.label_vocab_sizes]
        if unknown:
            raise ValueError(f"{where}: value_bias_labels {unknown} are not in "
                             f"label_vocab_sizes {sorted(self.label_vocab_sizes)}")

    def check_inputs(self, inputs: Mapping[str, Any], where: str) -> None:
        labels = inputs.get("labels") or {}
        missing = sorted(set(self.label_vocab_sizes) - set(labels))
        if missing:
            raise ValueError(f"{where} needs labels {missing}, got {sorted(labels)}")

    def build(self, query_shape: Sequence[Any], input_shapes: Mapping[str, Any]) -> None:
        layer, depth = self.layer, self.layer.key_dim
        initializer = layer.embedding_initializer
        self.key_tables = {
            name: layer.add_weight(name=f"{name}_key_embeddings", shape=(size, depth),
                                   initializer=initializer)
            for name, size in self.label_vocab_sizes.items()}
        self.value_tables = {
            name: layer.add_weight(name=f"{name}_value_embeddings",
                                   shape=(self.label_vocab_sizes[name], depth),
                                   initializer=initializer)
            for name in self.value_bias_labels}

    def _labels(self, call, queries_shape, key_length):
        """The call's label ids, int32 [B, Sq, Sk] per kind."""
        shape = (queries_shape[0], queries_shape[1], key_length)
        labels = call.inputs["labels"]
        return {name: ops.broadcast_to(ops.cast(labels[name], "int32"), shape)
                for name in self.label_vocab_sizes}

    def _only_token_heads(self, call):
        """float32 numpy [H] of the heads the labels apply to, or None for all."""
        return None if call.token_heads.all() else call.token_heads.astype("float32")

    def add_to_logits(self, call: AttentionCall, queries: Tensor, keys: Tensor) -> Optional[Tensor]:
        names = list(self.key_tables)
        labels = self._labels(call, ops.shape(queries), ops.shape(keys)[2])
        logits = ops.cast(label_bias.label_logits(
            queries, [self.key_tables[n] for n in names], [labels[n] for n in names]), "float32")
        heads = self._only_token_heads(call)
        if heads is not None:
            logits = ops.convert_to_tensor(heads)[None, :, None, None] * logits
        return logits

    def add_to_context(self, call: AttentionCall, weights: Tensor, context: Tensor) -> Tensor:
        if not self.value_tables:
            return context
        shape = ops.shape(weights)
        labels = self._labels(call, (shape[0], shape[2]), shape[3])
        heads = self._only_token_heads(call)
        for name, table in self.value_tables.items():
            values = label_bias.label_values(weights, table, labels[name])  # [B, Sq, H, d]
            if heads is not None:
                values *= ops.cast(np.asarray(heads)[None, None, :, None], values.dtype)
            context += values
        return context

    def get_config(self) -> dict:
        return {"label_vocab_sizes": dict(self.label_vocab_sizes),
                "value_bias_labels": list(self.value_bias_labels)}
