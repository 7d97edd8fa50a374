"""Tests for syntax_t2t.data.phrases: MG-SA n-gram and syntactic partitions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_strategies import constituency_trees, dependency_heads

from syntax_t2t.data.bracketed import parse_bracketed
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.phrases import (
    ngram_partition,
    ngram_partitions,
    pad_partitions,
    phrase_spans,
    syntactic_partition,
    syntactic_partitions,
)
from syntax_t2t.data.tree import DependencyTree

# Figure 1 of the MG-SA paper.
BUSH = parse_bracketed(
    "(S (NP (NNP Bush)) (VP (VBD held) (NP (DT a) (NN talk)) (PP (IN with) (NP (NNP Sharon)))))"
)


def phrases_as_words(tree, phrase_ids):
    return [" ".join(tree.tokens[s:e]) for s, e in phrase_spans(phrase_ids).tolist()]


def test_ngram_partitions_worked_example():
    assert ngram_partition(7, 3).tolist() == [0, 0, 0, 1, 1, 1, 2]
    assert ngram_partition(4, 1).tolist() == [0, 1, 2, 3]
    assert ngram_partitions(5).tolist() == [[0, 0, 1, 1, 2], [0, 0, 0, 1, 1], [0, 0, 0, 0, 1]]
    assert ngram_partitions(0).shape == (3, 0)
    with pytest.raises(ValueError, match="n >= 1"):
        ngram_partition(5, 0)


@given(st.integers(0, 40), st.integers(1, 6))
def test_ngrams_are_full_except_the_last(length, n):
    spans = phrase_spans(ngram_partition(length, n))
    lengths = (spans[:, 1] - spans[:, 0]).tolist()
    assert len(lengths) == -(-length // n)
    assert all(size == n for size in lengths[:-1])
    assert sum(lengths) == length


def test_the_top_two_levels_of_the_mgsa_figure():
    ids, labels = syntactic_partition(BUSH, 1)
    assert ids.tolist() == [0, 1, 1, 1, 1, 1]
    assert phrases_as_words(BUSH, ids) == ["Bush", "held a talk with Sharon"]
    assert labels == ("NP", "VP")
    ids, labels = syntactic_partition(BUSH, 2)
    assert phrases_as_words(BUSH, ids) == ["Bush", "held", "a talk", "with Sharon"]
    # "NP is the tag of the phrase 'a talk' in second layer of parse tree."
    assert labels == ("NNP", "VBD", "NP", "PP")


def test_levels_zero_three_and_below_the_leaves():
    ids, labels = syntactic_partition(BUSH, 0)
    assert ids.tolist() == [0] * 6 and labels == ("S",)
    ids, labels = syntactic_partition(BUSH, 3)
    assert ids.tolist() == [0, 1, 2, 3, 4, 5]
    assert labels == ("NNP", "VBD", "DT", "NN", "IN", "NP")
    _, labels = syntactic_partition(BUSH, 9)
    assert labels == BUSH.tags
    with pytest.raises(ValueError, match="levels start at 0"):
        syntactic_partition(BUSH, -1)


def test_syntactic_partitions_stack_levels_one_to_k():
    partitions = syntactic_partitions(BUSH, num_levels=3)
    assert partitions.phrase_ids.dtype == np.int32
    assert partitions.phrase_ids.tolist() == [[0, 1, 1, 1, 1, 1], [0, 1, 2, 2, 3, 3], [0, 1, 2, 3, 4, 5]]
    assert partitions.phrase_labels[1] == ("NNP", "VBD", "NP", "PP")


def test_partitions_of_a_dependency_derived_tree():
    tree = phrase_structure_from_dependencies(
        DependencyTree.from_heads(
            "She saw the cat .".split(), [2, 0, 4, 2, 2], upos="PRON VERB DET NOUN PUNCT".split()
        )
    )
    ids, labels = syntactic_partition(tree, 1)
    assert phrases_as_words(tree, ids) == ["She", "saw", "the cat", "."]
    assert labels == ("PRON", "VERB", "NOUNP", "PUNCT")


# The UD (EWT-style) tree of Figure 1's sentence: nsubj, root, det, obj, case, obl.
BUSH_UD = DependencyTree.from_heads(
    "Bush held a talk with Sharon".split(), [2, 0, 4, 2, 6, 2],
    labels="nsubj root det obj case obl".split(), upos="PROPN VERB DET NOUN ADP PROPN".split())


def test_right_first_dependency_phrases_reproduce_the_mgsa_figure():
    tree = phrase_structure_from_dependencies(BUSH_UD, rule="right_first")
    assert tree.to_bracketed() == ("(VERBP (PROPN Bush) (VERBP (VERB held) (NOUNP (DET a) (NOUN talk))"
                                   " (PROPNP (ADP with) (PROPN Sharon))))")
    partitions = syntactic_partitions(tree, num_levels=3)
    assert [phrases_as_words(tree, ids) for ids in partitions.phrase_ids] == [
        ["Bush", "held a talk with Sharon"],
        ["Bush", "held", "a talk", "with Sharon"],
        ["Bush", "held", "a", "talk", "with", "Sharon"]]
    # The flat rule makes level 1 what the figure has at level 2.
    flat = phrase_structure_from_dependencies(BUSH_UD)
    assert phrases_as_words(flat, syntactic_partition(flat, 1)[0]) == [
        "Bush", "held", "a talk", "with Sharon"]
    with pytest.raises(ValueError, match="expected one of projection, right_first"):
        phrase_structure_from_dependencies(BUSH_UD, rule="x")


@settings(max_examples=100, deadline=None)
@given(dependency_heads())
def test_right_first_only_splits_heads_with_dependents_on_both_sides(heads):
    tree = DependencyTree.from_heads([f"w{i}" for i in range(len(heads))], heads)
    flat = phrase_structure_from_dependencies(tree)
    split = phrase_structure_from_dependencies(tree, rule="right_first")
    flat_spans = {tuple(span) for span in flat.spans.tolist()}
    extra = [tuple(span) for span in split.spans.tolist() if tuple(span) not in flat_spans]
    assert flat_spans <= {tuple(span) for span in split.spans.tolist()}
    # Each extra span starts at its head, which has a left dependent outside it.
    for (start, end), head in zip(split.spans.tolist(), split.head_tokens.tolist()):
        if (start, end) in extra:
            assert head == start
            outer = [s for (s, e), h in zip(flat.spans.tolist(), flat.head_tokens.tolist())
                     if h == head]
            assert outer[0] < start and (outer[0], end) in flat_spans
    assert len(extra) == len(set(extra))


def test_pad_partitions():
    batch = pad_partitions([ngram_partitions(3, (2, 3)), ngram_partitions(5, (2, 3))], length=6)
    assert batch.shape == (2, 2, 6) and batch.dtype == np.int32
    assert batch[0].tolist() == [[0, 0, 1, -1, -1, -1], [0, 0, 0, -1, -1, -1]]
    assert batch[1].tolist() == [[0, 0, 1, 1, 2, -1], [0, 0, 0, 1, 1, -1]]
    with pytest.raises(ValueError, match="more than the padded length"):
        pad_partitions([ngram_partitions(7)], length=6)
    with pytest.raises(ValueError, match="same number of granularities"):
        pad_partitions([ngram_partitions(3, (2,)), ngram_partitions(3, (2, 3))], length=6)


def naive_unit(tree, token, level):
    """The node at `level` on the path from the root to `token`: ("c", k) or ("t", token)."""
    path, k = [], int(tree.token_parents[token])
    while k != -1:
        path.insert(0, ("c", k))
        k = int(tree.parents[k])
    path.append(("t", token))
    return path[min(level, len(path) - 1)]


@settings(max_examples=120, deadline=None)
@given(constituency_trees(), st.integers(0, 6))
def test_partitions_match_a_naive_walk_down_the_tree(tree, level):
    ids, labels = syntactic_partition(tree, level)
    units = [naive_unit(tree, t, level) for t in range(len(tree))]
    distinct = list(dict.fromkeys(units))
    assert ids.tolist() == [distinct.index(unit) for unit in units]
    expected_labels = [tree.labels[i] if kind == "c" else tree.tags[i] for kind, i in distinct]
    assert list(labels) == expected_labels
    for (kind, index), (start, end) in zip(distinct, phrase_spans(ids).tolist()):
        if kind == "c":
            assert [start, end] == tree.spans[index].tolist()
        else:
            assert (start, end) == (index, index + 1)


@settings(max_examples=80, deadline=None)
@given(constituency_trees(), st.integers(0, 5))
def test_each_level_refines_the_one_above(tree, level):
    upper, _ = syntactic_partition(tree, level)
    lower, _ = syntactic_partition(tree, level + 1)
    for start, end in phrase_spans(lower).tolist():
        assert len(set(upper[start:end].tolist())) == 1
