"""TFRecord shards to batched `tf.data` pipelines, with T2T's token batching.

Batching follows Tensor2Tensor: `batch_size` counts tokens *including
padding*, and examples are grouped into geometric length buckets so that
little padding is wasted. Unlike T2T, every batch is padded to its bucket's
boundary rather than to its longest example, so the model sees a bounded set
of shapes (XLA compiles one program per shape):

    boundaries = bucket_boundaries(max_length=64, min_length_bucket=8,
                                   length_bucket_step=1.1)
    # [8, 9, 10, ..., 52, 57, 62, 64]; an example of length L goes to the
    # smallest boundary >= L, is padded to it, and batched
    # max(1, batch_size // boundary) at a time.

The length of an example is `max(len(inputs), len(targets))` (both counting
their `<EOS>`); `inputs` and `targets` of a batch are padded to the same
boundary, so every batch holds at most `batch_size` tokens per side (a single
example longer than `batch_size` is batched alone).

Modes:
    * `train`: shards and examples are shuffled, the data repeats forever,
      examples longer than `max_length` are dropped (and counted, see
      `PipelineCounters`), and only full batches are emitted, so batch sizes
      are static too.
    * `eval` (dev split) and `test`: one deterministic pass over the shards
      in order; no example is dropped (as T2T's default
      `eval_drop_long_sequences=False`). A longer example is batched alone
      and padded to the next multiple of `max_length`. The last batch of a
      bucket may be smaller. Batches come grouped by length, so their order
      is not the file order.

Syntax features are padded as `docs/design.md` specifies: `-1` for
`src_heads` and `tgt_heads` (so the `<EOS>` position has head -1) and `0` for
ids; the per-constituent `src_const_*` features to twice the batch length.

Derived features. A model whose inputs need Python to compute (the binary
trees of tree2seq, from `src_heads`) declares `DerivedFeatures`
(`data/derived_features.py`); the trainer adds them to every batch inside
the `tf.data` pipeline (`add_to`, through `tf.numpy_function`, on the
pipeline's threads rather than in the compiled model step) and the decoder
to every batch it pads (`compute`).

Without TensorFlow (the JAX backend), `data/numpy_pipeline.py` cuts the same
batches from the same shards, and its position can be checkpointed; the
rules both follow are `data/batching.py`'s.
"""

from typing import Optional, Sequence

import tensorflow as tf

# Re-exported: it lives in a module without TensorFlow, which models import.
from syntax_t2t.data.derived_features import DerivedFeatures  # noqa: F401
# The batching rules, shared with data/numpy_pipeline.py; re-exported as `pipeline.<name>`.
from syntax_t2t.data.batching import (  # noqa: F401
    DEFAULT_SHUFFLE_BUFFER_SIZE, EVAL, MODES, SPLIT_OF_MODE, TEST, TRAIN, bucket_batch_sizes,
    bucket_boundaries)
# The batch schema, read by this module and by its users as `pipeline.<name>`.
from syntax_t2t.data.schema import (  # noqa: F401
    CONSTITUENT_KEYS, CONSTITUENT_LENGTH_FACTOR, HEADS_KEY, HEADS_KEYS, HEADS_PADDING, ID_PADDING)

class PipelineCounters:
    """Counts what a training pipeline read and dropped, as it runs.

    The counts are `tf.Variable`s updated inside the input pipeline, so they
    lag behind by whatever is prefetched. Read them with `as_dict()`.

    Attributes:
        examples_read: examples parsed from the shards.
        dropped_too_long: training examples dropped for exceeding `max_length`.
    """

    def __init__(self):
        self.examples_read = tf.Variable(0, dtype=tf.int64, trainable=False, name="examples_read")
        self.dropped_too_long = tf.Variable(0, dtype=tf.int64, trainable=False,
                                            name="dropped_too_long")

    def as_dict(self) -> dict:
        return {"examples_read": int(self.examples_read.numpy()),
                "dropped_too_long": int(self.dropped_too_long.numpy())}


def serialize_example(features: dict) -> bytes:
    """A `tf.train.Example` holding each value as an int64 list, the same bytes in any process."""
    feature = {key: tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))
               for key, values in features.items()}
    # The feature map is a hash table whose order changes between processes:
    # sorted keys make shards that can be checksummed.
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
        deterministic=True)


def parse_example(serialized, feature_keys: Sequence[str]) -> dict:
    """Parses one serialized example into int32 vectors, one per feature key."""
    spec = {key: tf.io.RaggedFeature(tf.int64) for key in feature_keys}
    parsed = tf.io.parse_single_example(serialized, spec)
    return {key: tf.cast(parsed[key], tf.int32) for key in feature_keys}


def example_length(example: dict) -> tf.Tensor:
    """`max(len(inputs), len(targets))`, the length used for bucketing."""
    lengths = [tf.shape(example[key])[0] for key in ("inputs", "targets") if key in example]
    return tf.reduce_max(tf.stack(lengths))


def make_dataset(filenames: Sequence[str], feature_keys: Sequence[str], mode: str, hparams,
                 counters: Optional[PipelineCounters] = None,
                 shuffle_buffer_size: int = DEFAULT_SHUFFLE_BUFFER_SIZE,
                 seed: Optional[int] = None, deterministic: bool = False) -> tf.data.Dataset:
    """Batches of padded int32 features read from TFRecord shards.

    Args:
        filenames: the shards of one split.
        feature_keys: the keys each example holds (`inputs`, `targets`, and
            the `src_*` syntax features where present).
        mode: `train`, `eval` or `test` (see the module docstring).
        hparams: supplies `batch_size`, `max_length`, `min_length_bucket`
            and `length_bucket_step`.
        counters: optional `PipelineCounters` that this pipeline updates.
        shuffle_buffer_size: examples held for shuffling in training.
        seed: seeds the training shuffles; None draws a fresh order.
        deterministic: training batches in an order that depends on the
            seeds alone (`seed` and TensorFlow's global seed, which
            `bin/train --random_seed` sets). Otherwise parallel reads and
            parses hand on whichever example is ready first, which under load
            reorders the shuffle buffer's input (faster). TensorFlow's op
            determinism (`bin/train --deterministic`) forces this too.

    Returns:
        A dataset of dicts of int32 tensors of shape [batch, boundary].

    Raises:
        ValueError: unknown mode, or no files.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if not filenames:
        raise ValueError(f"no TFRecord files to read for mode {mode!r}")
    feature_keys = tuple(feature_keys)
    training = mode == TRAIN
    boundaries = bucket_boundaries(hparams.max_length, hparams.min_length_bucket,
                                   hparams.length_bucket_step)
    batch_sizes = bucket_batch_sizes(boundaries, hparams.batch_size)
    max_length = boundaries[-1]

    files = tf.data.Dataset.from_tensor_slices(list(filenames))
    if training:
        files = files.shuffle(len(filenames), seed=seed, reshuffle_each_iteration=True).repeat()
        dataset = files.interleave(tf.data.TFRecordDataset, cycle_length=min(len(filenames), 4),
                                   num_parallel_calls=tf.data.AUTOTUNE,
                                   deterministic=deterministic)
    else:
        dataset = tf.data.TFRecordDataset(files)
    dataset = dataset.map(lambda record: parse_example(record, feature_keys),
                          num_parallel_calls=tf.data.AUTOTUNE,
                          deterministic=deterministic or not training)
    if counters is not None:
        dataset = dataset.map(_counting(counters.examples_read))
    if training:
        dataset = dataset.filter(_length_filter(max_length, counters))
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed)

    dataset = dataset.group_by_window(
        key_func=_bucket_key(boundaries),
        reduce_func=_batcher(boundaries, batch_sizes, feature_keys, drop_remainder=training),
        window_size_func=_window_size(batch_sizes))
    return dataset.prefetch(tf.data.AUTOTUNE)


def _counting(variable):
    def count(example):
        variable.assign_add(1)
        return example
    return count


def _length_filter(max_length: int, counters: Optional[PipelineCounters]):
    def keep(example):
        too_long = example_length(example) > max_length
        if counters is not None:
            counters.dropped_too_long.assign_add(tf.cast(too_long, tf.int64))
        return tf.logical_not(too_long)
    return keep


def _bucket_key(boundaries: Sequence[int]):
    """Bucket index of an example; past the last boundary, one key per multiple of it."""
    boundary_tensor = tf.constant(boundaries, tf.int32)
    num_buckets, max_length = len(boundaries), boundaries[-1]

    def key(example):
        length = example_length(example)
        bucket = tf.searchsorted(boundary_tensor, tf.reshape(length, [1]), side="left")[0]
        overflow = num_buckets - 1 + (length + max_length - 1) // max_length
        return tf.cast(tf.where(length > max_length, overflow, bucket), tf.int64)
    return key


def _padded_length(boundaries: Sequence[int]):
    boundary_tensor = tf.constant(boundaries, tf.int64)
    num_buckets, max_length = len(boundaries), boundaries[-1]

    def padded_length(key):
        multiple = (key - num_buckets + 1) * max_length
        return tf.where(key < num_buckets, tf.gather(boundary_tensor, tf.minimum(key, num_buckets - 1)),
                        multiple)
    return padded_length


def _window_size(batch_sizes: Sequence[int]):
    batch_size_tensor = tf.constant(batch_sizes, tf.int64)
    num_buckets = len(batch_sizes)

    def window_size(key):
        # Examples past max_length (eval and test only) are batched alone.
        return tf.where(key < num_buckets,
                        tf.gather(batch_size_tensor, tf.minimum(key, num_buckets - 1)),
                        tf.constant(1, tf.int64))
    return window_size


def _batcher(boundaries, batch_sizes, feature_keys, drop_remainder: bool):
    padded_length = _padded_length(boundaries)
    window_size = _window_size(batch_sizes)
    padding_values = {key: tf.constant(HEADS_PADDING if key in HEADS_KEYS else ID_PADDING, tf.int32)
                      for key in feature_keys}

    def batch(key, window):
        length = tf.reshape(padded_length(key), [1])
        return window.padded_batch(
            window_size(key),
            padded_shapes={key_: length * CONSTITUENT_LENGTH_FACTOR if key_ in CONSTITUENT_KEYS
                           else length for key_ in feature_keys},
            padding_values=padding_values,
            drop_remainder=drop_remainder)
    return batch
