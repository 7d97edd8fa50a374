"""Penn-style bracketed constituency trees: reading them from text and files,
matching them to a sentence's words, and storing them as per-constituent features.

Trees are parsed by `nltk.Tree.fromstring` and converted to `ConstituencyTree`
(`data/constituency.py`); every error names the file (or source) and line.
"""

import dataclasses
import os
import re
from typing import Iterable, Iterator, Optional, Sequence, Union

import numpy as np
from absl import logging

from syntax_t2t import io_utils
from syntax_t2t.data.constituency import ConstituencyError, ConstituencyTree
from syntax_t2t.data.tree import UNKNOWN, DependencyTree
from syntax_t2t.errors import InputError, SkipCounter, raise_or_skip

PathLike = Union[str, os.PathLike]

_NLTK_ERROR_INDEX = re.compile(r"at index (\d+)")


def parse_bracketed(text: str, source_name: str = "<string>", first_line: int = 1) -> ConstituencyTree:
    """Parses one Penn-style bracketed tree held in a string.

    Args:
        text: the tree, e.g. `"(S (NP (NNP Bush)) (VP (VBD spoke)))"`; it may
            span several lines.
        source_name: the name used in error messages in place of a file name.
        first_line: the line number of the first line of `text` in its source.

    Returns:
        The tree, converted by `ConstituencyTree.from_nltk`.

    Raises:
        InputError: naming the source, the line and the problem.
    """
    # nltk only here: models import this module's feature conversions without it.
    import nltk

    try:
        tree = nltk.Tree.fromstring(text)
    except ValueError as error:
        message = str(error)
        match = _NLTK_ERROR_INDEX.search(message)
        line = first_line + (text[: int(match.group(1))].count("\n") if match else 0)
        summary = message.split("\n")[0].removeprefix("Tree.read(): ")
        raise InputError(
            source_name, line, f"malformed brackets: {summary}", reason="malformed brackets"
        ) from None
    try:
        return ConstituencyTree.from_nltk(tree)
    except ConstituencyError as error:
        raise InputError(source_name, first_line, f"bad tree: {error}", reason="bad tree") from None


_BRACKET_OR_TEXT = re.compile(r"[()]|[^\s()]+")


def read_bracketed(path: PathLike, skip: Optional[SkipCounter] = None) -> Iterator[ConstituencyTree]:
    """Reads the trees of a plain or gzip file of Penn-style bracketed trees.

    Trees are balanced bracket groups; a tree may span several lines and a
    line may hold several trees (Penn Treebank `.mrg` files and one-tree-per-
    line parser output are both read). Only whitespace may stand between trees.

    Args:
        path: the file.
        skip: under `--skip_bad_examples`, the counter that bad trees are
            recorded in; None raises at the first bad tree.

    Yields:
        One `ConstituencyTree` per bracket group.

    Raises:
        InputError: naming the file, the line and the problem: an unmatched
            `)`, words outside brackets, a tree left open at the end of the
            file, a tree nltk cannot parse, or one that is not a valid tree;
            also when the file holds no tree at all.
    """
    source = os.fspath(path)
    for line_number, text in bracketed_groups(path, skip):
        try:
            yield parse_bracketed(text, source, line_number)
        except InputError as error:
            raise_or_skip(error, skip)


def bracketed_groups(path: PathLike, skip: Optional[SkipCounter] = None) -> Iterator[tuple[int, str]]:
    """The balanced bracket groups of a file, unparsed: `(first line, text)` each.

    One group per tree, so a caller that pairs trees with sentences stays
    aligned when it skips a tree that does not parse. Errors of the file's
    bracket structure are those of `read_bracketed`.
    """
    source = os.fspath(path)
    depth, start_line, pieces, found = 0, 0, [], False
    for line_number, line in io_utils.read_lines(path):
        piece_start = 0
        for match in _BRACKET_OR_TEXT.finditer(line):
            symbol = match.group()
            if depth == 0:
                if symbol == "(":
                    depth, start_line, pieces, piece_start = 1, line_number, [], match.start()
                    found = True
                else:
                    what = "an unmatched ')'" if symbol == ")" else f"the text {symbol!r} outside brackets"
                    message = f"{what} at column {match.start() + 1}"
                    raise_or_skip(InputError(source, line_number, message, reason="bad brackets"), skip)
                continue
            depth += {"(": 1, ")": -1}.get(symbol, 0)
            if depth == 0:
                pieces.append(line[piece_start : match.end()])
                yield start_line, "\n".join(pieces)
        if depth > 0:
            pieces.append(line[piece_start:])
            piece_start = 0
    if depth > 0:
        raise_or_skip(
            InputError(
                source,
                start_line,
                f"the tree starting on this line is not closed at the end of the file "
                f"({depth} bracket(s) open)",
                reason="bad brackets",
            ),
            skip,
        )
    if not found:
        raise InputError(source, None, "no bracketed tree found", reason="no trees")


# Bracketed trees of sentences whose words are known (the source side of a
# problem), and their storage as per-constituent features.

#: The CoNLL-U comment that holds a sentence's bracketed tree (as stanza writes it).
CONSTITUENCY_COMMENT = "constituency"
#: Penn Treebank escapes of brackets, which cannot stand bare in bracketed text.
PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}


def max_constituents(num_tokens: int) -> int:
    """The most constituents a stored tree of `num_tokens` words may have: 2n + 2.

    A tree without unary chains has at most 2n - 1 constituents; batches
    keep room for 2 (n + 1) (`docs/design.md`, `src_const_*`).
    """
    return 2 * num_tokens + 2


def sentence_tree(text: str, tokens: Sequence[str], source_name: str, line: int) -> ConstituencyTree:
    """Parses the bracketed tree of a sentence whose words are `tokens`.

    The tree's leaves must be the sentence's words, in order (Penn escapes
    such as `-LRB-` match the bracket they stand for); the result carries the
    sentence's own words.

    Args:
        text: the bracketed tree.
        tokens: the sentence's words (e.g. its CoNLL-U syntactic words).
        source_name, line: where `text` is, for error messages.

    Raises:
        InputError: naming `source_name` and `line`: malformed brackets, a
            word mismatch, or more than `max_constituents` constituents.
    """
    tree = parse_bracketed(text, source_name, line)
    words = [PTB_ESCAPES.get(word, word) for word in tree.tokens]
    tokens = tuple(tokens)
    if len(words) != len(tokens):
        raise InputError(source_name, line, f"the bracketed tree has {len(words)} words but the "
                         f"sentence has {len(tokens)}: tree {' '.join(words)!r}, sentence "
                         f"{' '.join(tokens)!r}", reason="tree word mismatch")
    for index, (word, token) in enumerate(zip(words, tokens)):
        if word != token:
            raise InputError(source_name, line, f"word {index + 1} of the bracketed tree is "
                             f"{word!r} but the sentence has {token!r}",
                             reason="tree word mismatch")
    if tree.num_constituents > max_constituents(len(tokens)):
        raise InputError(source_name, line, f"the bracketed tree has {tree.num_constituents} "
                         f"constituents over {len(tokens)} words; at most "
                         f"{max_constituents(len(tokens))} are stored (unary chains?)",
                         reason="too many constituents")
    return ConstituencyTree(tokens=tokens, spans=tree.spans, labels=tree.labels, tags=tree.tags)


def constituent_features(tree: ConstituencyTree) -> tuple[np.ndarray, np.ndarray]:
    """A tree as per-constituent positions: `(starts, ends)`, int32 [m] each.

    Constituent k (pre-order) covers the words `starts[k] .. ends[k]`,
    1-based and inclusive, so 0 can pad. Its label is `tree.labels[k]`.
    """
    return (tree.spans[:, 0] + 1).astype(np.int32), tree.spans[:, 1].astype(np.int32)


def tree_from_constituent_features(starts, ends, labels, num_tokens: int,
                                   tags: Optional[Sequence[str]] = None) -> ConstituencyTree:
    """Rebuilds a tree from `constituent_features` (padding with start 0 is dropped).

    Args:
        starts, ends: int [m'] as `constituent_features` gives them, padded.
        labels: m' labels (any strings).
        num_tokens: n.
        tags: the n word tags, `"_"` when omitted.

    Raises:
        ConstituencyError: the constituents do not form a tree over n words.
    """
    starts, ends = np.asarray(starts), np.asarray(ends)
    kept = np.flatnonzero(starts > 0)
    spans = np.stack([starts[kept] - 1, ends[kept]], axis=1).astype(np.int64)
    return ConstituencyTree(tokens=(UNKNOWN,) * num_tokens, spans=spans,
                            labels=tuple(labels[k] for k in kept), tags=tags)


def split_tree_file(directory: str, pattern: str, problem: str, splits: Sequence[str],
                    split: str) -> Optional[str]:
    """The file of bracketed trees of `split` in `directory` (plain or `.gz`), or None.

    `pattern` is formatted with `problem` and a split name. Only when every
    split has a file; a partial set is logged and ignored.
    """
    paths = {}
    for name_split in splits:
        name = pattern.format(problem=problem, split=name_split)
        paths[name_split] = next(
            (os.path.join(directory, candidate) for candidate in (name, name + ".gz")
             if os.path.isfile(os.path.join(directory, candidate))), None)
    if all(paths.values()):
        return paths[split]
    if any(paths.values()):
        logging.warning("%s: bracketed source trees are read only when every split has a "
                        "file; missing %s", problem,
                        ", ".join(pattern.format(problem=problem, split=x)
                                  for x, path in paths.items() if path is None))
    return None


def with_bracketed_trees(samples: Iterable[tuple[DependencyTree, object]], path: PathLike,
                         skip: Optional[SkipCounter], sentences: str):
    """`samples` whose sources carry the trees of `path` as `# constituency` comments.

    Tree k belongs to the k-th sample; a tree that does not fit its sentence
    is an `InputError` naming the file and line (under `--skip_bad_examples`
    the pair is skipped; the trees stay aligned). `sentences` names what the
    trees are counted against in the errors, e.g. "czeng_syntax has
    sentences in this split".
    """
    groups = bracketed_groups(path)
    line = None
    for number, (source, target) in enumerate(samples, 1):
        group = next(groups, None)
        if group is None:
            raise InputError(path, None, f"has fewer trees than {sentences}: sentence {number} "
                             f"has none", reason="tree count mismatch")
        line, text = group
        try:
            sentence_tree(text, source.tokens, path, line)
        except InputError as error:
            raise_or_skip(error, skip)
            continue
        comments = {**source.comments, CONSTITUENCY_COMMENT: " ".join(text.split())}
        yield dataclasses.replace(source, comments=comments), target
    if next(groups, None) is not None:
        raise InputError(path, line, f"holds more trees than {sentences} (the last sentence's "
                         f"tree is on this line)", reason="tree count mismatch")
