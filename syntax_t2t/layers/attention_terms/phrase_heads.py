"""Phrase heads (MG-SA; Hao et al. 2019), as an attention term.

Chosen heads take their keys and values from a phrase memory [B, G, S, D]
(`layers/phrase_memory.py`) instead of the attended tokens: head h attends
over the phrases of granularity `granularities[i]` (h = `heads[i]`), with
its own query, key and value projections (seed eq. 4-7). Those are the
layer's: a phrase head is projected like a word head, only from the phrase
memory, so its kernels are the layer's kernels of that head. Label biases
apply to word heads only (`AttentionCall.token_heads`).
"""

from typing import Optional, Sequence

import keras
from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.layers.attention_terms.base import AttentionCall, AttentionTerm, head_indicator


@keras.saving.register_keras_serializable(package="syntax_t2t")
class PhraseHeads(AttentionTerm):
    """Heads attending over phrases (full self-attention only).

    Reads `term_inputs["phrase_memory"]`, [B, G, Sk, D], the phrase memory
    of every granularity (Sk phrase slots, as many as tokens), and
    `term_inputs["phrase_mask"]`, bool [B, G, Sk], True for the slots that
    hold a phrase, which replaces the attention mask of the phrase heads.

    Args:
        heads: the phrase heads.
        granularities: for each of `heads`, the index g of the granularity
            (the row of the phrase memory) it attends over.
    """

    kind = "phrase"
    input_names = ("phrase_memory", "phrase_mask")
    whole_sequence_only = True

    def __init__(self, heads: Sequence[int], granularities: Sequence[int]):
        super().__init__()
        self._heads = tuple(int(h) for h in heads)
        self.granularities = tuple(int(g) for g in granularities)

    @property
    def heads(self) -> tuple:
        return self._heads

    @property
    def key_value_heads(self) -> tuple:
        return self._heads

    def check(self, num_heads: int, where: str) -> None:
        super().check(num_heads, where)
        if len(self.granularities) != len(self._heads) or any(g < 0 for g in self.granularities):
            raise ValueError(f"{where}: phrase_granularities {list(self.granularities)} "
                             f"needs one index >= 0 per phrase head {list(self._heads)}")

    def check_terms(self, terms: Sequence[AttentionTerm], where: str) -> None:
        # A phrase head is a word head of other keys: it reuses the layer's
        # projections, and nothing else may read or score its logits.
        for term in terms:
            if term is self:
                continue
            shared = sorted(set(term.heads) & set(self._heads))
            if shared:
                raise ValueError(f"{where}: head {shared[0]} cannot be both a phrase head and "
                                 f"a {term.kind} head")

    def keys_and_values(self, call: AttentionCall, keys: Tensor, values: Tensor) -> tuple:
        """Replaces the phrase heads' keys and values by projections of the phrase memory.

        Args:
            call: the call; `call.inputs["phrase_memory"]` is [B, G, S, D],
                S phrase slots per granularity.
            keys, values: [B, H, S, d] from the tokens.

        Returns:
            `(keys, values)`, each [B, H, S, d].
        """
        layer = self.layer
        dtype = layer.compute_dtype
        memory = ops.take(ops.cast(call.inputs["phrase_memory"], dtype),
                          list(self.granularities), axis=1)  # [B, Hp, S, D]
        slots = [layer.projected_heads.index(h) for h in self._heads]
        key_kernel = ops.take(ops.cast(layer.key_kernel, dtype), slots, axis=1)
        value_kernel = ops.take(ops.cast(layer.value_kernel, dtype), list(self._heads), axis=1)
        phrase_keys = ops.einsum("bhsd,dhk->bhsk", memory, key_kernel)
        phrase_values = ops.einsum("bhsd,dhk->bhsk", memory, value_kernel)
        # Head h takes slot h of concat([token heads, phrase heads]).
        num_heads = layer.num_heads
        order = [num_heads + self._heads.index(h) if h in self._heads else h
                 for h in range(num_heads)]
        return (ops.take(ops.concatenate([keys, phrase_keys], axis=1), order, axis=1),
                ops.take(ops.concatenate([values, phrase_values], axis=1), order, axis=1))

    def mask(self, call: AttentionCall, mask: Optional[Tensor]) -> Tensor:
        """[B, H, Sq, Sk]: `mask` [B, 1, Sq, Sk] for word heads, the phrase mask for the others."""
        if mask is None:
            mask = ops.ones((1, 1, 1, 1), "bool")
        num_heads = self.layer.num_heads
        granularity = [self.granularities[self._heads.index(h)] if h in self._heads else 0
                       for h in range(num_heads)]
        per_head = ops.take(ops.cast(call.inputs["phrase_mask"], "bool"), granularity,
                            axis=1)[:, :, None, :]
        is_phrase = head_indicator(self._heads, num_heads)
        return ops.where(is_phrase[None, :, None, None], per_head, mask)

    def get_config(self) -> dict:
        return {"heads": list(self._heads), "granularities": list(self.granularities)}
