"""Fixed batches of `synthetic_syntax_reorder`, every sentence padded to one length.

Every model of a benchmark trains on the very same arrays: sentences are
drawn from a seeded generator with `length - 1` source words (the `<EOS>`
makes `length`), encoded with the problem's vocabularies and padded per
`docs/design.md` to exactly `length`, the bucket boundary. The
vocabularies come from a small `generate_data` run in a temporary
directory, so nothing outside it is read or written.
"""

import random
import tempfile

import numpy as np

from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder, sample_tree, target_tree, translate
from syntax_t2t.data.pipeline import CONSTITUENT_KEYS, CONSTITUENT_LENGTH_FACTOR, HEADS_KEYS
from syntax_t2t.decoding.decoder import pad_batch
from syntax_t2t.problem import TreeTokens

# Enough sentences to see every word of the synthetic lexicon.
_VOCABULARY_SENTENCES = 2000


class SyntheticBatches:
    """Makes fixed batches of the synthetic problem.

    Args:
        seed: seeds the sentences; the same seed gives the same batches.
    """

    def __init__(self, seed=0):
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
