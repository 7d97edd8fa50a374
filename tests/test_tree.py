"""Tests for syntax_t2t.data.tree: the tree container and its validation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntax_t2t.data.tree import DependencyTree, TreeError, check_heads

# Table 5.1 of the thesis: ROOT has two dependents (Pred and AuxK).
CZECH_TOKENS = ("Udělali", "jsme", "si", "malý", "průzkum", ".")
CZECH_HEADS = (0, 1, 1, 5, 1, 0)
CZECH_LABELS = ("Pred", "AuxV", "Adv", "Atr", "Obj", "AuxK")


def czech_tree(**overrides):
    arguments = dict(tokens=CZECH_TOKENS, heads=CZECH_HEADS, labels=CZECH_LABELS)
    arguments.update(overrides)
    return DependencyTree.from_heads(**arguments)


def test_from_heads_fills_unknown_annotations():
    tree = czech_tree(comments={"text": "Udělali jsme si malý průzkum."})
    assert len(tree) == 6
    assert tree.tokens == CZECH_TOKENS
    assert tree.labels == CZECH_LABELS
    assert tree.lemmas == tree.upos == tree.xpos == ("_",) * 6
    assert tree.heads.dtype == np.int32
    assert tree.heads.tolist() == list(CZECH_HEADS)
    assert tree.comments["text"] == "Udělali jsme si malý průzkum."


def test_tree_is_immutable():
    tree = czech_tree(comments={"text": "x"})
    with pytest.raises(ValueError):
        tree.heads[0] = 3
    with pytest.raises(TypeError):
        tree.comments["text"] = "y"
    with pytest.raises(AttributeError):
        tree.tokens = ("a",)


def test_caller_array_is_not_frozen_or_shared():
    heads = np.array(CZECH_HEADS)
    tree = czech_tree(heads=heads)
    heads[0] = 2
    assert tree.heads[0] == 0


def test_equality_and_hash_compare_contents():
    assert czech_tree() == czech_tree(heads=np.array(CZECH_HEADS, dtype=np.int64))
    assert hash(czech_tree()) == hash(czech_tree())
    assert czech_tree() != czech_tree(heads=(0, 1, 1, 5, 1, 1))
    assert czech_tree() != czech_tree(comments={"text": "x"})
    assert czech_tree() != czech_tree(upos=("VERB",) * 6)
    assert czech_tree() != "not a tree"


def test_several_root_dependents_are_legal():
    assert check_heads([0, 0, 0]).tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    "heads, message",
    [
        ([], "at least one token"),
        ([0, 3, 2], r"cycle: 2 'b' -> 3 'c' -> 2 'b'"),
        ([3, 1, 2], r"cycle: 1 'a' -> 3 'c' -> 2 'b' -> 1 'a'"),
        ([0, 4, 1], r"token 2 'b' has head 4, outside \[0, 3\]"),
        ([0, -1, 1], r"token 2 'b' has head -1"),
        ([0, 2, 1], r"token 2 'b' is its own head"),
        ([0.0, 1.0, 1.0], "must be integers"),
        ([[0, 1, 1]], "one-dimensional"),
    ],
)
def test_check_heads_errors_name_the_tokens(heads, message):
    tokens = ("a", "b", "c")[: max(len(heads), 0)]
    with pytest.raises(TreeError, match=message):
        check_heads(heads, tokens)


def test_cycle_message_without_tokens_names_ids():
    # Token 1 hangs on the cycle 3 -> 4 -> 3 without being part of it.
    with pytest.raises(TreeError, match=r"cycle: 3 -> 4 -> 3 \("):
        check_heads([3, 0, 4, 3])


@pytest.mark.parametrize("field", ["labels", "lemmas", "upos", "xpos"])
def test_length_mismatch_is_reported(field):
    with pytest.raises(TreeError, match=f"{field} has 5 entries but there are 6 tokens"):
        czech_tree(**{field: ("_",) * 5})


def test_heads_length_mismatch_is_reported():
    with pytest.raises(TreeError, match="heads has 5 entries but there are 6 tokens"):
        czech_tree(heads=CZECH_HEADS[:5])


def test_empty_tree_is_rejected():
    with pytest.raises(TreeError, match="at least one token"):
        DependencyTree.from_heads((), ())


def reaches_root(heads, token):
    """Naive reference: follow heads from `token`, at most n steps."""
    node = token
    for _ in range(len(heads) + 1):
        if node == 0:
            return True
        node = heads[node - 1]
    return False


@st.composite
def arbitrary_heads(draw):
    """Head arrays that may or may not be trees (never out of range or self-headed)."""
    n = draw(st.integers(1, 8))
    return [draw(st.sampled_from([h for h in range(n + 1) if h != i])) for i in range(1, n + 1)]


@settings(max_examples=300, deadline=None)
@given(arbitrary_heads())
def test_check_heads_accepts_exactly_the_trees(heads):
    is_tree = all(reaches_root(heads, t) for t in range(1, len(heads) + 1))
    if is_tree:
        assert check_heads(heads).tolist() == heads
        return
    with pytest.raises(TreeError) as error:
        check_heads(heads)
    # The reported cycle must really be one: each id's head is the next id.
    path = str(error.value).split("cycle: ")[1].split(" (")[0]
    ids = [int(part) for part in path.split(" -> ")]
    assert ids[0] == ids[-1] and len(ids) >= 3
    assert all(heads[a - 1] == b for a, b in zip(ids, ids[1:]))
    assert ids[0] == min(ids)
