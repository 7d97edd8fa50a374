"""An encoder block with multi-granularity self-attention (MG-SA; Hao et al. 2019).

The block of `encoder_layer.py` with a `PhraseMemory`: it composes the
phrases of every granularity from the same normalised input the attention
reads (H in the seed's eq. 4), and hands them to the attention as the
`"phrase_memory"` and `"phrase_mask"` inputs of its `PhraseHeads` term
(`layers/attention_terms/phrase_heads.py`).
"""

from typing import Any, Mapping, Optional

from syntax_t2t.backend import Tensor
from syntax_t2t.layers.encoder_layer import TransformerEncoderLayer
from syntax_t2t.layers.phrase_memory import PhraseMemory


class MultiGranularityEncoderLayer(TransformerEncoderLayer):
    """Pre-norm encoder block whose self-attention attends words and phrases.

    Args:
        hidden_size, filter_size, num_heads: see `TransformerEncoderLayer`.
        num_granularities: G, the rows of `phrase_ids`.
        composition: `PhraseMemory` composition.
        interaction: `PhraseMemory` interaction.
        chunk_size: ON-LSTM chunk size.
        **kwargs: every other `TransformerEncoderLayer` argument; its
            `attention_terms` include a `PhraseHeads`.
    """

    #: Batch-derived inputs `Transformer.encode` passes to this layer.
    extra_inputs = ("phrase_ids",)
    #: Details `Transformer.encode` collects from this layer.
    extra_outputs = ("phrase_memory", "phrase_mask", "phrase_composition")

    def __init__(self, hidden_size: int, filter_size: int, num_heads: int, *,
                 num_granularities: int, composition: str = "attention",
                 interaction: str = "none", chunk_size: int = 8, **kwargs):
        super().__init__(hidden_size, filter_size, num_heads, **kwargs)
        self.num_granularities = int(num_granularities)
        self.composition = composition
        self.interaction = interaction
        self.chunk_size = int(chunk_size)
        self.phrase_memory = PhraseMemory(
            hidden_size, num_granularities, composition=composition, interaction=interaction,
            chunk_size=chunk_size, dtype=self.dtype_policy, name="phrase_memory")

    def build(self, inputs_shape, attention_inputs_shape=None):
        super().build(inputs_shape, attention_inputs_shape=attention_inputs_shape)
        self.phrase_memory.build(inputs_shape)

    def call(self, inputs: Tensor, *, phrase_ids: Tensor, attention_mask: Optional[Tensor] = None,
             attention_inputs: Optional[Mapping[str, Any]] = None, return_probs: bool = False,
             training: bool = False) -> tuple:
        """Runs the block.

        Args:
            inputs: [B, S, D].
            phrase_ids: int [B, G, S], each token's phrase per granularity, -1
                for none.
            attention_mask, attention_inputs, return_probs, training: see
                `TransformerEncoderLayer.call`.

        Returns:
            `(outputs [B, S, D], details)`: the self-attention's details plus
            `"phrase_memory"` [B, G, S, D] (H_g, after the interaction),
            `"phrase_composition"` [B, G, S, D] (G_x, before it) and
            `"phrase_mask"` [B, G, S].
        """
        normalised = self.attention_norm(inputs)
        memory, mask, composition = self.phrase_memory(normalised, phrase_ids, training=training,
                                                       return_composition=True)
        attended, details = self.self_attention(
            normalised, attention_mask=attention_mask,
            term_inputs={**(attention_inputs or {}), "phrase_memory": memory,
                         "phrase_mask": mask},
            return_probs=return_probs, training=training)
        details.update(phrase_memory=memory, phrase_mask=mask, phrase_composition=composition)
        x = inputs + self.residual_dropout_layer(attended, training=training)
        transformed = self.feed_forward(self.feed_forward_norm(x), training=training)
        return x + self.residual_dropout_layer(transformed, training=training), details

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_granularities=self.num_granularities, composition=self.composition,
                      interaction=self.interaction, chunk_size=self.chunk_size)
        return config
