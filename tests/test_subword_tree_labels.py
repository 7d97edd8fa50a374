"""Tree labels of subword batches follow the rule of `data/subword_syntax.py`.

"A subword stands for its word": the on-device labels of `layers/tree_labels`
given `word_positions` equal the numpy reference (`subword_syntax`), pieces of
one word are at distance 0 with the empty traversal code, and pairs of pieces
of different words carry the word-level label of their words. The models
`tree_distance` and `tree_traversal` read `src_word_position` with
`source_word_positions=true` and keep word-level problems unchanged.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops
from tree_strategies import dependency_heads

import syntax_t2t.hparams_sets.transformer  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import registry
from syntax_t2t.data import features, subword_syntax
from syntax_t2t.layers import tree_labels
from syntax_t2t.models.tree_distance import TREE_DISTANCE
from syntax_t2t.models.tree_traversal import TREE_TRAVERSAL

pytestmark = pytest.mark.backends


def numpy(tensor):
    return ops.convert_to_numpy(tensor)

# "I think this is a good example" with "think" split into 3 pieces:
# subwords  I  th ##in ##k  this  is  a  good  example
# position  0   1   2    3     4   5  6     7        8
# think <- ROOT; I, is <- think; this, example <- is; a, good <- example.
WORD_HEADS = [2, 0, 4, 2, 7, 7, 4]
PIECES = [1, 3, 1, 1, 1, 1, 1]
THINK_PIECES = [1, 2, 3]


def subword_batch(sentences, extra_padding=0):
    """design.md layout of subword sentences: heads and word positions, then <EOS> and padding.

    Args:
        sentences: (word heads, pieces per word) pairs.

    Returns:
        `(src_heads, src_word_position)`, int32 [B, S] each (-1 and 0 after the words).
    """
    indices = [subword_syntax.word_index_from_counts(pieces) for _, pieces in sentences]
    length = max(index.size for index in indices) + 1 + extra_padding
    heads = np.full((len(sentences), length), -1, np.int32)
    words = np.zeros((len(sentences), length), np.int32)
    for row, ((word_heads, _), index) in enumerate(zip(sentences, indices)):
        heads[row, :index.size] = subword_syntax.first_subword_heads(index, word_heads)
        words[row, :index.size] = index + 1
    return heads, words


def test_worked_example_three_pieces_of_one_word():
    heads, words = subword_batch([(WORD_HEADS, PIECES)])
    distance = numpy(tree_labels.tree_distance_labels(heads, 5, word_positions=words))[0]
    # Row of "##in" (the middle piece of "think"): I 1, think's pieces 0,
    # this 2 (this <- is <- think), is 1, a 3, good 3, example 2.
    np.testing.assert_array_equal(distance[2, :9], [1, 0, 0, 0, 2, 1, 3, 3, 2])
    # Row of "a": to every piece of "think" 3 edges (a <- example <- is <- think).
    np.testing.assert_array_equal(distance[6, :9], [4, 3, 3, 3, 3, 2, 0, 2, 1])
    # The subword heads alone put the pieces of "think" two edges apart (via ROOT).
    plain = numpy(tree_labels.tree_distance_labels(heads, 5))[0]
    assert plain[1, 2] == plain[2, 3] == 2
    # <EOS> (position 9) pairs keep the no-tree label.
    no_tree = tree_labels.tree_distance_label_count(5) - 1
    assert (distance[9] == no_tree).all() and (distance[:, 9] == no_tree).all()

    vocab = features.traversal_vocab(4)
    traversal = numpy(tree_labels.tree_traversal_labels(heads, 4, word_positions=words))[0]
    codes = [[vocab[i] for i in row] for row in traversal[:9, :9]]
    assert [codes[s][t] for s in THINK_PIECES for t in THINK_PIECES] == [""] * 9
    assert [codes[0][t] for t in THINK_PIECES] == ["U"] * 3  # I -> think
    assert [codes[t][0] for t in THINK_PIECES] == ["D"] * 3  # think -> I
    assert [codes[t][4] for t in THINK_PIECES] == ["DD"] * 3  # think -> is -> this
    assert codes[0][5] == "R"  # I -> its right sibling "is"


@pytest.mark.parametrize("include_root", [False, True])
def test_worked_example_equals_numpy_reference(include_root):
    heads, words = subword_batch([(WORD_HEADS, PIECES)], extra_padding=2)
    index = subword_syntax.word_index_from_counts(PIECES)
    n = index.size + int(include_root)
    distance = tree_labels.tree_distance_labels(heads, 3, include_root, word_positions=words)
    np.testing.assert_array_equal(
        numpy(distance)[0, :n, :n],
        subword_syntax.subword_tree_distance_labels(index, WORD_HEADS, 3, include_root))
    traversal = tree_labels.tree_traversal_labels(heads, 3, include_root, word_positions=words)
    np.testing.assert_array_equal(
        numpy(traversal)[0, :n, :n],
        subword_syntax.subword_traversal_labels(index, WORD_HEADS, 3, include_root))


@st.composite
def subword_sentences(draw, max_words=7):
    """A random word tree and a random split of its words into 1-3 pieces."""
    heads = draw(dependency_heads(max_words))
    pieces = draw(st.lists(st.integers(1, 3), min_size=len(heads), max_size=len(heads)))
    return heads, pieces


@settings(max_examples=30, deadline=None)
@given(st.lists(subword_sentences(), min_size=1, max_size=3), st.integers(0, 2),
       st.integers(1, 5), st.booleans())
def test_labels_of_pieces_are_those_of_their_words(sentences, extra_padding, limit, include_root):
    heads, words = subword_batch(sentences, extra_padding)
    distance = numpy(tree_labels.tree_distance_labels(heads, limit, include_root, words))
    traversal = numpy(tree_labels.tree_traversal_labels(heads, limit, include_root, words))
    offset = int(include_root)
    for row, (word_heads, pieces) in enumerate(sentences):
        index = subword_syntax.word_index_from_counts(pieces)
        # The word tree is recovered from the subword heads.
        recovered = numpy(tree_labels.word_heads(heads, words))[row]
        np.testing.assert_array_equal(recovered[:len(word_heads)], word_heads)
        assert (recovered[len(word_heads):] == -1).all()
        word_distance = features.tree_distance_labels(word_heads, limit)
        word_traversal = features.traversal_labels(word_heads, limit)
        for s in range(index.size):
            for t in range(index.size):
                d, c = distance[row, s + offset, t + offset], traversal[row, s + offset, t + offset]
                if index[s] == index[t]:
                    assert d == 0 and c == 0  # the empty code "" has id 0
                else:
                    assert d == word_distance[index[s], index[t]]
                    assert c == word_traversal[index[s], index[t]]
        n = index.size + offset
        np.testing.assert_array_equal(
            distance[row, :n, :n],
            subword_syntax.subword_tree_distance_labels(index, word_heads, limit, include_root))
        np.testing.assert_array_equal(
            traversal[row, :n, :n],
            subword_syntax.subword_traversal_labels(index, word_heads, limit, include_root))
        assert (distance[row, n:] == tree_labels.tree_distance_label_count(limit) - 1).all()
        assert (traversal[row, :, n:] == tree_labels.tree_traversal_label_count(limit) - 1).all()


@settings(max_examples=15, deadline=None)
@given(st.lists(subword_sentences(), min_size=1, max_size=3), st.booleans())
def test_one_piece_per_word_changes_nothing(sentences, include_root):
    sentences = [(heads, [1] * len(heads)) for heads, _ in sentences]
    heads, words = subword_batch(sentences, extra_padding=1)
    for labels in (tree_labels.tree_distance_labels, tree_labels.tree_traversal_labels):
        np.testing.assert_array_equal(numpy(labels(heads, 4, include_root, words)),
                                      numpy(labels(heads, 4, include_root)))


def model_hparams(overrides=""):
    hp = registry.hparams("transformer_tiny")
    hp.parse("hidden_size=16,filter_size=32,num_heads=2,layer_prepostprocess_dropout=0,"
             "attention_dropout=0,relu_dropout=0,max_tree_distance=3,max_traversal_length=3")
    return hp.parse(overrides)


VOCAB_SIZES = {"inputs": 20, "targets": 18, "deprel": 8, "upos": 7, "xpos": 9}


@pytest.mark.parametrize("name,key,reference", [
    ("tree_distance", TREE_DISTANCE, subword_syntax.subword_tree_distance_labels),
    ("tree_traversal", TREE_TRAVERSAL, subword_syntax.subword_traversal_labels)])
def test_models_read_word_positions_on_subword_problems(name, key, reference):
    heads, words = subword_batch([(WORD_HEADS, PIECES), ([0, 1], [2, 1])])
    inputs = np.where(words > 0, 5, 0).astype(np.int32)
    inputs[0, 9], inputs[1, 3] = 1, 1  # <EOS>
    batch = {"inputs": inputs, "src_heads": heads, "src_word_position": words}
    model = registry.model(name)(model_hparams("source_word_positions=true"), VOCAB_SIZES)
    assert "src_word_position" in model.train_features & model.decode_features
    labels = numpy(model.source_labels(batch, model.source_ids(batch))[key])
    index = subword_syntax.word_index_from_counts(PIECES)
    np.testing.assert_array_equal(labels[0, :9, :9], reference(index, WORD_HEADS, 3))
    assert labels[0, 1, 2] == 0 and labels[1, 0, 1] == 0  # pieces of one word

    # Word-level problems (the hparam off) read the heads as before.
    word_level = registry.model(name)(model_hparams(), VOCAB_SIZES)
    assert "src_word_position" not in word_level.train_features | word_level.decode_features
    plain = numpy(word_level.source_labels(batch, word_level.source_ids(batch))[key])
    assert plain[0, 1, 2] != 0
    # The forward pass runs with word positions.
    batch["targets"] = np.array([[5, 6, 1, 0], [7, 1, 0, 0]], np.int32)
    assert model(batch)["logits"].shape == (2, 4, VOCAB_SIZES["targets"])
