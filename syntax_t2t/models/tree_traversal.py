"""TreeTraversal (thesis 3.1.3): key biases from source-tree traversal codes."""

from syntax_t2t import registry
from syntax_t2t.layers import tree_labels
from syntax_t2t.models.tree_label_transformer import TreeLabelTransformer

TREE_TRAVERSAL = "tree_traversal"


@registry.register_model("tree_traversal")
class TreeTraversal(TreeLabelTransformer):
    """Transformer whose encoder self-attention adds tree-traversal key embeddings.

    As `TreeDistance`, but `t_ij` embeds the shortest path from i to j spelt
    with U (up), D (down), L / R (to a left / right sibling), e.g. "UUD" or
    "LD", up to `max_traversal_length` moves (thesis: 10); longer paths share
    an overflow label and pairs with the `<EOS>` position the no-tree label.
    Relative positions are added when `max_relative_position > 0`. On
    subword problems, `source_word_positions=true` makes the codes those of
    the words (`src_word_position`): pieces of one word get the empty code.
    """

    label_name = TREE_TRAVERSAL
    limit_hparam = "max_traversal_length"
    label_count = staticmethod(tree_labels.tree_traversal_label_count)
    pair_labels = staticmethod(tree_labels.tree_traversal_labels)
