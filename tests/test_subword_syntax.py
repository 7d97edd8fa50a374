"""Tests for syntax_t2t.data.subword_syntax: Pascal's example, naive references, properties."""

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_strategies import dependency_heads

from syntax_t2t.data import features
from syntax_t2t.data import subword_syntax as sw
from syntax_t2t.data.tree import TreeError, check_heads

# Five words; word 4 (1-based) is the root and is split into subwords 6, 7, 8
# (Pascal's example), word 3 into subwords 4, 5 (a fractional middle).
# w1 -> w3, w2 -> w3, w3 -> w4, w4 -> ROOT, w5 -> w4.
EXAMPLE_HEADS = [3, 3, 4, 0, 4]
EXAMPLE_COUNTS = [2, 2, 2, 3, 1]
EXAMPLE_INDEX = [0, 0, 1, 1, 2, 2, 3, 3, 3, 4]


def test_word_index_from_counts_and_spans():
    index = sw.word_index_from_counts(EXAMPLE_COUNTS)
    assert index.tolist() == EXAMPLE_INDEX
    first, last = sw.word_spans(index)
    assert first.tolist() == [0, 2, 4, 6, 9]
    assert last.tolist() == [1, 3, 5, 8, 9]
    assert sw.word_middles(index).tolist() == [0.5, 2.5, 4.5, 7.0, 9.0]


def test_pascal_worked_example():
    parents = sw.pascal_parent_positions(EXAMPLE_INDEX, EXAMPLE_HEADS)
    # w1, w2 -> middle of w3 (4, 5) = 4.5; w3 -> middle of w4 (6, 7, 8) = 7;
    # w4 is attached to ROOT, so its own middle 7; w5 -> w4 = 7.
    assert parents.tolist() == [4.5, 4.5, 4.5, 4.5, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0]
    assert parents.dtype == np.float64


def test_pascal_root_prefixed_worked_example():
    parents = sw.pascal_parent_positions(EXAMPLE_INDEX, EXAMPLE_HEADS, root_prefixed=True)
    # ROOT at 0 is its own parent; everything else moves one position on, and
    # the root word's subwords point at ROOT.
    assert parents.tolist() == [0.0, 5.5, 5.5, 5.5, 5.5, 8.0, 8.0, 0.0, 0.0, 0.0, 8.0]


def test_sisa_worked_example():
    heads = sw.first_subword_heads(EXAMPLE_INDEX, EXAMPLE_HEADS)
    # First subwords of w1..w5 sit at 1-based positions 1, 3, 5, 7, 10.
    assert heads.tolist() == [5, 5, 5, 5, 7, 7, 0, 0, 0, 7]
    assert heads.dtype == np.int32
    assert sw.word_heads_from_subword_heads(heads, EXAMPLE_INDEX).tolist() == EXAMPLE_HEADS


def test_labels_and_tags_are_copied_to_every_subword():
    labels = ["nsubj", "advmod", "obj", "root", "punct"]
    assert sw.copy_to_subwords(labels, EXAMPLE_INDEX).tolist() == [
        "nsubj", "nsubj", "advmod", "advmod", "obj", "obj", "root", "root", "root", "punct"]
    ids = np.array([7, 8, 9, 10, 11])
    assert sw.copy_to_subwords(ids, EXAMPLE_INDEX).tolist() == [7, 7, 8, 8, 9, 9, 10, 10, 10, 11]
    with pytest.raises(ValueError, match="5 words"):
        sw.copy_to_subwords(labels[:4], EXAMPLE_INDEX)


def test_tree_distance_worked_example():
    distances = sw.subword_tree_distance_labels(EXAMPLE_INDEX, EXAMPLE_HEADS, max_distance=10)
    # The three subwords of w4 are one node: distance 0 among themselves.
    assert distances[6:9, 6:9].tolist() == [[0, 0, 0]] * 3
    # w5 - w4 - w3 - w1: three edges, whichever subword of w1.
    assert distances[9, 0] == distances[9, 1] == distances[1, 9] == 3
    # w1 and w2 are siblings under w3.
    assert distances[0, 2] == 2
    clipped = sw.subword_tree_distance_labels(EXAMPLE_INDEX, EXAMPLE_HEADS, max_distance=2)
    assert clipped[9, 0] == 3  # the overflow label max_distance + 1
    with_root = sw.subword_tree_distance_labels(EXAMPLE_INDEX, EXAMPLE_HEADS, 10, include_root=True)
    assert with_root.shape == (11, 11)
    assert with_root[0].tolist() == [0, 3, 3, 3, 3, 2, 2, 1, 1, 1, 2]


def test_traversal_worked_example():
    vocab = features.traversal_vocab(4)
    labels = sw.subword_traversal_labels(EXAMPLE_INDEX, EXAMPLE_HEADS, max_traversal=4)
    codes = {(s, t): vocab[labels[s, t]] for s in range(10) for t in range(10)}
    assert codes[6, 8] == codes[8, 6] == codes[7, 7] == ""
    assert codes[0, 2] == "R"      # w1 to its right sibling w2
    assert codes[3, 1] == "L"      # w2 to its left sibling w1
    # w5 climbs to w4 and descends through its left sibling w3 to w1.
    assert codes[9, 0] == "LD"
    assert codes[0, 9] == "UUD"    # w1 up to w3, up to w4, down to w5


def test_word_relative_positions_worked_example():
    positions = sw.word_relative_positions(EXAMPLE_INDEX, max_relative_position=1)
    # Subwords of one word are at offset 0 (label k = 1); neighbouring words at +-1.
    assert positions[6].tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1, 2]
    assert positions[1].tolist() == [1, 1, 2, 2, 2, 2, 2, 2, 2, 2]


@pytest.mark.parametrize("word_index, message", [
    ([], "empty"),
    ([[0, 0]], "one-dimensional"),
    ([0.0, 1.0], "integers"),
    ([1, 1, 2], "subword 0 belongs to word 1"),
    ([0, 1, 0], "subword 2 belongs to word 0 but subword 1 to word 1"),
    ([0, 2], "subword 1 belongs to word 2"),
])
def test_bad_word_index_is_reported(word_index, message):
    with pytest.raises(ValueError, match=message):
        sw.check_word_index(word_index)


def test_word_index_must_cover_the_tree():
    with pytest.raises(ValueError, match="covers 4 words but the sentence has 5"):
        sw.pascal_parent_positions([0, 1, 2, 3], EXAMPLE_HEADS)
    with pytest.raises(TreeError, match="cycle"):
        sw.first_subword_heads([0, 1], [2, 1])


def test_word_heads_from_predictions_reads_first_subwords():
    # The first subword of w1 points at subword 8 (1-based; inside w4),
    # its second subword's prediction is ignored.
    predicted = np.array([8, 1, 5, 5, 7, 7, 0, 3, 3, 9])
    assert sw.word_heads_from_subword_heads(predicted, EXAMPLE_INDEX).tolist() == [4, 3, 4, 0, 4]
    with pytest.raises(ValueError, match="subword 2 has head 11"):
        sw.word_heads_from_subword_heads(np.array([1, 1, 11, 0, 0, 0, 0, 0, 0, 0]), EXAMPLE_INDEX)
    with pytest.raises(ValueError, match="10 subwords"):
        sw.word_heads_from_subword_heads(np.array([0, 0]), EXAMPLE_INDEX)


@st.composite
def split_trees(draw, max_words=9, max_pieces=4):
    """A random tree over n words and a random split of each word into pieces."""
    heads = draw(dependency_heads(max_words))
    n = len(heads)
    counts = draw(st.lists(st.integers(1, max_pieces), min_size=n, max_size=n))
    return np.array(heads), np.repeat(np.arange(n), counts)


def _positions_of(word_index, word):
    return [t for t, owner in enumerate(word_index) if owner == word]


def _naive_tree_distances(heads):
    """Breadth-first search over the undirected tree with ROOT as node 0."""
    size = len(heads) + 1
    neighbours = collections.defaultdict(list)
    for child, head in enumerate(heads, start=1):
        neighbours[child].append(head)
        neighbours[head].append(child)
    distances = np.full((size, size), -1)
    for start in range(size):
        distances[start, start] = 0
        queue = collections.deque([start])
        while queue:
            node = queue.popleft()
            for other in neighbours[node]:
                if distances[start, other] < 0:
                    distances[start, other] = distances[start, node] + 1
                    queue.append(other)
    return distances


@settings(max_examples=60, deadline=None)
@given(split_trees())
def test_pascal_matches_naive_reference(tree):
    heads, word_index = tree
    parents = sw.pascal_parent_positions(word_index, heads)
    prefixed = sw.pascal_parent_positions(word_index, heads, root_prefixed=True)
    assert prefixed[0] == 0.0
    for t, word in enumerate(word_index):
        head = heads[word]
        target = word if head == 0 else head - 1
        assert parents[t] == np.mean(_positions_of(word_index, target))
        assert prefixed[t + 1] == (0.0 if head == 0 else np.mean(_positions_of(word_index, head - 1)) + 1)
    # Pascal's rule gives all subwords of one word the same parent.
    for word in range(len(heads)):
        assert len(set(parents[word_index == word].tolist())) == 1


@settings(max_examples=60, deadline=None)
@given(split_trees())
def test_sisa_heads_point_at_the_first_subword_of_the_head_word(tree):
    heads, word_index = tree
    sisa = sw.first_subword_heads(word_index, heads)
    check_heads(sisa)  # a valid tree over the subwords
    for t, word in enumerate(word_index):
        head = heads[word]
        if head == 0:
            assert sisa[t] == 0
        else:
            # A subword's parse head points into its head word, at its first subword.
            assert word_index[sisa[t] - 1] == head - 1
            assert sisa[t] - 1 == min(_positions_of(word_index, head - 1))
    assert sw.word_heads_from_subword_heads(sisa, word_index).tolist() == heads.tolist()
    # The first subwords form a copy of the word tree.
    first, _ = sw.word_spans(word_index)
    on_subwords = features.tree_distances(sisa)
    assert np.array_equal(on_subwords[np.ix_(first, first)], features.tree_distances(heads))


@settings(max_examples=60, deadline=None)
@given(split_trees(), st.integers(1, 5))
def test_subword_tree_distances_follow_their_words(tree, max_distance):
    heads, word_index = tree
    naive = _naive_tree_distances(heads.tolist())
    labels = sw.subword_tree_distance_labels(word_index, heads, max_distance, include_root=True)
    nodes = np.concatenate([[0], word_index + 1])
    for s, node_s in enumerate(nodes):
        for t, node_t in enumerate(nodes):
            assert labels[s, t] == min(naive[node_s, node_t], max_distance + 1)
    plain = sw.subword_tree_distance_labels(word_index, heads, max_distance)
    assert np.array_equal(plain, labels[1:, 1:])


@settings(max_examples=60, deadline=None)
@given(split_trees(), st.integers(1, 6))
def test_subword_traversal_labels_follow_their_words(tree, max_traversal):
    heads, word_index = tree
    vocab = features.traversal_vocab(max_traversal)
    overflow = features.traversal_vocab_size(max_traversal) - 1
    codes = features.traversal_codes(heads)
    labels = sw.subword_traversal_labels(word_index, heads, max_traversal)
    for s, word_s in enumerate(word_index):
        for t, word_t in enumerate(word_index):
            code = codes[word_s, word_t]
            expected = vocab.index(code) if code in vocab else overflow
            assert labels[s, t] == expected
            if word_s == word_t:
                assert labels[s, t] == vocab.index("")


@settings(max_examples=60, deadline=None)
@given(split_trees(max_pieces=1), st.integers(1, 5))
def test_features_reduce_to_word_features_with_one_subword_per_word(tree, k):
    heads, word_index = tree
    n = len(heads)
    assert sw.first_subword_heads(word_index, heads).tolist() == heads.tolist()
    own = np.arange(n)
    assert sw.pascal_parent_positions(word_index, heads).tolist() == np.where(heads == 0, own, heads - 1).tolist()
    assert sw.pascal_parent_positions(word_index, heads, root_prefixed=True).tolist() == [0] + heads.tolist()
    for include_root in (False, True):
        assert np.array_equal(sw.subword_tree_distance_labels(word_index, heads, k, include_root),
                              features.tree_distance_labels(heads, k, include_root))
        assert np.array_equal(sw.subword_traversal_labels(word_index, heads, k, include_root),
                              features.traversal_labels(heads, k, include_root))
    assert np.array_equal(sw.word_relative_positions(word_index, k), features.relative_positions(n, k))


@settings(max_examples=60, deadline=None)
@given(split_trees(), st.integers(1, 4))
def test_word_relative_positions_match_naive_reference(tree, k):
    _, word_index = tree
    positions = sw.word_relative_positions(word_index, k)
    for s, word_s in enumerate(word_index):
        for t, word_t in enumerate(word_index):
            assert positions[s, t] == min(max(word_t - word_s, -k), k) + k


@settings(max_examples=40, deadline=None)
@given(split_trees())
def test_copy_to_subwords_matches_naive_reference(tree):
    heads, word_index = tree
    labels = [f"label{word}" for word in range(len(heads))]
    copied = sw.copy_to_subwords(labels, word_index)
    assert copied.tolist() == [labels[word] for word in word_index]
