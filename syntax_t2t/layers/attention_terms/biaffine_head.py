"""A bi-affine head (SISA; Strubell et al. 2018), as an attention term.

One head's logits come from a deep bi-affine scorer of the attended sequence
(`layers/biaffine.py`) instead of its query-key dot product: the head's
queries and keys are zeros, so its dot product vanishes and the scores (plus
any label bias) are its logits. Its values are projected like any other
head's.
"""

from typing import Any, Mapping, Optional, Sequence

import keras
import numpy as np
from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.layers.attention_terms.base import AttentionCall, AttentionTerm
from syntax_t2t.layers.biaffine import BiaffineScorer


@keras.saving.register_keras_serializable(package="syntax_t2t")
class BiaffineHead(AttentionTerm):
    """One head scored by a `BiaffineScorer` of the attended sequence (full self-attention only).

    The scorer is the layer's sub-layer `biaffine`, with the layer's kernel
    initializer.

    Args:
        head: the bi-affine head.
        size: width of the scorer's projections; by default the layer's
            `key_dim`.
    """

    kind = "bi-affine"
    whole_sequence_only = True

    def __init__(self, head: int, size: Optional[int] = None):
        super().__init__()
        self.head = int(head)
        self.size = None if size is None else int(size)
        self.scorer = None

    @property
    def heads(self) -> tuple:
        return (self.head,)

    @property
    def query_key_heads(self) -> tuple:
        return (self.head,)

    def describe(self) -> str:
        return f"bi-affine head {self.head}"

    def check(self, num_heads: int, where: str) -> None:
        super().check(num_heads, where)
        if self.size is not None and self.size < 1:
            raise ValueError(f"{where}: biaffine_size must be positive, got {self.size}")

    def attach(self, layer: keras.layers.Layer) -> list:
        owned = super().attach(layer)
        self.scorer = BiaffineScorer(self.size or layer.key_dim,
                                     kernel_initializer=layer.kernel_initializer,
                                     dtype=layer.dtype_policy, name="biaffine")
        return owned + [self.scorer]

    def build(self, query_shape: Sequence[Any], input_shapes: Mapping[str, Any]) -> None:
        self.scorer.build(query_shape)

    def queries_or_keys(self, which: str, source: Tensor, inputs: Mapping[str, Any]) -> Tensor:
        shape = ops.shape(source)
        return ops.zeros((shape[0], shape[1], 1, self.layer.key_dim), self.layer.compute_dtype)

    def add_to_logits(self, call: AttentionCall, queries: Tensor, keys: Tensor) -> Tensor:
        chosen = ops.convert_to_tensor(np.eye(self.layer.num_heads, dtype="float32")[self.head])
        return chosen[None, :, None, None] * self.scorer(call.query)[:, None]

    def get_config(self) -> dict:
        return {"head": self.head, "size": self.size}
