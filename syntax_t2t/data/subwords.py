"""WordPiece subword vocabularies over pre-tokenised words, with exact detokenisation.

Pascal and SISA read sentences as subword units, while the trees are over
words. The input here is already split into words (tree tokens), so every
word is tokenised on its own: word boundaries stay known (`word_index`, see
`subword_syntax`) and decoding only has to glue each word back together.

Vocabulary. A list of tokens in id order: the reserved tokens of
`docs/design.md` (0 `<pad>`, 1 `<EOS>`, 2 `<UNK>`, 3 `<ROOT>`), then
WordPiece pieces. A piece starting with `##` continues the previous piece of
the same word; any other piece starts a word. Pieces are learnt from word
counts by tensorflow_text's WordPiece learner
(`tensorflow_text.tools.wordpiece_vocab`, so learning needs TensorFlow) and
applied in pure Python by `data/wordpiece.py` (greedy longest match, no
normalisation, so the text is kept as is; the ids of tensorflow_text's
`FastWordpieceTokenizer`), so that decoding needs no TensorFlow. It is saved like a word vocabulary:
one token per line, in id order, written atomically.

Exact round trips. The *alphabet* of a vocabulary is the set of characters
that have both a word-initial and a `##` single-character piece. Before
tokenisation a word is escaped against the alphabet, as T2T's
SubwordTextEncoder did:

* `\\` becomes `\\\\`;
* a character outside the alphabet becomes `\\<decimal code point>;`, e.g.
  `ŕ` -> `\\341;`, so rare scripts, emoji, control characters and lone
  surrogates all survive;
* the first `#` of a word that starts with `##` becomes `\\35;`, so no
  word-initial piece can be mistaken for a continuation piece.

The escape characters `\\`, `;` and the digits always belong to the alphabet,
so every escaped word splits into pieces of the vocabulary and WordPiece never
emits `<UNK>`. Decoding joins the pieces of each word and undoes the escapes:
`decode(encode(words)) == words` for every list of non-empty words. A
reserved id in decoded model output stands as a word of its own (`<UNK>`).

Joint or separate vocabularies: `build_subword_vocabularies` learns one
vocabulary from the summed source and target counts, or one per side.
"""

import collections
import os
import re
import unicodedata
from typing import Iterable, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from syntax_t2t.data.vocab import RESERVED_TOKENS, UNK_ID, Vocabulary, sentence_ids
from syntax_t2t.data.wordpiece import WordpieceMatcher
from syntax_t2t.errors import InputError

PathLike = Union[str, os.PathLike]

SUFFIX_INDICATOR = "##"
ESCAPE_CHARACTERS = frozenset("\\;0123456789")
#: Reserved tokens plus a word-initial and a `##` piece of every escape character.
MIN_VOCAB_SIZE = len(RESERVED_TOKENS) + 2 * len(ESCAPE_CHARACTERS)

_UNESCAPE_PATTERN = re.compile(r"\\(\\|[0-9]+;)")
# Escaping makes a word at most 5 times longer in UTF-8 (`\127;` for one byte),
# so only words of over 200 KB reach this limit; the tokenizer turns longer
# inputs into <UNK>, which `_tokenize_escaped` reports.
_MAX_BYTES_PER_WORD = 1 << 20
# Word -> ids memo: word frequencies are Zipfian, so a bounded memo spares
# most tokenizer calls; it is emptied when full to bound the memory.
_CACHE_LIMIT = 1 << 19


class EncodedWords(NamedTuple):
    """Subword ids of a sentence and the word each one belongs to.

    Attributes:
        ids: int64 [T] subword ids (no `<EOS>`).
        word_index: int64 [T], the 0-based word of each subword.
    """

    ids: np.ndarray
    word_index: np.ndarray


def _may_enter_alphabet(character: str) -> bool:
    # Control characters and lone surrogates are always escaped: they cannot
    # be stored one token per line or passed to TensorFlow as UTF-8.
    return unicodedata.category(character) not in ("Cc", "Cs")


def escape_word(word: str, alphabet: frozenset) -> str:
    """Escapes `word` so that it only uses characters of `alphabet` (module docstring).

    Args:
        word: any string.
        alphabet: characters with a word-initial and a `##` piece; must hold
            `ESCAPE_CHARACTERS`.

    Returns:
        The escaped word; `unescape_word` restores `word` from it.
    """
    parts = []
    for position, character in enumerate(word):
        if character == "\\":
            parts.append("\\\\")
        elif character not in alphabet or (position == 0 and word.startswith(SUFFIX_INDICATOR)):
            parts.append(f"\\{ord(character)};")
        else:
            parts.append(character)
    return "".join(parts)


def unescape_word(escaped: str) -> str:
    """Undoes `escape_word`.

    Escapes that `escape_word` cannot produce (as a model may emit: a lone
    `\\`, a code point beyond U+10FFFF) are left as they are, so decoding any
    id sequence succeeds.
    """

    def replace(match: re.Match) -> str:
        body = match.group(1)
        if body == "\\":
            return "\\"
        code_point = int(body[:-1])
        return chr(code_point) if code_point <= 0x10FFFF else match.group(0)

    return _UNESCAPE_PATTERN.sub(replace, escaped)


class SubwordVocabulary:
    """WordPiece pieces with the reserved ids first; encodes and decodes words.

    Offers the `Vocabulary` interface (`encode`, `decode`, `tokens`, `save`,
    `load`, `len`), with ids of subwords instead of words.

    Args:
        tokens: every token in id order: `RESERVED_TOKENS`, then pieces. Must
            contain no duplicates, empty strings, line breaks or lone
            surrogates; no piece may be the bare `##`; every escape character
            needs a word-initial and a `##` piece.

    Raises:
        ValueError: if `tokens` breaks one of these rules.
    """

    def __init__(self, tokens: Sequence[str]):
        self._vocabulary = Vocabulary(tokens)
        problem = _pieces_problem(self._vocabulary.tokens)
        if problem is not None:
            raise ValueError(problem[1])
        self._alphabet = frozenset(
            token for token in self._vocabulary.tokens[len(RESERVED_TOKENS):]
            if len(token) == 1 and SUFFIX_INDICATOR + token in self._vocabulary
            and _may_enter_alphabet(token))
        self._tokenizer = None
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def build(cls, word_counts: Mapping[str, int], vocab_size: int,
              max_unique_chars: int = 1000, num_iterations: int = 4) -> "SubwordVocabulary":
        """Learns a WordPiece vocabulary from word counts.

        The alphabet is the escape characters plus the most frequent
        characters (ties by code point) that the size allows, at most
        `max_unique_chars`; rarer characters are escaped. The learner
        (`wordpiece_tokenizer_learner_lib.learn`) then sees the escaped words.

        Args:
            word_counts: word -> occurrences in the training split.
            vocab_size: the largest number of entries, reserved ones included;
                at least `MIN_VOCAB_SIZE`. The learner aims within 5 % below
                it; its result is cut to the size if it overshoots.
            max_unique_chars: the largest number of characters with
                single-character pieces, escape characters excluded.
            num_iterations: learner iterations.

        Returns:
            The vocabulary: reserved tokens, the alphabet's word-initial
            pieces, its `##` pieces (each in code-point order), then the
            learnt pieces by decreasing count.

        Raises:
            ValueError: if `vocab_size` is below `MIN_VOCAB_SIZE`, there are no
                words, or a word is empty or has a count below 1.
        """
        if vocab_size < MIN_VOCAB_SIZE:
            raise ValueError(
                f"vocab_size {vocab_size} is below the minimum {MIN_VOCAB_SIZE}: the "
                f"{len(RESERVED_TOKENS)} reserved tokens and two pieces for each of the "
                f"{len(ESCAPE_CHARACTERS)} escape characters")
        for word, count in word_counts.items():
            _check_word(word, "a counted word")
            if count < 1:
                raise ValueError(f"word {word!r} has count {count}; counts must be at least 1")
        if not word_counts:
            raise ValueError("cannot learn a subword vocabulary from no words")

        character_counts = collections.Counter()
        for word, count in word_counts.items():
            for character in word:
                character_counts[character] += count
        candidates = sorted(
            (character for character in character_counts
             if character not in ESCAPE_CHARACTERS and _may_enter_alphabet(character)),
            key=lambda character: (-character_counts[character], character))
        room = (vocab_size - len(RESERVED_TOKENS)) // 2 - len(ESCAPE_CHARACTERS)
        alphabet = ESCAPE_CHARACTERS | frozenset(candidates[:min(room, max_unique_chars)])

        # The learner is tensorflow-text's: imported here, so that applying a vocabulary
        # needs no TensorFlow.
        from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib

        escaped_counts = collections.Counter()
        for word, count in word_counts.items():
            escaped_counts[escape_word(word, alphabet)] += count
        learnt = wordpiece_tokenizer_learner_lib.learn(
            dict(escaped_counts),
            vocab_size=vocab_size - len(RESERVED_TOKENS),
            reserved_tokens=[],
            # Small corpora need pieces seen only a few times to fill the size.
            lower_thresh=1,
            num_iterations=num_iterations,
            max_unique_chars=len(alphabet),
            include_joiner_token=True,
            joiner=SUFFIX_INDICATOR)

        characters = sorted(alphabet)
        required = characters + [SUFFIX_INDICATOR + character for character in characters]
        skip = set(required) | set(RESERVED_TOKENS)
        extra = [token for token in learnt if token not in skip]
        room_left = vocab_size - len(RESERVED_TOKENS) - len(required)
        return cls(RESERVED_TOKENS + tuple(required) + tuple(extra[:room_left]))

    @classmethod
    def from_corpus(cls, sentences: Iterable[Sequence[str]], vocab_size: int,
                    **build_options) -> "SubwordVocabulary":
        """Counts the words of `sentences`, then calls `build`."""
        return cls.build(count_words(sentences), vocab_size, **build_options)

    @classmethod
    def load(cls, path: PathLike) -> "SubwordVocabulary":
        """Reads a vocabulary written by `save`.

        Raises:
            FileNotFoundError: if `path` does not exist.
            InputError: naming the file, and the line where one token is at
                fault (a missing reserved token, an empty line, a duplicate,
                a bare `##`, a missing escape character piece).
        """
        tokens = Vocabulary.load(path).tokens
        problem = _pieces_problem(tokens)
        if problem is not None:
            token_id, message = problem
            raise InputError(path, None if token_id is None else token_id + 1,
                             f"not a subword vocabulary: {message}")
        return cls(tokens)

    def save(self, path: PathLike) -> None:
        """Writes one token per line, in id order, atomically."""
        self._vocabulary.save(path)

    def __len__(self) -> int:
        return len(self._vocabulary)

    def __eq__(self, other) -> bool:
        return isinstance(other, SubwordVocabulary) and self.tokens == other.tokens

    def __repr__(self) -> str:
        return f"SubwordVocabulary(size={len(self)}, alphabet={len(self._alphabet)})"

    def __getstate__(self):
        # The TensorFlow tokenizer cannot be pickled (multiprocessing
        # datagen); it is rebuilt on first use.
        return {"tokens": self.tokens}

    def __setstate__(self, state):
        self.__init__(state["tokens"])

    @property
    def tokens(self) -> tuple[str, ...]:
        """All tokens in id order."""
        return self._vocabulary.tokens

    @property
    def alphabet(self) -> frozenset:
        """Characters kept as they are; all others are escaped."""
        return self._alphabet

    def token_to_id(self, token: str) -> int:
        """The id of a token (a piece as spelt in `tokens`), `<UNK>`'s id if absent."""
        return self._vocabulary.token_to_id(token)

    def id_to_token(self, token_id: int) -> str:
        """The token of `token_id`; raises IndexError outside `[0, len(self))`."""
        return self._vocabulary.id_to_token(token_id)

    def encode_with_word_index(self, words: Sequence[str]) -> EncodedWords:
        """Subword ids of pre-tokenised words and the word of each subword.

        Args:
            words: the words of one sentence, each a non-empty string.

        Returns:
            `EncodedWords(ids, word_index)`; every word has at least one
            subword, so `word_index` is valid for `subword_syntax`.

        Raises:
            ValueError: if a word is empty or not a string.
        """
        pieces = self._word_ids(words)
        ids = np.fromiter((token_id for word in pieces for token_id in word), dtype=np.int64)
        word_index = np.repeat(np.arange(len(pieces), dtype=np.int64), [len(word) for word in pieces])
        return EncodedWords(ids, word_index)

    def encode(self, words: Sequence[str]) -> list[int]:
        """Subword ids of pre-tokenised words (no `<EOS>` is added)."""
        return [token_id for word in self._word_ids(words) for token_id in word]

    def tokenize(self, words: Sequence[str]) -> list[str]:
        """The pieces of pre-tokenised words, as strings (`##` marks continuations)."""
        return [self.id_to_token(token_id) for token_id in self.encode(words)]

    def detokenize(self, pieces: Iterable[str]) -> list[str]:
        """Words from pieces: glues `##` pieces to the piece before, undoes escapes.

        Reserved tokens stand as words of their own; a `##` piece with no word
        to continue starts one.
        """
        words, escaped_word, open_word = [], [], False
        for piece in pieces:
            if piece in RESERVED_TOKENS:
                if open_word:
                    words.append(unescape_word("".join(escaped_word)))
                words.append(piece)
                escaped_word, open_word = [], False
            elif piece.startswith(SUFFIX_INDICATOR) and open_word:
                escaped_word.append(piece[len(SUFFIX_INDICATOR):])
            else:
                if open_word:
                    words.append(unescape_word("".join(escaped_word)))
                escaped_word, open_word = [piece.removeprefix(SUFFIX_INDICATOR)], True
        if open_word:
            words.append(unescape_word("".join(escaped_word)))
        return words

    def decode(self, ids: Iterable[int], strip: bool = True) -> list[str]:
        """Words of subword ids, the inverse of `encode`.

        Args:
            ids: subword ids, e.g. a model's output.
            strip: stop at the first `<EOS>` and leave out `<pad>`, as wanted
                for a decoded sentence; False keeps them as words.

        Returns:
            The words.
        """
        return self.detokenize(self.id_to_token(token_id) for token_id in sentence_ids(ids, strip))

    def _word_ids(self, words: Sequence[str]) -> list[tuple[int, ...]]:
        words = list(words)
        for position, word in enumerate(words):
            _check_word(word, f"word {position}")
        missing = list(dict.fromkeys(word for word in words if word not in self._cache))
        if missing:
            if len(self._cache) + len(missing) > _CACHE_LIMIT:
                self._cache.clear()
            for word, ids in zip(missing, self._tokenize_escaped(missing)):
                self._cache[word] = ids
        return [self._cache[word] for word in words]

    def _tokenize_escaped(self, words: list[str]) -> list[tuple[int, ...]]:
        if self._tokenizer is None:
            self._tokenizer = self._make_tokenizer()
        escaped = [escape_word(word, self._alphabet) for word in words]
        rows = [self._tokenizer.tokenize(word) for word in escaped]
        for word, row in zip(words, rows):
            if UNK_ID in row:
                raise ValueError(
                    f"word {word[:40]!r}... is too long for the subword tokenizer: it escapes to more "
                    f"than {_MAX_BYTES_PER_WORD} UTF-8 bytes")
        return [tuple(row) for row in rows]

    def _make_tokenizer(self) -> WordpieceMatcher:
        # `<EOS>` written in a sentence must stay text, not become the end of the
        # sentence: the reserved tokens never match a piece of a word.
        return WordpieceMatcher(self.tokens, SUFFIX_INDICATOR, UNK_ID, _MAX_BYTES_PER_WORD,
                                skip_ids=range(len(RESERVED_TOKENS)))


def count_words(sentences: Iterable[Sequence[str]]) -> collections.Counter:
    """Word counts of tokenised sentences, the input of `SubwordVocabulary.build`."""
    counts = collections.Counter()
    for sentence in sentences:
        counts.update(sentence)
    return counts


def build_subword_vocabularies(source_counts: Mapping[str, int], target_counts: Mapping[str, int],
                               vocab_size: int, joint: bool = True,
                               **build_options) -> tuple[SubwordVocabulary, SubwordVocabulary]:
    """Learns the source and target vocabularies, jointly or separately.

    Args:
        source_counts: source word counts of the training split.
        target_counts: target word counts of the training split.
        vocab_size: the largest size of each vocabulary (reserved included).
        joint: one vocabulary learnt from the summed counts, used for both
            sides (Pascal's joint BPE); False learns one per side.
        **build_options: passed on to `SubwordVocabulary.build`.

    Returns:
        `(source_vocabulary, target_vocabulary)`; the same object twice when
        `joint`.
    """
    if joint:
        joint_vocabulary = SubwordVocabulary.build(
            collections.Counter(source_counts) + collections.Counter(target_counts),
            vocab_size, **build_options)
        return joint_vocabulary, joint_vocabulary
    return (SubwordVocabulary.build(source_counts, vocab_size, **build_options),
            SubwordVocabulary.build(target_counts, vocab_size, **build_options))


def _check_word(word, what: str) -> None:
    if not isinstance(word, str):
        raise ValueError(f"{what} must be a string, got {type(word).__name__}: {word!r}")
    if not word:
        raise ValueError(f"{what} is empty: every word needs at least one subword")


def _pieces_problem(tokens: Sequence[str]) -> Optional[tuple[Optional[int], str]]:
    """The first token (id, message) that a subword vocabulary cannot hold, if any.

    `tokens` already passed `Vocabulary`'s checks (reserved first, unique,
    non-empty, no line breaks).
    """
    for token_id in range(len(RESERVED_TOKENS), len(tokens)):
        token = tokens[token_id]
        if token == SUFFIX_INDICATOR:
            return token_id, f"token {token_id} is a bare {SUFFIX_INDICATOR!r}, a continuation of nothing"
        if any(unicodedata.category(character) == "Cs" for character in token):
            return token_id, f"token {token_id} {token!r} contains a lone surrogate"
    present = set(tokens)
    missing = sorted(
        piece for character in ESCAPE_CHARACTERS
        for piece in (character, SUFFIX_INDICATOR + character) if piece not in present)
    if missing:
        return None, f"the escape pieces {missing} are missing; every escape character needs a " \
                     f"word-initial and a {SUFFIX_INDICATOR!r} piece"
    return None
