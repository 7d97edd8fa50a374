"""WordPiece applied in pure Python: greedy longest match, one word at a time.

The ids are those of tensorflow-text's `FastWordpieceTokenizer` with
`no_pretokenization=True` on the same vocabulary (`tests/test_wordpiece.py`
compares them on real vocabularies), so a vocabulary learnt where TensorFlow
is installed applies the same way where it is not (the JAX backend, decoding).

A word is cut from its start: the longest vocabulary token that is a prefix
of it, then, from where that ended, the longest continuation piece
(`suffix_indicator` + text), and so on. If some position has no match, or
the word is longer than `max_bytes_per_word` in UTF-8, the whole word becomes
the single `unknown_id` (as WordPiece's max-match does). Every token is a
whole string, so matching characters equals tensorflow-text's matching of
UTF-8 bytes.
"""

from typing import Sequence


class WordpieceMatcher:
    """Greedy longest-match WordPiece over a fixed vocabulary.

    Args:
        tokens: the vocabulary in id order.
        suffix_indicator: the prefix of continuation pieces (`##`).
        unknown_id: the id of a word that cannot be cut.
        max_bytes_per_word: longer words (UTF-8) give `unknown_id`.
        skip_ids: ids never matched (the reserved tokens, which no word may
            produce).
    """

    def __init__(self, tokens: Sequence[str], suffix_indicator: str, unknown_id: int,
                 max_bytes_per_word: int, skip_ids: Sequence[int] = ()):
        skipped = set(skip_ids)
        self._ids = {token: token_id for token_id, token in enumerate(tokens)
                     if token_id not in skipped}
        self._suffix = suffix_indicator
        self._unknown_id = unknown_id
        self._max_bytes = max_bytes_per_word
        # The longest text a match can take: bounds the candidates tried at each position.
        self._longest = max([len(token) for token in self._ids] + [1])

    def tokenize(self, word: str) -> tuple[int, ...]:
        """The ids of one word's pieces, in order (`(unknown_id,)` when it cannot be cut)."""
        if len(word.encode("utf-8", "surrogatepass")) > self._max_bytes:
            return (self._unknown_id,)
        ids, start = [], 0
        while start < len(word):
            prefix = self._suffix if start else ""
            for end in range(min(len(word), start + self._longest), start, -1):
                token_id = self._ids.get(prefix + word[start:end])
                if token_id is not None:
                    ids.append(token_id)
                    start = end
                    break
            else:
                return (self._unknown_id,)
        return tuple(ids)
