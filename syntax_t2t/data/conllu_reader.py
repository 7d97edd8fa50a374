"""CoNLL-U files to `DependencyTree`s, and predicted trees back to CoNLL-U.

Trees are built over *syntactic words* (lines with an integer ID):

* multiword-token range lines (`3-4  du  _ ...`) are validated (start < end,
  placed right before their first word, not overlapping another range,
  covering existing words) and then skipped: the tree holds the words `de` +
  `le`, not the surface token `du`;
* empty nodes (`5.1`) belong to the enhanced graph only and are skipped.

A `# constituency = (...)` comment (stanza's CoNLL-U output) is the
sentence's bracketed constituency tree: it is checked here (brackets, and
leaves equal to the syntactic words) so that its errors name its line, and
kept as a comment (`syntax_t2t.data.bracketed.sentence_tree` parses it).

The file is split into sentence blocks here, counting lines, so that every
error names the line of the offending token; the `conllu` package supplies the
parsing of IDs, integers and comments, and the serialisation on output.
CoNLL-U requires a blank line after every sentence, including the last one: a
file that stops inside a sentence is reported as truncated.
"""

import os
import re
from typing import Iterable, Iterator, Optional, Sequence, Union

import conllu
import numpy as np
from absl import logging
from conllu.exceptions import ParseException
from conllu.parser import parse_comment_line, parse_id_value, parse_int_value

from syntax_t2t import io_utils
from syntax_t2t.data.bracketed import CONSTITUENCY_COMMENT, sentence_tree
from syntax_t2t.data.tree import DependencyTree, TreeError
from syntax_t2t.errors import InputError, SkipCounter, raise_or_skip

PathLike = Union[str, os.PathLike]

COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
_ID, _FORM, _LEMMA, _UPOS, _XPOS, _FEATS, _HEAD, _DEPREL, _DEPS, _MISC = range(len(COLUMNS))
_RANGE_PATTERN = re.compile(r"\d+-\d+")
_UTF8_BOM = b"\xef\xbb\xbf"

# A line is (line number, text), or (line number, InputError) when it could
# not be decoded: the error is raised only if that line's sentence is used.
_Line = tuple[int, Union[str, InputError]]


def read_conllu(path: PathLike, skip: Optional[SkipCounter] = None,
                whitespace_separates: bool = False) -> Iterator[DependencyTree]:
    """Reads the dependency trees of a plain or gzip CoNLL-U file.

    Args:
        path: the CoNLL-U file.
        skip: under `--skip_bad_examples`, the counter that bad sentences are
            recorded in; None raises at the first bad sentence.
        whitespace_separates: take a line of only whitespace for the empty
            line that ends a sentence, with one warning that gives the first
            such line and their count (decoding, where each sentence must
            keep its own output line); otherwise such a line is an error.

    Yields:
        One `DependencyTree` per sentence, with all `# key = value` comments
        (e.g. `sent_id`, `text`, `parallel_id`, `text_en`) in `comments`.

    Raises:
        InputError: naming file, line and problem, unless `skip` is given;
            a file without any sentence (empty, or blank lines only) always.
    """
    sentences = 0
    trees = _read_trees(_decoded_lines(path), os.fspath(path), skip, whitespace_separates)
    for sentences, tree in enumerate(trees, 1):
        yield tree
    if sentences == 0 and not _has_content(path):
        raise InputError(path, None, "file is empty (no CoNLL-U sentence)", reason="empty file")


def parse_conllu_text(
    text: str, source_name: str = "<string>", skip: Optional[SkipCounter] = None
) -> list[DependencyTree]:
    """Parses CoNLL-U text held in memory (e.g. a parser's output).

    Args:
        text: the CoNLL-U content; like a file, it must end with a blank line.
        source_name: the name used in error messages in place of a file name.
        skip: as in `read_conllu`.

    Returns:
        The trees, in order.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the text ends with a newline: no further line follows
    numbered = ((number, line.removesuffix("\r")) for number, line in enumerate(lines, start=1))
    return list(_read_trees(numbered, source_name, skip))


def format_conllu(trees: Iterable[DependencyTree]) -> str:
    """Serialises trees as CoNLL-U text (basic trees only: FEATS, DEPS, MISC are `_`).

    Raises:
        ValueError: if a field is empty or contains a tab or line break, which
            CoNLL-U cannot represent.
    """
    return "".join(_token_list(tree, index).serialize() for index, tree in enumerate(trees))


def write_conllu(trees: Iterable[DependencyTree], path: PathLike) -> None:
    """Atomically writes trees as a CoNLL-U file (gzip-compressed if `path` ends in `.gz`)."""
    io_utils.atomic_write_text(path, format_conllu(trees))


def is_blank(text: str) -> bool:
    """Whether a line holds nothing but ASCII whitespace (what `bytes.strip` removes)."""
    return not text.strip(" \t\r\x0b\x0c")


def _has_content(path: PathLike) -> bool:
    """Whether any line of the file holds more than whitespace (or a byte order mark)."""
    return any(raw.strip() not in (b"", _UTF8_BOM) for _, raw in io_utils.read_raw_lines(path))


def _decoded_lines(path: PathLike) -> Iterator[_Line]:
    for number, raw in io_utils.read_raw_lines(path):
        try:
            text = io_utils.decode_line(path, number, raw)
        except InputError as error:
            text = error
        yield number, text


def _read_trees(lines: Iterable[_Line], source: str, skip: Optional[SkipCounter],
                whitespace_separates: bool = False) -> Iterator[DependencyTree]:
    for block in _sentence_blocks(lines, source, whitespace_separates):
        try:
            if isinstance(block, InputError):
                raise block
            yield _tree_from_block(block, source)
        except InputError as error:
            raise_or_skip(error, skip)


def _sentence_blocks(lines: Iterable[_Line], source: str,
                     whitespace_separates: bool = False) -> Iterator[Union[list[_Line], InputError]]:
    """Groups lines into sentences at empty lines; reports a sentence cut off by the end of file."""
    block: list[_Line] = []
    whitespace_lines = []
    for number, text in lines:
        if whitespace_separates and isinstance(text, str) and text and is_blank(text):
            whitespace_lines.append(number)
            text = ""
        if text == "":
            if block:
                yield block
                block = []
        else:
            block.append((number, text))
    if whitespace_lines:
        logging.warning("%s:%d: %d line(s) holding only whitespace taken for the empty line that "
                        "ends a sentence (CoNLL-U wants an empty line)", source, whitespace_lines[0],
                        len(whitespace_lines))
    if block:
        yield InputError(
            source,
            block[-1][0],
            "file ends in the middle of a sentence (CoNLL-U needs a blank line after every sentence)",
            reason="truncated sentence",
        )


class _Problem(Exception):
    """A problem on the line being read; the caller adds file and line."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.message = message
        self.reason = reason


def _tree_from_block(block: Sequence[_Line], source: str) -> DependencyTree:
    comments: dict[str, str] = {}
    comment_lines: dict[str, int] = {}
    words: list[tuple[int, list[str]]] = []  # (line number, columns) of syntactic words
    ranges: list[tuple[int, int, int]] = []  # (line number, first word, last word)

    number = block[0][0]
    try:
        for number, text in block:
            if isinstance(text, InputError):
                raise text
            if text.startswith("#"):
                if words or ranges:
                    raise _Problem("comment line after the token lines of a sentence", "misplaced comment")
                for key, value in parse_comment_line(text):
                    comments[key] = value or ""
                    comment_lines[key] = number
                continue
            columns = _split_columns(text)
            token_id = _parse_id(columns[_ID])
            if isinstance(token_id, int):
                if token_id != len(words) + 1:
                    raise _Problem(f"expected word ID {len(words) + 1}, found {token_id}", "bad id")
                words.append((number, columns))
            elif token_id[1] == "-":
                _check_range_start(token_id[0], token_id[2], len(words), ranges)
                ranges.append((number, token_id[0], token_id[2]))
            # Anything else is an empty node (5.1): enhanced graphs only.

        number = block[0][0]
        if not words:
            raise _Problem("sentence has no words (no token line with an integer ID)", "no words")
        for number, first, last in ranges:
            if last > len(words):
                raise _Problem(
                    f"multiword token range {first}-{last} covers word {last}, "
                    f"but the sentence has only {len(words)} words",
                    "bad multiword range",
                )
        heads = []
        for word_id, (number, columns) in enumerate(words, start=1):
            heads.append(_parse_head(word_id, columns, len(words)))
    except _Problem as problem:
        raise InputError(source, number, problem.message, reason=problem.reason) from None

    try:
        tree = DependencyTree(
            tokens=tuple(columns[_FORM] for _, columns in words),
            heads=np.asarray(heads, dtype=np.int32),
            labels=tuple(columns[_DEPREL] for _, columns in words),
            lemmas=tuple(columns[_LEMMA] for _, columns in words),
            upos=tuple(columns[_UPOS] for _, columns in words),
            xpos=tuple(columns[_XPOS] for _, columns in words),
            comments=comments,
        )
    except TreeError as tree_error:
        # Ranges, self-heads and emptiness are checked above with exact lines,
        # so what the tree still rejects is a cycle; its message names the ids.
        raise InputError(
            source,
            words[0][0],
            f"heads of the sentence starting here do not form a tree: {tree_error}",
            reason="cycle",
        ) from None
    if CONSTITUENCY_COMMENT in comments:
        # A bracketed tree (stanza's `# constituency = (ROOT ...)`) must fit the words.
        sentence_tree(comments[CONSTITUENCY_COMMENT], tree.tokens, source,
                      comment_lines[CONSTITUENCY_COMMENT])
    return tree


def _split_columns(text: str) -> list[str]:
    if not text.strip():
        raise _Problem(
            "line of only whitespace; sentences must be separated by an empty line", "whitespace line"
        )
    columns = text.split("\t")
    if len(columns) != len(COLUMNS):
        raise _Problem(
            f"expected {len(COLUMNS)} tab-separated columns, found {len(columns)}", "wrong column count"
        )
    for name, value in zip(COLUMNS, columns):
        if not value:
            raise _Problem(f"column {name} is empty (use _ for an unknown value)", "empty column")
    return columns


def _parse_id(text: str):
    try:
        token_id = parse_id_value(text)
    except ParseException:
        token_id = None
    is_range = _RANGE_PATTERN.fullmatch(text) is not None
    if is_range and (token_id is None or token_id[0] >= token_id[2]):
        raise _Problem(f"multiword token range {text} must have start < end", "bad multiword range")
    if token_id is None:
        raise _Problem(
            f"invalid ID {text!r}: expected a word ID (1, 2, ...), "
            "a multiword range (3-4) or an empty node (5.1)",
            "bad id",
        )
    return token_id


def _check_range_start(first: int, last: int, num_words_so_far: int, ranges) -> None:
    if ranges and first <= ranges[-1][2]:
        previous_line, previous_first, previous_last = ranges[-1]
        raise _Problem(
            f"multiword token range {first}-{last} overlaps the range "
            f"{previous_first}-{previous_last} on line {previous_line}",
            "bad multiword range",
        )
    if first != num_words_so_far + 1:
        raise _Problem(
            f"multiword token range {first}-{last} must come directly before word {first}, "
            f"but the next word is {num_words_so_far + 1}",
            "bad multiword range",
        )


def _parse_head(word_id: int, columns: Sequence[str], num_words: int) -> int:
    text = columns[_HEAD]
    try:
        head = parse_int_value(text)
    except ParseException:
        head = None
    if head is None:
        raise _Problem(f"HEAD of word {word_id} must be an integer, found {text!r}", "bad head")
    if not 0 <= head <= num_words:
        raise _Problem(
            f"HEAD {head} of word {word_id} is out of range: the sentence has {num_words} words (0 = ROOT)",
            "head out of range",
        )
    if head == word_id:
        raise _Problem(f"word {word_id} {columns[_FORM]!r} is its own head", "self head")
    return head


def _token_list(tree: DependencyTree, index: int) -> conllu.TokenList:
    def checked(value: str, what: str) -> str:
        if not value or "\t" in value or "\n" in value or "\r" in value:
            raise ValueError(f"tree {index}: {what} {value!r} cannot be written to CoNLL-U")
        return value

    for key, value in tree.comments.items():
        checked(key, "comment key")
        if "\n" in value or "\r" in value:
            raise ValueError(f"tree {index}: comment {key!r} has a line break")
    tokens = [
        conllu.Token(
            id=i + 1,
            form=checked(tree.tokens[i], "form"),
            lemma=checked(tree.lemmas[i], "lemma"),
            upos=checked(tree.upos[i], "UPOS"),
            xpos=checked(tree.xpos[i], "XPOS"),
            feats=None,
            head=int(tree.heads[i]),
            deprel=checked(tree.labels[i], "label"),
            deps=None,
            misc=None,
        )
        for i in range(len(tree))
    ]
    return conllu.TokenList(tokens, metadata=conllu.Metadata(tree.comments))
