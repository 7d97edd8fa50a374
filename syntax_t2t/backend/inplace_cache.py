"""Self-attention caches written in place, for TensorFlow decoding without XLA.

A plain `(keys, values)` cache is written by a select that makes a new
tensor (`layers/attention_cache.py`). An `InPlaceCache` is written into its
own buffers instead (`InplaceUpdate`), which copies d numbers per row and
head rather than the whole cache: the select was a fifth of a beam-4
decoding step on a CPU (profile of 2026-11-24, docs/performance.md). This is
only correct while no one else holds those buffers, which the decoding loops
guarantee:

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
either way. XLA has no `InplaceUpdate` and JAX arrays are immutable: the XLA
decoder and every other backend use plain tuples.

This is the one module of the toolkit's modeling path that uses TensorFlow
itself. It is imported by `layers/attention_cache.py` on every backend, so
TensorFlow is imported only when a cache is made or written.
"""

import typing

import keras


class InPlaceCache(typing.NamedTuple):
    """A self-attention cache written in place (see the module docstring).

    Attributes:
        keys: [B, H, T_max, d].
        values: [B, H, T_max, d].
    """

    keys: typing.Any
    values: typing.Any


def _tensorflow():
    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise ValueError(f"in-place decoding caches need the TensorFlow backend (TensorFlow's "
                         f"InplaceUpdate), got Keras backend {backend!r}: decode with plain "
                         f"(keys, values) caches (in_place=False)")
    import tensorflow as tf

    return tf


def empty_in_place_cache(shape: typing.Sequence, dtype) -> InPlaceCache:
    """An `InPlaceCache` of zeros of `shape` [B, H, T_max, d], in two buffers of its own.

    Args:
        shape: [B, H, T_max, d], ints or int32 scalar tensors.
        dtype: the cache's dtype (the model's compute dtype).

    Returns:
        An `InPlaceCache` of two [B, H, T_max, d] zero tensors.
    """
    tf = _tensorflow()
    shape = tf.stack(shape)
    return InPlaceCache(*(tf.raw_ops.Empty(shape=shape, dtype=dtype, init=True)
                          for _ in range(2)))


def write_in_place(cache, position, new):
    """`cache[:, :, position:position + Sq] = new`, written into `cache`'s own buffer.

    Args:
        cache: [B, H, Sk, d], a buffer no one else reads (module docstring).
        position: int32 scalar, the first position written.
        new: [B, H, Sq, d] of `cache`'s dtype.

    Returns:
        `cache`'s buffer, written, as a tensor of its shape: the rows
        (b, h, position + j) of d numbers of a [B * H * Sk, d] view are
        replaced.
    """
    tf = _tensorflow()
    shape = tf.shape(cache)
    rows = (tf.range(shape[0] * shape[1])[:, None] * shape[2]
            + position + tf.range(tf.shape(new)[2])[None, :])
    written = tf.raw_ops.InplaceUpdate(x=tf.reshape(cache, [-1, shape[3]]),
                                       i=tf.reshape(rows, [-1]),
                                       v=tf.reshape(new, [-1, shape[3]]))
    return tf.ensure_shape(tf.reshape(written, shape), cache.shape)
