"""Linearised constituency and dependency parses (the C&H parse task's targets)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntax_t2t.data import linearize
from syntax_t2t.data.bracketed import parse_bracketed
from syntax_t2t.data.dependency_phrases import (phrase_structure_from_dependencies, projectivize_heads)
from syntax_t2t.data.tree import DependencyTree

MONKEY = "(S (NP (DT The) (NN monkey)) (VP (VBZ eats) (NP (DT a) (NN banana))))"


def monkey_tree():
    return DependencyTree.from_heads(
        ["The", "monkey", "eats", "a", "banana"], np.array([2, 3, 0, 5, 3]),
        labels=["det", "nsubj", "root", "det", "obj"], upos=["DET", "NOUN", "VERB", "DET", "NOUN"])


def test_constituency_worked_example():
    tree = parse_bracketed(MONKEY)
    assert " ".join(linearize.constituency_tokens(tree)) == "(S (NP ) (VP (NP ) ) )"
    assert " ".join(linearize.constituency_tokens(tree, words=True)) == \
        "(S (NP The monkey ) (VP eats (NP a banana ) ) )"


def test_dependency_worked_example():
    tree = monkey_tree()
    assert " ".join(linearize.dependency_tokens(tree)) == \
        "(root (nsubj (det DET ) NOUN ) VERB (obj (det DET ) NOUN ) )"
    assert " ".join(linearize.dependency_tokens(tree, words=True)) == \
        "(root (nsubj (det The ) monkey ) eats (obj (det a ) banana ) )"


def test_several_root_dependents_follow_each_other():
    tree = DependencyTree.from_heads(["runs", "."], np.array([0, 0]), labels=["root", "punct"],
                                     upos=["VERB", "PUNCT"])
    tokens = linearize.dependency_tokens(tree, words=True)
    assert tokens == ["(root", "runs", ")", "(punct", ".", ")"]


def random_heads(rng, n):
    order = rng.permutation(n) + 1
    heads = np.zeros(n, np.int64)
    attached = [0]
    for token in order:
        heads[token - 1] = attached[rng.integers(len(attached))]
        attached.append(int(token))
    return heads


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(0, 10_000))
def test_projective_trees_are_read_back(n, seed):
    rng = np.random.default_rng(seed)
    heads = projectivize_heads(random_heads(rng, n))
    labels = [f"l{rng.integers(3)}" for _ in range(n)]
    words = [f"w{i}" for i in range(n)]
    tree = DependencyTree.from_heads(words, heads, labels=labels, upos=["X"] * n)
    tokens = linearize.dependency_tokens(tree, words=True)
    assert len(tokens) == 3 * n
    shown, read_heads, read_labels = linearize.read_dependency_tokens(tokens)
    assert shown == words and read_heads == heads.tolist() and read_labels == labels


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(0, 10_000))
def test_non_projective_trees_keep_every_arc(n, seed):
    rng = np.random.default_rng(seed)
    heads = random_heads(rng, n)
    tree = DependencyTree.from_heads([f"w{i}" for i in range(n)], heads,
                                     labels=["dep"] * n, upos=["X"] * n)
    shown, read_heads, _ = linearize.read_dependency_tokens(linearize.dependency_tokens(tree, True))
    # Written in tree order: map each written token back to its position.
    position = {word: int(word[1:]) + 1 for word in shown}
    arcs = {(position[shown[i]], 0 if h == 0 else position[shown[h - 1]])
            for i, h in enumerate(read_heads)}
    assert arcs == {(d, int(h)) for d, h in enumerate(heads, start=1)}


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 10), st.integers(0, 10_000))
def test_constituency_with_words_is_bracketed_text(n, seed):
    # (From two words on: nltk would read a one-word phrase as a preterminal.)
    rng = np.random.default_rng(seed)
    tree = DependencyTree.from_heads([f"w{i}" for i in range(n)], random_heads(rng, n),
                                     labels=["dep"] * n, upos=["X"] * n)
    phrases = phrase_structure_from_dependencies(tree)
    tokens = linearize.constituency_tokens(phrases, words=True)
    again = parse_bracketed(" ".join(tokens))
    assert again.tokens == phrases.tokens and again.labels == phrases.labels
    np.testing.assert_array_equal(again.spans, phrases.spans)
    bare = linearize.constituency_tokens(phrases)
    assert bare == [token for token in tokens if token not in phrases.tokens]


@pytest.mark.parametrize("tokens,message", [
    ([")"], "closes no bracket"),
    (["(root", ")"], "closes without a token"),
    (["(root", "a", "b", ")"], "second token"),
    (["a"], "outside every bracket"),
    (["(root", "a"], "left open"),
])
def test_malformed_linearisations_are_named(tokens, message):
    with pytest.raises(ValueError, match=message):
        linearize.read_dependency_tokens(tokens)
