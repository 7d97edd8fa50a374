"""The interface of the parser adapters, and their errors.

A `Parser` turns sentences into `DependencyTree`s, one tree per input
sentence, in input order. Input comes in two forms:

* raw text (`parse_texts`): the parser's own tokeniser splits it into words
  and possibly into several sentences;
* pre-tokenised text (`parse_tokens`): the words are kept exactly as given.

Either way, when the parser finds several sentences in one input, their trees
are joined into one (`joined_tree.join_sentences`).
"""

import abc
import hashlib
import os
from typing import Iterable, Iterator, Mapping, Sequence

from syntax_t2t.data.tree import DependencyTree

#: Bytes read at a time when hashing model files.
_HASH_CHUNK_BYTES = 1 << 20


class ParserError(Exception):
    """A parser cannot be set up or produced unusable output."""


class ParserSpecError(ParserError, ValueError):
    """A `--parser` value that is not `spacy:MODEL` or `stanza:LANG[:MODEL_DIR]`."""


class ParserModelNotFoundError(ParserError, FileNotFoundError):
    """The parser's model is not installed; the message says how to get it."""


class Parser(abc.ABC):
    """Turns sentences into dependency trees (see the module docstring).

    Attributes:
        spec: the `--parser` text this parser was built from, e.g. `spacy:en_core_web_sm`.
    """

    spec: str

    @abc.abstractmethod
    def parse_texts(self, texts: Iterable[str]) -> Iterator[DependencyTree]:
        """Tokenises and parses raw text.

        Args:
            texts: one sentence (or a few) per item, not empty.

        Yields:
            One tree per item, in order.
        """

    @abc.abstractmethod
    def parse_tokens(self, sentences: Iterable[Sequence[str]]) -> Iterator[DependencyTree]:
        """Parses pre-tokenised sentences, keeping their words as given.

        Args:
            sentences: one word list per item, not empty.

        Yields:
            One tree per item, in order, with exactly the given words.
        """

    @abc.abstractmethod
    def fingerprint(self, pretokenized: bool) -> dict:
        """What identifies this parser's output: library, version and model digest.

        Parses are cached under a key derived from it, so anything that can
        change the trees must be in it.

        Args:
            pretokenized: the fingerprint of `parse_tokens` (True) or of
                `parse_texts` (False); they may use different models.
        """


def digest_files(files: Mapping[str, str]) -> str:
    """SHA-256 over the names and contents of files, in the order of their names.

    Args:
        files: name -> path; the name (e.g. the path relative to a model
            directory) is hashed instead of the path, so that a copied model
            keeps its digest.
    """
    digest = hashlib.sha256()
    for name in sorted(files):
        # Name and size delimit each file, so no two file sets hash alike.
        path = files[name]
        digest.update(f"{name}\0{os.path.getsize(path)}\0".encode("utf-8"))
        with open(path, "rb") as stream:
            for chunk in iter(lambda: stream.read(_HASH_CHUNK_BYTES), b""):
                digest.update(chunk)
    return digest.hexdigest()


def digest_directory(directory: str) -> str:
    """`digest_files` over every file under `directory`, named by relative path."""
    files = {}
    for parent, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(parent, name)
            files[os.path.relpath(path, directory).replace(os.sep, "/")] = path
    return digest_files(files)


def checked_texts(texts: Iterable[str]) -> Iterator[str]:
    """Passes raw texts through, raising ValueError for a blank one (no tree has no words)."""
    for index, text in enumerate(texts):
        if not text.strip():
            raise ValueError(f"input {index} is blank: a tree needs at least one word")
        yield text


def checked_words(sentences: Iterable[Sequence[str]]) -> Iterator[list[str]]:
    """Passes word lists through as lists, raising ValueError for an empty list or a
    word that is empty or contains whitespace (it would not survive a round trip
    through whitespace-separated text)."""
    for index, words in enumerate(sentences):
        words = list(words)
        if not words:
            raise ValueError(f"input {index} has no words: a tree needs at least one word")
        for word in words:
            if word.split() != [word]:
                raise ValueError(f"input {index}: word {word!r} is empty or contains whitespace")
        yield words
