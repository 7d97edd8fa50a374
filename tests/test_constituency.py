"""Tests for constituency trees: the tree type, Penn bracketed reading, dependency-derived phrases."""

import gzip
import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from tree_strategies import constituency_trees, dependency_heads

from syntax_t2t.data.constituency import Child, ConstituencyError, ConstituencyTree
from syntax_t2t.data.bracketed import parse_bracketed, read_bracketed
from syntax_t2t.data.dependency_phrases import (is_projective, non_projective_dependents, phrase_structure_from_dependencies, projectivize_heads)
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError, SkipCounter

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
EN_EWT_DEV = DATA / "ud" / "en_ewt-ud-dev.conllu.gz"

# Figure 1 of the MG-SA paper, in Penn Treebank style with its outer wrapper.
BUSH = "( (S (NP (NNP Bush)) (VP (VBD held) (NP (DT a) (NN talk)) (PP (IN with) (NP (NNP Sharon))))) )"


def test_reads_the_mgsa_example_tree():
    tree = parse_bracketed(BUSH)
    assert tree.tokens == ("Bush", "held", "a", "talk", "with", "Sharon")
    assert tree.tags == ("NNP", "VBD", "DT", "NN", "IN", "NNP")
    assert tree.labels == ("S", "NP", "VP", "NP", "PP", "NP")
    assert tree.spans.tolist() == [[0, 6], [0, 1], [1, 6], [2, 4], [4, 6], [5, 6]]
    assert tree.parents.tolist() == [-1, 0, 0, 2, 2, 4]
    assert tree.token_parents.tolist() == [1, 2, 3, 3, 4, 5]
    assert tree.depths.tolist() == [0, 1, 1, 2, 2, 3]
    assert tree.token_depths.tolist() == [2, 2, 3, 3, 3, 4]
    assert tree.head_tokens.tolist() == [-1] * 6
    assert tree.children(2) == (Child(True, 1), Child(False, 3), Child(False, 4))
    assert tree.children(4) == (Child(True, 4), Child(False, 5))
    assert len(tree) == 6 and tree.num_constituents == 6


@settings(max_examples=100, deadline=None)
@given(constituency_trees())
def test_random_trees_survive_the_bracketed_round_trip(tree):
    text = tree.to_bracketed()
    assert text.count("(") == tree.num_constituents + len(tree)
    assert parse_bracketed(text) == tree


def test_bracketed_round_trip_drops_only_the_wrapper():
    tree = parse_bracketed(BUSH)
    assert tree.to_bracketed() == BUSH[2:-2]
    assert parse_bracketed(tree.to_bracketed()) == tree


@pytest.mark.parametrize("wrapper", ["ROOT", "TOP", ""])
def test_unary_root_wrappers_are_dropped(wrapper):
    tree = parse_bracketed(f"({wrapper} (S (NP (PRP I)) (VP (VBD left))))")
    assert tree.labels == ("S", "NP", "VP")


def test_a_wrapper_with_several_children_is_kept():
    tree = parse_bracketed("(ROOT (S (VP (VBD left))) (. .))")
    assert tree.labels == ("ROOT", "S", "VP")
    assert tree.spans.tolist() == [[0, 2], [0, 1], [0, 1]]


def test_empty_elements_and_the_constituents_they_empty_are_removed():
    tree = parse_bracketed(
        "( (S (NP-SBJ (-NONE- *-1)) (VP (VBD left) (NP (-NONE- *T*)) (ADVP (RB early)))) )"
    )
    assert tree.tokens == ("left", "early")
    assert tree.labels == ("S", "VP", "ADVP")
    assert tree.spans.tolist() == [[0, 2], [0, 2], [1, 2]]


def test_untagged_words_hang_directly_from_constituents():
    tree = parse_bracketed("(S a (NP b c) d)")
    assert tree.tokens == ("a", "b", "c", "d")
    assert tree.tags == ("_",) * 4
    assert tree.token_parents.tolist() == [0, 1, 1, 0]
    assert tree.to_bracketed() == "(S a (NP b c) d)"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("(S (NP) (VP (VB go)))", "(NP) has no children (before the first token)"),
        ("(S (NP (DT a)) (VP ))", "(VP) has no children (after token 0 'a')"),
        ("( (-NONE- *) )", "no words"),
        ("(NN word)", "lone preterminal"),
    ],
)
def test_bad_trees_are_reported(text, fragment):
    with pytest.raises(InputError, match="bad tree") as caught:
        parse_bracketed(text, source_name="trees.mrg", first_line=7)
    assert fragment in str(caught.value)
    assert caught.value.path == "trees.mrg" and caught.value.line == 7


def test_nltk_errors_name_the_line_inside_the_tree():
    with pytest.raises(InputError, match="malformed brackets") as caught:
        parse_bracketed("(S (NP (DT a))\n   (VP (VB b)))\n)", source_name="x.mrg", first_line=10)
    assert caught.value.line == 12
    assert "expected 'end-of-string' but got ')'" in caught.value.message


def test_from_spans_sorts_and_keeps_unary_chains_top_first():
    tree = ConstituencyTree.from_spans(
        ["a", "b", "c"], [(1, 3), (0, 3), (1, 3), (2, 3)], ["VP", "S", "V1", "NP"], head_tokens=[1, 1, 1, 2]
    )
    assert tree.labels == ("S", "VP", "V1", "NP")
    assert tree.parents.tolist() == [-1, 0, 1, 2]
    assert tree.head_tokens.tolist() == [1, 1, 1, 2]


@pytest.mark.parametrize(
    "spans, message",
    [
        ([(0, 2)], "root covering tokens 0..2"),
        ([(0, 3), (0, 2), (1, 3)], "crosses constituent 1"),
        ([(0, 3), (2, 2)], "not a non-empty span"),
        ([(0, 3), (1, 4)], "not a non-empty span"),
    ],
)
def test_spans_that_are_not_a_tree_are_rejected(spans, message):
    with pytest.raises(ConstituencyError, match=message):
        ConstituencyTree.from_spans(["a", "b", "c"], spans, ["X"] * len(spans))


def test_constituents_out_of_pre_order_and_bad_heads_are_rejected():
    with pytest.raises(ConstituencyError, match="pre-order"):
        ConstituencyTree(("a", "b", "c"), np.array([[0, 3], [1, 3], [0, 1]]), ("S", "VP", "NP"))
    with pytest.raises(ConstituencyError, match="head token 0"):
        ConstituencyTree(("a", "b"), np.array([[0, 2], [1, 2]]), ("S", "VP"), head_tokens=np.array([0, 0]))
    with pytest.raises(ConstituencyError, match="tags has 1 entries, expected 2"):
        ConstituencyTree(("a", "b"), np.array([[0, 2]]), ("S",), tags=("DT",))


def write(path: Path, text: str) -> Path:
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["trees.mrg", "trees.mrg.gz"])
def test_reads_multi_line_trees_and_several_trees_per_line(tmp_path, name):
    multi_line = BUSH.replace(" (VP", "\n    (VP").replace(" (PP", "\n      (PP")
    text = multi_line + "\n\n(S (NP (PRP I)) (VP (VBD left))) (S (VB go))\n"
    trees = list(read_bracketed(write(tmp_path / name, text)))
    assert [tree.tokens for tree in trees] == [parse_bracketed(BUSH).tokens, ("I", "left"), ("go",)]
    assert trees[0] == parse_bracketed(BUSH)


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("(S (VB go))\n(S (VB stop))\n  ) \n", 3, "unmatched ')' at column 3"),
        ("(S (VB go))\nhello (S (VB stop))\n", 2, "the text 'hello' outside brackets"),
        ("(S (VB go))\n(S (NP (DT a)\n  (NN b))\n", 2, "not closed at the end of the file (1 bracket"),
        ("(S (VB go))\n\n(S (NP ) (VB stop))\n", 3, "(NP) has no children"),
    ],
)
def test_file_errors_name_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path / "bad.mrg", text)
    with pytest.raises(InputError) as caught:
        list(read_bracketed(path))
    assert caught.value.path == str(path)
    assert caught.value.line == line
    assert fragment in caught.value.message


def test_an_empty_file_is_an_error(tmp_path):
    with pytest.raises(InputError, match="no bracketed tree found"):
        list(read_bracketed(write(tmp_path / "empty.mrg", "\n  \n")))


def test_bad_trees_can_be_skipped(tmp_path):
    path = write(tmp_path / "mixed.mrg", "(S (VB go))\n(S (NP ) (VB x))\n(S (VB stop))\n")
    skip = SkipCounter()
    trees = list(read_bracketed(path, skip=skip))
    assert [tree.tokens for tree in trees] == [("go",), ("stop",)]
    assert skip.counts == {"bad tree": 1}


# --- Projectivisation -------------------------------------------------------


def test_projectivize_lifts_the_shortest_non_projective_arc_first():
    # 1 <- 3 crosses over 2 (ROOT's dependent), and 1 -> 4 crosses over 2 and 3.
    heads = [3, 0, 2, 1]
    assert non_projective_dependents(heads).tolist() == [1, 4]
    # Lift 1 (arc length 2) to 3's head 2; then 4 to 1's new head 2.
    assert projectivize_heads(heads).tolist() == [2, 0, 2, 2]
    assert is_projective([2, 0, 2, 2]) and not is_projective(heads)


def naive_ancestors(heads, token):
    """The proper ancestors of `token` (1-based), ROOT included."""
    result, node = [], token
    while node != 0:
        node = heads[node - 1]
        result.append(node)
    return result


def naive_projective(heads):
    for dependent, head in enumerate(heads, start=1):
        for between in range(min(head, dependent) + 1, max(head, dependent)):
            if head not in [between] + naive_ancestors(heads, between):
                return False
    return True


@settings(max_examples=150, deadline=None)
@given(dependency_heads())
def test_projectivize_gives_a_projective_tree_that_only_lifts_arcs(heads):
    lifted = projectivize_heads(heads).tolist()
    assert naive_projective(lifted)
    assert is_projective(heads) == naive_projective(heads)
    if naive_projective(heads):
        assert lifted == heads
    for token in range(1, len(heads) + 1):
        # Lifting moves a dependent up the original tree, never sideways.
        assert lifted[token - 1] in [heads[token - 1]] + naive_ancestors(heads, heads[token - 1] or token)


# --- Phrase structure from dependencies --------------------------------------


def test_each_head_with_its_projection_worked_example():
    # "She saw the cat ." with saw <- ROOT; She, cat, . <- saw; the <- cat.
    tree = DependencyTree.from_heads(
        "She saw the cat .".split(), [2, 0, 4, 2, 2], upos="PRON VERB DET NOUN PUNCT".split()
    )
    phrases = phrase_structure_from_dependencies(tree)
    assert phrases.to_bracketed() == "(VERBP (PRON She) (VERB saw) (NOUNP (DET the) (NOUN cat)) (PUNCT .))"
    assert phrases.head_tokens.tolist() == [1, 3]


def test_several_root_dependents_get_a_root_phrase():
    # Prague style: the predicate and the final punctuation both hang on ROOT.
    tree = DependencyTree.from_heads(["Pršelo", "včera", "."], [0, 1, 0], upos=["VERB", "ADV", "PUNCT"])
    phrases = phrase_structure_from_dependencies(tree)
    assert phrases.to_bracketed() == "(ROOT (VERBP (VERB Pršelo) (ADV včera)) (PUNCT .))"
    assert phrases.head_tokens.tolist() == [-1, 0]


def test_a_one_word_sentence_is_one_phrase():
    phrases = phrase_structure_from_dependencies(DependencyTree.from_heads(["Hi"], [0], upos=["INTJ"]))
    assert phrases.to_bracketed() == "(INTJP (INTJ Hi))"


def test_non_projective_trees_are_lifted_before_taking_projections():
    # "A hearing is scheduled on the issue today": "on the issue" modifies "hearing"
    # across "is scheduled" (McDonald et al.'s example), so it is lifted to "scheduled".
    tokens = "A hearing is scheduled on the issue today".split()
    heads = [2, 4, 4, 0, 2, 7, 5, 4]
    upos = "DET NOUN AUX VERB ADP DET NOUN NOUN".split()
    phrases = phrase_structure_from_dependencies(DependencyTree.from_heads(tokens, heads, upos=upos))
    assert projectivize_heads(heads).tolist() == [2, 4, 4, 0, 4, 7, 5, 4]
    assert phrases.to_bracketed() == (
        "(VERBP (NOUNP (DET A) (NOUN hearing)) (AUX is) (VERB scheduled)"
        " (ADPP (ADP on) (NOUNP (DET the) (NOUN issue))) (NOUN today))"
    )


def naive_projection(heads, head):
    """0-based tokens dominated by 0-based token `head` (itself included)."""
    return sorted(t for t in range(len(heads)) if head + 1 in [t + 1] + naive_ancestors(heads, t + 1))


def check_dependency_phrases(tree: DependencyTree):
    heads = projectivize_heads(tree.heads).tolist()
    phrases = phrase_structure_from_dependencies(tree)
    assert phrases.tags == tree.upos
    heading = [t for t in range(len(tree)) if (t + 1) in heads]
    root_dependents = [t for t in range(len(tree)) if heads[t] == 0]
    if len(root_dependents) == 1:
        heading = sorted(set(heading) | set(root_dependents))
    by_head = {int(h): k for k, h in enumerate(phrases.head_tokens) if h >= 0}
    assert sorted(by_head) == heading
    for head, k in by_head.items():
        members = naive_projection(heads, head)
        assert members == list(range(members[0], members[-1] + 1)), "projection not contiguous"
        assert phrases.spans[k].tolist() == [members[0], members[-1] + 1]
        assert phrases.labels[k] == f"{tree.upos[head]}P"
    assert (phrases.head_tokens == -1).sum() == (len(root_dependents) > 1)


@settings(max_examples=150, deadline=None)
@given(dependency_heads())
def test_dependency_phrases_on_random_trees(heads):
    check_dependency_phrases(DependencyTree.from_heads([f"w{i}" for i in range(len(heads))], heads))


@pytest.mark.real_data
@pytest.mark.skipif(not EN_EWT_DEV.is_file(), reason=f"real data file {EN_EWT_DEV} is absent")
def test_dependency_phrases_on_english_ewt():
    trees = list(itertools.islice(read_conllu(EN_EWT_DEV), 600))
    non_projective = 0
    for tree in trees:
        check_dependency_phrases(tree)
        non_projective += not is_projective(tree.heads)
    assert non_projective > 0, "the sample should exercise lifting"
