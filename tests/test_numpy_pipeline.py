"""Tests for syntax_t2t.data.numpy_pipeline (batches without TensorFlow, resumable), no TensorFlow.

The comparisons with the `tf.data` pipeline are in `test_numpy_pipeline_tf.py`.
"""

import collections
import itertools
import json
import pathlib
import re

import numpy as np
import pytest

import shard_fixtures as fixtures
from syntax_t2t.data import batching, numpy_pipeline, tfrecord
from syntax_t2t.data.derived_features import DerivedFeatures
from syntax_t2t.data.schema import CONSTITUENT_KEYS

pytestmark = pytest.mark.backends

BOUNDARIES = batching.bucket_boundaries(fixtures.MAX_LENGTH, 4, 1.5)
SIZES = dict(zip(BOUNDARIES, batching.bucket_batch_sizes(BOUNDARIES, fixtures.BATCH_SIZE)))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """400 examples in three shards, about a fifth longer than max_length."""
    examples = fixtures.random_examples(seed=0, count=400)
    paths = fixtures.write_shards(tmp_path_factory.mktemp("shards"), examples, 3)
    return paths, examples


def _dataset(paths, mode, **kwargs):
    return numpy_pipeline.NumpyDataset(paths, fixtures.KEYS, mode, fixtures.hparams(), **kwargs)


def test_eval_keeps_every_example_once_padded_as_designed(data):
    paths, examples = data
    counters = numpy_pipeline.PipelineCounters()
    seen = []
    for batch in _dataset(paths, "eval", counters=counters):
        size, length = batch["inputs"].shape
        for key in fixtures.KEYS:
            width = 2 * length if key in CONSTITUENT_KEYS else length
            assert batch[key].shape == (size, width) and batch[key].dtype == np.int32
        if length in SIZES:
            assert size <= SIZES[length] and size * length <= fixtures.BATCH_SIZE
        else:  # longer than max_length: alone, padded to a multiple of it
            assert size == 1 and length % fixtures.MAX_LENGTH == 0
        for row, example in enumerate(fixtures.unpad(batch)):
            n, m = len(example["inputs"]), len(example["targets"])
            fitting = [b for b in BOUNDARIES if b >= max(n, m)]
            assert length == (fitting[0] if fitting else -(-max(n, m) // fixtures.MAX_LENGTH)
                              * fixtures.MAX_LENGTH)
            assert (batch["src_heads"][row, n - 1:] == -1).all()
            for key in ("inputs", "src_deprel", "src_upos", "src_xpos"):
                assert (batch[key][row, n:] == 0).all()
            assert (batch["targets"][row, m:] == 0).all()
            seen.append(example)
    assert fixtures.multiset(seen) == fixtures.multiset(examples)
    assert counters.as_dict() == {"examples_read": 400, "dropped_too_long": 0}


def test_eval_and_test_are_one_deterministic_pass_each_time(data):
    paths, _ = data
    dataset = _dataset(paths, "test")
    first, second = ([batch["inputs"].tolist() for batch in dataset] for _ in range(2))
    assert first == second and len(first) > 20


def _read_so_far(state, shard_records):
    """The examples a training stream has read at `state`: whole epochs, then its position."""
    everything = [example for records in shard_records for _, example in records]
    read = everything * (state["epoch"] - 1)
    for position, shard in enumerate(state["order"][:state["position"] + 1]):
        read += [example for offset, example in shard_records[shard]
                 if position < state["position"] or offset < state["offset"]]
    return read


def _held(state, paths):
    """The examples the stream holds at `state` (shuffle buffer and buckets), read by reference."""
    refs = state["buffer"] + [ref for _, refs in state["windows"] for ref in refs]
    held = []
    for shard, offset in refs:
        with tfrecord.RecordReader(paths[shard]) as reader:
            held.append(tfrecord.parse_int_lists(reader.read_at(offset), fixtures.KEYS))
    return held


def test_training_accounts_for_every_example_of_every_epoch(data):
    paths, examples = data
    shard_records = []
    for path in paths:
        with tfrecord.RecordReader(path) as reader:
            shard_records.append([(offset, tfrecord.parse_int_lists(record, fixtures.KEYS))
                                  for offset, record in reader.records()])
    too_long = sum(fixtures.length(example) > fixtures.MAX_LENGTH for example in examples)
    assert 40 < too_long < 120
    counters = numpy_pipeline.PipelineCounters()
    batches = iter(_dataset(paths, "train", counters=counters, shuffle_buffer_size=50, seed=3))
    emitted, shapes, epochs = [], set(), set()
    for step in range(150):
        batch = next(batches)
        size, length = batch["inputs"].shape
        # Full batches of a bucket only, so that the shapes are few and static.
        assert size == SIZES[length] and size * length <= fixtures.BATCH_SIZE
        shapes.add((size, length))
        emitted += fixtures.unpad(batch)
        if step % 3:
            continue
        state = batches.state()
        read = _read_so_far(state, shard_records)
        kept = [example for example in read if fixtures.length(example) <= fixtures.MAX_LENGTH]
        # Nothing lost, nothing made up: what came out plus what is held is what was read.
        assert fixtures.multiset(emitted + _held(state, paths)) == fixtures.multiset(kept)
        assert counters.as_dict() == {"examples_read": len(read),
                                      "dropped_too_long": len(read) - len(kept)}
        epochs.add(state["epoch"])
    assert {1, 2, 3} <= epochs
    assert shapes == {(size, boundary) for boundary, size in SIZES.items()}


def _take(iterator, count):
    return [{key: value.tolist() for key, value in batch.items()}
            for batch in itertools.islice(iterator, count)]


@pytest.mark.parametrize("mode, before, after", [("train", 70, 60), ("eval", 40, 1000)])
def test_a_resumed_stream_goes_on_as_the_uninterrupted_one(data, mode, before, after):
    paths, _ = data
    options = dict(shuffle_buffer_size=60, seed=5) if mode == "train" else {}
    counters = numpy_pipeline.PipelineCounters()
    uninterrupted = iter(_dataset(paths, mode, counters=counters, **options))
    _take(uninterrupted, before)
    # The position goes into a checkpoint as JSON.
    saved = json.loads(json.dumps(uninterrupted.state()))
    if mode == "train":
        assert saved["epoch"] >= 2 and len(saved["buffer"]) == 60 and saved["windows"]
    expected = _take(uninterrupted, after)

    resumed_counters = numpy_pipeline.PipelineCounters()
    resumed = iter(_dataset(paths, mode, counters=resumed_counters, **options))
    resumed.restore(saved)
    assert _take(resumed, after) == expected
    assert resumed_counters.as_dict() == counters.as_dict()


def test_the_seed_fixes_the_training_stream(data):
    paths, _ = data

    def stream(seed):
        return _take(iter(_dataset(paths, "train", shuffle_buffer_size=30, seed=seed)), 20)

    assert stream(1) == stream(1)
    assert stream(1) != stream(2)


def test_a_position_fits_only_its_own_pipeline(data):
    paths, _ = data
    batches = iter(_dataset(paths, "train", seed=1, shuffle_buffer_size=10))
    next(batches)
    saved = batches.state()
    other = numpy_pipeline.NumpyDataset(paths, fixtures.KEYS, "train",
                                        fixtures.hparams(batch_size=64), seed=1,
                                        shuffle_buffer_size=10)
    with pytest.raises(ValueError, match="position is for batch_sizes=.*this pipeline has"):
        iter(other).restore(saved)
    with pytest.raises(ValueError, match="position is for files="):
        iter(_dataset(paths[:2], "train", shuffle_buffer_size=10)).restore(saved)
    with pytest.raises(ValueError, match="position is for mode='train'"):
        iter(_dataset(paths, "eval")).restore(saved)
    with pytest.raises(ValueError, match="not an input position"):
        iter(_dataset(paths, "train", shuffle_buffer_size=10)).restore({"epoch": 3})


def test_derived_features_are_added_to_every_batch(data):
    paths, _ = data
    derived = DerivedFeatures(("src_heads", "inputs"), ("heads_plus_one", "inputs_twice"),
                              lambda heads, inputs: (heads + 1, 2 * inputs))
    batches = list(_dataset(paths, "eval", derived=derived))
    for batch in batches:
        assert np.array_equal(batch["heads_plus_one"], batch["src_heads"] + 1)
        assert np.array_equal(batch["inputs_twice"], 2 * batch["inputs"])


def test_errors(data, tmp_path):
    paths, examples = data
    with pytest.raises(ValueError, match="unknown mode 'predict'"):
        _dataset(paths, "predict")
    with pytest.raises(ValueError, match="no TFRecord files"):
        _dataset([], "train")
    with pytest.raises(ValueError, match="shuffle_buffer_size must be >= 1"):
        _dataset(paths, "train", shuffle_buffer_size=0)

    long_only = [example for example in examples if fixtures.length(example) > fixtures.MAX_LENGTH]
    long_paths = fixtures.write_shards(tmp_path, long_only, 2)
    with pytest.raises(ValueError, match="hold no example within max_length=24"):
        next(iter(_dataset(long_paths, "train", shuffle_buffer_size=5)))

    damaged = tmp_path / "damaged"
    damaged.write_bytes(pathlib.Path(paths[0]).read_bytes()[:-3])
    message = f"^{re.escape(str(damaged))}: damaged TFRecord"
    with pytest.raises(tfrecord.DamagedRecordError, match=message):
        list(_dataset([str(damaged)], "eval"))


def test_batches_of_a_long_example_and_a_tight_budget(data):
    paths, examples = data
    hparams = fixtures.hparams(batch_size=5)
    lengths = collections.Counter()
    for batch in numpy_pipeline.NumpyDataset(paths, fixtures.KEYS, "eval", hparams):
        size, length = batch["inputs"].shape
        assert size == 1  # no bucket holds two examples within 5 tokens
        lengths[length] += 1
    assert sum(lengths.values()) == len(examples)
