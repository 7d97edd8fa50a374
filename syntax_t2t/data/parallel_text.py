"""Line-aligned plain-text files: line `i` of the source translates line `i` of the target.

Files are plain or gzip, strict UTF-8. The text is expected to be tokenised
already: like the thesis, which works at the word level, `split_tokens` only
splits on whitespace (no subwords, no punctuation splitting).
"""

import itertools
import os
from typing import Iterator, Optional, Union

from syntax_t2t import io_utils
from syntax_t2t.errors import InputError, SkipCounter, counted, raise_or_skip

PathLike = Union[str, os.PathLike]


def split_tokens(text: str) -> list[str]:
    """Splits tokenised text into words at runs of whitespace."""
    return text.split()


def read_plain_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """Yields `(line_number, text)` for every line of a plain or gzip UTF-8 file.

    Empty lines are kept (e.g. so that decoding output stays aligned with its
    input); only a file without any line is an error.

    Raises:
        InputError: for an empty file or invalid UTF-8, naming file and line.
    """
    empty = True
    for number, text in io_utils.read_lines(path):
        empty = False
        yield number, text
    if empty:
        raise InputError(path, None, "file is empty", reason="empty file")


def read_parallel(
    source_path: PathLike, target_path: PathLike, skip: Optional[SkipCounter] = None
) -> Iterator[tuple[int, str, str]]:
    """Yields the sentence pairs of two line-aligned files.

    Args:
        source_path: one sentence per line.
        target_path: its translations, line by line.
        skip: under `--skip_bad_examples`, the counter that bad pairs (invalid
            UTF-8, an empty side) are recorded in; None raises at the first.
            Files of different lengths or empty files always raise.

    Yields:
        `(line_number, source_text, target_text)`, line numbers from 1.

    Raises:
        InputError: naming the file, the line and the problem.
    """
    number = 0
    pairs = itertools.zip_longest(io_utils.read_raw_lines(source_path), io_utils.read_raw_lines(target_path))
    for number, (source, target) in enumerate(pairs, start=1):
        if source is None or target is None:
            shorter, longer = (source_path, target_path) if source is None else (target_path, source_path)
            what = "file is empty" if number == 1 else f"file ends after {counted(number - 1, 'line')}"
            raise InputError(
                shorter,
                number,
                f"{what}, but the parallel file {os.fspath(longer)} has a line {number}; "
                "parallel files must have the same number of lines",
                reason="line count mismatch",
            )
        try:
            texts = []
            for path, (_, raw) in ((source_path, source), (target_path, target)):
                text = io_utils.decode_line(path, number, raw)
                if not text.strip():
                    raise InputError(path, number, "empty sentence (blank line)", reason="empty sentence")
                texts.append(text)
        except InputError as error:
            raise_or_skip(error, skip)
            continue
        yield number, texts[0], texts[1]
    if number == 0:
        raise InputError(
            source_path, None, f"file is empty (and so is {os.fspath(target_path)})", reason="empty file"
        )
