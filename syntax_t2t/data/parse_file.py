"""Predicted source parses as CoNLL-U (`bin/decode --parse_to_file`), and reading them back.

A parse read from an attention head may not be a tree: the thesis's argmax
decoder picks each word's head on its own, so cycles can occur. A
`ParsedSentence` therefore holds heads without the tree check of
`DependencyTree`, and `read_parsed` accepts such files; everything else about
the format is checked, and errors name the file and line.

Columns written: ID, FORM, and LEMMA/UPOS/XPOS copied from the input when it
had them; HEAD is the prediction; DEPREL is `_` (the parse head predicts no
labels); FEATS, DEPS and MISC are `_`. `<ROOT>` is not written: word ids
start at 1 and head 0 is the root, as CoNLL-U wants.

A file format of the data, so it lives in `data/`: `bin/decode` writes it,
`bin/evaluate` and `bin/grid` score it, and neither scorer imports decoding.
"""

import dataclasses
import os
import re
import types
from typing import Iterable, Mapping, Optional, Sequence, Union

import conllu
import numpy as np
from conllu.exceptions import ParseException
from conllu.parser import parse_comment_line, parse_int_value

from syntax_t2t import io_utils
from syntax_t2t.data.tree import UNKNOWN, DependencyTree
from syntax_t2t.errors import InputError

PathLike = Union[str, os.PathLike]

_COLUMNS = 10
_RANGE = re.compile(r"\d+-\d+\Z")
_EMPTY_NODE = re.compile(r"\d+\.\d+\Z")


@dataclasses.dataclass(frozen=True, eq=False)
class ParsedSentence:
    """The words of one sentence with predicted heads.

    Attributes:
        tokens: word forms.
        heads: int32 [n], 1-based, 0 = ROOT; may contain cycles.
        labels: dependency labels, `"_"` when not predicted.
        lemmas, upos, xpos: copied from the input, `"_"` when unknown.
        comments: sentence metadata (`sent_id`, `text`).
        line: line of the first word when read from a file.
    """

    tokens: tuple[str, ...]
    heads: np.ndarray
    labels: tuple[str, ...]
    lemmas: tuple[str, ...]
    upos: tuple[str, ...]
    xpos: tuple[str, ...]
    comments: Mapping[str, str] = dataclasses.field(default_factory=dict)
    line: Optional[int] = None

    def __post_init__(self):
        n = len(self.tokens)
        heads = np.asarray(self.heads, dtype=np.int32)
        if heads.shape != (n,) or (n and (heads.min() < 0 or heads.max() > n)):
            raise ValueError(f"heads {heads.tolist()} do not fit {n} words")
        for name in ("labels", "lemmas", "upos", "xpos"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries for {n} words")
        heads.setflags(write=False)
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "comments", types.MappingProxyType(dict(self.comments)))

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def predicted(cls, source: Union[DependencyTree, Sequence[str]], heads,
                  comments: Optional[Mapping[str, str]] = None) -> "ParsedSentence":
        """Predicted heads for a source sentence (a tree or a token list).

        Tags and lemmas of a source tree are kept; its labels and heads are
        not (they would be mistaken for predictions).
        """
        tokens = tuple(source.tokens if isinstance(source, DependencyTree) else source)
        unknown = (UNKNOWN,) * len(tokens)
        tree = source if isinstance(source, DependencyTree) else None
        metadata = dict(tree.comments) if tree is not None else {}
        metadata.update(comments or {})
        return cls(tokens=tokens, heads=heads, labels=unknown,
                   lemmas=tree.lemmas if tree is not None else unknown,
                   upos=tree.upos if tree is not None else unknown,
                   xpos=tree.xpos if tree is not None else unknown,
                   comments=metadata)


def format_parsed(sentences: Iterable[ParsedSentence]) -> str:
    """CoNLL-U text of the sentences (one block each, blank line after each)."""
    blocks = []
    for index, sentence in enumerate(sentences):
        def checked(value, what, index=index):
            if not value or any(c in value for c in "\t\n\r"):
                raise ValueError(f"sentence {index + 1}: {what} {value!r} cannot be written to CoNLL-U")
            return value

        tokens = [
            conllu.Token(id=i + 1, form=checked(sentence.tokens[i], "form"),
                         lemma=checked(sentence.lemmas[i], "lemma"), upos=checked(sentence.upos[i], "UPOS"),
                         xpos=checked(sentence.xpos[i], "XPOS"), feats=None, head=int(sentence.heads[i]),
                         deprel=checked(sentence.labels[i], "label"), deps=None, misc=None)
            for i in range(len(sentence.tokens))]
        blocks.append(conllu.TokenList(tokens, metadata=conllu.Metadata(sentence.comments)).serialize())
    return "".join(blocks)


def write_parsed(sentences: Iterable[ParsedSentence], path: PathLike) -> None:
    """Atomically writes predicted parses as CoNLL-U (gzip when `path` ends in `.gz`)."""
    io_utils.atomic_write_text(path, format_parsed(sentences))


def read_parsed(path: PathLike) -> list[ParsedSentence]:
    """Reads a CoNLL-U file whose heads need not form trees.

    Multiword-token ranges and empty nodes are skipped, as in
    `read_conllu`.

    Raises:
        InputError: a line with the wrong number of columns, a bad ID or
            HEAD, or a file cut off inside a sentence; names file and line.
    """
    sentences, block = [], []
    number = 0
    for number, text in io_utils.read_lines(path):
        if text:
            block.append((number, text))
        elif block:
            sentences.append(_sentence(path, block))
            block = []
    if block:
        raise InputError(path, number, "file ends in the middle of a sentence "
                         "(CoNLL-U needs a blank line after every sentence)", reason="truncated sentence")
    return sentences


def _sentence(path, block) -> ParsedSentence:
    comments, words = {}, []
    for number, text in block:
        if text.startswith("#"):
            for key, value in parse_comment_line(text):
                comments[key] = value or ""
            continue
        columns = text.split("\t")
        if len(columns) != _COLUMNS:
            raise InputError(path, number, f"expected {_COLUMNS} tab-separated columns, found {len(columns)}",
                             reason="wrong column count")
        if _RANGE.match(columns[0]) or _EMPTY_NODE.match(columns[0]):
            continue
        if columns[0] != str(len(words) + 1):
            raise InputError(path, number, f"expected word ID {len(words) + 1}, found {columns[0]!r}",
                             reason="bad id")
        words.append((number, columns))
    if not words:
        raise InputError(path, block[0][0], "sentence has no words", reason="no words")
    heads = []
    for number, columns in words:
        try:
            head = parse_int_value(columns[6])
        except ParseException:
            head = None
        if head is None or not 0 <= head <= len(words):
            raise InputError(path, number, f"HEAD {columns[6]!r} is not a word of this {len(words)}-word "
                             f"sentence or 0 (ROOT)", reason="bad head")
        heads.append(head)
    form, lemma, upos, xpos, deprel = (tuple(columns[i] for _, columns in words) for i in (1, 2, 3, 4, 7))
    return ParsedSentence(tokens=form, heads=heads, labels=deprel, lemmas=lemma, upos=upos, xpos=xpos,
                          comments=comments, line=words[0][0])
