"""The criterion: what turns a model's outputs on a batch into its losses (fairseq's criterions).

A model returns outputs; its criterion (`criteria.for_model`) says what is
trained: `criterion(features, outputs)` gives the scalar losses, `"total"`
the one that is minimised. The trainers (TensorFlow's `training/trainer.py`,
JAX's `backend/jax_train_step.py`, which is handed the criterion) call it
inside their compiled steps, so a criterion is written in `keras.ops` only.
"""

from typing import Any, Mapping

from keras import ops

from syntax_t2t.criteria import head_gold
from syntax_t2t.models.contract import Features, Tensor


class Criterion:
    """The losses of one model, and what is logged and evaluated beside them.

    Args:
        model: the model whose outputs this criterion scores; a criterion
            may read its hparams and its host-side derivations of the gold
            (never its weights, except through a layer of the model's own
            that defines a loss, as Tree2Seq's BlackOut softmax).
    """

    def __init__(self, model: Any):
        self.model = model

    def __call__(self, features: Features, outputs: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """Scalar float32 losses by name; `"total"` is the objective.

        Args:
            features: the batch (derived features included).
            outputs: the model's outputs on it.
        """
        raise NotImplementedError

    def diagnostics(self, features: Features, outputs: Mapping[str, Tensor],
                    losses: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """Scalars logged beside the losses (training log, TensorBoard); none here."""
        return {}

    def eval_counts(self, features: Features, outputs: Mapping[str, Tensor]) -> dict[str, Tensor]:
        """Float32 counts that evaluation sums over the dev set.

        `"correct_heads"` and `"words"` (UAS = their ratio over the dev set)
        where the outputs hold `"parse_logits"` (by the contract, scores over
        the `<ROOT>`-prefixed source) and the batch its gold tree
        (`src_heads`); none otherwise. A supervised head's criterion counts
        against its own gold.
        """
        if "parse_logits" not in outputs or "src_heads" not in features:
            return {}
        logits = outputs["parse_logits"]
        gold = head_gold.gold_positions_from_heads(features["src_heads"], ops.shape(logits)[1])
        return head_gold.attachment_counts(logits, gold)
