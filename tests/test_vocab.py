"""Tests for syntax_t2t.data.vocab."""

import collections
import tempfile
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntax_t2t.data.vocab import (EOS_ID, PAD_ID, RESERVED_TOKENS, ROOT_ID, UNK_ID,
                                   Vocabulary)
from syntax_t2t.errors import InputError


def test_reserved_ids_match_the_design():
    assert RESERVED_TOKENS == ("<pad>", "<EOS>", "<UNK>", "<ROOT>")
    assert (PAD_ID, EOS_ID, UNK_ID, ROOT_ID) == (0, 1, 2, 3)
    vocab = Vocabulary.build({"a": 1})
    assert [vocab.token_to_id(t) for t in RESERVED_TOKENS] == [0, 1, 2, 3]


def test_build_orders_by_count_then_code_point():
    counts = {"b": 3, "a": 3, "c": 5, "Z": 3, "d": 1}
    vocab = Vocabulary.build(counts)
    # c (5), then the three 3s in code-point order ("Z" < "a" < "b"), then d.
    assert vocab.tokens[4:] == ("c", "Z", "a", "b", "d")


def test_max_size_counts_the_reserved_tokens_and_min_count_filters():
    counts = {"x": 10, "y": 9, "z": 8, "w": 1}
    assert Vocabulary.build(counts, max_size=6).tokens == RESERVED_TOKENS + ("x", "y")
    assert Vocabulary.build(counts, min_count=2).tokens == RESERVED_TOKENS + ("x", "y", "z")
    with pytest.raises(ValueError, match="smaller than the 4 reserved"):
        Vocabulary.build(counts, max_size=3)


def test_reserved_and_unstorable_tokens_in_the_data_are_left_out():
    vocab = Vocabulary.build({"<EOS>": 100, "a\nb": 50, "": 40, "ok": 1})
    assert vocab.tokens == RESERVED_TOKENS + ("ok",)
    assert vocab.encode(["<EOS>", "a\nb", "ok"]) == [EOS_ID, UNK_ID, 4]


def test_from_corpus_counts_sentences():
    vocab = Vocabulary.from_corpus([["a", "b", "a"], ["b", "c", "b"]])
    assert vocab.tokens[4:] == ("b", "a", "c")


def test_encode_and_decode():
    vocab = Vocabulary(RESERVED_TOKENS + ("hello", "world"))
    assert vocab.encode(["hello", "unseen", "world"]) == [4, UNK_ID, 5]
    assert vocab.decode([4, PAD_ID, 5, EOS_ID, 4]) == ["hello", "world"]
    assert vocab.decode([4, PAD_ID, 5, EOS_ID], strip=False) == ["hello", "<pad>", "world", "<EOS>"]
    with pytest.raises(IndexError, match="id 6 is outside the vocabulary of size 6"):
        vocab.id_to_token(6)


def test_constructor_rejects_broken_token_lists():
    with pytest.raises(ValueError, match="must start with the reserved tokens"):
        Vocabulary(("a", "b"))
    with pytest.raises(ValueError, match="appears twice"):
        Vocabulary(RESERVED_TOKENS + ("a", "a"))
    with pytest.raises(ValueError, match="line breaks"):
        Vocabulary(RESERVED_TOKENS + ("a\rb",))


def test_save_load_round_trip_is_one_token_per_line(tmp_path):
    vocab = Vocabulary.build({"Praha": 2, "pes": 2, "kočka": 1, "a b": 1})
    path = tmp_path / "vocab.txt"
    vocab.save(path)
    assert path.read_text(encoding="utf-8").split("\n") == list(vocab.tokens) + [""]
    assert Vocabulary.load(path) == vocab
    assert not [p for p in tmp_path.iterdir() if p.name != "vocab.txt"], "temporary file left behind"


@pytest.mark.parametrize("text, line, message", [
    ("<pad>\n<EOS>\n<ROOT>\n<UNK>\n", 3, "expected reserved token '<UNK>'"),
    ("<pad>\n<EOS>\n<UNK>\n<ROOT>\na\n\n", 6, "empty line"),
    ("<pad>\n<EOS>\n<UNK>\n<ROOT>\na\nb\na\n", 7, "already appears on line 5"),
])
def test_load_names_the_bad_line(tmp_path, text, line, message):
    path = tmp_path / "vocab.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as error:
        Vocabulary.load(path)
    assert error.value.line == line
    assert error.value.path == str(path)


def test_load_of_a_too_short_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("<pad>\n<EOS>\n", encoding="utf-8")
    with pytest.raises(InputError, match="at least the 4 reserved tokens"):
        Vocabulary.load(path)


def _naive_build(counts, max_size):
    """Reference: repeatedly take the most frequent, smallest remaining token."""
    remaining = {t: c for t, c in counts.items() if t not in RESERVED_TOKENS}
    tokens = list(RESERVED_TOKENS)
    while remaining and (max_size is None or len(tokens) < max_size):
        best = min(remaining, key=lambda t: (-remaining[t], t))
        tokens.append(best)
        del remaining[best]
    return tuple(tokens)


words = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
                min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(sentences=st.lists(st.lists(words, max_size=6), max_size=8),
       max_size=st.one_of(st.none(), st.integers(min_value=4, max_value=12)))
def test_build_matches_a_naive_reference_and_round_trips(sentences, max_size):
    counts = collections.Counter(token for sentence in sentences for token in sentence)
    vocab = Vocabulary.build(counts, max_size=max_size)
    assert vocab.tokens == _naive_build(counts, max_size)
    # Insertion order of the counts does not matter.
    assert Vocabulary.build(dict(reversed(list(counts.items()))), max_size=max_size) == vocab
    for sentence in sentences:
        ids = vocab.encode(sentence)
        expected = [token if token in vocab else "<UNK>" for token in sentence]
        assert vocab.decode(ids, strip=False) == expected


# What a vocabulary can hold: any token without a line break or a NUL byte (which readers
# refuse), whether or not it is normalized text: `load` reads the file token for token.
storable_words = words.filter(lambda token: "\x00" not in token)


@settings(max_examples=30, deadline=None)
@given(tokens=st.lists(storable_words, unique=True, max_size=10))
def test_save_load_round_trip_of_any_storable_tokens(tokens):
    vocab = Vocabulary.build({token: 1 for token in tokens})
    with tempfile.TemporaryDirectory() as directory:
        path = f"{directory}/vocab.txt"
        vocab.save(path)
        assert Vocabulary.load(path) == vocab


def test_load_keeps_tokens_that_text_normalization_would_change(tmp_path):
    """A datagen from before text was read without zero width spaces stored one as a token
    (Multi30k's Czech train has one); its data stays readable, each token at its id."""
    odd = ("\u200b", "##\u2060", unicodedata.normalize("NFD", "š"), "š")
    vocab = Vocabulary(RESERVED_TOKENS + odd)
    vocab.save(tmp_path / "v.txt")
    loaded = Vocabulary.load(tmp_path / "v.txt")
    assert loaded.tokens == RESERVED_TOKENS + odd
    assert loaded.token_to_id("\u200b") == len(RESERVED_TOKENS)


def test_save_load_keeps_unusual_characters(tmp_path):
    vocab = Vocabulary(RESERVED_TOKENS + ("a\x85b", "c\u2028d", "tab\there", " space "))
    vocab.save(tmp_path / "v.txt")
    assert Vocabulary.load(tmp_path / "v.txt") == vocab
