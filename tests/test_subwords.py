"""Tests for syntax_t2t.data.subwords: learning, exact round trips, size limits, files."""

import collections
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntax_t2t.data import subword_syntax
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.subwords import (
    ESCAPE_CHARACTERS,
    MIN_VOCAB_SIZE,
    SubwordVocabulary,
    build_subword_vocabularies,
    count_words,
    escape_word,
    unescape_word,
)
from syntax_t2t.data.tree import check_heads
from syntax_t2t.data.vocab import RESERVED_TOKENS
from syntax_t2t.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
CZECH_PUD = DATA / "pud" / "cs_pud-ud-test.conllu.gz"

ENGLISH = """the cat sat on the mat . the dog sat on the log . a cat and a dog played in the
garden . the cats were sitting and the dogs were playing . nobody was watching the
playing cats . she said that the garden was beautiful in the morning #cats #dogs""".split()
CZECH = """kočka seděla na rohožce . pes seděl na klacku . kočky a psi si hráli na
zahradě . nikdo se nedíval na hrající si kočky . řekla , že zahrada je ráno krásná""".split()
CORPUS_COUNTS = collections.Counter({word: 5 * count for word, count in collections.Counter(ENGLISH + CZECH).items()})


@pytest.fixture(scope="module")
def vocabulary():
    return SubwordVocabulary.build(CORPUS_COUNTS, vocab_size=200)


def test_frequent_words_become_single_pieces(vocabulary):
    assert vocabulary.tokenize(["the", "cat"]) == ["the", "cat"]
    pieces = vocabulary.tokenize(["unbelievably"])
    assert len(pieces) > 1 and not pieces[0].startswith("##")
    assert all(piece.startswith("##") for piece in pieces[1:])
    assert vocabulary.tokens[: len(RESERVED_TOKENS)] == RESERVED_TOKENS
    assert ESCAPE_CHARACTERS <= vocabulary.alphabet


def test_encode_with_word_index_keeps_word_boundaries(vocabulary):
    words = ["the", "unbelievably", "kočka", "x"]
    encoded = vocabulary.encode_with_word_index(words)
    assert encoded.ids.dtype == np.int64 and encoded.word_index.dtype == np.int64
    assert encoded.ids.tolist() == vocabulary.encode(words)
    assert len(encoded.ids) == len(encoded.word_index)
    subword_syntax.check_word_index(encoded.word_index, num_words=len(words))
    for word_number, word in enumerate(words):
        ids = encoded.ids[encoded.word_index == word_number]
        assert vocabulary.decode(ids) == [word]


def test_escaping_worked_examples():
    alphabet = ESCAPE_CHARACTERS | frozenset("ab#")
    assert escape_word("ab", alphabet) == "ab"
    assert escape_word("ŕa", alphabet) == "\\341;a"
    assert escape_word("a\\b", alphabet) == "a\\\\b"
    assert escape_word("##a", alphabet) == "\\35;#a"
    assert escape_word("a##", alphabet) == "a##"
    assert escape_word("\n", alphabet) == "\\10;"
    for word in ("ab", "ŕa", "a\\b", "##a", "\\35;", "\\\\", "12;3"):
        assert unescape_word(escape_word(word, alphabet)) == word


def test_unescape_leaves_impossible_escapes_alone():
    assert unescape_word("a\\b") == "a\\b"
    assert unescape_word("\\99999999;x") == "\\99999999;x"
    assert unescape_word("\\65") == "\\65"
    assert unescape_word("\\65;\\\\") == "A\\"


def test_words_that_look_like_markup_stay_text(vocabulary):
    assert "#" in vocabulary.alphabet  # so "##the" is not escaped for want of "#"
    words = ["<EOS>", "<pad>", "##the", "#", "##", "<UNK>"]
    ids = vocabulary.encode(words)
    assert min(ids) >= len(RESERVED_TOKENS)  # never a reserved id
    assert vocabulary.decode(ids) == words
    assert vocabulary.detokenize(vocabulary.tokenize(words)) == words


def test_reserved_tokens_written_in_the_data_stay_text():
    # Here "<", ">" and the letters are in the alphabet, so only the
    # tokenizer's handling of the reserved entries keeps "<EOS>" from id 1.
    counts = collections.Counter({token: 50 for token in RESERVED_TOKENS})
    counts.update({"<b>": 20, "a": 5})
    vocabulary = SubwordVocabulary.build(counts, vocab_size=120)
    assert {"<", ">", "E", "O", "S"} <= vocabulary.alphabet
    words = list(RESERVED_TOKENS) + ["<EOS><pad>"]
    ids = vocabulary.encode(words)
    assert min(ids) >= len(RESERVED_TOKENS)
    assert vocabulary.decode(ids) == words


UNICODE_WORDS = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(list("\\;#0123456789ab<>\n\t\x00"))),
    min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(UNICODE_WORDS, min_size=1, max_size=8))
def test_round_trip_of_arbitrary_unicode_words(vocabulary, words):
    encoded = vocabulary.encode_with_word_index(words)
    assert vocabulary.decode(encoded.ids) == words
    assert vocabulary.detokenize(vocabulary.tokenize(words)) == words
    assert encoded.ids.min() >= len(RESERVED_TOKENS)
    assert int(encoded.word_index[-1]) == len(words) - 1
    pieces = [vocabulary.id_to_token(int(token_id)) for token_id in encoded.ids]
    starts = [not piece.startswith("##") for piece in pieces]
    assert starts == [t == 0 or encoded.word_index[t] != encoded.word_index[t - 1] for t in range(len(pieces))]


def test_lone_surrogates_and_control_characters_round_trip(vocabulary):
    words = ["\ud800", "a\udfffb", "\x00", "tab\there", "\u2028"]
    assert vocabulary.decode(vocabulary.encode(words)) == words


def test_decode_of_model_output(vocabulary):
    the, cat = vocabulary.encode(["the"]) + vocabulary.encode(["cat"])
    suffix = vocabulary.token_to_id("##s")
    assert vocabulary.decode([the, cat, suffix, 1, the]) == ["the", "cats"]
    assert vocabulary.decode([0, the, 0, 2, cat]) == ["the", "<UNK>", "cat"]
    assert vocabulary.decode([suffix, the]) == ["s", "the"]  # a continuation with nothing to continue
    assert vocabulary.decode([the, 1, 0], strip=False) == ["the", "<EOS>", "<pad>"]


def test_bad_words_are_reported(vocabulary):
    with pytest.raises(ValueError, match="word 1 is empty"):
        vocabulary.encode(["a", ""])
    with pytest.raises(ValueError, match="word 0 must be a string"):
        vocabulary.encode([3])


def test_overlong_word_is_reported(vocabulary):
    # Each escaped emoji takes 8 bytes, so this word passes the 1 MiB word limit.
    with pytest.raises(ValueError, match="too long"):
        vocabulary.encode(["\U0001F600" * 140_000])


@pytest.mark.parametrize("vocab_size", [40, 90, 400])
def test_vocabulary_respects_its_size(vocab_size):
    vocabulary = SubwordVocabulary.build(CORPUS_COUNTS, vocab_size=vocab_size)
    assert len(vocabulary) <= vocab_size
    assert len(vocabulary.alphabet) <= (vocab_size - len(RESERVED_TOKENS)) // 2
    words = sorted(CORPUS_COUNTS) + ["žluťoučký", "🦜"]
    assert vocabulary.decode(vocabulary.encode(words)) == words


def test_smallest_vocabulary_escapes_everything_else():
    vocabulary = SubwordVocabulary.build(CORPUS_COUNTS, vocab_size=MIN_VOCAB_SIZE)
    assert len(vocabulary) == MIN_VOCAB_SIZE
    assert vocabulary.alphabet == ESCAPE_CHARACTERS
    assert vocabulary.tokenize(["a"]) == ["\\", "##9", "##7", "##;"]
    words = sorted(CORPUS_COUNTS) + ["žluťoučký", "🦜"]
    assert vocabulary.decode(vocabulary.encode(words)) == words


def test_larger_vocabularies_split_less():
    words = ENGLISH + CZECH
    lengths = [len(SubwordVocabulary.build(CORPUS_COUNTS, vocab_size=size).encode(words)) for size in (60, 100, 400)]
    # With room for every word of the corpus, every word is one piece.
    assert lengths[0] > lengths[1] > lengths[2] == len(words)


def test_max_unique_chars_limits_the_alphabet():
    vocabulary = SubwordVocabulary.build(CORPUS_COUNTS, vocab_size=300, max_unique_chars=3)
    # The three most frequent characters of the corpus, plus the escapes.
    characters = collections.Counter()
    for word, count in CORPUS_COUNTS.items():
        for character in word:
            characters[character] += count
    top = sorted(characters, key=lambda character: (-characters[character], character))[:3]
    assert vocabulary.alphabet == ESCAPE_CHARACTERS | set(top)


def test_build_rejects_bad_arguments():
    with pytest.raises(ValueError, match=f"below the minimum {MIN_VOCAB_SIZE}"):
        SubwordVocabulary.build(CORPUS_COUNTS, vocab_size=MIN_VOCAB_SIZE - 1)
    with pytest.raises(ValueError, match="no words"):
        SubwordVocabulary.build({}, vocab_size=100)
    with pytest.raises(ValueError, match="empty"):
        SubwordVocabulary.build({"": 3}, vocab_size=100)
    with pytest.raises(ValueError, match="count 0"):
        SubwordVocabulary.build({"a": 0}, vocab_size=100)


def test_build_is_deterministic():
    first = SubwordVocabulary.build(CORPUS_COUNTS, vocab_size=150)
    second = SubwordVocabulary.build(dict(reversed(list(CORPUS_COUNTS.items()))), vocab_size=150)
    assert first == second


def test_joint_and_separate_vocabularies():
    source, target = count_words([CZECH]), count_words([ENGLISH])
    joint_source, joint_target = build_subword_vocabularies(source, target, vocab_size=300, joint=True)
    assert joint_source is joint_target
    assert "kočky" in joint_source.tokens or "kočk" in joint_source.tokens
    assert "the" in joint_source.tokens
    czech_only, english_only = build_subword_vocabularies(source, target, vocab_size=300, joint=False)
    assert "the" in english_only.tokens and "the" not in czech_only.tokens
    assert "na" in czech_only.tokens and "na" not in english_only.tokens


def test_save_and_load_round_trip(vocabulary, tmp_path):
    path = tmp_path / "subwords.txt"
    vocabulary.save(path)
    assert path.read_text(encoding="utf-8").split("\n")[:5] == list(RESERVED_TOKENS) + [vocabulary.tokens[4]]
    loaded = SubwordVocabulary.load(path)
    assert loaded == vocabulary
    words = ["the", "nezávislost", "ŕ"]
    assert loaded.encode(words) == vocabulary.encode(words)
    assert [p.name for p in tmp_path.iterdir()] == ["subwords.txt"]  # no temporary file left behind


def test_load_reports_what_is_wrong(tmp_path):
    lines = list(RESERVED_TOKENS) + sorted(ESCAPE_CHARACTERS) + ["##" + c for c in sorted(ESCAPE_CHARACTERS)]
    good = tmp_path / "good.txt"
    good.write_text("\n".join(lines + ["a", "##a"]) + "\n", encoding="utf-8")
    assert SubwordVocabulary.load(good).alphabet == ESCAPE_CHARACTERS | {"a"}

    bare = tmp_path / "bare.txt"
    bare.write_text("\n".join(lines + ["a", "##"]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=f"bare.txt:{len(lines) + 2}: .*bare '##'"):
        SubwordVocabulary.load(bare)

    missing = tmp_path / "missing.txt"
    missing.write_text("\n".join(line for line in lines if line != "##;") + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"missing.txt: .*escape pieces \['##;'\]"):
        SubwordVocabulary.load(missing)

    no_reserved = tmp_path / "no_reserved.txt"
    no_reserved.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="no_reserved.txt:1"):
        SubwordVocabulary.load(no_reserved)


def test_constructor_rejects_bad_token_lists():
    with pytest.raises(ValueError, match="reserved"):
        SubwordVocabulary(["a", "##a"])
    with pytest.raises(ValueError, match="escape pieces"):
        SubwordVocabulary(list(RESERVED_TOKENS) + ["a", "##a"])


def test_pickled_vocabulary_still_encodes(vocabulary):
    words = ["the", "kočky", "🦜"]
    expected = vocabulary.encode(words)
    copy = pickle.loads(pickle.dumps(vocabulary))
    assert copy == vocabulary
    assert copy.encode(words) == expected


@pytest.mark.real_data
@pytest.mark.skipif(not CZECH_PUD.exists(), reason=f"real data not found at {CZECH_PUD}")
def test_czech_pud_round_trip_and_subword_trees():
    trees = list(read_conllu(CZECH_PUD))
    vocabulary = SubwordVocabulary.from_corpus((tree.tokens for tree in trees[:60]), vocab_size=250)
    assert len(vocabulary) <= 250
    split_words = total_words = 0
    for tree in trees:
        encoded = vocabulary.encode_with_word_index(tree.tokens)
        assert vocabulary.decode(encoded.ids) == list(tree.tokens)
        sisa = subword_syntax.first_subword_heads(encoded.word_index, tree.heads)
        check_heads(sisa)
        assert subword_syntax.word_heads_from_subword_heads(sisa, encoded.word_index).tolist() == tree.heads.tolist()
        parents = subword_syntax.pascal_parent_positions(encoded.word_index, tree.heads)
        assert parents.min() >= 0 and parents.max() <= len(encoded.ids) - 1
        total_words += len(tree)
        split_words += np.count_nonzero(np.bincount(encoded.word_index) > 1)
    # A 250-entry vocabulary learnt on 60 sentences must split many of the 1000 sentences' words.
    assert 0.2 * total_words < split_words < total_words
