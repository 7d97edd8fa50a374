"""The self-attention key/value cache of incremental decoding, and how a step writes it.

A cache is a `(keys, values)` pair of [B, H, T_max, d] tensors (heads first,
see `MultiHeadAttention.keys_and_values`); a decoding step writes the keys
and values of its position into both (`write`). A plain tuple is written
into new tensors, so the cache passed in stays as it was: this works on
every backend and under XLA. An `InPlaceCache` (`syntax_t2t.backend.
inplace_cache`, re-exported here) is written into its own buffers instead,
for TensorFlow decoding without XLA; both store the same numbers.
"""

from typing import Tuple, Union

import keras

from syntax_t2t.backend import Tensor
from syntax_t2t.backend.inplace_cache import InPlaceCache, empty_in_place_cache, write_in_place

__all__ = ["InPlaceCache", "empty_in_place_cache", "write", "write_at", "write_in_place"]

#: What `MultiHeadAttention` takes as a self-attention cache.
Cache = Union[Tuple[Tensor, Tensor], InPlaceCache]


def write(cache: Cache, position: Tensor, keys: Tensor, values: Tensor) -> Cache:
    """Writes a step's keys and values into `cache` at `position`.

    Args:
        cache: `(keys, values)`, each [B, H, T_max, d], or an `InPlaceCache`.
        position: int32 scalar, the position of the first new row.
        keys: [B, H, Sq, d] in the cache's dtype.
        values: [B, H, Sq, d] in the cache's dtype.

    Returns:
        A cache of `cache`'s kind with the new rows written: an
        `InPlaceCache` written into its own buffers, a plain pair written
        into new tensors.
    """
    if isinstance(cache, InPlaceCache):
        return InPlaceCache(write_in_place(cache.keys, position, keys),
                            write_in_place(cache.values, position, values))
    return write_at(cache[0], position, keys), write_at(cache[1], position, values)


def write_at(cache: Tensor, position: Tensor, new: Tensor) -> Tensor:
    """`cache[:, :, position:position + Sq] = new` in a new tensor.

    One position (a decoding step) is written by a select over the cache,
    the new row broadcast along the positions: without XLA, TensorFlow ran
    `dynamic_update_slice` (`keras.ops.slice_update`) and scatters 5 to 6
    times slower per byte on a CPU (the first as a one-op XLA program per
    call; docs/performance.md). Several positions are written with
    `slice_update`, which needs no padding to a dynamic position (JAX
    cannot pad by a traced width).

    Args:
        cache: [B, H, Sk, d].
        position: int32 scalar, the first position written.
        new: [B, H, Sq, d] of `cache`'s dtype.

    Returns:
        [B, H, Sk, d].
    """
    if new.shape[2] != 1:
        return keras.ops.slice_update(cache, (0, 0, position, 0), new)
    positions = keras.ops.arange(keras.ops.shape(cache)[2], dtype="int32")
    at = keras.ops.equal(positions, keras.ops.cast(position, "int32"))
    return keras.ops.where(at[None, None, :, None], new, cache)
