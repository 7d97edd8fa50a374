"""UAS/LAS, diagonal precision and predicted-parse files."""

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syntax_t2t.data.conllu_reader import read_conllu, write_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.data.parse_file import ParsedSentence, format_parsed, read_parsed, write_parsed
from syntax_t2t.errors import InputError
from syntax_t2t.evaluation.attachment import (attachment_scores, attachment_scores_by_length,
                                              chain_baselines, diagonal_precision,
                                              score_parse_files, sentence_lines)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

GOLD = DependencyTree.from_heads(["Udělali", "jsme", "si", "malý", "průzkum", "."], [0, 1, 1, 5, 1, 0],
                                 labels=["Pred", "AuxV", "Adv", "Atr", "Obj", "AuxK"])


def test_uas_and_las_of_a_worked_example():
    # Two heads wrong (words 3 and 4); word 6 has the right head, wrong label.
    predicted = DependencyTree.from_heads(GOLD.tokens, [0, 1, 2, 1, 1, 0],
                                          labels=["Pred", "AuxV", "Adv", "Atr", "Obj", "AuxX"])
    scores = attachment_scores([predicted, GOLD], [GOLD, GOLD])
    assert (scores.sentences, scores.words, scores.correct_heads, scores.correct_labelled) == (2, 12, 10, 9)
    assert scores.uas == pytest.approx(100 * 10 / 12)
    assert scores.las == pytest.approx(100 * 9 / 12)


def test_unlabelled_predictions_have_no_las():
    predicted = ParsedSentence.predicted(GOLD.tokens, [2, 0, 2, 5, 2, 5])  # only word 4 right
    scores = attachment_scores([predicted], [GOLD])
    assert scores.correct_heads == 1 and scores.las is None and scores.correct_labelled is None


def test_diagonal_precision_counts_heads_on_the_previous_word():
    diagonal = ParsedSentence.predicted(["a", "b", "c", "d"], [0, 1, 2, 3])
    one_off = ParsedSentence.predicted(["a", "b"], [0, 0])
    scores = diagonal_precision([diagonal, one_off])
    assert (scores.words, scores.correct_heads) == (6, 5)
    assert scores.uas == pytest.approx(100 * 5 / 6)


def test_chain_baselines_of_a_worked_example():
    # GOLD: heads 0 1 1 5 1 0. Previous word (0 1 2 3 4 5): words 1 and 2 right.
    # Next word (2 3 4 5 6 0): word 4 (malý -> průzkum) and word 6 (on ROOT) right.
    second = DependencyTree.from_heads(["Pes", "běží"], [2, 0])  # next word: both right
    baselines = chain_baselines([GOLD, second])
    previous, following = baselines["previous_word"], baselines["next_word"]
    assert (previous.words, previous.correct_heads) == (8, 2)
    assert (following.words, following.correct_heads) == (8, 4)
    assert following.uas == pytest.approx(50.0) and previous.las is None


def test_spacy_root_counts_as_ud_root_in_las():
    gold = DependencyTree.from_heads(["Pes", "běží"], [2, 0], labels=["nsubj", "root"])
    spacy_spelling = DependencyTree.from_heads(["Pes", "běží"], [2, 0], labels=["nsubj", "ROOT"])
    # Only on a word attached to ROOT: elsewhere `ROOT` is a wrong label.
    not_on_root = DependencyTree.from_heads(["Pes", "běží"], [2, 0], labels=["ROOT", "root"])
    assert attachment_scores([spacy_spelling], [gold]).correct_labelled == 2
    assert attachment_scores([not_on_root], [gold]).correct_labelled == 1


def test_cyclic_predictions_round_trip_through_conllu(tmp_path):
    # Argmax head selection may produce a cycle (2 -> 3 -> 2): still written and read.
    sentence = ParsedSentence.predicted(GOLD, [0, 3, 2, 5, 1, 1], comments={"sent_id": "s7"})
    assert sentence.lemmas == GOLD.lemmas and sentence.labels == ("_",) * 6
    path = tmp_path / "parse.conllu.gz"
    write_parsed([sentence, sentence], path)
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        assert stream.read() == format_parsed([sentence, sentence])
    [first, second] = read_parsed(path)
    assert first.tokens == GOLD.tokens and first.heads.tolist() == [0, 3, 2, 5, 1, 1]
    assert dict(first.comments) == {"sent_id": "s7"}
    assert (first.line, second.line) == (2, 10)
    scores = score_parse_files(path, _gold_file(tmp_path, [GOLD, GOLD]))
    assert scores.correct_heads == 2 * 3  # words 1, 4 and 5


def _gold_file(tmp_path, trees):
    path = tmp_path / "gold.conllu"
    write_conllu(trees, path)
    return path


def test_mismatched_words_name_the_predicted_line_and_the_gold_sentence(tmp_path):
    other = DependencyTree.from_heads(["Udělali", "jsme", "to", "."], [0, 1, 1, 0])
    predicted = tmp_path / "predicted.conllu"
    write_parsed([ParsedSentence.predicted(GOLD, GOLD.heads), ParsedSentence.predicted(other, other.heads)],
                 predicted)
    gold = _gold_file(tmp_path, [GOLD, GOLD])
    assert sentence_lines(gold) == [1, 8]
    with pytest.raises(InputError, match=r"predicted\.conllu:8: sentence 2 has the words 'Udělali jsme to "
                                         r"\.' but the gold sentence \(.*gold\.conllu:8\) has"):
        score_parse_files(predicted, gold)


def test_different_sentence_counts_are_an_error(tmp_path):
    predicted = tmp_path / "predicted.conllu"
    write_parsed([ParsedSentence.predicted(GOLD, GOLD.heads)], predicted)
    with pytest.raises(InputError, match=r"predicted\.conllu: has 1 sentences but the gold file .* has 2"):
        score_parse_files(predicted, _gold_file(tmp_path, [GOLD, GOLD]))


@pytest.mark.parametrize("line, message", [
    ("1\tA\t_\t_\t_\t_\t0\t_\t_", r":2: expected 10 tab-separated columns, found 9"),
    ("1\tA\t_\t_\t_\t_\tx\t_\t_\t_", r":2: HEAD 'x' is not a word"),
    ("1\tA\t_\t_\t_\t_\t3\t_\t_\t_", r":2: HEAD '3' is not a word of this 2-word sentence"),
    ("2\tA\t_\t_\t_\t_\t0\t_\t_\t_", r":2: expected word ID 1, found '2'"),
])
def test_bad_predicted_lines_are_located(tmp_path, line, message):
    path = tmp_path / "bad.conllu"
    path.write_text(f"# sent_id = 1\n{line}\n2\tB\t_\t_\t_\t_\t1\t_\t_\t_\n\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.conllu" + message):
        read_parsed(path)


def test_truncated_predicted_file_is_an_error(tmp_path):
    path = tmp_path / "cut.conllu"
    path.write_text("1\tA\t_\t_\t_\t_\t0\t_\t_\t_\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"cut\.conllu:1: file ends in the middle of a sentence"):
        read_parsed(path)


@pytest.mark.real_data
def test_gold_treebank_scores_100_against_itself_and_less_when_shifted(tmp_path):
    gold_path = DATA / "ud" / "cs_cac-ud-test.conllu.gz"
    if not gold_path.exists():
        candidates = sorted((DATA / "ud").glob("*test*.conllu.gz")) if (DATA / "ud").is_dir() else []
        if not candidates:
            pytest.skip(f"real data not found under {DATA}")
        gold_path = candidates[0]
    trees = list(read_conllu(gold_path))[:200]
    self_scores = attachment_scores(trees, trees)
    assert self_scores.uas == 100.0 and self_scores.las == 100.0
    # Every word attached to its left neighbour: UAS equals the share of gold
    # heads that are exactly the previous word.
    diagonal = [ParsedSentence.predicted(t, np.arange(len(t))) for t in trees]
    expected = sum(int((t.heads == np.arange(len(t))).sum()) for t in trees)
    scores = attachment_scores(diagonal, trees)
    assert scores.correct_heads == expected
    assert 0 < scores.uas < 100


def test_uas_by_length_of_a_worked_example():
    short = DependencyTree.from_heads(["Ahoj", "!"], [0, 1])
    guess_short = ParsedSentence.predicted(short.tokens, [0, 0])  # word 2 wrong
    guess_long = ParsedSentence.predicted(GOLD.tokens, [0, 1, 2, 1, 1, 0])  # words 3, 4 wrong
    groups = attachment_scores_by_length([guess_long, guess_short, guess_long],
                                         [GOLD, short, GOLD], edges=(2, 4))
    # 1-2 words: the short sentence; 3-4 words: nobody, left out; 5+: both long ones.
    assert [(low, high, s.sentences, s.words, s.correct_heads) for low, high, s in groups] == [
        (1, 2, 1, 2, 1), (5, None, 2, 12, 8)]


@st.composite
def _parses(draw):
    """A gold tree and a prediction of its words (heads need not form a tree)."""
    n = draw(st.integers(1, 12))
    gold_heads = [draw(st.integers(0, i)) for i in range(n)]  # head before the word: a tree
    predicted = [draw(st.integers(0, n)) for _ in range(n)]
    tokens = [f"w{i}" for i in range(n)]
    return DependencyTree.from_heads(tokens, gold_heads), ParsedSentence.predicted(tokens, predicted)


@settings(max_examples=60, deadline=None)
@given(st.lists(_parses(), min_size=1, max_size=8),
       st.lists(st.integers(1, 12), max_size=3, unique=True).map(sorted))
def test_uas_by_length_counts_each_word_in_its_sentence_length_group(pairs, edges):
    gold, predicted = [g for g, _ in pairs], [p for _, p in pairs]
    groups = attachment_scores_by_length(predicted, gold, edges)
    expected = {}
    for tree, guess in pairs:  # naive: one group per sentence, found by scanning the edges
        group = next((i for i, edge in enumerate(edges) if len(tree) <= edge), len(edges))
        words, right = expected.get(group, (0, 0))
        expected[group] = (words + len(tree),
                           right + sum(int(a == b) for a, b in zip(guess.heads, tree.heads)))
    assert [(s.words, s.correct_heads) for _, _, s in groups] == [
        expected[group] for group in sorted(expected)]
    lows = [low for low, _, _ in groups]
    assert lows == sorted(lows) and sum(s.sentences for _, _, s in groups) == len(gold)


def test_uas_by_length_checks_every_sentence_first():
    other = ParsedSentence.predicted(["Ahoj", "?"], [0, 1])
    with pytest.raises(InputError, match="sentence 1 has the words 'Ahoj \\?'"):
        attachment_scores_by_length([other], [DependencyTree.from_heads(["Ahoj", "!"], [0, 1])],
                                    edges=(9,))
