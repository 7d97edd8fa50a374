"""Parses of a text file, cached as CoNLL-U.

Parsing is the slow part of generating data from raw text, so the trees of an
input file are written once to a CoNLL-U file in a cache directory (a
problem's `tmp_dir`) and read from there by every later run:

    <cache_dir>/<input name without .gz>.<library>.<key>.conllu.gz

`key` is the start of a SHA-256 over the parser's fingerprint (library,
version and a digest of its model files), the input form (raw text or
pre-tokenised) and the SHA-256 of the input's decompressed content. Another
model, another input or another input form gets another file, so a stale
parse is never read.

Streaming and resuming. The input is read and parsed as a stream, and the
trees are appended to `<cache file>.partial` in chunks of `chunk_lines`
trees, each chunk one gzip member (a gzip file may hold several). After a
chunk is on disk (fsync), a line `<bytes> <last source line> <trees>` is
appended to the committed-chunks index `<cache file>.partial.index` (fsync
again). Memory stays constant whatever the file's size. A parse interrupted
at any point (even killed) resumes in the next run from the last committed
chunk: the partial file is cut back to the committed bytes and parsing
continues after the committed line, so nothing is lost or duplicated, and
the finished cache is the same file an uninterrupted run writes. When the
last chunk is committed the partial file is renamed to the cache file: a
cache file is always complete.

One writer at a time. Two programs may parse the same input with the same
parser into one cache directory at once (two `bin/datagen` runs sharing a
`tmp_dir`, say one with `tree_source=random`). The writer holds the kernel's
exclusive lock (`fcntl.flock`) on the index file while it writes, so the
other waits for it and then reads the finished cache instead of parsing
again; if the writer died, the waiting one resumes its partial parse. Without
the lock both appended to one partial file and left a cache that is refused.

The parsed lines are those that decode as UTF-8 and are not blank; each tree
carries `# source_line = N` (its 1-based line in the input) and
`# text = ...` (what the parser was given). Other lines have no tree: the
reader of the input file reports them (e.g. `parallel_text.read_parallel`
rejects exactly these lines).
"""

import collections
import contextlib
import dataclasses
import fcntl
import gzip
import hashlib
import itertools
import json
import os
import time
from typing import Iterable, Iterator, Optional, Union

from absl import logging

from syntax_t2t import io_utils
from syntax_t2t.data.conllu_reader import format_conllu, read_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError
from syntax_t2t.parsing.parser import Parser, ParserError

PathLike = Union[str, os.PathLike]

SOURCE_LINE, TEXT = "source_line", "text"
#: A cached tree's digest of its words, tree and text: a tree changed after parsing is refused.
DIGEST = "parse_sha256"
_KEY_HEX_DIGITS = 16
_PROGRESS_EVERY_SECONDS = 30.0
#: Trees per committed chunk of a cache being written: an interrupted parse
#: loses at most this many, and each commit costs two fsyncs.
CHUNK_LINES = 1000
PARTIAL_SUFFIX, INDEX_SUFFIX = ".partial", ".partial.index"


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
               pretokenized: bool = False, chunk_lines: int = CHUNK_LINES) -> str:
    """Parses the lines of `input_path` unless their parses are cached.

    Resumes an interrupted parse of the same input by the same parser (see
    the module docstring).

    Args:
        parser: the parser.
        input_path: plain or gzip text, one sentence per line.
        cache_dir: the cache directory (created if needed).
        pretokenized: lines are whitespace-separated words to keep as they
            are (`parse_tokens`), not raw text (`parse_texts`).
        chunk_lines: trees per committed chunk.

    Returns:
        The path of the CoNLL-U cache file.

    Raises:
        ParserError: the parser returned more or fewer trees than lines; the
            partial parse is removed, since its trees may be misaligned.
    """
    path = cache_path(parser, input_path, cache_dir, pretokenized)
    if os.path.isfile(path):
        logging.info("using the cached parses %s of %s", path, os.fspath(input_path))
        return path
    os.makedirs(os.fspath(cache_dir), exist_ok=True)
    with _sole_writer(path + INDEX_SUFFIX, os.fspath(input_path)):
        if os.path.isfile(path):
            logging.info("using the parses %s that another process wrote meanwhile", path)
            os.remove(path + INDEX_SUFFIX)  # created by `_sole_writer`, empty
            return path
        return _parse_into(parser, input_path, path, pretokenized, chunk_lines)


def _parse_into(parser: Parser, input_path: PathLike, path: str, pretokenized: bool,
                chunk_lines: int) -> str:
    """`parse_file`'s work once this process is the cache's only writer."""
    partial, index = path + PARTIAL_SUFFIX, path + INDEX_SUFFIX
    committed = _committed_chunks(partial, index)
    if committed.trees:
        logging.info("resuming the parse of %s after line %d (%d trees already in %s)",
                     os.fspath(input_path), committed.last_line, committed.trees, partial)
    else:
        logging.info("parsing %s with %s (cache: %s)", os.fspath(input_path), parser.spec, path)
    lines = ((number, text) for number, text in parsable_lines(input_path)
             if number > committed.last_line)
    trees = _with_progress(parse_numbered(parser, lines, pretokenized, os.fspath(input_path)),
                           committed.trees, os.fspath(input_path))
    try:
        with open(partial, "ab") as data, open(index, "a", encoding="ascii") as commits:
            offset, count = committed.offset, committed.trees
            while chunk := list(itertools.islice(trees, chunk_lines)):
                # mtime=0: the same trees give the same bytes, resumed or not.
                member = gzip.compress(format_conllu(_sealed(tree) for _, tree in chunk).encode(
                    "utf-8"), mtime=0)
                data.write(member)
                _sync(data)
                offset, count = offset + len(member), count + len(chunk)
                commits.write(f"{offset} {chunk[-1][0]} {count}\n")
                _sync(commits)
    except ParserError:
        for name in (partial, index):
            os.remove(name)
        raise
    os.replace(partial, path)
    os.remove(index)
    return path


@contextlib.contextmanager
def _sole_writer(index: str, input_name: str) -> Iterator[None]:
    """Holds the exclusive lock on `index` (created if missing), waiting for another holder.

    The holder removes the index when it finishes, so a lock taken on a file
    that is no longer at `index` is let go and taken again on the one there.
    """
    while True:
        descriptor = os.open(index, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                logging.info("waiting for another process that is parsing %s into %s",
                             input_name, index.removesuffix(INDEX_SUFFIX))
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            with contextlib.suppress(FileNotFoundError):
                if os.path.samestat(os.fstat(descriptor), os.stat(index)):
                    break
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)
    try:
        yield
    finally:
        os.close(descriptor)


@dataclasses.dataclass(frozen=True)
class _Commit:
    offset: int = 0
    last_line: int = 0
    trees: int = 0


def _committed_chunks(partial: str, index: str) -> _Commit:
    """The last committed chunk of an interrupted parse; cuts both files back to it.

    Bytes after the last commit (a chunk or an index line being written
    when the parse was killed) are dropped. Without a usable commit both
    files start empty.
    """
    last, index_bytes = _Commit(), 0
    with contextlib.suppress(FileNotFoundError), open(index, "rb") as stream:
        position = 0
        for line in stream:
            position += len(line)
            fields = line.split()
            if not line.endswith(b"\n") or len(fields) != 3 or not all(
                    field.isdigit() for field in fields):
                break
            last, index_bytes = _Commit(*(int(field) for field in fields)), position
    size = os.path.getsize(partial) if os.path.isfile(partial) else 0
    if size < last.offset:
        logging.warning("%s is shorter than its index %s says; parsing from the start", partial,
                        index)
        last, index_bytes = _Commit(), 0
    for name, length in ((partial, last.offset), (index, index_bytes)):
        with open(name, "ab") as stream:
            stream.truncate(length)
    return last


def _sync(stream) -> None:
    stream.flush()
    os.fsync(stream.fileno())


def parse_numbered(parser: Parser, lines: Iterable[tuple[int, str]], pretokenized: bool,
            name: str) -> Iterator[tuple[int, DependencyTree]]:
    """`(line number, tree)` of each `(line number, text)`, streaming, uncached.

    The trees of the cache, as `parse_file` writes them (and
    `bin/datagen_beam` parses in its workers).

    The parser reads ahead of the trees it returns (it batches); the lines
    read but not yet parsed wait in a queue, so memory is bounded by the
    parser's batches. Each tree gets `# source_line` and `# text` (what the
    parser was given: the line's words joined by single spaces).

    Raises:
        ParserError: the parser returned more or fewer trees than lines.
    """
    waiting = collections.deque()

    def texts():
        for number, text in lines:
            text = " ".join(text.split())
            waiting.append((number, text))
            yield text.split() if pretokenized else text

    trees = parser.parse_tokens(texts()) if pretokenized else parser.parse_texts(texts())
    count = 0
    for tree in trees:
        if not waiting:
            raise ParserError(f"the parser returned more trees than the {count} lines of {name}")
        number, text = waiting.popleft()
        count += 1
        yield number, dataclasses.replace(tree, comments={SOURCE_LINE: str(number), TEXT: text})
    if waiting:
        raise ParserError(f"the parser returned {count} trees for the {count + len(waiting)} "
                          f"lines of {name}")


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
    return len(lines), (tree for _, tree in parse_numbered(parser, lines, pretokenized,
                                                    os.fspath(input_path)))


def _digest(tree: DependencyTree) -> str:
    """What `DIGEST` holds: a digest of the tree's words, tree, tags and `# text`."""
    content = [list(tree.tokens), tree.heads.tolist(), list(tree.labels), list(tree.lemmas),
               list(tree.upos), list(tree.xpos), tree.comments.get(TEXT)]
    return hashlib.sha256(json.dumps(content, ensure_ascii=False).encode("utf-8")).hexdigest()[
        :_KEY_HEX_DIGITS]


def _sealed(tree: DependencyTree) -> DependencyTree:
    return dataclasses.replace(tree, comments=dict(tree.comments, **{DIGEST: _digest(tree)}))


def read_parses(path: PathLike) -> Iterator[tuple[int, DependencyTree]]:
    """`(source line, tree)` of a cache file written by `parse_file`.

    Each tree is checked against its `# parse_sha256` (caches written before
    it existed have none), which is then left out of its comments.

    Raises:
        InputError: the file is not such a cache (a tree without a valid,
            increasing `# source_line`), or a tree was changed after it was
            parsed, naming the file.
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
        saved = tree.comments.get(DIGEST)
        if saved is not None:
            tree = dataclasses.replace(tree, comments={
                key: text for key, text in tree.comments.items() if key != DIGEST})
            if _digest(tree) != saved:
                raise InputError(
                    path, None,
                    f"sentence {index} (input line {previous}) was changed after it was parsed: its "
                    f"words, tree or text no longer match its '# {DIGEST}'. Delete the cache to "
                    f"parse again", reason="bad parse cache")
        yield previous, tree


def parsed_lines(parser: Parser, input_path: PathLike, cache_dir: PathLike,
                 pretokenized: bool = False) -> Iterator[tuple[int, DependencyTree]]:
    """`read_parses(parse_file(...))`: the trees of `input_path`'s lines, parsed at most once."""
    return read_parses(parse_file(parser, input_path, cache_dir, pretokenized))


def _with_progress(trees: Iterable, done: int, name: str):
    start = last = time.monotonic()
    count = 0
    for tree in trees:
        yield tree
        count += 1
        now = time.monotonic()
        if now - last >= _PROGRESS_EVERY_SECONDS:
            logging.info("parsed %d lines of %s (%.0f lines/s)", done + count, name,
                         count / (now - start))
            last = now
    logging.info("parsed %d lines of %s in %.1f s", count, name, time.monotonic() - start)
