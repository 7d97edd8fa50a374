"""SentencePiece subword vocabularies over pre-tokenised words: brought by the user or learnt.

The problem option `subword_model` picks the subword kind of `subwords`
problems (`syntax_t2t.data.subword_kinds`): WordPiece (`subwords.py`,
the default), a SentencePiece model of the user's (`sentencepiece:PATH`, a
`.model` file), or one learnt from the training split
(`sentencepiece_unigram`, `sentencepiece_bpe`).

As with WordPiece, every word of a tree is encoded on its own, so each
subword belongs to one word and the word-level syntax is projected onto the
pieces the same way (`subword_syntax`). Each word's pieces are those of
`SentencePieceProcessor.encode(word)`, whose first piece starts with the
word-boundary mark `▁`; decoding starts a word at each such piece.

Ids. The reserved ids of `docs/design.md` come first (0 `<pad>`, 1 `<EOS>`,
2 `<UNK>`, 3 `<ROOT>`); SentencePiece id `i` is id `4 + i`, and its own
unknown piece maps to `<UNK>`. Learnt models use the identity normaliser and
byte fallback, so `decode(encode(words)) == words`; a user's model decodes as
its normaliser allows (e.g. NFKC folds some characters). Whitespace inside a
word (and `\\` and `▁`) is escaped before encoding, as
`syntax_t2t.data.subwords` does.

Saved form: the serialized model proto, written atomically to the
vocabulary's path.
"""

import collections
import os
import re
import tempfile
from typing import Iterable, Mapping, Sequence, Union

import numpy as np
import sentencepiece

from syntax_t2t.data.subwords import EncodedWords, unescape_word
from syntax_t2t.data.vocab import RESERVED_TOKENS, UNK_ID, sentence_ids
from syntax_t2t.errors import InputError
from syntax_t2t.io_utils import atomic_write

PathLike = Union[str, os.PathLike]

WORD_START = "\u2581"  # ▁
# SentencePiece splits at whitespace and reads `▁` as whitespace: inside a
# word both are escaped as WordPiece escapes (`\\`, `\<code point>;`), so a
# word stays one word and a `▁` in it comes back as itself.
_TO_ESCAPE = re.compile(r"[\\\s\u2581]")
MODEL_TYPES = ("unigram", "bpe")
_OFFSET = len(RESERVED_TOKENS)


class SentencePieceVocabulary:
    """A SentencePiece model applied word by word (see the module docstring).

    Args:
        model_proto: the serialized SentencePiece model.
    """

    def __init__(self, model_proto: bytes):
        self._proto = bytes(model_proto)
        self._processor = sentencepiece.SentencePieceProcessor(model_proto=self._proto)
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def load(cls, path: PathLike) -> "SentencePieceVocabulary":
        """Reads a SentencePiece `.model` file (the user's, or one saved by `save`).

        Raises:
            InputError: the file is not a SentencePiece model.
        """
        with open(path, "rb") as stream:
            proto = stream.read()
        try:
            return cls(proto)
        except (RuntimeError, OSError) as error:
            raise InputError(path, None, f"not a SentencePiece model ({error})",
                             reason="bad sentencepiece model") from error

    @classmethod
    def build(cls, word_counts: Mapping[str, int], vocab_size: int,
              model_type: str = "unigram") -> "SentencePieceVocabulary":
        """Learns a model of at most `vocab_size` ids (reserved ones included) from word counts.

        Args:
            word_counts: word -> count of the training split.
            vocab_size: the largest size, the 4 reserved ids included.
            model_type: "unigram" or "bpe".
        """
        if model_type not in MODEL_TYPES:
            raise ValueError(f"SentencePiece model type {model_type!r}; expected "
                             f"{' or '.join(MODEL_TYPES)}")
        pieces = vocab_size - _OFFSET
        # Byte fallback needs a piece per byte value, one per character and <unk>.
        characters = {character for word in word_counts for character in word}
        smallest = _OFFSET + 256 + len(characters) + 1
        if vocab_size < smallest:
            raise ValueError(f"a SentencePiece vocabulary of these words needs at least "
                             f"{smallest} ids (256 byte pieces, {len(characters)} characters, "
                             f"<unk> and 4 reserved), got {vocab_size}; raise subword_vocab_size")
        with tempfile.TemporaryDirectory(prefix="sentencepiece.") as directory:
            words = os.path.join(directory, "words.tsv")
            with open(words, "w", encoding="utf-8") as stream:
                for word, count in word_counts.items():
                    # TSV input: one "sentence" per word, with its count.
                    if "\t" not in word and "\n" not in word:
                        stream.write(f"{word}\t{count}\n")
            prefix = os.path.join(directory, "model")
            sentencepiece.SentencePieceTrainer.train(
                input=words, input_format="tsv", model_prefix=prefix, model_type=model_type,
                vocab_size=pieces, hard_vocab_limit=False, normalization_rule_name="identity",
                byte_fallback=True, character_coverage=1.0, split_digits=False,
                bos_id=-1, eos_id=-1, pad_id=-1, unk_id=0, minloglevel=2)
            with open(prefix + ".model", "rb") as stream:
                return cls(stream.read())

    def save(self, path: PathLike) -> None:
        with atomic_write(path, "wb") as stream:
            stream.write(self._proto)

    def __len__(self) -> int:
        return _OFFSET + self._processor.get_piece_size()

    def __eq__(self, other) -> bool:
        return isinstance(other, SentencePieceVocabulary) and self._proto == other._proto

    def __getstate__(self):
        return {"proto": self._proto}

    def __setstate__(self, state):
        self.__init__(state["proto"])

    def id_to_token(self, token_id: int) -> str:
        if token_id < _OFFSET:
            return RESERVED_TOKENS[token_id]
        return self._processor.id_to_piece(token_id - _OFFSET)

    def encode_with_word_index(self, words: Sequence[str]) -> EncodedWords:
        """Ids of pre-tokenised words and the word of each piece (every word has at least one)."""
        pieces = [self._word_ids(word) for word in words]
        ids = np.fromiter((token_id for word in pieces for token_id in word), dtype=np.int64)
        word_index = np.repeat(np.arange(len(pieces), dtype=np.int64),
                               [len(word) for word in pieces])
        return EncodedWords(ids, word_index)

    def encode(self, words: Sequence[str]) -> list[int]:
        """Ids of pre-tokenised words (no `<EOS>` is added)."""
        return [token_id for word in words for token_id in self._word_ids(word)]

    def tokenize(self, words: Sequence[str]) -> list[str]:
        """The pieces of pre-tokenised words, as strings (`▁` starts a word)."""
        return [self.id_to_token(token_id) for token_id in self.encode(words)]

    def decode(self, ids: Iterable[int], strip: bool = True) -> list[str]:
        """Words of ids, the inverse of `encode`; reserved ids stand as words of their own.

        Args:
            ids: ids, e.g. a model's output.
            strip: stop at the first `<EOS>` and leave out `<pad>`.
        """
        words, word = [], []

        def close():
            if word:
                words.append(unescape_word(self._processor.decode(word)))
                word.clear()

        for token_id in sentence_ids(ids, strip):
            if token_id < _OFFSET:
                close()
                words.append(RESERVED_TOKENS[token_id])
                continue
            piece_id = token_id - _OFFSET
            if self._processor.id_to_piece(piece_id).startswith(WORD_START):
                close()
            word.append(piece_id)
        close()
        return words

    def _word_ids(self, word: str) -> tuple[int, ...]:
        if not isinstance(word, str) or not word:
            raise ValueError(f"words must be non-empty strings, got {word!r}")
        if word not in self._cache:
            unknown = self._processor.unk_id()
            escaped = _TO_ESCAPE.sub(lambda match: f"\\{ord(match.group())};", word)
            ids = tuple(UNK_ID if piece == unknown else _OFFSET + piece
                        for piece in self._processor.encode(escaped, out_type=int))
            self._cache[word] = ids or (UNK_ID,)
        return self._cache[word]


def build_sentencepiece_vocabularies(source_counts: Mapping[str, int],
                                     target_counts: Mapping[str, int], vocab_size: int,
                                     joint: bool = True, model_type: str = "unigram"):
    """`(source, target)` models learnt jointly (the same object twice) or one per side."""
    if joint:
        joint_vocabulary = SentencePieceVocabulary.build(
            collections.Counter(source_counts) + collections.Counter(target_counts), vocab_size,
            model_type)
        return joint_vocabulary, joint_vocabulary
    return (SentencePieceVocabulary.build(source_counts, vocab_size, model_type),
            SentencePieceVocabulary.build(target_counts, vocab_size, model_type))
