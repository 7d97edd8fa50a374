"""Word-level vocabularies with the reserved ids of `docs/design.md`.

The same class serves source and target words (the thesis limits each
language to 50,000 entries) and the small closed sets of dependency labels,
UPOS and XPOS tags. Every vocabulary starts with the four reserved tokens:

    0 <pad>   1 <EOS>   2 <UNK>   3 <ROOT>

A vocabulary is built from training-split counts: the most frequent tokens
win, ties go to the token that sorts first (by code point), so that the same
data always gives the same ids. It is saved as UTF-8 text, one token per line
in id order, written atomically.
"""

import collections
import os
from typing import Iterable, Mapping, Optional, Sequence, Union

from syntax_t2t import io_utils
from syntax_t2t.errors import InputError

PathLike = Union[str, os.PathLike]

PAD, EOS, UNK, ROOT = "<pad>", "<EOS>", "<UNK>", "<ROOT>"
RESERVED_TOKENS = (PAD, EOS, UNK, ROOT)
PAD_ID, EOS_ID, UNK_ID, ROOT_ID = range(len(RESERVED_TOKENS))


class Vocabulary:
    """A bijection between tokens and ids, with the reserved ids first.

    Args:
        tokens: every token in id order; must start with `RESERVED_TOKENS`
            and contain no duplicates, empty strings or line breaks.

    Raises:
        ValueError: if `tokens` breaks one of these rules.
    """

    def __init__(self, tokens: Sequence[str]):
        tokens = tuple(tokens)
        if tokens[: len(RESERVED_TOKENS)] != RESERVED_TOKENS:
            raise ValueError(
                f"a vocabulary must start with the reserved tokens {list(RESERVED_TOKENS)}, "
                f"got {list(tokens[:len(RESERVED_TOKENS)])}")
        ids = {}
        for index, token in enumerate(tokens):
            problem = _token_problem(token)
            if problem:
                raise ValueError(f"token {index} {token!r}: {problem}")
            if token in ids:
                raise ValueError(f"token {token!r} appears twice (ids {ids[token]} and {index})")
            ids[token] = index
        self._tokens = tokens
        self._ids = ids

    @classmethod
    def build(cls, counts: Mapping[str, int], max_size: Optional[int] = None,
              min_count: int = 1) -> "Vocabulary":
        """Builds a vocabulary from token counts.

        Args:
            counts: token -> number of occurrences in the training split.
                Reserved tokens occurring in the data are ignored (they keep
                their reserved ids), and so are tokens a one-per-line file
                cannot hold (empty, or with a line break): they encode as
                `<UNK>`.
            max_size: the largest number of entries, reserved ones included
                (so `max_size=50_000` gives 49,996 data tokens); None keeps
                every token.
            min_count: tokens seen fewer times are left out.

        Returns:
            The vocabulary: reserved tokens, then data tokens by decreasing
            count, ties broken by code-point order of the token.

        Raises:
            ValueError: if `max_size` cannot hold the reserved tokens.
        """
        if max_size is not None and max_size < len(RESERVED_TOKENS):
            raise ValueError(
                f"max_size {max_size} is smaller than the {len(RESERVED_TOKENS)} reserved tokens")
        candidates = [(token, count) for token, count in counts.items()
                      if count >= min_count and token not in RESERVED_TOKENS
                      and _token_problem(token) is None]
        candidates.sort(key=lambda item: (-item[1], item[0]))
        if max_size is not None:
            candidates = candidates[: max_size - len(RESERVED_TOKENS)]
        return cls(RESERVED_TOKENS + tuple(token for token, _ in candidates))

    @classmethod
    def from_corpus(cls, sentences: Iterable[Sequence[str]], max_size: Optional[int] = None,
                    min_count: int = 1) -> "Vocabulary":
        """Counts the tokens of `sentences`, then calls `build`."""
        counts = collections.Counter()
        for sentence in sentences:
            counts.update(sentence)
        return cls.build(counts, max_size=max_size, min_count=min_count)

    @classmethod
    def load(cls, path: PathLike) -> "Vocabulary":
        """Reads a vocabulary written by `save`, token for token.

        The lines are not normalized as text is (`io_utils.normalize_text`):
        the file is the id table the data was encoded with, and a datagen from
        before that normalization may have stored a token such as a zero width
        space, which must keep its line and id.

        Raises:
            FileNotFoundError: if `path` does not exist.
            InputError: naming the line of a missing reserved token, an empty
                line or a duplicate.
        """
        tokens, seen = [], {}
        for line_number, token in io_utils.read_lines(path, normalize=False):
            index = line_number - 1
            if index < len(RESERVED_TOKENS) and token != RESERVED_TOKENS[index]:
                raise InputError(path, line_number,
                                 f"expected reserved token {RESERVED_TOKENS[index]!r} "
                                 f"(id {index}), found {token!r}")
            if not token:
                raise InputError(path, line_number, "empty line: every line must hold one token")
            if token in seen:
                raise InputError(path, line_number,
                                 f"token {token!r} already appears on line {seen[token]}")
            seen[token] = line_number
            tokens.append(token)
        if len(tokens) < len(RESERVED_TOKENS):
            raise InputError(path, None,
                             f"a vocabulary file needs at least the {len(RESERVED_TOKENS)} "
                             f"reserved tokens, found {len(tokens)} lines")
        return cls(tokens)

    def save(self, path: PathLike) -> None:
        """Writes one token per line, in id order, atomically."""
        io_utils.atomic_write_text(path, "".join(f"{token}\n" for token in self._tokens))

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, token: str) -> bool:
        return token in self._ids

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocabulary) and self._tokens == other._tokens

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)})"

    @property
    def tokens(self) -> tuple[str, ...]:
        """All tokens in id order."""
        return self._tokens

    def token_to_id(self, token: str) -> int:
        """The id of `token`, or `UNK_ID` when it is not in the vocabulary."""
        return self._ids.get(token, UNK_ID)

    def id_to_token(self, token_id: int) -> str:
        """The token of `token_id`.

        Raises:
            IndexError: if the id is outside `[0, len(self))`.
        """
        if not 0 <= token_id < len(self._tokens):
            raise IndexError(f"id {token_id} is outside the vocabulary of size {len(self)}")
        return self._tokens[token_id]

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Token ids, `UNK_ID` for unknown tokens (no `<EOS>` is added)."""
        return [self._ids.get(token, UNK_ID) for token in tokens]

    def decode(self, ids: Iterable[int], strip: bool = True) -> list[str]:
        """Tokens of `ids`.

        Args:
            ids: token ids, e.g. a model's output.
            strip: stop at the first `<EOS>` and leave out `<pad>`, as wanted
                for a decoded sentence; False maps every id.

        Returns:
            The tokens.
        """
        return [self.id_to_token(token_id) for token_id in sentence_ids(ids, strip)]


def sentence_ids(ids, strip: bool = True):
    """`ids` as ints; with `strip`, up to the first `<EOS>` and without `<pad>`."""
    for token_id in ids:
        token_id = int(token_id)
        if strip and token_id == EOS_ID:
            return
        if strip and token_id == PAD_ID:
            continue
        yield token_id


def _token_problem(token: str) -> Optional[str]:
    if not isinstance(token, str):
        return f"tokens must be strings, got {type(token).__name__}"
    if not token:
        return "empty tokens cannot be stored one per line"
    if "\n" in token or "\r" in token:
        return "tokens cannot contain line breaks"
    return None
