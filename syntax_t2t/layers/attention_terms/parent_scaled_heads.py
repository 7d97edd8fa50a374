"""Parent-scaled heads (Pascal; Bugliarello and Okazaki 2020), as an attention term.

Chosen heads multiply their scaled scores by a weight D[t, j] of every key j
around the dependency parent of query token t before the softmax (seed
eq. 5-6), with parent ignoring in training; D is computed by
`layers/parent_scaling.py` and has no weights. Self-attention over the whole
sequence only: the parents are positions among the attended tokens.
"""

from typing import Optional, Sequence

import keras
from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.layers import parent_scaling
from syntax_t2t.layers.attention_terms.base import AttentionCall, AttentionTerm, head_indicator


@keras.saving.register_keras_serializable(package="syntax_t2t")
class ParentScaledHeads(AttentionTerm):
    """Heads whose logits are scaled by each query token's parent weights.

    Reads `term_inputs["parents"]`: float [B, Sq], the (middle) position of
    each query token's parent among the keys, or [B, Sq, 2], the first and
    last position of the parent word (needed by "parent_only").

    Args:
        heads: the parent-scaled heads.
        variance: sigma^2 of the normal distribution around the parent.
        weighting: "gaussian" (that density, seed eq. 6) or "parent_only"
            (1 on the parent word's subwords, 0 elsewhere: the seed's
            Table 7b); see `parent_scaling.py`.
        ignoring: in training, the probability q that a token's row of
            parent weights is set to 1 (plain attention for that row).
        seed: seeds the parent-ignoring draws.
    """

    kind = "parent-scaled"
    input_names = ("parents",)
    whole_sequence_only = True

    def __init__(self, heads: Sequence[int], variance: float = 1.0, weighting: str = "gaussian",
                 ignoring: float = 0.0, seed: Optional[int] = None):
        super().__init__()
        self._heads = tuple(int(h) for h in heads)
        self.variance = float(variance)
        self.weighting = str(weighting)
        self.ignoring = float(ignoring)
        self.seed = seed
        self.seed_generator = None

    @property
    def heads(self) -> tuple:
        return self._heads

    def check(self, num_heads: int, where: str) -> None:
        super().check(num_heads, where)
        if not self.variance > 0:
            raise ValueError(f"{where}: parent_variance must be positive, got {self.variance}")
        if self.weighting not in parent_scaling.WEIGHTINGS:
            raise ValueError(f"{where}: parent_weighting must be one of "
                             f"{', '.join(parent_scaling.WEIGHTINGS)}, got {self.weighting!r}")
        if not 0.0 <= self.ignoring <= 1.0:
            raise ValueError(f"{where}: parent_ignoring is a probability, got {self.ignoring}")

    def attach(self, layer: keras.layers.Layer) -> list:
        owned = super().attach(layer)
        if self.ignoring > 0:
            self.seed_generator = keras.random.SeedGenerator(self.seed)
            owned.append(self.seed_generator)
        return owned

    def scale_logits(self, call: AttentionCall, logits: Tensor) -> Tensor:
        """Multiplies the logits of the parent-scaled heads by D (seed eq. 5-6)."""
        weights = parent_scaling.scaling_weights(call.inputs["parents"], ops.shape(logits)[-1],
                                                 self.weighting, self.variance)
        if call.training and self.ignoring > 0:
            weights = parent_scaling.ignore_parents(weights, self.ignoring, self.seed_generator)
        chosen = head_indicator(self._heads, self.layer.num_heads)
        return ops.where(chosen[None, :, None, None], logits * weights[:, None], logits)

    def get_config(self) -> dict:
        return {"heads": list(self._heads), "variance": self.variance,
                "weighting": self.weighting, "ignoring": self.ignoring, "seed": self.seed}
