"""CzEng 1.7 export lines to (source tree, target tree) pairs.

The export format (thesis Section 5.1, Table 5.1) has one sentence pair per
line, as tab-separated blocks. CzEng 1.7 has 15 blocks; the ones read here:

* block 1 (index 0): the sentence pair id, kept as the trees' `sent_id` comment;
* block 3 (index 2): the Czech a-layer (surface-syntactic tree);
* block 7 (index 6): the English a-layer.

The other blocks (filter score, t-layers, alignments) are not used. Block
positions are 0-based and configurable (`CzengLayout`): swap `source_block`
and `target_block` to translate English to Czech.

An a-layer is a space-separated list of tokens, each in factored form
`form|lemma|tag|index|head|afun`: `index` is the token's 1-based position,
`head` the index of its governor (0 = the technical root, which may govern
several tokens: the predicate and the final punctuation), `afun` the PDT
analytical function. Factors never contain `|` or a space, but lemmas carry
PDT annotations such as `udělat_:_W` or `se_^(zvr._zájmeno/částice)`. The
tag goes to `xpos` (PDT 15-character tags for Czech); `upos` is unknown (`_`).
An empty lemma, tag or afun factor also means unknown.
"""

import dataclasses
import os
import re
from typing import Iterator, Optional, Union

import numpy as np

from syntax_t2t import io_utils
from syntax_t2t.data.tree import UNKNOWN, DependencyTree, TreeError
from syntax_t2t.errors import InputError, SkipCounter, raise_or_skip

PathLike = Union[str, os.PathLike]

FACTORS = ("form", "lemma", "tag", "index", "head", "afun")
_NUMBER = re.compile(r"0|[1-9][0-9]*")


@dataclasses.dataclass(frozen=True)
class CzengLayout:
    """Where the blocks of an export line are (0-based block indices).

    Attributes:
        expected_blocks: how many tab-separated blocks each line must have.
        source_block: the a-layer of the source sentence.
        target_block: the a-layer of the target sentence.
        id_block: the sentence pair id, or None when lines carry none.
    """

    expected_blocks: int = 15
    source_block: int = 2
    target_block: int = 6
    id_block: Optional[int] = 0

    def __post_init__(self):
        if self.expected_blocks < 2:
            raise ValueError(f"expected_blocks must be at least 2, got {self.expected_blocks}")
        named = {"source_block": self.source_block, "target_block": self.target_block}
        if self.id_block is not None:
            named["id_block"] = self.id_block
        for name, index in named.items():
            if not 0 <= index < self.expected_blocks:
                raise ValueError(f"{name}={index} is outside the {self.expected_blocks} blocks (0-based)")
        if len(set(named.values())) != len(named):
            raise ValueError(f"block indices must differ, got {named}")


class _Problem(Exception):
    """A problem on the current line; the caller adds the file and line."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.message = message
        self.reason = reason


def read_czeng(
    path: PathLike, skip: Optional[SkipCounter] = None, **layout
) -> Iterator[tuple[DependencyTree, DependencyTree]]:
    """Reads sentence pairs with their a-layer trees from a plain or gzip export file.

    Args:
        path: the export file.
        skip: under `--skip_bad_examples`, the counter bad lines are recorded
            in; None raises at the first bad line.
        **layout: `CzengLayout` fields overriding the CzEng 1.7 defaults.

    Yields:
        `(source_tree, target_tree)` per line, both with the pair id as
        `sent_id` comment when the layout has an id block.

    Raises:
        InputError: naming file, line and problem, unless `skip` is given;
            an empty file always.
        ValueError: for an inconsistent layout.
    """
    layout = CzengLayout(**layout)
    number = 0
    for number, raw in io_utils.read_raw_lines(path):
        try:
            text = io_utils.decode_line(path, number, raw)
            try:
                yield _parse_line(text, layout)
            except _Problem as problem:
                raise InputError(path, number, problem.message, reason=problem.reason) from None
        except InputError as error:
            raise_or_skip(error, skip)
    if number == 0:
        raise InputError(path, None, "file is empty (no CzEng export line)", reason="empty file")


def format_czeng_line(
    source_tree: DependencyTree, target_tree: DependencyTree, sentence_id: str = "", **layout
) -> str:
    """Formats a sentence pair as one export line (without the line break).

    Blocks other than the id and the two a-layers are left empty.

    Args:
        source_tree: written to the source a-layer block.
        target_tree: written to the target a-layer block.
        sentence_id: written to the id block (if the layout has one).
        **layout: `CzengLayout` fields overriding the CzEng 1.7 defaults.

    Returns:
        The tab-separated line.

    Raises:
        ValueError: if a factor is empty (the form) or contains `|`, a space,
            a tab or a line break, which the format cannot represent.
    """
    layout = CzengLayout(**layout)
    if any(character in sentence_id for character in "\t\n\r"):
        raise ValueError(f"sentence id {sentence_id!r} contains a tab or line break")
    blocks = [""] * layout.expected_blocks
    if layout.id_block is not None:
        blocks[layout.id_block] = sentence_id
    blocks[layout.source_block] = format_a_layer(source_tree)
    blocks[layout.target_block] = format_a_layer(target_tree)
    return "\t".join(blocks)


def format_a_layer(tree: DependencyTree) -> str:
    """Formats a tree as a space-separated list of `form|lemma|tag|index|head|afun` tokens."""
    tokens = []
    for position in range(1, len(tree) + 1):
        factors = (
            tree.tokens[position - 1],
            tree.lemmas[position - 1],
            tree.xpos[position - 1],
            str(position),
            str(int(tree.heads[position - 1])),
            tree.labels[position - 1],
        )
        for name, value in zip(FACTORS, factors):
            if not value or any(character in value for character in "| \t\n\r"):
                raise ValueError(
                    f"token {position} has {name} {value!r}, which an a-layer factor cannot hold "
                    "(empty, or containing '|', a space, a tab or a line break)"
                )
        tokens.append("|".join(factors))
    return " ".join(tokens)


def _parse_line(text: str, layout: CzengLayout) -> tuple[DependencyTree, DependencyTree]:
    expected = layout.expected_blocks
    if not text:
        raise _Problem(f"empty line; expected {expected} tab-separated blocks", "wrong block count")
    blocks = text.split("\t")
    if len(blocks) != expected:
        raise _Problem(f"expected {expected} tab-separated blocks, found {len(blocks)}", "wrong block count")
    comments = {}
    if layout.id_block is not None and blocks[layout.id_block]:
        comments["sent_id"] = blocks[layout.id_block]
    source_name = f"block {layout.source_block + 1} (source a-layer)"
    target_name = f"block {layout.target_block + 1} (target a-layer)"
    source = _parse_a_layer(blocks[layout.source_block], source_name, comments)
    target = _parse_a_layer(blocks[layout.target_block], target_name, comments)
    return source, target


def _parse_a_layer(text: str, block_name: str, comments: dict) -> DependencyTree:
    if not text:
        raise _Problem(f"{block_name} is empty", "empty a-layer")
    tokens = text.split(" ")
    forms, lemmas, tags, heads, afuns = [], [], [], [], []
    for position, token in enumerate(tokens, start=1):
        where = f"{block_name}: token {position}"
        if not token:
            raise _Problem(f"{where} is empty (a leading, trailing or doubled space)", "empty token")
        factors = token.split("|")
        if len(factors) != len(FACTORS):
            raise _Problem(
                f"{where} {token!r} has {len(factors)} factors, expected {len(FACTORS)} ({'|'.join(FACTORS)})",
                "wrong factor count",
            )
        form, lemma, tag, index, head, afun = factors
        if not form:
            raise _Problem(f"{where} {token!r} has an empty form", "empty token")
        where = f"{where} {form!r}"
        if index != str(position):
            raise _Problem(f"{where} has index factor {index!r}, expected {position}", "index mismatch")
        if not _NUMBER.fullmatch(head):
            raise _Problem(f"{where} has head factor {head!r}, expected a non-negative integer", "bad head")
        if int(head) > len(tokens):
            raise _Problem(
                f"{where} has head {head}, but the sentence has {len(tokens)} tokens (0 = root)",
                "head out of range",
            )
        if int(head) == position:
            raise _Problem(f"{where} is its own head", "self head")
        forms.append(form)
        lemmas.append(lemma or UNKNOWN)
        tags.append(tag or UNKNOWN)
        heads.append(int(head))
        afuns.append(afun or UNKNOWN)
    try:
        return DependencyTree(
            tokens=tuple(forms),
            heads=np.asarray(heads, dtype=np.int32),
            labels=tuple(afuns),
            lemmas=tuple(lemmas),
            upos=(UNKNOWN,) * len(forms),
            xpos=tuple(tags),
            comments=comments,
        )
    except TreeError as tree_error:
        # Range and self-heads are checked above, so what is left is a cycle.
        raise _Problem(f"{block_name}: heads do not form a tree: {tree_error}", "cycle") from None
