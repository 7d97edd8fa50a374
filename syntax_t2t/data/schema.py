"""The data's schema: splits, feature keys, padding, and the errors of missing data.

The names every room agrees on about generated data (docs/design.md,
"Encoded example" and "Batches"): what a split is called, which keys an
encoded example and a batch hold, how they are padded. They live here, below
the `Problem` class, datagen and the input pipeline, so that each of those
reads them without importing another; `syntax_t2t.problem` re-exports the
names problems use. Nothing here imports TensorFlow.
"""

from typing import Sequence, Union

from syntax_t2t.data.tree import DependencyTree

TRAIN, DEV, TEST = "train", "dev", "test"
SPLITS = (TRAIN, DEV, TEST)

INPUTS, TARGETS = "inputs", "targets"
SOURCE_TREE_FEATURES = ("src_heads", "src_deprel", "src_upos", "src_xpos")
TARGET_TREE_FEATURES = ("tgt_heads",)
WORD_POSITION_FEATURE = "src_word_position"
LEMMA_FEATURE = "src_lemma"
# Vocabulary name of each source tree feature that holds ids.
TAG_VOCABULARIES = {"src_deprel": "deprel", "src_upos": "upos", "src_xpos": "xpos"}

HEADS_KEY = "src_heads"
HEADS_KEYS = ("src_heads", "tgt_heads")
HEADS_PADDING = -1
ID_PADDING = 0
# Per-constituent features (bracketed source trees): a tree of n words has at
# most 2 (n + 1) constituents (`bracketed.max_constituents`), so a batch pads
# them to twice its length.
CONSTITUENT_KEYS = ("src_const_start", "src_const_end", "src_const_label")
CONSTITUENT_LENGTH_FACTOR = 2
CONSTITUENCY_FEATURES = CONSTITUENT_KEYS
CONSTITUENCY_VOCABULARY = "const"
#: Key of `Problem.vocabulary_counts` counting samples, not tokens (not a vocabulary name).
SAMPLE_COUNTS = "#samples"


class DataNotGeneratedError(FileNotFoundError):
    """`data_dir` lacks complete generated data for a problem."""


class RawDataError(ValueError):
    """The raw data in `tmp_dir` is not laid out as the problem expects."""


def sentence_tokens(sentence: Union[DependencyTree, Sequence[str]]) -> Sequence[str]:
    """The tokens of a tree or token list."""
    return sentence.tokens if isinstance(sentence, DependencyTree) else sentence
