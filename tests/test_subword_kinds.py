"""WordPiece, learnt SentencePiece (unigram, BPE) and a user's SentencePiece model: same word-level syntax projection."""

import collections
import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.data import subword_kinds
from syntax_t2t.data.sentencepiece_vocab import SentencePieceVocabulary
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError

CORPUS = ("the cat sat on the mat while another cat ran past the dog and "
          "an unbelievable runner was running faster than every walker").split()
COUNTS = collections.Counter(CORPUS * 20)
LEARNT = ("wordpiece", "sentencepiece_unigram", "sentencepiece_bpe")


def vocabulary(kind, size=400):
    source, _ = subword_kinds.build_vocabularies(kind, COUNTS, COUNTS, size, joint=True)
    return source


def word_of_pieces(vocab, count):
    """A word that `vocab` splits into exactly `count` pieces: a corpus word, maybe with letters added."""
    words = sorted(set(CORPUS))
    letters = sorted(set("".join(words)))
    for extra in range(3):
        for word in words:
            for suffix in itertools.product(letters, repeat=extra):
                candidate = word + "".join(suffix)
                if len(vocab.encode([candidate])) == count:
                    return candidate
    raise AssertionError(f"no word of {count} pieces")


def tree(words):
    return DependencyTree(tokens=tuple(words), heads=np.array([2, 0, 2]),
                          labels=("nsubj", "root", "obj"), lemmas=("_",) * 3,
                          upos=("NOUN", "VERB", "NOUN"), xpos=("NN", "VB", "NN"))


@pytest.fixture(scope="module")
def projections(tmp_path_factory):
    """For each kind, the source features of a sentence whose words have 1, 2 and 3 pieces."""
    registration.import_all()
    user_model = tmp_path_factory.mktemp("spm") / "user.model"
    vocabulary("sentencepiece_bpe", 330).save(user_model)
    results = {}
    for kind in LEARNT + (f"sentencepiece:{user_model}",):
        problem = registry.problems.get("synthetic_syntax_reorder")(
            subwords="joint", subword_model=kind, subword_vocab_size=400)
        vocab = vocabulary(kind) if not kind.startswith("sentencepiece:") else \
            SentencePieceVocabulary.load(user_model)
        problem._vocabularies = dict(problem.build_vocabularies([(tree(["a", "b", "c"]), ["x"])]),
                                     inputs=vocab, targets=vocab)
        words = [word_of_pieces(vocab, count) for count in (1, 2, 3)]
        features = problem.encode_source(tree(words))
        results[kind] = (words, vocab, features)
    return results


def test_the_projection_is_the_same_for_every_kind(projections):
    expected = None
    for kind, (words, vocab, features) in projections.items():
        projected = {key: value for key, value in features.items() if key != "inputs"}
        # Pieces: w1 | w2 w2 | w3 w3 w3; every piece of a word depends on the first
        # piece of its head word, and the labels and tags are copied to each piece.
        assert projected["src_word_position"] == [1, 2, 2, 3, 3, 3], kind
        assert projected["src_heads"] == [2, 0, 0, 2, 2, 2], kind
        if expected is not None:
            assert projected == expected, kind
        expected = projected
        assert vocab.decode(features["inputs"]) == words, kind


@pytest.mark.parametrize("kind", ["sentencepiece_unigram", "sentencepiece_bpe"])
def test_learnt_sentencepiece_round_trips_any_words(kind):
    vocab = vocabulary(kind)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.text(min_size=1, max_size=8),
                    min_size=1, max_size=6))
    @example(["\u2581"])  # SentencePiece's own word-boundary mark, alone and inside words
    @example(["a\u2581b", "\u2581x\u2581", "a b\\"])
    def round_trip(words):
        encoded = vocab.encode_with_word_index(words)
        assert vocab.decode(encoded.ids) == words
        assert sorted(set(encoded.word_index)) == list(range(len(words)))

    round_trip()


def test_a_user_model_is_read_and_a_bad_one_named(tmp_path):
    path = tmp_path / "mine.model"
    vocabulary("sentencepiece_unigram", 330).save(path)
    source, target = subword_kinds.build_vocabularies(f"sentencepiece:{path}", {}, {}, 10, False)
    assert source is target and source == SentencePieceVocabulary.load(path)
    (tmp_path / "bad.model").write_bytes(b"not a model")
    with pytest.raises(InputError, match=r"bad\.model: not a SentencePiece model"):
        SentencePieceVocabulary.load(tmp_path / "bad.model")


def test_unknown_kinds_and_too_small_vocabularies_are_refused():
    registration.import_all()
    with pytest.raises(ValueError, match="subword_model='sentencepiece'; expected one of"):
        registry.problems.get("synthetic_syntax_reorder")(subword_model="sentencepiece")
    with pytest.raises(ValueError, match="needs at least .* ids .* got 100"):
        vocabulary("sentencepiece_bpe", 100)
