"""Attention biases from label embeddings, without per-pair embedding tensors.

Shaw et al. (2018) and thesis eq. 3.2-3.3 add a label embedding to every key,
`e_ij = q_i . (k_j + E[label_ij]) / sqrt(d)`, and optionally to every value,
`o_i = sum_j a_ij (v_j + F[label_ij])`. Expanding `E[label_ij]` per pair
builds a [B, Sq, Sk, d] tensor, which is what made the thesis's TreeDistance
and TreeTraversal models 70-200 % slower. The label vocabulary is small
(L <= ~90), so both terms are computed per label instead:

* key bias: `q_i . E[l]` for all labels l ([B, H, Sq, L], one small matmul),
  then a gather by `label_ij`;
* value bias: the probabilities are first summed per label,
  `P[i, l] = sum_{j: label_ij = l} a_ij`, then `P @ F` ([B, Sq, H, d]).

Queries arrive already scaled by 1/sqrt(d), so the key term needs no scaling.
"""

from typing import Sequence

from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.backend.kernels import xla_kernel


def label_logits(queries: Tensor, tables: Sequence[Tensor], labels: Sequence[Tensor]) -> Tensor:
    """Key-bias logits `sum_n q_i . E_n[label_n_ij]` for every head and pair.

    All label kinds of a layer (e.g. relative positions and tree traversals)
    go through one matmul with their stacked tables.

    Args:
        queries: [B, Sq, H, d] (already scaled by 1/sqrt(d)).
        tables: a list of [L_n, d] label embeddings, each shared by the heads
            (variables or tensors).
        labels: a list of int [B, Sq, Sk] label ids in [0, L_n), one per table.

    Returns:
        [B, H, Sq, Sk] in the dtype of `queries`: the sum over the kinds.
    """
    if not tables or len(tables) != len(labels):
        raise ValueError(f"label_logits needs one label tensor per table, got {len(tables)} "
                         f"tables and {len(labels)} label tensors")
    queries = ops.convert_to_tensor(queries)
    tables = [ops.cast(table, queries.dtype) for table in tables]
    labels = [ops.cast(ids, "int32") for ids in labels]
    return _label_logits(queries, tables, labels)


@xla_kernel
def _label_logits(queries: Tensor, tables: Sequence[Tensor], labels: Sequence[Tensor]) -> Tensor:
    # Labels last, so that each pair's logits are read off by a gather along
    # that axis, already in the output layout.
    per_label = ops.einsum("bqhd,ld->bhql", queries, ops.concatenate(tables, axis=0))
    offset, logits = 0, 0
    for table, ids in zip(tables, labels):
        ids = ids + offset  # the kind's rows of the stacked tables
        logits += ops.take_along_axis(per_label, ids[:, None, :, :], axis=3)
        offset += ops.shape(table)[0]
    return logits


def label_values(probs: Tensor, table: Tensor, labels: Tensor) -> Tensor:
    """Value-bias context `sum_j a_ij F[label_ij]` for every head and query.

    Args:
        probs: [B, H, Sq, Sk] attention probabilities.
        table: [L, d] label value embeddings, shared by the heads.
        labels: int [B, Sq, Sk] label ids in [0, L).

    Returns:
        [B, Sq, H, d] in the dtype of `probs`.
    """
    probs = ops.convert_to_tensor(probs)
    shape = ops.shape(probs)
    batch_size, num_heads, query_length = shape[0], shape[1], shape[2]
    num_labels = ops.shape(table)[0]
    per_pair = ops.reshape(ops.transpose(probs, (0, 2, 3, 1)), (-1, num_heads))
    # One segment per (batch, query, label): segment ids index a flat
    # [B * Sq * L] table of probability sums (a static count under JAX).
    rows = ops.reshape(ops.arange(batch_size * query_length, dtype="int32"),
                       (batch_size, query_length, 1))
    segments = ops.reshape(rows * num_labels + ops.cast(labels, "int32"), (-1,))
    per_label = ops.segment_sum(per_pair, segments,
                                num_segments=batch_size * query_length * num_labels)
    per_label = ops.reshape(per_label, (batch_size, query_length, num_labels, num_heads))
    return ops.einsum("bqlh,ld->bqhd", per_label, ops.cast(table, probs.dtype))
