"""Attention biases from label embeddings, without per-pair embedding tensors.

Shaw et al. (2018) and thesis eq. 3.2-3.3 add a label embedding to every key,
`e_ij = q_i . (k_j + E[label_ij]) / sqrt(d)`, and optionally to every value,
`o_i = sum_j a_ij (v_j + F[label_ij])`. Expanding `E[label_ij]` per pair
builds a [B, Sq, Sk, d] tensor, which is what made the thesis's TreeDistance
and TreeTraversal models 70-200 % slower. The label vocabulary is small
(L <= ~90), so both terms are computed per label instead:

* key bias: `q_i . E[l]` for all labels l ([B, Sq, L, H], one small matmul),
  then a gather by `label_ij`;
* value bias: the probabilities are first summed per label,
  `P[i, l] = sum_{j: label_ij = l} a_ij`, then `P @ F` ([B, Sq, H, d]).

Queries arrive already scaled by 1/sqrt(d), so the key term needs no scaling.
"""

import tensorflow as tf


def label_logits(queries, tables, labels):
    """Key-bias logits `sum_n q_i . E_n[label_n_ij]` for every head and pair.

    All label kinds of a layer (e.g. relative positions and tree traversals)
    go through one matmul with their stacked tables and one compiled call.

    Args:
        queries: [B, Sq, H, d] (already scaled by 1/sqrt(d)).
        tables: a list of [L_n, d] label embeddings, each shared by the heads
            (variables or tensors).
        labels: a list of int32 [B, Sq, Sk] label ids in [0, L_n), one per table.

    Returns:
        [B, H, Sq, Sk] in the dtype of `queries`: the sum over the kinds.
    """
    queries = tf.convert_to_tensor(queries)
    tables = [tf.cast(table, queries.dtype) for table in tables]
    labels = [tf.cast(ids, tf.int32) for ids in labels]
    if not tables or len(tables) != len(labels):
        raise ValueError(f"label_logits needs one label tensor per table, got {len(tables)} "
                         f"tables and {len(labels)} label tensors")
    logits = _compiled_label_logits(queries, tables, labels)
    # A compiled function's outputs have no shape in the graph; the
    # optimizer's cost model warns about every op that follows them.
    return tf.ensure_shape(
        logits, [queries.shape[0], queries.shape[2], queries.shape[1], labels[0].shape[-1]])


# XLA fuses the matmul, gathers and transpose (and their gradients) into a few
# loops: 1.1 ms instead of 2.1 ms for a transformer_tiny layer's forward and
# backward pass with 88 labels, 3.3 instead of 7.9 ms at transformer_base
# widths (docs/performance.md). It is compiled once per shape, also inside a
# step that is not compiled as a whole.
@tf.function(jit_compile=True)
def _compiled_label_logits(queries, tables, labels):
    per_label = tf.einsum("bqhd,ld->bqlh", queries, tf.concat(tables, axis=0))
    offset, per_pair = 0, 0
    for table, ids in zip(tables, labels):
        # Gathering along L moves H-vectors, one per (query, key) pair.
        per_pair += tf.gather(per_label, ids + offset, axis=2, batch_dims=2)
        offset += tf.shape(table)[0]
    return tf.transpose(per_pair, [0, 3, 1, 2])


def label_values(probs, table, labels):
    """Value-bias context `sum_j a_ij F[label_ij]` for every head and query.

    Args:
        probs: [B, H, Sq, Sk] attention probabilities.
        table: [L, d] label value embeddings, shared by the heads.
        labels: int32 [B, Sq, Sk] label ids in [0, L).

    Returns:
        [B, Sq, H, d] in the dtype of `probs`.
    """
    shape = tf.shape(probs)
    batch_size, num_heads, query_length = shape[0], shape[1], shape[2]
    num_labels = tf.shape(table)[0]
    per_pair = tf.transpose(probs, [0, 2, 3, 1])
    # One segment per (batch, query, label): segment ids index a flat
    # [B * Sq * L] table of probability sums.
    rows = tf.reshape(tf.range(batch_size * query_length), [batch_size, query_length, 1])
    segments = rows * num_labels + labels
    per_label = tf.math.unsorted_segment_sum(
        per_pair, segments, batch_size * query_length * num_labels)
    per_label = tf.reshape(per_label, [batch_size, query_length, num_labels, num_heads])
    return tf.einsum("bqlh,ld->bqhd", per_label, tf.cast(table, probs.dtype))
