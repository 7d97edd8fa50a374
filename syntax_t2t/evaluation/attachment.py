"""Parsing quality: UAS and LAS against gold CoNLL-U, diagonal-parse precision.

UAS is the share of words whose predicted head is the gold head, LAS the
share whose head and label are both right (thesis 5.3). Every word counts,
punctuation included, as in the thesis. A predicted parse without labels
(DepParse predicts heads only and writes `_`) has no LAS.

The diagonal parse (thesis 4.2) has a known answer, token i depending on
token i - 1, so its precision needs no gold file.

Predicted parses are read with `read_parsed`, which accepts heads that do
not form a tree (the thesis's argmax decoder can produce cycles); gold files
must hold trees.
"""

import dataclasses
import os
from typing import Optional, Sequence, Union

import numpy as np

from syntax_t2t import io_utils
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.features import diagonal_heads
from syntax_t2t.data.tree import UNKNOWN, DependencyTree
from syntax_t2t.data.tree_controls import CHAIN_NEXT, CHAIN_PREVIOUS, chain_heads
from syntax_t2t.data.parse_file import ParsedSentence, read_parsed
from syntax_t2t.errors import InputError
from syntax_t2t.evaluation.length_buckets import bucket_bounds

PathLike = Union[str, os.PathLike]


@dataclasses.dataclass(frozen=True)
class AttachmentScores:
    """Counts behind UAS and LAS.

    Attributes:
        sentences: sentences compared.
        words: words compared.
        correct_heads: words with the right head.
        correct_labelled: words with the right head and label; None when the
            prediction carries no labels.
    """

    sentences: int
    words: int
    correct_heads: int
    correct_labelled: Optional[int]

    @property
    def uas(self) -> float:
        """Unlabelled attachment score, in percent."""
        return 100.0 * self.correct_heads / self.words if self.words else 0.0

    @property
    def las(self) -> Optional[float]:
        """Labelled attachment score in percent, None without predicted labels."""
        if self.correct_labelled is None:
            return None
        return 100.0 * self.correct_labelled / self.words if self.words else 0.0

    def as_dict(self) -> dict:
        return {"sentences": self.sentences, "words": self.words,
                "correct_heads": self.correct_heads, "correct_labelled": self.correct_labelled,
                "uas": self.uas, "las": self.las}


def sentence_lines(path: PathLike) -> list[int]:
    """The line of the first word of every sentence of a CoNLL-U file.

    Used to point error messages at the sentence that does not match.
    """
    lines, in_sentence, first_word = [], False, None
    for number, text in io_utils.read_lines(path):
        if not text:
            if in_sentence:
                lines.append(first_word)
            in_sentence, first_word = False, None
            continue
        in_sentence = True
        if first_word is None and not text.startswith("#"):
            first_word = number
    if in_sentence:
        lines.append(first_word)
    return lines


Parse = Union[ParsedSentence, DependencyTree]


def has_labels(parse: Parse) -> bool:
    """Whether a parse carries dependency labels (not all `_`)."""
    return any(label != UNKNOWN for label in parse.labels)


def _root_spelt_as_ud(labels: Sequence[str], heads) -> np.ndarray:
    """The labels, with spaCy's `ROOT` on a word attached to ROOT read as UD's `root`.

    Parses written before the spaCy adapter relabelled roots spell the same
    relation `ROOT`; counting it wrong would take every root off the LAS.
    """
    labels = np.array(labels, dtype=object)
    labels[(np.asarray(heads) == 0) & (labels == "ROOT")] = "root"
    return labels


def attachment_scores(predicted: Sequence[Parse], gold: Sequence[DependencyTree],
                      predicted_path: PathLike = "<predicted>", gold_path: PathLike = "<gold>",
                      gold_lines: Optional[Sequence[int]] = None) -> AttachmentScores:
    """UAS/LAS counts of predicted parses against gold trees of the same words.

    Args:
        predicted: the parser's output, one per gold sentence, same words
            (`ParsedSentence`s or trees).
        gold: the gold trees.
        predicted_path, gold_path: file names for error messages.
        gold_lines: the line of each gold sentence's first word (see
            `sentence_lines`), for error messages.

    Returns:
        `AttachmentScores`; LAS is counted only when every predicted tree has
        labels.

    Raises:
        InputError: different numbers of sentences, or a sentence whose words
            differ from the gold sentence's.
    """
    if len(predicted) != len(gold):
        raise InputError(predicted_path, None,
                         f"has {len(predicted)} sentences but the gold file {os.fspath(gold_path)} "
                         f"has {len(gold)}", reason="sentence count mismatch")
    labelled = all(has_labels(tree) for tree in predicted)
    words = correct_heads = correct_labelled = 0
    for index, (prediction, reference) in enumerate(zip(predicted, gold)):
        if prediction.tokens != reference.tokens:
            line = getattr(prediction, "line", None)
            where = f"{os.fspath(gold_path)}:{gold_lines[index]}" if gold_lines else os.fspath(gold_path)
            raise InputError(
                predicted_path, line,
                f"sentence {index + 1} has the words {_preview(prediction.tokens)} but the gold "
                f"sentence ({where}) has {_preview(reference.tokens)}", reason="different words")
        right_head = prediction.heads == reference.heads
        words += len(reference)
        correct_heads += int(right_head.sum())
        if labelled:
            right_label = (_root_spelt_as_ud(prediction.labels, prediction.heads)
                           == _root_spelt_as_ud(reference.labels, reference.heads))
            correct_labelled += int((right_head & right_label).sum())
    return AttachmentScores(sentences=len(gold), words=words, correct_heads=correct_heads,
                            correct_labelled=correct_labelled if labelled else None)


def attachment_scores_by_length(predicted: Sequence[Parse], gold: Sequence[DependencyTree],
                                edges: Sequence[int], predicted_path: PathLike = "<predicted>",
                                gold_path: PathLike = "<gold>",
                                gold_lines: Optional[Sequence[int]] = None):
    """`attachment_scores` within each group of gold sentences of `low..high` words.

    A parser trained on short sentences can look weak overall only because
    the test set is long (docs/results.md §4); the groups show where it fails.

    Args:
        predicted, gold, predicted_path, gold_path, gold_lines: as for
            `attachment_scores`, which checks every sentence first.
        edges: upper ends of the closed groups; an open last group follows
            (`length_buckets.bucket_bounds`).

    Returns:
        `[(low, high, AttachmentScores)]`, shortest first, empty groups left
        out; `high` is None for the open last group.
    """
    attachment_scores(predicted, gold, predicted_path, gold_path, gold_lines)
    groups = []
    for low, high in bucket_bounds(edges):
        chosen = [i for i, tree in enumerate(gold)
                  if low <= len(tree) and (high is None or len(tree) <= high)]
        if chosen:
            groups.append((low, high, attachment_scores([predicted[i] for i in chosen],
                                                        [gold[i] for i in chosen])))
    return groups


def diagonal_precision(predicted: Sequence[Parse]) -> AttachmentScores:
    """How many predicted heads are the diagonal heads (token i -> i - 1).

    Returns:
        `AttachmentScores` whose `uas` is the precision (no labels).
    """
    words = correct = 0
    for tree in predicted:
        words += len(tree)
        correct += int((tree.heads == diagonal_heads(len(tree))).sum())
    return AttachmentScores(sentences=len(predicted), words=words, correct_heads=correct,
                            correct_labelled=None)


def chain_baselines(gold: Sequence[DependencyTree]) -> dict[str, AttachmentScores]:
    """UAS of the two trees that know no syntax: each word on the previous, or on the next word.

    A parse head that finds only one of these scores its UAS without having
    learned any tree, so a head's UAS means something only above both
    (Czech attaches more words to the next word than to the previous one).

    Args:
        gold: the gold trees.

    Returns:
        `{"previous_word": scores, "next_word": scores}`, unlabelled; the
        first word of the previous-word chain and the last of the next-word
        chain hang on ROOT.
    """
    baselines = {}
    for name, direction in (("previous_word", CHAIN_PREVIOUS), ("next_word", CHAIN_NEXT)):
        correct = sum(int((tree.heads == chain_heads(len(tree), direction)).sum()) for tree in gold)
        baselines[name] = AttachmentScores(sentences=len(gold), words=sum(map(len, gold)),
                                           correct_heads=correct, correct_labelled=None)
    return baselines


def read_gold(path: PathLike) -> tuple[list[DependencyTree], list[int]]:
    """The trees of a gold CoNLL-U file and the line of each one's first word.

    Raises:
        InputError: a malformed file or a sentence that is not a tree.
    """
    return list(read_conllu(path)), sentence_lines(path)


def score_parse_files(predicted_path: PathLike, gold_path: PathLike, gold=None) -> AttachmentScores:
    """`attachment_scores` of a predicted and a gold CoNLL-U file.

    Args:
        predicted_path: the parser's output (heads need not form trees).
        gold_path: the gold trees.
        gold: `read_gold(gold_path)` when already read.

    Raises:
        InputError: a malformed file, or files that do not hold the same
            sentences.
    """
    trees, lines = gold if gold is not None else read_gold(gold_path)
    return attachment_scores(read_parsed(predicted_path), trees, predicted_path, gold_path, lines)


def diagonal_precision_of_file(predicted_path: PathLike) -> AttachmentScores:
    """`diagonal_precision` of a predicted CoNLL-U file."""
    return diagonal_precision(read_parsed(predicted_path))


def _preview(tokens, limit=8):
    shown = " ".join(tokens[:limit])
    return repr(shown + (" ..." if len(tokens) > limit else ""))
