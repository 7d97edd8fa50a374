"""Random encoded examples, their TFRecord shards, and batches unpadded back into them.

For the input pipeline tests (`test_numpy_pipeline*.py`); no TensorFlow.
Every id is >= 4 except `<EOS>` (1), so a row of a batch unpads at its first
1; constituent values are >= 1, so their padding is the trailing zeros.
"""

import collections
import random

import numpy as np

from syntax_t2t.data import tfrecord
from syntax_t2t.data.schema import CONSTITUENT_KEYS
from syntax_t2t.hparams import HParams

KEYS = ("inputs", "targets", "src_heads", "src_deprel", "src_upos", "src_xpos") + CONSTITUENT_KEYS
#: Batching of the tests: boundaries [4, 6, 9, 13, 19, 24], batch sizes [24, 16, 10, 7, 5, 4].
MAX_LENGTH, BATCH_SIZE = 24, 96


def hparams(batch_size: int = BATCH_SIZE, max_length: int = MAX_LENGTH) -> HParams:
    return HParams(batch_size=batch_size, max_length=max_length, min_length_bucket=4,
                   length_bucket_step=1.5)


def random_example(rng: random.Random, n: int, m: int) -> dict:
    """A source of n words with a tree (each head an earlier word or ROOT), a target of m."""
    return {
        "inputs": [rng.randint(4, 30_000) for _ in range(n)] + [1],
        "targets": [rng.randint(4, 30_000) for _ in range(m)] + [1],
        "src_heads": [0] + [rng.randint(0, i) for i in range(1, n)],
        "src_deprel": [rng.randint(4, 9) for _ in range(n)],
        "src_upos": [rng.randint(4, 9) for _ in range(n)],
        "src_xpos": [rng.randint(4, 200) for _ in range(n)],
        "src_const_start": [rng.randint(1, n) for _ in range(n)],
        "src_const_end": [rng.randint(1, n) for _ in range(n)],
        "src_const_label": [rng.randint(4, 9) for _ in range(n)],
    }


def random_examples(seed: int, count: int, max_words: int = 30) -> list[dict]:
    """Examples of lengths 2..max_words + 1, every bucket of `hparams()` well filled,
    about a fifth longer than `MAX_LENGTH`."""
    rng = random.Random(seed)
    examples = []
    for _ in range(count):
        n = rng.randint(1, max_words)
        m = min(max_words, max(1, n + rng.randint(-2, 2)))
        examples.append(random_example(rng, n, m))
    return examples


def write_shards(directory, examples: list[dict], num_shards: int) -> list[str]:
    """Shards as datagen writes them (example i to shard i % num_shards); their paths."""
    paths = [str(directory / f"data-train-{index:05d}-of-{num_shards:05d}")
             for index in range(num_shards)]
    for index, path in enumerate(paths):
        tfrecord.write_records(path, (tfrecord.serialize_int64_features(example)
                                      for example in examples[index::num_shards]))
    return paths


def length(example: dict) -> int:
    return max(len(example["inputs"]), len(example["targets"]))


def key(example: dict) -> tuple:
    """A hashable form of an example, for multisets."""
    return tuple(tuple(int(value) for value in example[name]) for name in KEYS)


def multiset(examples) -> collections.Counter:
    return collections.Counter(key(example) for example in examples)


def unpad(batch: dict) -> list[dict]:
    """The examples of a batch of NumPy arrays."""
    examples = []
    for row in range(batch["inputs"].shape[0]):
        inputs = batch["inputs"][row].tolist()
        n = inputs.index(1) + 1
        targets = batch["targets"][row].tolist()
        example = {"inputs": inputs[:n], "targets": targets[:targets.index(1) + 1]}
        for name in ("src_heads", "src_deprel", "src_upos", "src_xpos"):
            example[name] = batch[name][row].tolist()[:n - 1]
        for name in CONSTITUENT_KEYS:
            values = np.trim_zeros(batch[name][row], "b")
            example[name] = values.tolist()
        examples.append(example)
    return examples
