"""Tests for syntax_t2t.data.features: worked thesis examples and properties."""

import collections
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_strategies import dependency_heads

from syntax_t2t.data import features
from syntax_t2t.data.tree import TreeError

# Table 5.1: "Udělali jsme si malý průzkum ." (Pred AuxV Adv Atr Obj AuxK).
CZECH_HEADS = [0, 1, 1, 5, 1, 0]
UDELALI, JSME, SI, MALY, PRUZKUM, PERIOD = range(1, 7)
ROOT = 0

# Our own tree in the style of Figures 3.1-3.3: "I think this is a good example",
# think <- ROOT; I, is <- think; this, example <- is; a, good <- example.
ENGLISH_HEADS = [2, 0, 4, 2, 7, 7, 4]
I, THINK, THIS, IS, A, GOOD, EXAMPLE = range(1, 8)


def test_relative_positions_worked_example():
    expected = [
        [2, 3, 4, 4],
        [1, 2, 3, 4],
        [0, 1, 2, 3],
        [0, 0, 1, 2],
    ]
    assert features.relative_positions(4, 2).tolist() == expected
    assert features.relative_positions(4, 2).dtype == np.int32
    assert features.relative_position_vocab_size(2) == 5


def test_czech_tree_distances_by_hand():
    expected = [
        [0, 1, 1, 2, 1, 2],
        [1, 0, 2, 3, 2, 3],
        [1, 2, 0, 3, 2, 3],
        [2, 3, 3, 0, 1, 4],
        [1, 2, 2, 1, 0, 3],
        [2, 3, 3, 4, 3, 0],
    ]
    assert features.tree_distances(CZECH_HEADS).tolist() == expected
    with_root = features.tree_distances(CZECH_HEADS, include_root=True)
    assert with_root[ROOT].tolist() == [0, 1, 2, 2, 3, 2, 1]
    assert with_root[1:, 1:].tolist() == expected


def test_czech_distance_labels_overflow():
    labels = features.tree_distance_labels(CZECH_HEADS, max_distance=2)
    assert labels[MALY - 1].tolist() == [2, 3, 3, 0, 1, 3]
    assert labels[PERIOD - 1].tolist() == [2, 3, 3, 3, 3, 0]
    assert features.tree_distance_vocab_size(2) == 4


def test_czech_traversal_codes_by_hand():
    codes = features.traversal_codes(CZECH_HEADS, include_root=True)
    assert codes[JSME, SI] == "R"
    assert codes[SI, JSME] == "L"
    assert codes[MALY, UDELALI] == "UU"
    assert codes[UDELALI, MALY] == "DD"
    assert codes[MALY, ROOT] == "UUU"
    assert codes[ROOT, MALY] == "DDD"
    # Both hang on ROOT, so they are siblings.
    assert codes[PERIOD, UDELALI] == "L"
    assert codes[UDELALI, PERIOD] == "R"
    assert codes[PERIOD, MALY] == "LDD"
    assert codes[JSME, MALY] == "RD"
    assert codes[MALY, JSME] == "UUD"
    assert codes[MALY, PERIOD] == "UUUD"
    assert codes[SI, SI] == ""


def test_english_traversal_codes_by_hand():
    codes = features.traversal_codes(ENGLISH_HEADS, include_root=True)
    # The thesis' own statements about Figure 3.3.
    assert codes[IS, ROOT] == "UU"
    assert codes[IS, I] == "L"
    expected_from_is = {
        I: "L", THINK: "U", THIS: "D", IS: "", A: "DD", GOOD: "DD", EXAMPLE: "D",
    }
    expected_from_a = {
        I: "UUUD", THINK: "UUU", THIS: "UUD", IS: "UU", A: "", GOOD: "R", EXAMPLE: "U",
    }
    expected_from_i = {I: "", THINK: "U", THIS: "RD", IS: "R", A: "RDD", GOOD: "RDD", EXAMPLE: "RD"}
    for source, expected in [(IS, expected_from_is), (A, expected_from_a), (I, expected_from_i)]:
        assert {target: codes[source, target] for target in expected} == expected
    without_root = features.traversal_codes(ENGLISH_HEADS)
    assert without_root.shape == (7, 7)
    assert without_root[IS - 1, I - 1] == "L"


def test_english_tree_distances_by_hand():
    expected = [
        [0, 1, 3, 2, 4, 4, 3],
        [1, 0, 2, 1, 3, 3, 2],
        [3, 2, 0, 1, 3, 3, 2],
        [2, 1, 1, 0, 2, 2, 1],
        [4, 3, 3, 2, 0, 2, 1],
        [4, 3, 3, 2, 2, 0, 1],
        [3, 2, 2, 1, 1, 1, 0],
    ]
    assert features.tree_distances(ENGLISH_HEADS).tolist() == expected


def test_traversal_vocab_written_out():
    assert features.traversal_vocab(2) == ("", "D", "U", "DD", "UD", "UU", "L", "LD", "R", "RD")
    assert features.traversal_vocab_size(2) == 11
    assert features.traversal_vocab(0) == ("",)
    assert features.traversal_vocab_size(0) == 2


def test_english_traversal_labels_by_hand():
    # Ids in traversal_vocab(2); 10 is the overflow id.
    labels = features.traversal_labels(ENGLISH_HEADS, max_traversal=2, include_root=True)
    assert labels[IS].tolist() == [5, 6, 2, 1, 0, 3, 3, 1]
    assert labels[A].tolist() == [10, 10, 10, 10, 5, 0, 8, 2]
    assert labels.dtype == np.int32


def test_diagonal_heads_table_5_1():
    assert features.diagonal_heads(6).tolist() == [0, 1, 2, 3, 4, 5]
    assert features.diagonal_heads(6).dtype == np.int32


def test_root_prefixed_views():
    assert features.root_prefixed_heads(CZECH_HEADS).tolist() == [0, 0, 1, 1, 5, 1, 0]
    assert features.prepend_root([7, 8, 9]).tolist() == [3, 7, 8, 9]
    assert features.prepend_root(np.array([5], dtype=np.int32), root_id=4).dtype == np.int32
    assert features.prepend_root([]).tolist() == [3]
    with pytest.raises(ValueError, match="1-D integer"):
        features.prepend_root([[1, 2]])


def test_depths_and_ancestors_of_czech_tree():
    assert features.depths(CZECH_HEADS).tolist() == [0, 1, 2, 2, 3, 2, 1]
    ancestors = features.ancestor_matrix(CZECH_HEADS)
    assert np.flatnonzero(ancestors[MALY]).tolist() == [ROOT, UDELALI, MALY, PRUZKUM]


def test_features_reject_malformed_heads():
    with pytest.raises(TreeError, match="cycle"):
        features.tree_distances([2, 1])
    with pytest.raises(TreeError, match="outside"):
        features.traversal_labels([0, 3], max_traversal=4)


# ---------------------------------------------------------------------------
# Properties on random trees, checked against naive references.


def naive_graph(heads):
    parent = {token: head for token, head in enumerate(heads, start=1)}
    children = collections.defaultdict(list)
    for token, head in parent.items():
        children[head].append(token)
    return parent, children


def naive_distances(heads):
    """Breadth-first search over the undirected tree including ROOT."""
    parent, children = naive_graph(heads)
    size = len(heads) + 1
    result = np.full((size, size), -1)
    for start in range(size):
        result[start, start] = 0
        queue = collections.deque([start])
        while queue:
            node = queue.popleft()
            neighbours = children[node] + ([parent[node]] if node else [])
            for neighbour in neighbours:
                if result[start, neighbour] < 0:
                    result[start, neighbour] = result[start, node] + 1
                    queue.append(neighbour)
    return result


def walk_code(heads, start, code):
    """Every node reachable from `start` by following `code` step by step."""
    parent, children = naive_graph(heads)
    current = {start}
    for step in code:
        following = set()
        for node in current:
            if step == "U" and node != 0:
                following.add(parent[node])
            elif step == "D":
                following.update(children[node])
            elif step in "LR" and node != 0:
                siblings = children[parent[node]]
                following.update(s for s in siblings if (s < node if step == "L" else s > node))
        current = following
    return current


CODE_PATTERN = re.compile(r"^(U*D*|LD*|RD*)$")


def up_down(code):
    """(steps up, steps down) of the path a code stands for."""
    if code[:1] in ("L", "R"):
        return 1, len(code)
    return code.count("U"), code.count("D")


@settings(max_examples=150, deadline=None)
@given(dependency_heads())
def test_distance_is_the_bfs_metric(heads):
    distances = features.tree_distances(heads, include_root=True)
    assert distances.tolist() == naive_distances(heads).tolist()
    assert (np.diag(distances) == 0).all()
    assert (distances == distances.T).all()
    # Triangle inequality over all triples.
    assert (distances[:, None, :] <= distances[:, :, None] + distances[None, :, :]).all()
    assert (features.tree_distances(heads) == distances[1:, 1:]).all()


@settings(max_examples=150, deadline=None)
@given(dependency_heads(), st.integers(0, 6))
def test_distance_labels_clip(heads, max_distance):
    distances = naive_distances(heads)[1:, 1:]
    labels = features.tree_distance_labels(heads, max_distance)
    expected = np.where(distances <= max_distance, distances, max_distance + 1)
    assert (labels == expected).all()
    assert labels.max() < features.tree_distance_vocab_size(max_distance)


@settings(max_examples=150, deadline=None)
@given(dependency_heads())
def test_traversal_codes_spell_shortest_paths(heads):
    codes = features.traversal_codes(heads, include_root=True)
    distances = naive_distances(heads)
    size = len(heads) + 1
    for i in range(size):
        for j in range(size):
            code = codes[i, j]
            assert CODE_PATTERN.match(code), code
            assert j in walk_code(heads, i, code), (i, j, code)
            shortened = code[:1] in ("L", "R")
            assert len(code) == distances[i, j] - (1 if shortened else 0)
            # The reverse path climbs where this one descends.
            a, b = up_down(code)
            assert up_down(codes[j, i]) == (b, a)
            if code in ("L", "R"):
                assert codes[j, i] == ("R" if code == "L" else "L")


@settings(max_examples=150, deadline=None)
@given(dependency_heads(), st.integers(0, 6))
def test_traversal_labels_index_the_vocab(heads, max_traversal):
    codes = features.traversal_codes(heads)
    labels = features.traversal_labels(heads, max_traversal)
    vocab = features.traversal_vocab(max_traversal)
    overflow = features.traversal_vocab_size(max_traversal) - 1
    assert len(vocab) == overflow == len(set(vocab))
    assert all(CODE_PATTERN.match(code) and len(code) <= max_traversal for code in vocab)
    expected = [
        [vocab.index(code) if len(code) <= max_traversal else overflow for code in row]
        for row in codes
    ]
    assert labels.tolist() == expected


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 15), st.integers(0, 8))
def test_relative_positions_match_loops(n, k):
    labels = features.relative_positions(n, k)
    for i in range(n):
        for j in range(n):
            assert labels[i, j] == min(max(j - i, -k), k) + k
    assert labels.max() < features.relative_position_vocab_size(k)


@settings(max_examples=100, deadline=None)
@given(dependency_heads())
def test_ancestors_and_depths_follow_heads(heads):
    parent, _ = naive_graph(heads)
    ancestors = features.ancestor_matrix(heads)
    depths = features.depths(heads)
    assert ancestors[0].tolist() == [True] + [False] * len(heads)
    for token in range(1, len(heads) + 1):
        chain, node = [token], token
        while node:
            node = parent[node]
            chain.append(node)
        assert sorted(np.flatnonzero(ancestors[token]).tolist()) == sorted(chain)
        assert depths[token] == len(chain) - 1
    assert features.root_prefixed_heads(heads).tolist() == [0] + heads
