"""Tests for syntax_t2t.data.binary_tree: binarisation and the level-order encoding."""

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tree_strategies

from syntax_t2t.data.binary_tree import RULES, BinaryTree, batch_binary_trees, binarize
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.bracketed import parse_bracketed
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.tree import DependencyTree

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
EN_EWT_DEV = DATA / "ud" / "en_ewt-ud-dev.conllu.gz"

# Figure 1 of the MG-SA paper; the VP has three children.
BUSH = parse_bracketed(
    "(S (NP (NNP Bush)) (VP (VBD held) (NP (DT a) (NN talk)) (PP (IN with) (NP (NNP Sharon)))))"
)


def test_right_branching_worked_example():
    tree = binarize(BUSH, "right")
    assert tree.to_bracketed(BUSH.tokens) == "(S Bush (VP held (@VP (NP a talk) (PP with Sharon))))"
    # Words 0-5; level 1: NP "a talk" = 6, PP = 7; level 2: @VP = 8; 3: VP = 9; 4: S = 10.
    assert tree.left.tolist() == [2, 4, 6, 1, 0]
    assert tree.right.tolist() == [3, 5, 7, 8, 9]
    assert tree.levels.tolist() == [1, 1, 2, 3, 4]
    assert tree.labels == ("NP", "PP", "@VP", "VP", "S")
    assert tree.spans.tolist() == [[2, 4], [4, 6], [2, 6], [1, 6], [0, 6]]
    assert tree.root == 10 and tree.num_levels == 4
    assert tree.parents().tolist() == [10, 9, 6, 6, 7, 7, 8, 8, 9, 10, -1]


def test_left_branching_worked_example():
    tree = binarize(BUSH, "left")
    assert tree.to_bracketed(BUSH.tokens) == "(S Bush (VP (@VP held (NP a talk)) (PP with Sharon)))"
    assert tree.levels.tolist() == [1, 1, 2, 3, 4]


def test_head_outward_takes_right_dependents_then_left_ones():
    # "She quickly saw the cat ." with saw <- ROOT; She, quickly, cat, . <- saw; the <- cat.
    dependencies = DependencyTree.from_heads(
        "She quickly saw the cat .".split(), [3, 3, 0, 5, 3, 3], upos="PRON ADV VERB DET NOUN PUNCT".split()
    )
    phrases = phrase_structure_from_dependencies(dependencies)
    tree = binarize(phrases, "head")
    assert tree.to_bracketed(phrases.tokens) == (
        "(VERBP She (@VERBP quickly (@VERBP (@VERBP saw (NOUNP the cat)) .)))"
    )
    assert binarize(phrases, "right").to_bracketed(phrases.tokens) == (
        "(VERBP She (@VERBP quickly (@VERBP saw (@VERBP (NOUNP the cat) .))))"
    )


def test_head_rule_falls_back_to_right_branching_without_heads():
    head, right = binarize(BUSH, "head"), binarize(BUSH, "right")
    assert head.to_bracketed(BUSH.tokens) == right.to_bracketed(BUSH.tokens)


def test_unary_constituents_merge_into_their_child():
    tree = parse_bracketed("(S (VP (VBD left) (NP (PRP it)) (ADVP (RB early))))")
    binary = binarize(tree)
    assert binary.to_bracketed(tree.tokens) == "(S+VP left (@VP it early))"
    chain = parse_bracketed("(S (NP (NP (NN x)) (PP (IN of) (NN y))))")
    assert binarize(chain).to_bracketed(chain.tokens) == "(S+NP x (PP of y))"


def test_one_word_sentence_has_no_phrase_node():
    tree = binarize(parse_bracketed("(S (UH Hi))"))
    assert tree.num_leaves == 1 and tree.left.size == 0 and tree.root == 0 and tree.num_levels == 0


def test_unknown_rule_is_rejected():
    with pytest.raises(ValueError, match="unknown binarisation rule 'middle'"):
        binarize(BUSH, "middle")


@pytest.mark.parametrize(
    "left, right, message",
    [
        ([0, 0], [1, 2], "child of exactly one phrase node"),
        ([0, 3], [2, 1], "leaves must stay in sentence order"),  # node 3 = (0, 2)
        ([5, 0, 4], [2, 1, 3], "children come first"),  # node 4 = (5, 2)
    ],
)
def test_malformed_binary_trees_are_rejected(left, right, message):
    with pytest.raises(ValueError, match=message):
        BinaryTree(len(left) + 1, np.array(left), np.array(right), ("X",) * len(left))


def constituency_trees(max_tokens=14):
    return tree_strategies.constituency_trees(max_tokens=max_tokens, heads=True)


def in_order_leaves(tree: BinaryTree):
    pending, leaves = [tree.root], []
    while pending:
        node = pending.pop()
        if node < tree.num_leaves:
            leaves.append(node)
        else:
            pending.extend([tree.right[node - tree.num_leaves], tree.left[node - tree.num_leaves]])
    return leaves


@settings(max_examples=120, deadline=None)
@given(constituency_trees(), st.sampled_from(RULES))
def test_binarised_trees_keep_leaves_spans_and_level_order(tree, rule):
    binary = binarize(tree, rule)
    n = len(tree)
    assert binary.num_leaves == n
    assert binary.left.size == binary.right.size == len(binary.labels) == n - 1
    assert in_order_leaves(binary) == list(range(n))
    binary_spans = {tuple(span) for span in binary.spans.tolist()}
    for k in range(tree.num_constituents):
        if len(tree.children(k)) >= 2:
            assert tuple(tree.spans[k].tolist()) in binary_spans
    if n > 1:
        assert binary.spans[-1].tolist() == [0, n]
    # Level order: children are numbered and leveled before their parents.
    nodes = np.arange(n, 2 * n - 1)
    levels = np.concatenate([np.zeros(n, dtype=int), binary.levels])
    assert (binary.left < nodes).all() and (binary.right < nodes).all()
    assert (levels[binary.left] < binary.levels).all() and (levels[binary.right] < binary.levels).all()
    assert (np.maximum(levels[binary.left], levels[binary.right]) + 1 == binary.levels).all()
    assert (np.diff(binary.levels) >= 0).all()


def evaluate_level_by_level(batch, num_positions):
    """Computes every node's span with the batched arrays, one level at a time, like a Tree-LSTM."""
    size = 2 * num_positions - 1
    leaves_then_phrases = np.concatenate([np.arange(num_positions), np.zeros(num_positions - 1, int)])
    first = np.tile(leaves_then_phrases, (len(batch["tree_root"]), 1))
    last = first + 1
    for level in range(1, int(batch["tree_level"].max(initial=0)) + 1):
        rows, slots = np.nonzero(batch["tree_level"] == level)
        parents = num_positions + slots
        first[rows, parents] = first[rows, batch["tree_left"][rows, slots]]
        last[rows, parents] = last[rows, batch["tree_right"][rows, slots]]
    assert first.shape[1] == size
    return first, last


def test_batch_encoding_worked_example():
    two_words, one_word = parse_bracketed("(S (NN a) (NN b))"), parse_bracketed("(S (UH Hi))")
    trees = [binarize(BUSH), binarize(two_words), binarize(one_word)]
    batch = batch_binary_trees(trees, num_positions=7)
    # Bush's phrase nodes 6..10 become 7..11; leaves stay 0..5.
    assert batch["tree_left"][0].tolist() == [2, 4, 7, 1, 0, -1]
    assert batch["tree_right"][0].tolist() == [3, 5, 8, 9, 10, -1]
    assert batch["tree_level"][0].tolist() == [1, 1, 2, 3, 4, -1]
    assert batch["tree_left"][1].tolist() == [0, -1, -1, -1, -1, -1]
    assert batch["tree_right"][1].tolist() == [1, -1, -1, -1, -1, -1]
    assert batch["tree_level"][2].tolist() == [-1] * 6
    assert batch["tree_root"].tolist() == [11, 7, 0]
    first, last = evaluate_level_by_level(batch, 7)
    assert (first[0, 11], last[0, 11]) == (0, 6)
    assert (first[0, 9], last[0, 9]) == (2, 6)
    assert {key: value.dtype for key, value in batch.items()} == {key: np.int32 for key in batch}
    with pytest.raises(ValueError, match="more than the 5 positions"):
        batch_binary_trees(trees, num_positions=5)


@settings(max_examples=60, deadline=None)
@given(st.lists(constituency_trees(max_tokens=9), min_size=1, max_size=4), st.integers(0, 3))
def test_level_by_level_batches_compute_the_same_spans(trees, extra):
    binaries = [binarize(tree) for tree in trees]
    num_positions = max(len(tree) for tree in trees) + extra
    batch = batch_binary_trees(binaries, num_positions)
    first, last = evaluate_level_by_level(batch, num_positions)
    for b, binary in enumerate(binaries):
        n = binary.num_leaves
        for k in range(n - 1):
            node = num_positions + k
            assert [first[b, node], last[b, node]] == binary.spans[k].tolist()
        root = batch["tree_root"][b]
        assert (first[b, root], last[b, root]) == (0, n)


@pytest.mark.real_data
@pytest.mark.skipif(not EN_EWT_DEV.is_file(), reason=f"real data file {EN_EWT_DEV} is absent")
def test_head_outward_binarisation_of_english_ewt():
    for dependencies in itertools.islice(read_conllu(EN_EWT_DEV), 300):
        phrases = phrase_structure_from_dependencies(dependencies)
        binary = binarize(phrases, "head")
        n = len(dependencies)
        assert binary.left.size == n - 1
        assert in_order_leaves(binary) == list(range(n))
        binary_spans = {tuple(span) for span in binary.spans.tolist()}
        for k in range(phrases.num_constituents):
            if len(phrases.children(k)) >= 2:
                assert tuple(phrases.spans[k].tolist()) in binary_spans
