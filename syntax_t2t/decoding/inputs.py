"""The sentences to decode, one entry per expected output line.

Three input formats:

* `text`: tokenised plain text, one sentence per line (models that need no
  source trees);
* `conllu`: CoNLL-U, one sentence per blank-line-separated block;
* `czeng`: CzEng 1.7 export lines, one sentence pair per line; the source
  a-layer is decoded, the target is ignored.

Every sentence of the input gets one entry, in order, so that the output
has exactly one line per input sentence. An empty line, or a sentence the
reader rejects, becomes an *unusable* entry: it keeps its place (an empty
output line) and carries the reason, which the decoder logs as a warning.
"""

import dataclasses
import os
from typing import Optional, Sequence, Union

from syntax_t2t import io_utils
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.czeng_reader import read_czeng
from syntax_t2t.data.parallel_text import split_tokens
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError, SkipCounter

PathLike = Union[str, os.PathLike]

FORMATS = ("auto", "text", "conllu", "czeng")
_CZENG_FACTORS = 6  # form|lemma|tag|index|head|afun
_UTF8_BOM = b"\xef\xbb\xbf"


@dataclasses.dataclass(frozen=True)
class SourceSentence:
    """One sentence to decode.

    Attributes:
        source: a `DependencyTree` (CoNLL-U, CzEng), a token list (text), or
            None when the sentence is unusable.
        location: `file:line` of the sentence, for messages.
        problem: why the sentence is unusable (None when it is usable).
    """

    source: Union[DependencyTree, Sequence[str], None]
    location: str
    problem: Optional[str] = None

    @property
    def usable(self) -> bool:
        return self.source is not None

    @property
    def has_tree(self) -> bool:
        return isinstance(self.source, DependencyTree)

    @property
    def tokens(self) -> tuple[str, ...]:
        if self.source is None:
            return ()
        return tuple(self.source.tokens if self.has_tree else self.source)


class _Recorder(SkipCounter):
    """Receives a reader's rejected sentences, in reading order."""

    def __init__(self, entries: list):
        super().__init__()
        self._entries = entries

    def record(self, error: InputError) -> None:
        self._entries.append(SourceSentence(None, _location(error.path, error.line), str(error)))


def _location(path, line) -> str:
    return f"{os.fspath(path)}:{line}" if line is not None else os.fspath(path)


def guess_format(path: PathLike) -> str:
    """`conllu`, `czeng` or `text`, from the file name, else from the first line.

    A `.conllu` name (optionally `.gz`) means CoNLL-U; otherwise the first
    non-empty line decides: a comment or ten tab-separated columns is
    CoNLL-U, tab-separated blocks holding `form|lemma|tag|index|head|afun`
    tokens are CzEng, anything else is text.
    """
    name = os.fspath(path)
    if name.endswith((".conllu", ".conllu.gz")):
        return "conllu"
    for _, raw in io_utils.read_raw_lines(path):
        line = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
        if not line.strip():
            continue
        columns = line.split("\t")
        if line.startswith("#") or (len(columns) == 10 and columns[0].isdigit()):
            return "conllu"
        if len(columns) > 2 and any(
                len(token.split("|")) == _CZENG_FACTORS for block in columns for token in block.split(" ")):
            return "czeng"
        return "text"
    return "text"


def read_sources(path: PathLike, input_format: str = "auto") -> list[SourceSentence]:
    """Reads every sentence of a decoding input file.

    Args:
        path: the input file (plain or gzip).
        input_format: one of `FORMATS`.

    Returns:
        One `SourceSentence` per input sentence (per line for text and
        CzEng, per block for CoNLL-U).

    Raises:
        InputError: a problem with the file as a whole (corrupt gzip, no
            sentence at all); problems of single sentences become unusable
            entries.
        ValueError: an unknown format.
    """
    if input_format not in FORMATS:
        raise ValueError(f"unknown input format {input_format!r}; choose one of {', '.join(FORMATS)}")
    if input_format == "auto":
        input_format = guess_format(path)
    if input_format == "text":
        return _read_text(path)
    entries: list[SourceSentence] = []
    recorder = _Recorder(entries)
    if input_format == "conllu":
        # Each block yields a tree or an error, so blocks and entries align.
        starts = block_start_lines(path)
        for tree in read_conllu(path, skip=recorder, whitespace_separates=True):
            entries.append(SourceSentence(tree, _location(path, starts[len(entries)])))
    else:
        for source_tree, _ in read_czeng(path, skip=recorder):
            entries.append(SourceSentence(source_tree, _location(path, len(entries) + 1)))
    return entries


def block_start_lines(path: PathLike) -> list[int]:
    """The first line of every blank-line-separated block of a file (CoNLL-U sentences).

    A line of only whitespace separates blocks too, as in `read_sources`.
    """
    starts, in_block = [], False
    for number, raw in io_utils.read_raw_lines(path):
        empty = raw.strip() == b"" or (number == 1 and raw.strip() == _UTF8_BOM)
        if not empty and not in_block:
            starts.append(number)
        in_block = not empty
    return starts


def text_sentence(path: PathLike, number: int, raw: bytes) -> SourceSentence:
    """The sentence of one line of tokenised text; unusable if empty or not UTF-8."""
    location = _location(path, number)
    try:
        tokens = split_tokens(io_utils.decode_line(path, number, raw))
    except InputError as error:
        return SourceSentence(None, location, str(error))
    return SourceSentence(tokens or None, location, None if tokens else f"{location}: empty line")


def _read_text(path) -> list[SourceSentence]:
    entries = [text_sentence(path, number, raw) for number, raw in io_utils.read_raw_lines(path)]
    if not entries:
        raise InputError(path, None, "file is empty (no sentence to decode)", reason="empty file")
    unreadable = [entry for entry in entries
                  if entry.problem is not None and not entry.problem.endswith("empty line")]
    if 2 * len(unreadable) > len(entries):
        # A file in another encoding: decoding it would give a file of empty lines.
        raise InputError(path, None, f"{len(unreadable)} of its {len(entries)} lines cannot be "
                                     f"read (the first: {unreadable[0].problem}); is it in another "
                                     f"encoding than UTF-8? Convert it, e.g. with iconv -f "
                                     f"cp1250 -t utf-8", reason="not UTF-8")
    return entries
