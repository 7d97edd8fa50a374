"""Tests for syntax_t2t.data.syntactic_distance: d_S, d_G, d_R and d_D."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_strategies import constituency_trees

from syntax_t2t.data.constituency import ConstituencyTree
from syntax_t2t.data.bracketed import parse_bracketed
from syntax_t2t.data.syntactic_distance import (
    common_ancestor_counts,
    dependency_distances,
    distance_labels,
    distance_vocab_size,
    lca_heights,
    relative_common_ancestor_counts,
    tree_height,
)
from syntax_t2t.data.tree import TreeError

# Figure 1 of the MG-SA paper. Levels: S; NP VP; held NP PP; a talk with NP; Sharon.
BUSH = parse_bracketed(
    "(S (NP (NNP Bush)) (VP (VBD held) (NP (DT a) (NN talk)) (PP (IN with) (NP (NNP Sharon)))))"
)


def test_distances_of_the_mgsa_example_by_hand():
    assert tree_height(BUSH) == 5  # S, VP, PP, NP, Sharon
    # Pairs: (Bush, held) meet at S, (held, a) at VP, (a, talk) at NP,
    # (talk, with) at VP, (with, Sharon) at PP; Sharon ends the sentence.
    assert common_ancestor_counts(BUSH).tolist() == [1, 2, 3, 2, 3, 0]
    assert lca_heights(BUSH).tolist() == [4, 3, 2, 3, 2, 5]
    assert relative_common_ancestor_counts(BUSH).tolist() == [1, 1, 1, -1, 1, -3]
    assert lca_heights(BUSH).dtype == np.int32


def test_words_at_equal_depth_give_shen_et_al_heights():
    # Bottom-up heights: words 0, NP and VP 1, S 2.
    tree = parse_bracketed("(S (NP (DT the) (NN cat)) (VP (VBD sat) (RB down)))")
    assert lca_heights(tree).tolist() == [1, 2, 1, 3]
    assert common_ancestor_counts(tree).tolist() == [2, 1, 2, 0]


def test_one_word_sentence():
    tree = parse_bracketed("(S (UH Hi))")
    assert tree_height(tree) == 2
    assert lca_heights(tree).tolist() == [2]
    assert common_ancestor_counts(tree).tolist() == [0]
    assert relative_common_ancestor_counts(tree).tolist() == [0]


@st.composite
def level_trees(draw, max_tokens=12, max_rounds=4):
    """Random trees whose words are all equally deep: units are grouped round after round."""
    n = draw(st.integers(1, max_tokens))
    units = [(i, i + 1) for i in range(n)]
    rounds = []
    for _ in range(draw(st.integers(0, max_rounds))):
        cuts = sorted(draw(st.sets(st.integers(1, len(units) - 1)))) if len(units) > 1 else []
        bounds = [0, *cuts, len(units)]
        units = [(units[a][0], units[b - 1][1]) for a, b in zip(bounds, bounds[1:])]
        rounds.append(units)
    spans = [(0, n)] + [span for level in reversed(rounds) for span in level]
    return ConstituencyTree.from_spans([f"w{i}" for i in range(n)], spans, ["X"] * len(spans))


def naive_ancestors(tree, token):
    """Constituents containing `token`, found by walking up from its lowest one."""
    result, k = set(), int(tree.token_parents[token])
    while k != -1:
        result.add(k)
        k = int(tree.parents[k])
    return result


def bottom_up_heights(tree):
    """Height of every constituent: 1 + the highest child, words being 0."""
    heights = np.zeros(tree.num_constituents, dtype=int)
    for k in reversed(range(tree.num_constituents)):
        heights[k] = 1 + max(0 if child.is_token else heights[child.index] for child in tree.children(k))
    return heights


@settings(max_examples=150, deadline=None)
@given(constituency_trees())
def test_ds_plus_dg_is_the_height_and_dg_counts_common_ancestors(tree):
    n = len(tree)
    heights, counts = lca_heights(tree), common_ancestor_counts(tree)
    assert (heights + counts == tree_height(tree)).all()
    expected = [len(naive_ancestors(tree, i) & naive_ancestors(tree, i + 1)) for i in range(n - 1)] + [0]
    assert counts.tolist() == expected
    assert tree_height(tree) == 1 + max(len(naive_ancestors(tree, t)) for t in range(n))
    relative = relative_common_ancestor_counts(tree)
    assert relative[0] == counts[0]
    assert np.cumsum(relative).tolist() == counts.tolist()


@settings(max_examples=100, deadline=None)
@given(level_trees())
def test_ds_is_the_bottom_up_lca_height_when_words_are_equally_deep(tree):
    n = len(tree)
    assert len(set(tree.token_depths.tolist())) == 1
    heights = bottom_up_heights(tree)
    expected = [heights[max(naive_ancestors(tree, i) & naive_ancestors(tree, i + 1))] for i in range(n - 1)]
    assert lca_heights(tree)[:-1].tolist() == expected
    assert lca_heights(tree)[-1] == heights[0] + 1


def test_dependency_distances_worked_example():
    # "I think this is a good example": think <- ROOT; I, is <- think;
    # this, example <- is; a, good <- example.
    heads = [2, 0, 4, 2, 7, 7, 4]
    assert dependency_distances(heads).tolist() == [-1, 2, -1, 2, -2, -1, 3]
    assert dependency_distances([0]).tolist() == [1]
    with pytest.raises(TreeError, match="cycle"):
        dependency_distances([2, 1])


def test_distance_labels_clip_and_shift():
    assert distance_labels([-5, -2, 0, 1, 9], max_distance=2).tolist() == [0, 0, 2, 3, 4]
    assert distance_vocab_size(2) == 5
