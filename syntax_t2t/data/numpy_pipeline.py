"""TFRecord shards to batches of NumPy arrays, without TensorFlow, resumable exactly.

The input of backends without TensorFlow (JAX): the batches of
`data/pipeline.py`'s `make_dataset` (same length buckets, token budgets,
padding, too-long counts; the rules are `data/batching.py`'s), read with
`data/tfrecord.py`, which checks every record's checksums. Derived features
(`DerivedFeatures.compute`) are added to each batch on the host.

Modes, as `make_dataset`'s:
    * `train`: each epoch reads the shards in a fresh random order, one
      after another; examples longer than `max_length` are dropped and
      counted; the rest pass through a shuffle buffer (`tf.data`'s rule: once
      the buffer is full, each new example takes the place of a uniformly
      drawn one, which goes on to its bucket); a bucket emits a batch when
      full; the data repeats forever. All draws come from one seeded
      `numpy.random.Generator`.
    * `eval` and `test`: one pass over the shards in order; nothing is
      dropped (a longer example is batched alone, padded to the next
      multiple of `max_length`); at the end the partly filled buckets are
      emitted, the shortest first. This is exactly `make_dataset`'s
      sequence of batches.

Position. `BatchIterator.state()` is a JSON-able dict that pins the stream:
the epoch, its shard order, the next record's shard and byte offset, the
generator's state, the counters, and each example held in the shuffle
buffer and the buckets by its shard and byte offset (not its content, so the
state stays small). `restore(state)` into an iterator of a dataset built
with the same shards and batching re-reads the held examples and goes on, so
that a killed and resumed run reads the batches the uninterrupted run would
have read.

    dataset = NumpyDataset(files, keys, "train", hparams, seed=1)
    batches = iter(dataset)
    first = next(batches)
    saved = batches.state()          # e.g. into the checkpoint
    resumed = iter(NumpyDataset(files, keys, "train", hparams, seed=1))
    resumed.restore(saved)           # next(resumed) == next(batches)
"""

import collections
import os
from typing import Iterator, Optional, Sequence

import numpy as np

from syntax_t2t.data import tfrecord
from syntax_t2t.data.batching import (DEFAULT_SHUFFLE_BUFFER_SIZE, MODES, TRAIN, bucket_batch_sizes,
                                      bucket_boundaries, bucket_key, padded_length, window_size)
from syntax_t2t.data.derived_features import DerivedFeatures
from syntax_t2t.data.schema import (CONSTITUENT_KEYS, CONSTITUENT_LENGTH_FACTOR, HEADS_KEYS,
                                    HEADS_PADDING, ID_PADDING)

STATE_FORMAT = "syntax_t2t.numpy_pipeline/1"


class PipelineCounters:
    """Counts what a pipeline read and dropped: `pipeline.PipelineCounters` as plain integers.

    Unlike the `tf.data` counters they do not lag: nothing is prefetched.

    Attributes:
        examples_read: examples parsed from the shards.
        dropped_too_long: training examples dropped for exceeding `max_length`.
    """

    def __init__(self):
        self.examples_read = 0
        self.dropped_too_long = 0

    def as_dict(self) -> dict:
        return {"examples_read": self.examples_read, "dropped_too_long": self.dropped_too_long}


class NumpyDataset:
    """Batches of padded int32 arrays read from TFRecord shards; iterate it for a `BatchIterator`.

    Each iteration starts from the beginning, as a `tf.data.Dataset`'s does.

    Args:
        filenames: the shards of one split.
        feature_keys: the keys each example holds.
        mode: `train`, `eval` or `test` (see the module docstring).
        hparams: supplies `batch_size`, `max_length`, `min_length_bucket`
            and `length_bucket_step`.
        counters: optional `PipelineCounters` that the iterators update.
        shuffle_buffer_size: examples held for shuffling in training.
        seed: seeds the training draws; None draws fresh entropy (the
            iterator's state still pins the stream).
        derived: features computed from each batch and added to it.
        row_multiple: pad each batch with all-padding rows up to a multiple
            of this many rows (data parallelism splits a batch evenly over
            its devices). A padding row has no target tokens, so it weighs
            nothing in the token-weighted losses and counts.

    Raises:
        ValueError: unknown mode, no files, a shuffle buffer or a
            `row_multiple` under 1.
    """

    def __init__(self, filenames: Sequence[str], feature_keys: Sequence[str], mode: str, hparams,
                 counters: Optional[PipelineCounters] = None,
                 shuffle_buffer_size: int = DEFAULT_SHUFFLE_BUFFER_SIZE,
                 seed: Optional[int] = None, derived: Optional[DerivedFeatures] = None,
                 row_multiple: int = 1):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
        if not filenames:
            raise ValueError(f"no TFRecord files to read for mode {mode!r}")
        if shuffle_buffer_size < 1:
            raise ValueError(f"shuffle_buffer_size must be >= 1, got {shuffle_buffer_size}")
        if row_multiple < 1:
            raise ValueError(f"row_multiple must be >= 1, got {row_multiple}")
        self.filenames = [os.fspath(name) for name in filenames]
        self.feature_keys = tuple(feature_keys)
        self.mode = mode
        self.training = mode == TRAIN
        self.boundaries = bucket_boundaries(hparams.max_length, hparams.min_length_bucket,
                                            hparams.length_bucket_step)
        self.batch_sizes = bucket_batch_sizes(self.boundaries, hparams.batch_size)
        self.counters = counters
        self.shuffle_buffer_size = shuffle_buffer_size
        self.seed = seed
        self.derived = derived
        # Not in `signature`: the rows added are not read from the stream, so
        # a run resumed on another number of devices continues the same stream.
        self.row_multiple = row_multiple

    def __iter__(self) -> "BatchIterator":
        return BatchIterator(self)

    def signature(self) -> dict:
        """What a saved position is only valid for: the shards (by name) and the batching."""
        return {"mode": self.mode, "files": [os.path.basename(name) for name in self.filenames],
                "feature_keys": list(self.feature_keys), "boundaries": list(self.boundaries),
                "batch_sizes": list(self.batch_sizes),
                "shuffle_buffer_size": self.shuffle_buffer_size if self.training else None}


class BatchIterator:
    """One pass (eval, test) or the endless stream (train) of a `NumpyDataset`'s batches.

    Args:
        dataset: what to read.
    """

    def __init__(self, dataset: NumpyDataset):
        self._dataset = dataset
        self._keys = dataset.feature_keys
        self._max_length = dataset.boundaries[-1]
        self._counters = dataset.counters if dataset.counters is not None else PipelineCounters()
        self._rng = np.random.default_rng(dataset.seed) if dataset.training else None
        # Training starts each epoch (and so the first) by drawing its shard order.
        self._epoch = 0 if dataset.training else 1
        self._order = [] if dataset.training else list(range(len(dataset.filenames)))
        self._position = 0  # index into _order of the shard being read
        self._offset = 0  # byte offset of the next record of that shard
        self._kept_in_epoch = 0
        self._exhausted = False
        self._records: Optional[Iterator[tuple[int, bytes]]] = None
        self._reader: Optional[tfrecord.RecordReader] = None
        # Held examples: (shard index, byte offset, features, bucket key).
        self._buffer: list[tuple] = []
        self._windows: dict[int, list[tuple]] = collections.defaultdict(list)

    def __iter__(self) -> "BatchIterator":
        return self

    def __next__(self) -> dict[str, np.ndarray]:
        if self._dataset.training:
            return self._next_training_batch()
        return self._next_evaluation_batch()

    def close(self) -> None:
        """Closes the shard being read (also done at the end of each shard)."""
        # getattr: also called by __del__ after an __init__ that failed.
        if getattr(self, "_reader", None) is not None:
            self._reader.close()
        self._reader, self._records = None, None

    def __del__(self):
        # A training stream has no end: it is dropped, not read to its last batch.
        self.close()

    # ------------------------------------------------------------------
    # Position.

    def state(self) -> dict:
        """The position of this stream, as JSON-able values (see the module docstring)."""
        return dict(
            self._dataset.signature(), format=STATE_FORMAT, epoch=self._epoch,
            order=list(self._order), position=self._position, offset=self._offset,
            kept_in_epoch=self._kept_in_epoch, exhausted=self._exhausted,
            buffer=[[shard, offset] for shard, offset, _, _ in self._buffer],
            windows=[[key, [[shard, offset] for shard, offset, _, _ in held]]
                     for key, held in sorted(self._windows.items()) if held],
            rng=self._rng.bit_generator.state if self._rng is not None else None,
            counters=self._counters.as_dict())

    def restore(self, state: dict) -> None:
        """Goes on from `state` (another iterator's `state()`), re-reading the examples it held.

        Raises:
            ValueError: the state is of another format, or of other shards or
                batching (named).
            tfrecord.DamagedRecordError: a held example's record is damaged.
        """
        if state.get("format") != STATE_FORMAT:
            raise ValueError(f"not an input position of this pipeline (format "
                             f"{state.get('format')!r}, expected {STATE_FORMAT!r})")
        for name, value in self._dataset.signature().items():
            if state.get(name) != value:
                raise ValueError(f"the saved input position is for {name}={state.get(name)!r}, "
                                 f"this pipeline has {name}={value!r}")
        self.close()
        self._epoch, self._order = state["epoch"], list(state["order"])
        self._position, self._offset = state["position"], state["offset"]
        self._kept_in_epoch, self._exhausted = state["kept_in_epoch"], state["exhausted"]
        if self._rng is not None:
            self._rng.bit_generator.state = state["rng"]
        held = self._reread([tuple(ref) for ref in state["buffer"]]
                            + [tuple(ref) for _, refs in state["windows"] for ref in refs])
        self._buffer = [held[tuple(ref)] for ref in state["buffer"]]
        self._windows = collections.defaultdict(list)
        for key, refs in state["windows"]:
            self._windows[key] = [held[tuple(ref)] for ref in refs]
        self._counters.examples_read = state["counters"]["examples_read"]
        self._counters.dropped_too_long = state["counters"]["dropped_too_long"]

    def _reread(self, refs: list[tuple[int, int]]) -> dict[tuple[int, int], tuple]:
        held = {}
        for shard in sorted({shard for shard, _ in refs}):
            with tfrecord.RecordReader(self._dataset.filenames[shard]) as reader:
                for ref in sorted(ref for ref in refs if ref[0] == shard):
                    held[ref] = self._example(shard, ref[1], reader.read_at(ref[1]))
        return held

    # ------------------------------------------------------------------
    # Batches.

    def _next_training_batch(self) -> dict[str, np.ndarray]:
        size = self._dataset.shuffle_buffer_size
        while True:
            example = self._next_example()
            if len(self._buffer) < size:
                self._buffer.append(example)
                continue
            index = int(self._rng.integers(size))
            example, self._buffer[index] = self._buffer[index], example
            batch = self._add(example)
            if batch is not None:
                return batch

    def _next_evaluation_batch(self) -> dict[str, np.ndarray]:
        while not self._exhausted:
            example = self._next_example()
            if example is None:
                self._exhausted = True
                break
            batch = self._add(example)
            if batch is not None:
                return batch
        # tf.data's group_by_window flushes what is left by increasing key.
        for key in sorted(self._windows):
            held = self._windows.pop(key)
            if held:
                return self._batch(key, held)
        raise StopIteration

    def _add(self, example: tuple) -> Optional[dict[str, np.ndarray]]:
        """Puts an example in its bucket; the bucket's batch if that filled it."""
        key = example[3]
        held = self._windows[key]
        held.append(example)
        if len(held) < window_size(key, self._dataset.batch_sizes):
            return None
        del self._windows[key]
        return self._batch(key, held)

    def _batch(self, key: int, held: list[tuple]) -> dict[str, np.ndarray]:
        length = padded_length(key, self._dataset.boundaries)
        multiple = self._dataset.row_multiple
        # The rows past `held` stay all padding (derived features are computed from them too).
        rows = -(-len(held) // multiple) * multiple
        batch = {}
        for name in self._keys:
            width = length * CONSTITUENT_LENGTH_FACTOR if name in CONSTITUENT_KEYS else length
            array = np.full((rows, width), HEADS_PADDING if name in HEADS_KEYS else ID_PADDING,
                            np.int32)
            for row, (shard, offset, features, _) in enumerate(held):
                values = features[name]
                if len(values) > width:
                    raise ValueError(
                        f"{self._dataset.filenames[shard]}: the example at byte offset {offset} "
                        f"has {len(values)} {name} values, more than its batch's {width}")
                array[row, :len(values)] = values
            batch[name] = array
        if self._dataset.derived is not None:
            batch.update(self._dataset.derived.compute(batch))
        return batch

    # ------------------------------------------------------------------
    # Examples.

    def _next_example(self) -> Optional[tuple]:
        """The next example kept (training drops the too long), or None at the end of a pass."""
        while True:
            record = self._next_record()
            if record is None:
                return None
            example = self._example(*record)
            self._counters.examples_read += 1
            if self._dataset.training and self._length(example[2]) > self._max_length:
                self._counters.dropped_too_long += 1
                continue
            self._kept_in_epoch += 1
            return example

    def _next_record(self) -> Optional[tuple[int, int, bytes]]:
        """`(shard, offset, data)` of the next record, or None at the end of a pass."""
        while True:
            if self._records is None:
                if self._position >= len(self._order):
                    if not self._dataset.training:
                        return None
                    self._start_epoch()
                shard = self._order[self._position]
                self._reader = tfrecord.RecordReader(self._dataset.filenames[shard])
                self._records = self._reader.records(self._offset)
            try:
                offset, data = next(self._records)
            except StopIteration:
                self.close()
                self._position += 1
                self._offset = 0
                continue
            except BaseException:
                self.close()
                raise
            self._offset = offset + tfrecord.HEADER_BYTES + len(data) + tfrecord.FOOTER_BYTES
            return self._order[self._position], offset, data

    def _start_epoch(self) -> None:
        if self._epoch > 0 and self._kept_in_epoch == 0:
            # Otherwise the stream would read the shards forever without a batch.
            raise ValueError(f"the training shards ({', '.join(self._dataset.filenames[:3])}"
                             f"{', ...' if len(self._dataset.filenames) > 3 else ''}) hold no "
                             f"example within max_length={self._max_length}")
        self._epoch += 1
        self._order = self._rng.permutation(len(self._dataset.filenames)).tolist()
        self._position, self._offset, self._kept_in_epoch = 0, 0, 0

    def _example(self, shard: int, offset: int, data: bytes) -> tuple:
        features = tfrecord.parse_int_lists(data, self._keys)
        return shard, offset, features, bucket_key(self._length(features), self._dataset.boundaries)

    @staticmethod
    def _length(features: dict) -> int:
        """`max(len(inputs), len(targets))`, the length used for bucketing."""
        return max(len(features[key]) for key in ("inputs", "targets") if key in features)
