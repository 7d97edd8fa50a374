"""One tree per input line, even when the parser splits the line into sentences.

A parser may find several sentences in one line ("A dog runs. It is happy.").
The project keeps line `k` of a source file aligned with line `k` of its
translation, so the sentences' trees are joined into one: the words follow
each other, every sentence's heads are offset by the words before it, and
each sentence's root stays attached to ROOT (0). ROOT then has several
dependents, which the project allows (`syntax_t2t/data/tree.py`).
"""

import dataclasses
from typing import Mapping, Optional, Sequence

import numpy as np

from syntax_t2t.data.tree import UNKNOWN, DependencyTree, TreeError
from syntax_t2t.parsing.parser import ParserError


@dataclasses.dataclass(frozen=True)
class ParsedWord:
    """One syntactic word of a parser's output sentence.

    Attributes:
        form: the word.
        head: 1-based position of the head within the word's own sentence,
            0 for the sentence root.
        label: dependency label.
        lemma, upos, xpos: annotations; None or "" when the parser has none.
    """

    form: str
    head: int
    label: Optional[str]
    lemma: Optional[str] = None
    upos: Optional[str] = None
    xpos: Optional[str] = None


def join_sentences(sentences: Sequence[Sequence[ParsedWord]],
                   comments: Optional[Mapping[str, str]] = None) -> DependencyTree:
    """Joins the parsed sentences of one input into one tree under ROOT.

    Args:
        sentences: the sentences in order, each a non-empty word list with
            sentence-local heads.
        comments: comments of the resulting tree.

    Returns:
        The joined tree; sentence `s`'s heads are offset by the number of
        words in sentences `0..s-1`, its roots keep head 0.

    Raises:
        ParserError: no words at all, a head outside its own sentence, or
            heads that do not form a tree.
    """
    words, heads = [], []
    for number, sentence in enumerate(sentences, start=1):
        offset = len(words)
        for position, word in enumerate(sentence, start=1):
            if not 0 <= word.head <= len(sentence):
                raise ParserError(
                    f"sentence {number}: word {position} {word.form!r} has head {word.head}, "
                    f"outside its sentence of {len(sentence)} words")
            heads.append(word.head + offset if word.head else 0)
            words.append(word)
    if not words:
        raise ParserError("the parser returned no words")
    try:
        return DependencyTree(
            tokens=tuple(word.form for word in words),
            heads=np.asarray(heads, dtype=np.int32),
            labels=tuple(_known(word.label) for word in words),
            lemmas=tuple(_known(word.lemma) for word in words),
            upos=tuple(_known(word.upos) for word in words),
            xpos=tuple(_known(word.xpos) for word in words),
            comments=comments or {},
        )
    except TreeError as error:
        raise ParserError(f"the parser's output is not a tree: {error}") from None


def _known(value: Optional[str]) -> str:
    return value if value else UNKNOWN
