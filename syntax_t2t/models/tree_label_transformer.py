"""Transformers whose encoder self-attention adds key embeddings of source-tree labels.

The thesis's TreeDistance and TreeTraversal (3.1.2-3.1.3) differ only in the
label they compute for every pair of source tokens; `TreeLabelTransformer`
holds what they share and each subclass names its label:

* `label_name`: the key in `source_labels` and `tree_label_vocab_sizes`;
* `limit_hparam`: the hparam that clips the label (at least 1);
* `label_count` / `pair_labels`: the label vocabulary size for a limit and the
  on-device labels (`layers/tree_labels.py`).

The label matrices are computed from `src_heads` on the device, once per batch
for all layers. They are compiled with the rest of the step that reads them
(the trainer's and the decoder's XLA or `jax.jit` compilation), not by a
compilation of their own, so that the model stays backend-neutral; a step run
without XLA on TensorFlow computes them op by op (TreeTraversal labels of a
`transformer_tiny` benchmark batch: 1.3 ms against 0.6 ms compiled,
`docs/performance.md`). On subword problems, `source_word_positions=true`
makes them the labels of the words (`src_word_position`).
"""

from typing import Any, Mapping, Optional

from keras import ops

from syntax_t2t.hparams import HParams, HParamsError
from syntax_t2t.models import word_positions
from syntax_t2t.models.contract import Tensor
from syntax_t2t.models.transformer import Features, Transformer


class TreeLabelTransformer(Transformer):
    """Base of `TreeDistance` and `TreeTraversal` (module docstring)."""

    train_features = frozenset({"inputs", "targets", "src_heads"})
    decode_features = frozenset({"inputs", "src_heads"})
    #: Reads `src_word_position` with `source_word_positions` (bin/train warns when off).
    reads_word_positions = True
    label_name = ""
    limit_hparam = ""

    @staticmethod
    def label_count(limit: int) -> int:
        """The label vocabulary size for `limit`."""
        raise NotImplementedError

    @staticmethod
    def pair_labels(heads: Tensor, limit: int, include_root: bool,
                    word_positions: Optional[Tensor]) -> Tensor:
        """int32 [B, S', S'] labels of every token pair (`layers/tree_labels.py`)."""
        raise NotImplementedError

    def __init__(self, hparams: HParams, vocab_sizes: Mapping[str, int], **kwargs: Any):
        super().__init__(hparams, vocab_sizes, **kwargs)
        word_positions.with_word_positions(self)

    @property
    def label_limit(self) -> int:
        return getattr(self.hparams, self.limit_hparam)

    def check_hparams(self) -> None:
        super().check_hparams()
        if self.label_limit < 1:
            raise HParamsError(f"{self.limit_hparam}={self.label_limit} must be at least 1")

    def tree_label_vocab_sizes(self) -> dict:
        return {**super().tree_label_vocab_sizes(), self.label_name: self.label_count(self.label_limit)}

    def source_labels(self, features: Features, source_ids: Tensor) -> dict:
        labels = super().source_labels(features, source_ids)
        heads = self.source_heads(features, source_ids)
        labels[self.label_name] = self.pair_labels(
            heads, self.label_limit, include_root=self.prefix_root,
            word_positions=word_positions.word_positions(self, features, ops.shape(heads)[1]))
        return labels
