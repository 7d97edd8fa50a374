"""Specialised heads (thesis 3.2), as an attention term.

Chosen heads project their queries and keys from a second input (POS-tag or
dependency-label embeddings) while their values come from the token
representations like every other head's (thesis Figure 3.4).
"""

from typing import Any, Mapping, Sequence

import keras
from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.layers.attention_terms.base import AttentionTerm


@keras.saving.register_keras_serializable(package="syntax_t2t")
class SpecializedHeads(AttentionTerm):
    """Heads whose queries and keys are projected from `term_inputs["spec_inputs"]`.

    `spec_inputs` is [B, S, D_spec], aligned with the attended sequence
    (self-attention only). The weights are the layer's `spec_query_kernel`
    and `spec_key_kernel`, [D_spec, len(heads), d], slot i for `heads[i]`;
    the layer is built with `term_inputs_shape={"spec_inputs": ...}`.

    Args:
        heads: the specialised heads.
    """

    kind = "specialised"
    input_names = ("spec_inputs",)
    self_attention_only = True

    def __init__(self, heads: Sequence[int]):
        super().__init__()
        self._heads = tuple(int(h) for h in heads)

    @property
    def heads(self) -> tuple:
        return self._heads

    @property
    def query_key_heads(self) -> tuple:
        return self._heads

    def build(self, query_shape: Sequence[Any], input_shapes: Mapping[str, Any]) -> None:
        shape = input_shapes.get("spec_inputs")
        if shape is None:
            raise ValueError(f"{self.layer.where} has {self.describe()}: build it with "
                             "term_inputs_shape={'spec_inputs': [B, S, D_spec]}")
        kernel_shape = (int(shape[-1]), len(self._heads), self.layer.key_dim)
        self.query_kernel = self.layer.add_kernel("spec_query_kernel", kernel_shape)
        self.key_kernel = self.layer.add_kernel("spec_key_kernel", kernel_shape)

    def queries_or_keys(self, which: str, source: Tensor, inputs: Mapping[str, Any]) -> Tensor:
        self.check_inputs(inputs, self.layer.where)  # keys_and_values is called directly too
        spec_inputs = ops.cast(inputs["spec_inputs"], self.layer.compute_dtype)
        return self.layer.project(spec_inputs,
                                  self.query_kernel if which == "query" else self.key_kernel)

    def get_config(self) -> dict:
        return {"heads": list(self._heads)}
