"""Tests for syntax_t2t.data.tree_controls: counts against enumeration, uniformity, seeding."""

import collections
import itertools
import math
import random
import statistics

import numpy as np
import pytest

from syntax_t2t.data import tree_controls
from syntax_t2t.data.dependency_phrases import is_projective
from syntax_t2t.data.tree import DependencyTree, TreeError, check_heads


def _projective_single_root_trees(length):
    """Every projective tree of `length` words with one word on ROOT, by brute force."""
    trees = []
    for heads in itertools.product(range(length + 1), repeat=length):
        if heads.count(0) != 1:
            continue
        try:
            check_heads(list(heads))
        except TreeError:
            continue
        if is_projective(list(heads)):
            trees.append(heads)
    return trees


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 6])
def test_counts_equal_brute_force_enumeration(length):
    assert tree_controls.count_projective_trees(length) == len(
        _projective_single_root_trees(length))


def test_counts_by_hand():
    # n = 3: root in the middle (1 tree), at either end (3 each: the other two
    # words as a chain either way, or both on the root).
    assert [tree_controls.count_projective_trees(n) for n in (1, 2, 3)] == [1, 2, 7]


def _chi_square_critical(df, z):
    # Wilson-Hilferty: chi2/df is close to normal after a cube root.
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


@pytest.mark.parametrize("length", [2, 3, 4, 5])
def test_random_trees_are_uniform_over_all_projective_trees(length):
    every = _projective_single_root_trees(length)
    per_tree = 60
    draws = per_tree * len(every)
    rng = random.Random(1000 + length)
    counts = collections.Counter(
        tuple(tree_controls.random_projective_heads(length, rng).tolist()) for _ in range(draws))
    assert set(counts) == set(every)  # never a tree outside the set, and each drawn
    chi_square = sum((counts[heads] - per_tree) ** 2 / per_tree for heads in every)
    df = len(every) - 1
    # One-sided at 0.1% (z = 3.09): a sampler that favours some trees fails.
    assert chi_square < _chi_square_critical(df, 3.09), (chi_square, df)


def test_a_biased_sampler_fails_the_uniformity_check():
    # The check has power: drawing the root uniformly and then a uniform
    # projective tree on each side favours trees with the root at the ends
    # for n = 4, which the same chi-square rejects.
    every = _projective_single_root_trees(4)
    per_tree = 60
    rng = random.Random(7)
    by_root = collections.defaultdict(list)
    for heads in every:
        by_root[heads.index(0)].append(heads)
    counts = collections.Counter(rng.choice(by_root[rng.randrange(4)])
                                 for _ in range(per_tree * len(every)))
    chi_square = sum((counts[heads] - per_tree) ** 2 / per_tree for heads in every)
    assert chi_square > _chi_square_critical(len(every) - 1, 3.09)


@pytest.mark.parametrize("length", [1, 2, 7, 25, 80])
def test_random_trees_are_well_formed_projective_with_one_root(length):
    rng = random.Random(length)
    for _ in range(20):
        heads = tree_controls.random_projective_heads(length, rng)
        assert heads.dtype == np.int32 and heads.shape == (length,)
        check_heads(heads)
        assert int(np.sum(heads == 0)) == 1
        assert is_projective(heads)


def test_long_sentences_do_not_recurse():
    heads = tree_controls.random_projective_heads(2000, random.Random(0))
    check_heads(heads)
    assert int(np.sum(heads == 0)) == 1


def _tree(words):
    n = len(words)
    return DependencyTree.from_heads(words, [0] + [1] * (n - 1), labels=["root"] + ["nsubj"] * (n - 1),
                                     upos=["NOUN"] * n, xpos=["NN"] * n,
                                     comments={"text": " ".join(words)})


def test_same_sentence_and_seed_give_the_same_tree_and_another_seed_another():
    words = "Muž v modrém tričku stojí na žebříku a maluje zeď .".split()
    first = tree_controls.control_tree(_tree(words), "random", seed=1)
    again = tree_controls.control_tree(_tree(words), "random", seed=1)
    assert first == again
    # With 11 words there are count_projective_trees(11) trees: ten seeds
    # drawing one tree each all alike would be a broken seed.
    others = {tuple(tree_controls.control_tree(_tree(words), "random", seed=s).heads.tolist())
              for s in range(2, 12)}
    assert len(others) > 1
    # The seed depends on the words: another sentence of the same length differs somewhere.
    shifted = words[1:] + words[:1]
    heads = {tuple(tree_controls.control_tree(_tree(shifted), "random", seed=s).heads.tolist())
             for s in range(1, 12)}
    assert heads != others


def test_sentence_seed_is_stable_across_processes():
    # The first 8 bytes of SHA-256("1\nJeden\tpes"), written down once: unlike
    # Python's hash(), it is the same in every process and on every machine.
    assert tree_controls.sentence_seed(["Jeden", "pes"], 1) == 0xD254D698795E08A3
    assert tree_controls.sentence_seed(("Jeden", "pes"), 2) != 0xD254D698795E08A3


def test_chains_by_hand():
    assert tree_controls.chain_heads(4, "chain_next").tolist() == [2, 3, 4, 0]
    assert tree_controls.chain_heads(4, "chain_previous").tolist() == [0, 1, 2, 3]
    assert tree_controls.chain_heads(1, "chain_next").tolist() == [0]


def test_control_tree_keeps_words_and_tags_and_replaces_labels():
    words = ["Dva", "psi", "běží", "."]
    tree = _tree(words)
    chain = tree_controls.control_tree(tree, "chain_previous", seed=1)
    assert chain.tokens == tree.tokens and chain.upos == tree.upos and chain.xpos == tree.xpos
    assert dict(chain.comments) == dict(tree.comments)
    assert chain.heads.tolist() == [0, 1, 2, 3]
    assert chain.labels == ("root", "dep", "dep", "dep")
    assert tree_controls.control_tree(tree, "parser", seed=1) is tree


def test_control_tree_is_idempotent():
    # Decoding applies the control to trees that datagen already replaced.
    tree = _tree("Skupina lidí stojí před budovou .".split())
    once = tree_controls.control_tree(tree, "random", seed=3)
    assert tree_controls.control_tree(once, "random", seed=3) == once


def test_unknown_tree_source_is_refused():
    with pytest.raises(ValueError, match="tree_source='gold'"):
        tree_controls.check_tree_source("gold")


def test_root_position_follows_the_count_of_each_split():
    # For n = 3 the root is the middle word in 1 of 7 trees.
    rng = random.Random(5)
    roots = [int(np.flatnonzero(tree_controls.random_projective_heads(3, rng) == 0)[0])
             for _ in range(7000)]
    share = statistics.fmean(root == 1 for root in roots)
    assert abs(share - 1 / 7) < 0.015
