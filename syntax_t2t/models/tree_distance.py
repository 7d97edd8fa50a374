"""TreeDistance (thesis 3.1.2): key biases from source-tree distances."""

from syntax_t2t import registry
from syntax_t2t.layers import tree_labels
from syntax_t2t.models.tree_label_transformer import TreeLabelTransformer

TREE_DISTANCE = "tree_distance"


@registry.register_model("tree_distance")
class TreeDistance(TreeLabelTransformer):
    """Transformer whose encoder self-attention adds tree-distance key embeddings.

    `e_ij = q_i . (k_j + t_ij) / sqrt(d_k)` (eq. 3.3) in every encoder layer,
    `t_ij` the embedding of the number of edges between tokens i and j,
    clipped at `max_tree_distance` (thesis: 5 or 20). With
    `max_relative_position > 0` (e.g. `transformer_relative`) the relative
    position term `b_ij` is added too: the thesis's "(relative) +
    TreeDistance". The `<EOS>` position is not a tree node: its pairs share
    the no-tree label (see `layers/tree_labels.py`). The label matrices are
    computed from `src_heads` on the device, once per batch for all layers.
    On subword problems, `source_word_positions=true` makes the labels those
    of the words (`src_word_position`): pieces of one word are at distance 0.
    """

    label_name = TREE_DISTANCE
    limit_hparam = "max_tree_distance"
    label_count = staticmethod(tree_labels.tree_distance_label_count)
    pair_labels = staticmethod(tree_labels.tree_distance_labels)
