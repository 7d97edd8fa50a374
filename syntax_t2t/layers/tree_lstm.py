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
levels, so one step of a `tf.while_loop` computes a whole level of every
sentence at once: each sentence gathers the window of its slots that holds
that level, runs the cell on the gathered children and scatters the new
states back. A level holds at most S // 2 phrases (their spans are disjoint
and at least two words long), so the window, and every shape in the loop,
is static: the loop compiles with XLA, and its length is the deepest tree
of the batch, not the number of nodes.
"""

import keras
import tensorflow as tf

NUM_GATES = 5  # input, left forget, right forget, output, update
PAD_NODE = -1


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

    def __init__(self, units, kernel_initializer="glorot_uniform", forget_bias=1.0, **kwargs):
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
            return tf.concat([tf.zeros([d]), tf.fill([2 * d], forget_bias),
                              tf.zeros([2 * d])], axis=0)

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
        children = tf.concat([left_h, right_h], axis=-1)
        gates = tf.matmul(tf.reshape(children, [-1, 2 * self.units]), self.kernel) + self.bias
        gates = tf.reshape(gates, tf.concat([tf.shape(left_h)[:-1], [NUM_GATES * self.units]], 0))
        input_gate, left_forget, right_forget, output_gate, update = tf.split(gates, NUM_GATES, -1)
        c = (tf.sigmoid(input_gate) * tf.tanh(update) + tf.sigmoid(left_forget) * left_c
             + tf.sigmoid(right_forget) * right_c)
        h = tf.sigmoid(output_gate) * tf.tanh(c)
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

    def __init__(self, units, kernel_initializer="glorot_uniform", forget_bias=1.0, **kwargs):
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
        tree_left = tf.cast(tree_left, tf.int32)
        tree_right = tf.cast(tree_right, tf.int32)
        tree_level = tf.cast(tree_level, tf.int32)
        batch_size = tf.shape(leaf_h)[0]
        num_leaves = tf.shape(leaf_h)[1]
        num_slots = tf.shape(tree_left)[1]
        trash = num_leaves + num_slots  # where inactive window entries are written
        width = tf.maximum(tf.minimum(num_slots, num_leaves // 2), 1)
        offsets = tf.range(width)
        rows = tf.broadcast_to(tf.range(batch_size)[:, None], [batch_size, width])
        is_phrase = tree_left != PAD_NODE
        num_levels = tf.reduce_max(tf.concat([tf.reshape(tree_level, [-1]), [0]], 0))

        empty = tf.zeros(tf.stack([batch_size, num_slots + 1, self.units]), leaf_h.dtype)
        node_h = tf.concat([leaf_h, empty], axis=1)
        node_c = tf.concat([tf.cast(leaf_c, leaf_h.dtype), empty], axis=1)

        def compute_level(level, node_h, node_c):
            # A sentence's slots are sorted by level: this level starts after
            # the phrases of the lower ones.
            start = tf.reduce_sum(tf.cast(is_phrase & (tree_level < level), tf.int32), axis=1)
            slots = start[:, None] + offsets[None, :]
            in_range = slots < num_slots
            slots = tf.minimum(slots, num_slots - 1)
            active = in_range & tf.equal(tf.gather(tree_level, slots, batch_dims=1), level)
            left = tf.where(active, tf.gather(tree_left, slots, batch_dims=1), 0)
            right = tf.where(active, tf.gather(tree_right, slots, batch_dims=1), 0)
            h, c = self.cell(tf.gather(node_h, left, batch_dims=1),
                             tf.gather(node_c, left, batch_dims=1),
                             tf.gather(node_h, right, batch_dims=1),
                             tf.gather(node_c, right, batch_dims=1))
            targets = tf.stack([rows, tf.where(active, num_leaves + slots, trash)], axis=-1)
            node_h = tf.tensor_scatter_nd_update(node_h, targets, tf.cast(h, node_h.dtype))
            node_c = tf.tensor_scatter_nd_update(node_c, targets, tf.cast(c, node_c.dtype))
            return level + 1, node_h, node_c

        _, node_h, node_c = tf.while_loop(
            lambda level, *_: level <= num_levels, compute_level,
            (tf.constant(1, tf.int32), node_h, node_c),
            # A level is at most the number of phrases: bounds the loop for XLA's gradient.
            maximum_iterations=num_slots)
        phrases = slice(None), slice(num_leaves, num_leaves + num_slots)
        return node_h[phrases], node_c[phrases]

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
    num_phrases = tf.reduce_sum(tf.cast(tf.not_equal(tree_left, PAD_NODE), tf.int32), axis=1)
    last_phrase = tf.gather(phrase_states, tf.maximum(num_phrases - 1, 0), batch_dims=1)
    first_leaf = leaf_states[:, 0]
    num_leaves = tf.cast(num_leaves, tf.int32)
    root = tf.where((num_phrases > 0)[:, None], last_phrase, first_leaf)
    return tf.where((num_leaves > 0)[:, None], root, tf.zeros_like(root))
