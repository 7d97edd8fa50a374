"""The binary Tree-LSTM of Eriguchi et al. (2016), run over a batch of trees level by level.

A phrase node k with children l and r (words or phrases) gets (their eq. 11)

    i   = sigmoid(U_l^i h_l + U_r^i h_r + b^i)
    f_l = sigmoid(U_l^fl h_l + U_r^fl h_r + b^fl)    f_r likewise
    o   = sigmoid(U_l^o h_l + U_r^o h_r + b^o)
    u   = tanh(U_l^u h_l + U_r^u h_r + b^u)
    c_k = i * u + f_l * c_l + f_r * c_r
    h_k = o * tanh(c_k)

(`BinaryTreeLSTMCell`). Its leaves are not embeddings but the states of the
sequential LSTM run over the sentence, so phrases are built from words in
context (their Section 3.1).

`BinaryTreeLSTM` computes every phrase of a batch of trees bottom-up. The
trees come in the level-order encoding of `syntax_t2t.data.binary_tree`
(`batch_binary_trees`): in a batch of S leaf positions, leaves are nodes
0..S-1 and phrase slot k is node S + k; each sentence lists its phrase
nodes sorted by level (a word is at level 0, a phrase one above its higher
child), then padding -1. All phrases of one level depend only on lower
levels, so one step of a loop computes a whole level of every
sentence at once: each sentence gathers the window of its slots that holds
that level, runs the cell on the gathered children and scatters the new
states back. A level holds at most S // 2 phrases (their spans are disjoint
and at least two words long), so the window, and every shape in the loop,
is static: the loop compiles with XLA. Its length is the deepest tree of
the batch, not the number of nodes; under JAX, which differentiates loops
of a static length only, it runs P steps (a level never exceeds the number
of phrase slots P) and skips those above the deepest tree
(`backend/loops.py`).
"""

import keras
from keras import ops

from syntax_t2t.backend.loops import bounded_fori_loop

NUM_GATES = 5  # input, left forget, right forget, output, update
PAD_NODE = -1


def batch_gather(values, index):
    """`values[b, index[b, w]]`: values [B, N, ...], index int [B, W] -> [B, W, ...].

    One `take` over the flattened batch: unlike `take_along_axis`, it gathers
    whole rows rather than one element per feature.
    """
    batch_size, num_rows = ops.shape(values)[0], ops.shape(values)[1]
    flat = ops.reshape(values, (-1,) + tuple(values.shape[2:]))
    offsets = ops.arange(batch_size, dtype="int32")[:, None] * num_rows
    return ops.take(flat, ops.cast(index, "int32") + offsets, axis=0)


class BinaryTreeLSTMCell(keras.layers.Layer):
    """One binary Tree-LSTM unit (eq. 11): two children's (h, c) -> the parent's (h, c).

    Args:
        units: d, the width of h and c.
        kernel_initializer: initializer of the [U_l; U_r] kernel (the paper:
            uniform in [-0.1, 0.1]).
        forget_bias: initial bias of both forget gates (the paper, after
            Józefowicz et al. 2015: 1.0); the other biases start at 0.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, units: int, kernel_initializer="glorot_uniform", forget_bias: float = 1.0,
                 **kwargs):
        super().__init__(**kwargs)
        self.units = int(units)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.forget_bias = float(forget_bias)

    def build(self, input_shape=None):
        """Creates the kernel [2d, 5d] (rows: left child, then right) and the bias [5d]."""
        d = self.units
        self.kernel = self.add_weight(shape=(2 * d, NUM_GATES * d), name="kernel",
                                      initializer=self.kernel_initializer)
        forget_bias = self.forget_bias

        def bias_initializer(shape, dtype=None):
            # Gate order i, f_l, f_r, o, u: the two forget gates get forget_bias.
            return ops.concatenate([ops.zeros([d], dtype), ops.full([2 * d], forget_bias, dtype),
                                    ops.zeros([2 * d], dtype)], axis=0)

        self.bias = self.add_weight(shape=(NUM_GATES * d,), name="bias",
                                    initializer=bias_initializer)
        self.built = True

    def call(self, left_h, left_c, right_h, right_c):
        """Combines two children, elementwise over any leading dimensions.

        Args:
            left_h, left_c, right_h, right_c: [..., d].

        Returns:
            `(h, c)`, each [..., d].
        """
        children = ops.concatenate([left_h, right_h], axis=-1)
        # A matmul over the last axis: any leading dimensions stay as they are.
        gates = ops.matmul(children, ops.cast(self.kernel, children.dtype)) + ops.cast(
            self.bias, children.dtype)
        input_gate, left_forget, right_forget, output_gate, update = ops.split(
            gates, NUM_GATES, axis=-1)
        c = (ops.sigmoid(input_gate) * ops.tanh(update) + ops.sigmoid(left_forget) * left_c
             + ops.sigmoid(right_forget) * right_c)
        h = ops.sigmoid(output_gate) * ops.tanh(c)
        return h, c

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, forget_bias=self.forget_bias,
                      kernel_initializer=keras.initializers.serialize(self.kernel_initializer))
        return config


class BinaryTreeLSTM(keras.layers.Layer):
    """Computes every phrase node of a batch of binary trees, level by level (module docstring).

    Args:
        units: d, the width of h and c (that of the leaf states).
        kernel_initializer, forget_bias: as in `BinaryTreeLSTMCell`.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, units: int, kernel_initializer="glorot_uniform", forget_bias: float = 1.0,
                 **kwargs):
        super().__init__(**kwargs)
        self.units = int(units)
        self.cell = BinaryTreeLSTMCell(units, kernel_initializer=kernel_initializer,
                                       forget_bias=forget_bias, dtype=self.dtype_policy,
                                       name="cell")

    def build(self, input_shape=None):
        self.cell.build()
        self.built = True

    def call(self, leaf_h, leaf_c, tree_left, tree_right, tree_level):
        """Runs the cell bottom-up over every tree of the batch.

        Args:
            leaf_h, leaf_c: [B, S, d], the states of leaf positions 0..S-1.
            tree_left, tree_right: int [B, P], the children of phrase slot k
                (node S + k) of each sentence; -1 after its last phrase.
            tree_level: int [B, P], the level of each phrase slot, non-decreasing
                within a sentence; -1 for padding.

        Returns:
            `(phrase_h, phrase_c)`, each [B, P, d]; padding slots are zero.
        """
        tree_left = ops.cast(tree_left, "int32")
        tree_right = ops.cast(tree_right, "int32")
        tree_level = ops.cast(tree_level, "int32")
        batch_size, num_leaves = ops.shape(leaf_h)[0], ops.shape(leaf_h)[1]
        num_slots = ops.shape(tree_left)[1]
        trash = num_leaves + num_slots  # where inactive window entries are written
        if isinstance(num_slots, int) and isinstance(num_leaves, int):
            width = max(min(num_slots, num_leaves // 2), 1)  # static (JAX, known shapes)
        else:
            width = ops.maximum(ops.minimum(num_slots, num_leaves // 2), 1)
        offsets = ops.arange(width, dtype="int32")
        rows = ops.broadcast_to(ops.arange(batch_size, dtype="int32")[:, None],
                                (batch_size, width))
        is_phrase = ops.not_equal(tree_left, PAD_NODE)
        num_levels = ops.max(ops.concatenate(
            [ops.reshape(tree_level, [-1]), ops.zeros([1], "int32")], axis=0))

        empty = ops.zeros((batch_size, num_slots + 1, self.units), leaf_h.dtype)
        nodes = (ops.concatenate([leaf_h, empty], axis=1),
                 ops.concatenate([ops.cast(leaf_c, leaf_h.dtype), empty], axis=1))

        def compute_level(level, nodes):
            node_h, node_c = nodes
            # A sentence's slots are sorted by level: this level starts after
            # the phrases of the lower ones.
            start = ops.sum(ops.cast(is_phrase & (tree_level < level), "int32"), axis=1)
            slots = start[:, None] + offsets[None, :]
            in_range = slots < num_slots
            slots = ops.minimum(slots, num_slots - 1)
            active = in_range & ops.equal(batch_gather(tree_level, slots), level)
            left = ops.where(active, batch_gather(tree_left, slots), 0)
            right = ops.where(active, batch_gather(tree_right, slots), 0)
            h, c = self.cell(batch_gather(node_h, left), batch_gather(node_c, left),
                             batch_gather(node_h, right), batch_gather(node_c, right))
            targets = ops.reshape(ops.stack(
                [rows, ops.where(active, num_leaves + slots, trash)], axis=-1), (-1, 2))
            node_h = ops.scatter_update(node_h, targets,
                                        ops.reshape(ops.cast(h, node_h.dtype), (-1, self.units)))
            node_c = ops.scatter_update(node_c, targets,
                                        ops.reshape(ops.cast(c, node_c.dtype), (-1, self.units)))
            return node_h, node_c

        # A level is at most the number of phrases: the bound both backends' gradients need.
        node_h, node_c = bounded_fori_loop(1, num_levels + 1, compute_level, nodes,
                                           maximum_iterations=num_slots)
        end = num_leaves + num_slots
        return node_h[:, num_leaves:end], node_c[:, num_leaves:end]

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, forget_bias=self.cell.forget_bias,
                      kernel_initializer=keras.initializers.serialize(self.cell.kernel_initializer))
        return config


def root_states(leaf_states, phrase_states, tree_left, num_leaves):
    """The root node's state of every tree, zero for a sentence without a tree.

    The root of a tree with phrases is its last phrase slot (the only node of
    the top level); a one-word tree is its word (leaf 0); a sentence whose
    parse is missing (`num_leaves` 0) gets zeros, as the paper sets
    h_root = 0 when the parser fails (Section 3.2).

    Args:
        leaf_states: [B, S, d].
        phrase_states: [B, P, d].
        tree_left: int [B, P], -1 for padding slots.
        num_leaves: int [B], the words of each tree; 0 = no tree.

    Returns:
        [B, d].
    """
    num_phrases = ops.sum(ops.cast(ops.not_equal(tree_left, PAD_NODE), "int32"), axis=1)
    last_phrase = batch_gather(phrase_states, ops.maximum(num_phrases - 1, 0)[:, None])[:, 0]
    first_leaf = leaf_states[:, 0]
    num_leaves = ops.cast(num_leaves, "int32")
    root = ops.where((num_phrases > 0)[:, None], last_phrase, first_leaf)
    return ops.where((num_leaves > 0)[:, None], root, ops.zeros_like(root))
