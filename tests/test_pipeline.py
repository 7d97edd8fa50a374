"""Tests for syntax_t2t.data.pipeline (token batching over TFRecord shards)."""

import collections
import random

import pytest
import tensorflow as tf

from syntax_t2t.data import pipeline
from syntax_t2t.hparams import HParams

KEYS = ("inputs", "targets", "src_heads", "src_deprel", "src_upos", "src_xpos")


def test_bucket_boundaries_worked_example():
    # T2T: 8, 9, ... until int(x * 1.1) grows by more than one.
    assert pipeline.bucket_boundaries(16, 8, 1.1) == [8, 9, 10, 11, 12, 13, 14, 15, 16]
    assert pipeline.bucket_boundaries(64, 8, 1.5) == [8, 12, 18, 27, 40, 60, 64]
    assert pipeline.bucket_boundaries(5, 8, 1.1) == [5]
    with pytest.raises(ValueError, match="length_bucket_step must be > 1"):
        pipeline.bucket_boundaries(64, 8, 1.0)


def test_bucket_batch_sizes_stay_within_the_token_budget():
    assert pipeline.bucket_batch_sizes([8, 12, 18, 100], 64) == [8, 5, 3, 1]


def _example(rng, n, m):
    """A random source tree (each word's head an earlier word or ROOT) and target."""
    heads = [0] + [rng.randint(0, i) for i in range(1, n)]
    return {
        "inputs": [rng.randint(4, 99) for _ in range(n)] + [1],
        "targets": [rng.randint(4, 99) for _ in range(m)] + [1],
        "src_heads": heads,
        "src_deprel": [rng.randint(4, 9) for _ in range(n)],
        "src_upos": [rng.randint(4, 9) for _ in range(n)],
        "src_xpos": [rng.randint(4, 9) for _ in range(n)],
    }


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Two shards of 120 examples with lengths 1..40 (some beyond max_length=24)."""
    rng = random.Random(0)
    examples = [_example(rng, rng.randint(1, 40), rng.randint(1, 40)) for _ in range(120)]
    directory = tmp_path_factory.mktemp("shards")
    paths = [str(directory / f"shard-{i}") for i in range(2)]
    for index, path in enumerate(paths):
        with tf.io.TFRecordWriter(path) as writer:
            for example in examples[index::2]:
                writer.write(pipeline.serialize_example(example))
    return paths, examples


def _hparams(batch_size=96, max_length=24):
    return HParams(batch_size=batch_size, max_length=max_length, min_length_bucket=4,
                   length_bucket_step=1.5)


def _length(example):
    return max(len(example["inputs"]), len(example["targets"]))


def _rows(batch):
    """Unpads each row of a batch back into an example dict."""
    rows = []
    for i in range(batch["inputs"].shape[0]):
        inputs = batch["inputs"][i].numpy().tolist()
        n = inputs.index(1) + 1  # ids are >= 4 except the <EOS> = 1
        targets = batch["targets"][i].numpy().tolist()
        m = targets.index(1) + 1
        row = {"inputs": inputs[:n], "targets": targets[:m]}
        for key in KEYS[2:]:
            row[key] = batch[key][i].numpy().tolist()[:n - 1]
        rows.append((row, batch, i, n, m))
    return rows


def _key(example):
    return tuple(tuple(example[key]) for key in KEYS)


def test_eval_keeps_every_example_once_with_design_padding(shards):
    paths, examples = shards
    hparams = _hparams()
    boundaries = pipeline.bucket_boundaries(24, 4, 1.5)  # [4, 6, 9, 13, 19, 24]
    sizes = dict(zip(boundaries, pipeline.bucket_batch_sizes(boundaries, 96)))
    seen = collections.Counter()
    for batch in pipeline.make_dataset(paths, KEYS, "eval", hparams):
        shape = tuple(batch["inputs"].shape)
        assert all(tuple(batch[key].shape) == shape for key in KEYS)
        size, length = shape
        if length in sizes:
            assert size <= sizes[length] and size * length <= 96
        else:  # a longer example: alone, padded to a multiple of max_length
            assert size == 1 and length % 24 == 0 and length > 24
        for row, batch_, i, n, m in _rows(batch):
            seen[_key(row)] += 1
            example_length = max(n, m)
            assert example_length <= length
            # The smallest boundary that fits (or the next multiple of max_length).
            fitting = [b for b in boundaries if b >= example_length]
            assert length == (fitting[0] if fitting else -(-example_length // 24) * 24)
            heads = batch_["src_heads"][i].numpy()
            assert (heads[n - 1:] == -1).all(), "heads must be -1 from the <EOS> position on"
            for key in ("src_deprel", "src_upos", "src_xpos", "inputs"):
                assert (batch_[key][i].numpy()[n:] == 0).all()
            assert (batch_["targets"][i].numpy()[m:] == 0).all()
    assert seen == collections.Counter(_key(e) for e in examples)


def test_test_mode_is_deterministic(shards):
    paths, _ = shards
    first = [b["inputs"].numpy().tolist() for b in pipeline.make_dataset(paths, KEYS, "test", _hparams())]
    second = [b["inputs"].numpy().tolist() for b in pipeline.make_dataset(paths, KEYS, "test", _hparams())]
    assert first == second


def test_train_batches_fit_the_budget_and_drop_long_examples(shards):
    # One shard, so that the data read is whole passes over it plus a part.
    paths, examples = shards[0][:1], shards[1][0::2]
    hparams = _hparams()
    boundaries = pipeline.bucket_boundaries(24, 4, 1.5)
    sizes = dict(zip(boundaries, pipeline.bucket_batch_sizes(boundaries, 96)))
    counters = pipeline.PipelineCounters()
    kept = {_key(e) for e in examples if _length(e) <= 24}
    shapes = set()
    for batch in pipeline.make_dataset(paths, KEYS, "train", hparams, counters=counters,
                                       shuffle_buffer_size=50, seed=3).take(60):
        size, length = batch["inputs"].shape
        shapes.add((size, length))
        # Full batches only: the batch size is that of the bucket.
        assert size == sizes[length] and size * length <= 96
        for row, *_ in _rows(batch):
            assert _key(row) in kept
    assert len(shapes) <= len(boundaries)
    counts = counters.as_dict()
    read, dropped = counts["examples_read"], counts["dropped_too_long"]
    assert read > len(examples)  # the data repeats
    # Each pass reads all examples of the shard; a partial pass of r
    # examples holds between r - (shard size - long) and min(r, long) long ones.
    # (One example may sit between the counting and the filter: slack 1.)
    total_long = sum(_length(e) > 24 for e in examples)
    epochs, rest = divmod(read, len(examples))
    low = epochs * total_long + max(0, rest - (len(examples) - total_long))
    high = epochs * total_long + min(rest, total_long)
    assert total_long > 0 and low - 1 <= dropped <= high


def test_a_single_example_longer_than_batch_size_is_batched_alone(shards):
    paths, _ = shards
    hparams = _hparams(batch_size=5, max_length=24)
    for batch in pipeline.make_dataset(paths, KEYS, "eval", hparams):
        size, length = batch["inputs"].shape
        assert size * length <= 5 or size == 1


def test_errors():
    with pytest.raises(ValueError, match="unknown mode 'predict'"):
        pipeline.make_dataset(["x"], KEYS, "predict", _hparams())
    with pytest.raises(ValueError, match="no TFRecord files"):
        pipeline.make_dataset([], KEYS, "train", _hparams())


def test_deterministic_training_batches_depend_on_the_seeds_alone(shards):
    paths, _ = shards

    def batches(seed, busy):
        tf.random.set_seed(7)
        dataset = pipeline.make_dataset(paths, KEYS, "train", _hparams(), shuffle_buffer_size=30,
                                        seed=seed, deterministic=True)
        if busy:
            # Another pipeline drawing from the same threads: the parallel parses finish in
            # another order, which the deterministic pipeline must not pass on.
            other = iter(pipeline.make_dataset(paths, KEYS, "train", _hparams(), seed=seed + 1))
        rows = []
        for batch in dataset.take(40):
            rows.append(batch["inputs"].numpy().tolist())
            if busy:
                next(other)
        return rows

    first = batches(3, busy=False)
    assert batches(3, busy=True) == first
    assert batches(4, busy=False) != first
