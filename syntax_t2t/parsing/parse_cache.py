"""Parses of a text file, cached as CoNLL-U.

Parsing is the slow part of generating data from raw text, so the trees of an
input file are written once to a CoNLL-U file in a cache directory (a
problem's `tmp_dir`) and read from there by every later run:

    <cache_dir>/<input name without .gz>.<library>.<key>.conllu.gz

`key` is the start of a SHA-256 over the parser's fingerprint (library,
version and a digest of its model files), the input form (raw text or
pre-tokenised) and the SHA-256 of the input's decompressed content. Another
model, another input or another input form gets another file, so a stale
parse is never read. The file is written atomically: an interrupted run
leaves no cache behind.

The parsed lines are those that decode as UTF-8 and are not blank; each tree
carries `# source_line = N` (its 1-based line in the input) and
`# text = ...` (what the parser was given). Other lines have no tree: the
reader of the input file reports them (e.g. `parallel_text.read_parallel`
rejects exactly these lines).
"""

import dataclasses
import hashlib
import json
import os
import time
from typing import Iterable, Iterator, Optional, Union

from absl import logging

from syntax_t2t import io_utils
from syntax_t2t.data.conllu_reader import read_conllu, write_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError
from syntax_t2t.parsing.parser import Parser, ParserError

PathLike = Union[str, os.PathLike]

SOURCE_LINE, TEXT = "source_line", "text"
_KEY_HEX_DIGITS = 16
_PROGRESS_EVERY_SECONDS = 30.0


def parsable_lines(path: PathLike, passed_over: Optional[list] = None) -> Iterator[tuple[int, str]]:
    """`(line number, text)` of the lines of `path` that get parsed.

    Lines that are not valid UTF-8 or are blank are passed over; their
    `InputError`s are appended to `passed_over` when it is given.
    """
    for number, raw in io_utils.read_raw_lines(path):
        try:
            text = io_utils.decode_line(path, number, raw)
        except InputError as error:
            if passed_over is not None:
                passed_over.append(error)
            continue
        if text.strip():
            yield number, text
        elif passed_over is not None:
            passed_over.append(InputError(path, number, "blank line", reason="blank line"))


def content_sha256(path: PathLike) -> str:
    """SHA-256 of a file's content, decompressed if it is gzip."""
    digest = hashlib.sha256()
    with io_utils.open_binary(path) as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cache_path(parser: Parser, input_path: PathLike, cache_dir: PathLike,
               pretokenized: bool = False) -> str:
    """Where the parses of `input_path` by `parser` are cached."""
    fingerprint = parser.fingerprint(pretokenized)
    key_material = json.dumps({"parser": fingerprint, "pretokenized": pretokenized,
                               "input_sha256": content_sha256(input_path)}, sort_keys=True)
    key = hashlib.sha256(key_material.encode("utf-8")).hexdigest()[:_KEY_HEX_DIGITS]
    name = os.path.basename(os.fspath(input_path)).removesuffix(".gz")
    return os.path.join(os.fspath(cache_dir), f"{name}.{fingerprint['library']}.{key}.conllu.gz")


def parse_file(parser: Parser, input_path: PathLike, cache_dir: PathLike,
               pretokenized: bool = False) -> str:
    """Parses the lines of `input_path` unless their parses are cached.

    Args:
        parser: the parser.
        input_path: plain or gzip text, one sentence per line.
        cache_dir: the cache directory (created if needed).
        pretokenized: lines are whitespace-separated words to keep as they
            are (`parse_tokens`), not raw text (`parse_texts`).

    Returns:
        The path of the CoNLL-U cache file.
    """
    path = cache_path(parser, input_path, cache_dir, pretokenized)
    if os.path.isfile(path):
        logging.info("using the cached parses %s of %s", path, os.fspath(input_path))
        return path
    os.makedirs(os.fspath(cache_dir), exist_ok=True)
    logging.info("parsing %s with %s (cache: %s)", os.fspath(input_path), parser.spec, path)
    total, trees = parse_lines(parser, input_path, pretokenized)
    write_conllu(_with_progress(trees, total, os.fspath(input_path)), path)
    return path


def parse_lines(parser: Parser, input_path: PathLike, pretokenized: bool = False,
                passed_over: Optional[list] = None) -> tuple[int, Iterator[DependencyTree]]:
    """The trees of the parsable lines of `input_path`, uncached.

    Args:
        passed_over: as in `parsable_lines`.

    Returns:
        The number of parsable lines, and their trees as they are parsed, each
        with `# source_line` and `# text` (what the parser was given).
    """
    lines = list(parsable_lines(input_path, passed_over))
    texts = [" ".join(text.split()) for _, text in lines]
    if pretokenized:
        trees = parser.parse_tokens(text.split() for text in texts)
    else:
        trees = parser.parse_texts(texts)
    return len(lines), (dataclasses.replace(tree, comments={SOURCE_LINE: str(number), TEXT: text})
                        for (number, _), text, tree in zip(lines, texts, trees))


def read_parses(path: PathLike) -> Iterator[tuple[int, DependencyTree]]:
    """`(source line, tree)` of a cache file written by `parse_file`.

    Raises:
        InputError: the file is not such a cache (a tree without a valid,
            increasing `# source_line`), naming the file.
    """
    previous = 0
    for index, tree in enumerate(read_conllu(path), start=1):
        value = tree.comments.get(SOURCE_LINE, "")
        if not value.isdigit() or int(value) <= previous:
            raise InputError(
                path, None,
                f"sentence {index} has '# {SOURCE_LINE} = {value}', expected a line number above "
                f"{previous}; this is not a parse cache written by parse_file. Delete it to parse "
                f"again", reason="bad parse cache")
        previous = int(value)
        yield previous, tree


def parsed_lines(parser: Parser, input_path: PathLike, cache_dir: PathLike,
                 pretokenized: bool = False) -> Iterator[tuple[int, DependencyTree]]:
    """`read_parses(parse_file(...))`: the trees of `input_path`'s lines, parsed at most once."""
    return read_parses(parse_file(parser, input_path, cache_dir, pretokenized))


def _with_progress(trees: Iterable[DependencyTree], total: int, name: str):
    start = last = time.monotonic()
    count = 0
    for tree in trees:
        yield tree
        count += 1
        now = time.monotonic()
        if now - last >= _PROGRESS_EVERY_SECONDS:
            logging.info("parsed %d of %d lines of %s (%.0f lines/s)", count, total, name,
                         count / (now - start))
            last = now
    if count != total:
        raise ParserError(f"the parser returned {count} trees for the {total} lines of {name}")
    logging.info("parsed %d lines of %s in %.1f s", count, name, time.monotonic() - start)
