"""The self-attention key/value cache of incremental decoding, and how a step writes it.

A cache is a `(keys, values)` pair of [B, H, T_max, d] tensors (heads first,
see `MultiHeadAttention.keys_and_values`; an `InPlaceCache` keeps its keys
transposed); a decoding step writes the keys and values of its position
into both. A plain tuple is written by a select
that makes a new tensor (`attention._write_at`), so the cache passed in
stays as it was.

An `InPlaceCache` is written into its own buffers instead (`InplaceUpdate`),
which copies d numbers per row and head rather than the whole cache: the
select was a fifth of a beam-4 decoding step on a CPU (profile of
2026-11-24, docs/performance.md). This is only correct while no one else
holds those buffers, which the decoding loops guarantee:

* `empty_in_place_cache` allocates each buffer with `Empty`, a stateful op
  that graph optimisation never merges with an identical one (as it may
  merge identical `zeros`), so no two caches share memory;
* a step's new cache is its input, written; the loops pass it on and never
  read the old one again;
* the beam search reorders the cache with a gather, which makes new
  buffers;
* a step writes position t + 1 only after the tokens of step t are known,
  that is after every read of step t (greedy and beam search feed back the
  tokens they chose).

Both writes store the same numbers, so decoding gives the same outputs
either way. XLA has no `InplaceUpdate`: the XLA decoder uses plain tuples.
"""

import typing

import tensorflow as tf


class InPlaceCache(typing.NamedTuple):
    """A self-attention cache written in place (see the module docstring).

    The keys are stored transposed, so that a step's logits are one plain
    batched matmul of the queries by them (without a copy of the keys made
    to transpose them: a third of the time on a CPU, same numbers).

    Attributes:
        keys: [B, H, d, T_max].
        values: [B, H, T_max, d].
    """

    keys: tf.Tensor
    values: tf.Tensor


def empty_in_place_cache(batch_size, num_heads, length, key_dim, dtype):
    """An `InPlaceCache` of zeros for `length` positions, in two buffers of its own."""
    def empty(shape):
        return tf.raw_ops.Empty(shape=tf.stack(shape), dtype=dtype, init=True)

    return InPlaceCache(keys=empty([batch_size, num_heads, key_dim, length]),
                        values=empty([batch_size, num_heads, length, key_dim]))


def write_in_place(cache, position, keys, values):
    """Writes a step's keys and values into `cache`'s own buffers.

    Args:
        cache: an `InPlaceCache` no one else reads (module docstring).
        position: int32 scalar, the first position written.
        keys, values: [B, H, Sq, d] of the cache's dtype, for positions
            `position ... position + Sq - 1`.

    Returns:
        The written `InPlaceCache` (the same buffers).
    """
    count = tf.shape(keys)[2]
    # Keys: the elements (row r, column position + j) of a [B * H * d, T] view.
    key_shape = tf.shape(cache.keys)
    rows = tf.range(key_shape[0] * key_shape[1] * key_shape[2])[:, None]
    key_indices = rows * key_shape[3] + position + tf.range(count)[None, :]
    written_keys = tf.raw_ops.InplaceUpdate(
        x=tf.reshape(cache.keys, [-1, 1]), i=tf.reshape(key_indices, [-1]),
        v=tf.reshape(tf.transpose(keys, [0, 1, 3, 2]), [-1, 1]))
    # Values: rows (b, h, position + j) of d numbers of a [B * H * T, d] view.
    value_shape = tf.shape(cache.values)
    rows = tf.range(value_shape[0] * value_shape[1])[:, None]
    value_indices = rows * value_shape[2] + position + tf.range(count)[None, :]
    written_values = tf.raw_ops.InplaceUpdate(
        x=tf.reshape(cache.values, [-1, value_shape[3]]), i=tf.reshape(value_indices, [-1]),
        v=tf.reshape(values, [-1, value_shape[3]]))
    return InPlaceCache(
        keys=tf.ensure_shape(tf.reshape(written_keys, key_shape), cache.keys.shape),
        values=tf.ensure_shape(tf.reshape(written_values, value_shape), cache.values.shape))
