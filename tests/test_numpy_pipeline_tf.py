"""The input without TensorFlow against TensorFlow's: data/tfrecord.py and data/numpy_pipeline.py
beside tf.io and data/pipeline.py's `tf.data` pipeline, on random shards and on datagen's."""

import collections
import pathlib

import numpy as np
import pytest
import tensorflow as tf

import shard_fixtures as fixtures
from syntax_t2t.data import batching, numpy_pipeline, pipeline, shard_check, tfrecord
from syntax_t2t.data.derived_features import DerivedFeatures
from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder

BOUNDARIES = batching.bucket_boundaries(fixtures.MAX_LENGTH, 4, 1.5)
SIZES = dict(zip(BOUNDARIES, batching.bucket_batch_sizes(BOUNDARIES, fixtures.BATCH_SIZE)))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    examples = fixtures.random_examples(seed=1, count=400)
    paths = fixtures.write_shards(tmp_path_factory.mktemp("shards"), examples, 3)
    return paths, examples


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """synthetic_syntax_reorder's data as bin/datagen writes it: (problem, data_dir)."""
    root = tmp_path_factory.mktemp("synthetic")
    problem = SyntheticSyntaxReorder()
    problem.generate_data(str(root / "data"), str(root / "raw"), max_examples=300)
    return problem, str(root / "data")


def test_written_bytes_equal_tensorflows(tmp_path, data):
    _, examples = data
    records = [b"", b"x" * 1000] + [pipeline.serialize_example(example)
                                    for example in examples[:50]]
    with tf.io.TFRecordWriter(str(tmp_path / "tf")) as writer:
        for record in records:
            writer.write(record)
    tfrecord.write_records(tmp_path / "ours", records)
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "tf").read_bytes()
    assert list(tfrecord.read_records(tmp_path / "tf")) == records
    assert [record.numpy() for record in tf.data.TFRecordDataset(str(tmp_path / "ours"))] == records


def test_serialised_examples_equal_datagens(data):
    _, examples = data
    for example in examples:
        assert tfrecord.serialize_int64_features(example) == pipeline.serialize_example(example)


def test_parsed_examples_equal_tensorflows(generated):
    problem, data_dir = generated
    keys = problem.data_feature_keys(data_dir)
    count = 0
    for split in ("train", "dev"):
        for path in problem.filepaths(data_dir, split):
            for record in tfrecord.read_records(path):
                ours = tfrecord.parse_int_features(record, keys)
                theirs = pipeline.parse_example(tf.constant(record), keys)
                for key in keys:
                    assert ours[key].dtype == np.int32
                    np.testing.assert_array_equal(ours[key], theirs[key].numpy())
                count += 1
    assert count == 600

    example = tfrecord.Example()
    example.features.feature["ids"].int64_list.value.extend([-7, 2**40, 3])
    example.features.feature["scores"].float_list.value.extend([0.25, -1.5])
    example.features.feature["words"].bytes_list.value.extend([b"dva", "tři".encode()])
    record = example.SerializeToString()
    spec = {"ids": tf.io.VarLenFeature(tf.int64), "scores": tf.io.VarLenFeature(tf.float32),
            "words": tf.io.VarLenFeature(tf.string)}
    theirs = {key: value.values.numpy() for key, value in
              tf.io.parse_single_example(record, spec).items()}
    ours = tfrecord.parse_example(record)
    np.testing.assert_array_equal(ours["ids"], theirs["ids"])
    np.testing.assert_array_equal(ours["scores"], theirs["scores"])
    assert ours["words"] == list(theirs["words"])


def test_damage_tensorflow_reports_is_found_too(tmp_path, data):
    paths, _ = data
    records = list(tfrecord.read_records(paths[0]))
    second = tfrecord.HEADER_BYTES + len(records[0]) + tfrecord.FOOTER_BYTES
    damages = {"length": second + 2, "data": second + tfrecord.HEADER_BYTES + 5}
    for what, position in damages.items():
        damaged = bytearray(pathlib.Path(paths[0]).read_bytes())
        damaged[position] ^= 1
        path = tmp_path / what
        path.write_bytes(bytes(damaged))
        assert shard_check.first_damaged([str(path)]) is not None
        with pytest.raises(tfrecord.DamagedRecordError, match=f"byte offset {second}: {what}"):
            list(tfrecord.read_records(path))
    # TensorFlow reads a file cut inside a record's header as if it ended there.
    path = tmp_path / "cut"
    path.write_bytes(pathlib.Path(paths[0]).read_bytes()[:second + 5])
    assert shard_check.first_damaged([str(path)]) is None
    with pytest.raises(tfrecord.DamagedRecordError, match="ends 5 bytes into its 12-byte header"):
        list(tfrecord.read_records(path))


def _tf_batches(dataset):
    return [{key: value.numpy() for key, value in batch.items()} for batch in dataset]


def _assert_same_batches(ours, theirs):
    assert len(ours) == len(theirs)
    for our_batch, their_batch in zip(ours, theirs):
        assert sorted(our_batch) == sorted(their_batch)
        for key, value in their_batch.items():
            assert our_batch[key].dtype == value.dtype
            np.testing.assert_array_equal(our_batch[key], value)


@pytest.mark.parametrize("mode", ["eval", "test"])
def test_eval_and_test_batches_equal_tf_datas(data, mode):
    paths, _ = data
    derived = DerivedFeatures(("src_heads",), ("heads_plus_one",), lambda heads: (heads + 1,))
    hparams = fixtures.hparams()
    theirs = _tf_batches(derived.add_to(pipeline.make_dataset(paths, fixtures.KEYS, mode, hparams)))
    ours = list(numpy_pipeline.NumpyDataset(paths, fixtures.KEYS, mode, hparams, derived=derived))
    # The same batches in the same order: shapes, token budgets, padding, derived features.
    _assert_same_batches(ours, theirs)


def test_datagens_data_batches_equal_tf_datas(generated):
    problem, data_dir = generated
    keys = problem.data_feature_keys(data_dir)
    hparams = fixtures.hparams(batch_size=200, max_length=12)
    for split, mode in (("train", "eval"), ("dev", "eval"), ("test", "test")):
        paths = problem.filepaths(data_dir, split)
        ours = list(numpy_pipeline.NumpyDataset(paths, keys, mode, hparams))
        _assert_same_batches(ours, _tf_batches(pipeline.make_dataset(paths, keys, mode, hparams)))


def _training_run(batches, count):
    shapes, emitted = set(), []
    for batch in batches:
        size, length = batch["inputs"].shape
        assert size == SIZES[length] and size * length <= fixtures.BATCH_SIZE
        shapes.add((size, length))
        emitted += fixtures.unpad(batch)
        if len(shapes) == len(SIZES) and len(emitted) >= count:
            break
    return shapes, collections.Counter(fixtures.key(example) for example in emitted)


def _dropped_bounds(read, examples):
    """What a stream that read `read` examples of whole and partial epochs can have dropped."""
    total_long = sum(fixtures.length(example) > fixtures.MAX_LENGTH for example in examples)
    epochs, rest = divmod(read, len(examples))
    return (epochs * total_long + max(0, rest - (len(examples) - total_long)),
            epochs * total_long + min(rest, total_long))


def test_training_batches_agree_with_tf_datas(data):
    paths, examples = data
    hparams = fixtures.hparams()
    kept = fixtures.multiset(example for example in examples
                             if fixtures.length(example) <= fixtures.MAX_LENGTH)
    # Three epochs' worth of kept examples from each.
    count = 3 * sum(kept.values())
    tf_counters, our_counters = pipeline.PipelineCounters(), numpy_pipeline.PipelineCounters()
    tf_run = _training_run(
        (dict((key, value.numpy()) for key, value in batch.items())
         for batch in pipeline.make_dataset(paths, fixtures.KEYS, "train", hparams,
                                            counters=tf_counters, shuffle_buffer_size=50, seed=3)),
        count)
    our_run = _training_run(
        iter(numpy_pipeline.NumpyDataset(paths, fixtures.KEYS, "train", hparams,
                                         counters=our_counters, shuffle_buffer_size=50, seed=3)),
        count)
    expected_shapes = {(size, boundary) for boundary, size in SIZES.items()}
    for shapes, emitted in (tf_run, our_run):
        assert shapes == expected_shapes
        # Only kept examples, and by now every one of them, none more often than the epochs read.
        assert set(emitted) == set(kept)
        assert max(emitted.values()) <= 4
    # The too-long examples are counted alike (tf.data's counters lag by one in flight).
    for counters, slack in ((tf_counters, 1), (our_counters, 0)):
        counts = counters.as_dict()
        low, high = _dropped_bounds(counts["examples_read"], examples)
        assert counts["examples_read"] > 2 * len(examples)
        assert low - slack <= counts["dropped_too_long"] <= high
