"""TreeDistance (thesis 3.1.2): key biases from source-tree distances."""

from syntax_t2t import registry
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers import tree_labels
from syntax_t2t.models.transformer import Transformer

TREE_DISTANCE = "tree_distance"


@registry.register_model("tree_distance")
class TreeDistance(Transformer):
    """Transformer whose encoder self-attention adds tree-distance key embeddings.

    `e_ij = q_i . (k_j + t_ij) / sqrt(d_k)` (eq. 3.3) in every encoder layer,
    `t_ij` the embedding of the number of edges between tokens i and j,
    clipped at `max_tree_distance` (thesis: 5 or 20). With
    `max_relative_position > 0` (e.g. `transformer_relative`) the relative
    position term `b_ij` is added too: the thesis's "(relative) +
    TreeDistance". The `<EOS>` position is not a tree node: its pairs share
    the no-tree label (see `layers/tree_labels.py`). The label matrices are
    computed from `src_heads` on the device, once per batch for all layers.
    """

    train_features = frozenset({"inputs", "targets", "src_heads"})
    decode_features = frozenset({"inputs", "src_heads"})

    def check_hparams(self):
        super().check_hparams()
        if self.hparams.max_tree_distance < 1:
            raise HParamsError(
                f"max_tree_distance={self.hparams.max_tree_distance} must be at least 1")

    def tree_label_vocab_sizes(self):
        return {TREE_DISTANCE: tree_labels.tree_distance_label_count(
            self.hparams.max_tree_distance)}

    def source_labels(self, features, source_ids):
        labels = super().source_labels(features, source_ids)
        labels[TREE_DISTANCE] = tree_labels.tree_distance_labels(
            self.source_heads(features, source_ids), self.hparams.max_tree_distance,
            include_root=self.prefix_root)
        return labels
