"""The pure-Python WordPiece gives tensorflow-text's ids, on vocabularies learnt from real text.

`SubwordVocabulary` applies its pieces with `data/wordpiece.py` so that
decoding needs no TensorFlow; the vocabularies were always applied (and the
existing shards written) with `tensorflow_text.FastWordpieceTokenizer`. Both
tokenise every word of Czech PUD and of Multi30k (Czech, German) with
vocabularies learnt here, and every word of a vocabulary that cannot cut some
words; the ids must be the same.
"""

import gzip
import pathlib

import pytest
import tensorflow as tf
import tensorflow_text

from syntax_t2t.data import subwords
from syntax_t2t.data.subwords import SUFFIX_INDICATOR, SubwordVocabulary, escape_word
from syntax_t2t.data.vocab import RESERVED_TOKENS, UNK_ID
from syntax_t2t.data.wordpiece import WordpieceMatcher

SHARED_DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def corpus_words(path: pathlib.Path) -> list[str]:
    """The words of a CoNLL-U file (its FORM column) or of whitespace-split text lines."""
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/data is not beside the project)")
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        if path.name.endswith(".conllu.gz"):
            return [line.split("\t")[1] for line in lines
                    if line[:1].isdigit() and "\t" in line and "-" not in line.split("\t")[0]]
        return [word for line in lines for word in line.split()]


def tensorflow_text_ids(tokens, words, max_bytes=subwords._MAX_BYTES_PER_WORD):
    """tensorflow-text's ids, with the reserved tokens made unmatchable as `SubwordVocabulary` did."""
    matchable = ["\n" + token for token in RESERVED_TOKENS] + list(tokens[len(RESERVED_TOKENS):])
    tokenizer = tensorflow_text.FastWordpieceTokenizer(
        vocab=matchable, suffix_indicator=SUFFIX_INDICATOR, max_bytes_per_word=max_bytes,
        token_out_type=tf.int64, unknown_token=matchable[UNK_ID], no_pretokenization=True)
    return [tuple(row) for row in tokenizer.tokenize(tf.constant(words, dtype=tf.string)).to_list()]


@pytest.mark.parametrize("corpus, vocab_size", [
    ("pud/cs_pud-ud-test.conllu.gz", 200), ("multi30k/val.cs.gz", 1000), ("multi30k/val.de.gz", 500)])
def test_the_ids_of_every_word_are_tensorflow_texts(corpus, vocab_size):
    words = corpus_words(SHARED_DATA / corpus)
    # One learner iteration (of datagen's 4): a real vocabulary, learnt in seconds.
    vocabulary = SubwordVocabulary.from_corpus([words], vocab_size, num_iterations=1)
    unique = sorted(set(words))
    escaped = [escape_word(word, vocabulary.alphabet) for word in unique]
    expected = tensorflow_text_ids(vocabulary.tokens, escaped)
    assert [vocabulary._word_ids([word])[0] for word in unique] == expected
    # Words cut into several pieces are the ones that test the longest match.
    assert sum(len(ids) > 1 for ids in expected) > len(unique) // 10


def test_uncuttable_and_overlong_words_are_unknown_as_in_tensorflow_text():
    words = corpus_words(SHARED_DATA / "multi30k" / "val.de.gz")
    learnt = SubwordVocabulary.from_corpus([words], 500, num_iterations=1).tokens
    # Without the pieces of 'e' and 'n' many words have a position that nothing matches.
    tokens = [token for token in learnt if token.strip("#") not in ("e", "n")]
    probes = sorted(set(words)) + ["##ab", "a##b", "Straße straße", "x" * 40, "\\35;#x"]
    matcher = WordpieceMatcher(tokens, SUFFIX_INDICATOR, UNK_ID, max_bytes_per_word=30,
                               skip_ids=range(len(RESERVED_TOKENS)))
    ours = [matcher.tokenize(word) for word in probes]
    assert ours == tensorflow_text_ids(tokens, probes, max_bytes=30)
    assert sum(ids == (UNK_ID,) for ids in ours) > 10
