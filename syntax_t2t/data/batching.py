"""The batching rules every input pipeline follows: modes, length buckets, token budgets.

Two pipelines turn shards into batches: `data/pipeline.py` (`tf.data`, the
TensorFlow backend's) and `data/numpy_pipeline.py` (NumPy, for backends
without TensorFlow). They must cut the same batches, so the rules live here,
in plain Python, once: which bucket an example of a given length goes to,
how long that bucket's batches are padded and how many examples they hold
(see `data/pipeline.py`'s docstring for the worked example). Nothing here
imports TensorFlow.
"""

import bisect
from typing import Sequence

TRAIN, EVAL, TEST = "train", "eval", "test"
MODES = (TRAIN, EVAL, TEST)
SPLIT_OF_MODE = {TRAIN: "train", EVAL: "dev", TEST: "test"}

DEFAULT_SHUFFLE_BUFFER_SIZE = 10_000


def bucket_boundaries(max_length: int, min_length_bucket: int = 8,
                      length_bucket_step: float = 1.1) -> list[int]:
    """Geometric bucket boundaries, as T2T's `_bucket_boundaries`, ending at `max_length`.

    Args:
        max_length: the longest example kept in training; the last boundary.
        min_length_bucket: the first boundary.
        length_bucket_step: the factor between neighbouring boundaries
            (each boundary grows by at least 1).

    Returns:
        Strictly increasing boundaries; the last is `max_length`.

    Raises:
        ValueError: for a non-positive length or a step not above 1.
    """
    if max_length < 1 or min_length_bucket < 1:
        raise ValueError(
            f"max_length ({max_length}) and min_length_bucket ({min_length_bucket}) must be >= 1")
    if not length_bucket_step > 1.0:
        raise ValueError(f"length_bucket_step must be > 1, got {length_bucket_step}")
    boundaries = []
    length = min_length_bucket
    while length < max_length:
        boundaries.append(length)
        length = max(length + 1, int(length * length_bucket_step))
    boundaries.append(max_length)
    return boundaries


def bucket_batch_sizes(boundaries: Sequence[int], batch_size: int) -> list[int]:
    """Examples per batch in each bucket: `max(1, batch_size // boundary)`.

    Rounding down keeps every batch within the token budget.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return [max(1, batch_size // boundary) for boundary in boundaries]


def bucket_key(length: int, boundaries: Sequence[int]) -> int:
    """The bucket of an example of `length` tokens.

    Within `max_length` (the last boundary) it is the index of the smallest
    boundary that fits; past it (eval and test keep such examples) each
    multiple of `max_length` is a key of its own, after the boundaries.
    """
    max_length = boundaries[-1]
    if length <= max_length:
        return bisect.bisect_left(boundaries, length)
    return len(boundaries) - 1 + -(-length // max_length)


def padded_length(key: int, boundaries: Sequence[int]) -> int:
    """The length a batch of bucket `key` is padded to (`bucket_key`'s inverse)."""
    if key < len(boundaries):
        return boundaries[key]
    return (key - len(boundaries) + 1) * boundaries[-1]


def window_size(key: int, batch_sizes: Sequence[int]) -> int:
    """Examples per batch of bucket `key`; one past `max_length`."""
    return batch_sizes[key] if key < len(batch_sizes) else 1
