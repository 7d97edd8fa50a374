"""TreeTraversal (thesis 3.1.3): key biases from source-tree traversal codes."""

from syntax_t2t import registry
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers import tree_labels
from syntax_t2t.models.transformer import Transformer

TREE_TRAVERSAL = "tree_traversal"


@registry.register_model("tree_traversal")
class TreeTraversal(Transformer):
    """Transformer whose encoder self-attention adds tree-traversal key embeddings.

    As `TreeDistance`, but `t_ij` embeds the shortest path from i to j spelt
    with U (up), D (down), L / R (to a left / right sibling), e.g. "UUD" or
    "LD", up to `max_traversal_length` moves (thesis: 10); longer paths share
    an overflow label and pairs with the `<EOS>` position the no-tree label.
    Relative positions are added when `max_relative_position > 0`.
    """

    train_features = frozenset({"inputs", "targets", "src_heads"})
    decode_features = frozenset({"inputs", "src_heads"})

    def check_hparams(self):
        super().check_hparams()
        if self.hparams.max_traversal_length < 1:
            raise HParamsError(
                f"max_traversal_length={self.hparams.max_traversal_length} must be at least 1")

    def tree_label_vocab_sizes(self):
        return {TREE_TRAVERSAL: tree_labels.tree_traversal_label_count(
            self.hparams.max_traversal_length)}

    def source_labels(self, features, source_ids):
        labels = super().source_labels(features, source_ids)
        labels[TREE_TRAVERSAL] = tree_labels.tree_traversal_labels(
            self.source_heads(features, source_ids), self.hparams.max_traversal_length,
            include_root=self.prefix_root)
        return labels
