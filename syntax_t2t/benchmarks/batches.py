"""Fixed batches of `synthetic_syntax_reorder`, every sentence padded to one length.

Every model of a benchmark trains on the very same arrays: sentences are
drawn from a seeded generator with `length - 1` source words (the `<EOS>`
makes `length`), encoded with the problem's vocabularies and padded per
`docs/design.md` to exactly `length`, the bucket boundary. The
vocabularies come from a small `generate_data` run in a temporary
directory, so nothing outside it is read or written.

Making them needs the problem's datagen, which needs TensorFlow; where it is
missing (JAX on a GPU machine) a batch saved by a TensorFlow run
(`save_batch`, `bin/bench --save_batch`) is read instead (`load_batch`).
"""

import random
import tempfile

import numpy as np

from syntax_t2t.data.schema import CONSTITUENT_KEYS, CONSTITUENT_LENGTH_FACTOR, HEADS_KEYS

class UnsupportedCase(ValueError):
    """A model cannot train on the benchmark's batches (missing features)."""


# Enough sentences to see every word of the synthetic lexicon.
_VOCABULARY_SENTENCES = 2000


class SyntheticBatches:
    """Makes fixed batches of the synthetic problem.

    Args:
        seed: seeds the sentences; the same seed gives the same batches.
    """

    def __init__(self, seed=0):
        from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder

        self.seed = seed
        self.problem = SyntheticSyntaxReorder(train_size=_VOCABULARY_SENTENCES, dev_size=1,
                                              test_size=1)
        with tempfile.TemporaryDirectory(prefix="bench-vocab-") as data_dir:
            self.problem.generate_data(data_dir, data_dir)
            self.vocab_sizes = self.problem.vocab_sizes(data_dir)
            # Loaded vocabularies stay on the problem for `encode`.
            self.vocabularies = self.problem.load_vocabularies(data_dir)

    @property
    def feature_keys(self):
        return self.problem.feature_keys

    def batch(self, length, num_sentences):
        """`num_sentences` pairs padded to `length`: `{feature: np.int32 [B, length]}`.

        Source and target have `length - 1` words where the tree generator
        reaches that size (it may stop a few words short), then `<EOS>`.

        Raises:
            ValueError: `length` < 2 or `num_sentences` < 1.
        """
        from syntax_t2t.decoding.decoder import pad_batch
        from syntax_t2t.problems.synthetic import sample_tree

        if length < 2 or num_sentences < 1:
            raise ValueError(f"need length >= 2 and num_sentences >= 1, got {length}, "
                             f"{num_sentences}")
        rng = random.Random(f"bench-{self.seed}-{length}")
        examples = []
        for _ in range(num_sentences):
            tree = sample_tree(rng, self.problem.lexicon, length - 1, root_punct_probability=0.0)
            examples.append(self.problem.encode((tree, self._target(tree))))
        batch = pad_batch(examples, self.feature_keys)
        return {key: _pad_to(values, length, key) for key, values in batch.items()}

    def _target(self, tree):
        from syntax_t2t.problem import TreeTokens
        from syntax_t2t.problems.synthetic import target_tree, translate

        # As the problem's own samples: with its tree when it has target trees.
        if self.problem.has_target_trees:
            return TreeTokens(target_tree(tree, self.problem.lexicon))
        return translate(tree, self.problem.lexicon)


def _pad_to(values, length, key):
    """Pads [B, S <= length] on the right as `pad_batch` does (-1 for heads, else 0).

    Per-constituent features are `CONSTITUENT_LENGTH_FACTOR` times as long.
    """
    width = length * (CONSTITUENT_LENGTH_FACTOR if key in CONSTITUENT_KEYS else 1)
    missing = width - values.shape[1]
    pad_value = -1 if key in HEADS_KEYS else 0
    return np.pad(values, [(0, 0), (0, missing)], constant_values=pad_value)


def sentences_for(length, batch_tokens):
    """Sentences per training batch at padded `length` (`max(1, batch_size // L)`, as training)."""
    return max(1, batch_tokens // length)


def target_tokens(batch):
    """Non-padding target tokens of a batch (what tokens/s counts)."""
    return int(np.count_nonzero(batch["targets"]))


def save_batch(path, batch, vocab_sizes, seed, decode_batch=None):
    """Writes a batch and the vocabulary sizes it was encoded with to `path` (.npz).

    Args:
        path: the file to write.
        batch: `{feature: np.int32 [B, L]}`.
        vocab_sizes: `{vocabulary: size}` of the problem.
        seed: the `SyntheticBatches` seed that made it (recorded).
        decode_batch: `{feature: np.int32 [B, S]}`, the decoding part's
            source batch, or None (`load_decode_batch` reads it back).
    """
    arrays = {f"feature/{key}": np.asarray(value) for key, value in batch.items()}
    arrays.update({f"decode/{key}": np.asarray(value)
                   for key, value in (decode_batch or {}).items()})
    arrays.update({f"vocab_size/{name}": np.int64(size) for name, size in vocab_sizes.items()})
    arrays["seed"] = np.int64(seed)
    with open(path, "wb") as stream:
        np.savez(stream, **arrays)


def load_batch(path):
    """`(batch, vocab_sizes, seed)` as `save_batch` wrote them.

    Raises:
        ValueError: the file holds no batch written by `save_batch`.
    """
    with np.load(path) as arrays:
        batch = {key[len("feature/"):]: arrays[key] for key in arrays.files
                 if key.startswith("feature/")}
        vocab_sizes = {key[len("vocab_size/"):]: int(arrays[key]) for key in arrays.files
                       if key.startswith("vocab_size/")}
        seed = int(arrays["seed"]) if "seed" in arrays.files else None
    if "inputs" not in batch or "targets" not in batch or not vocab_sizes:
        raise ValueError(f"{path} holds no benchmark batch (written by bin/bench --save_batch)")
    return batch, vocab_sizes, seed


def load_decode_batch(path):
    """The decoding batch `save_batch` wrote to `path`, or None where it wrote none."""
    with np.load(path) as arrays:
        batch = {key[len("decode/"):]: arrays[key] for key in arrays.files
                 if key.startswith("decode/")}
    return batch or None
