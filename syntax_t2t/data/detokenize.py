"""Detokenisation of word-level output, so BLEU can be scored against untokenised references.

Problems whose targets were tokenised from raw text by spaCy's rule-based
tokenizer (Multi30k) produce tokens; shared-task BLEU (sacreBLEU) is scored
on detokenised text against the raw references. `SpacyDetokenizer` undoes
that tokenizer with the Moses detokenisation rules (`sacremoses`, as
fairseq and Marian use) plus the two splits of spaCy's that the Moses
rules do not know: a hyphen between two letters is an infix ("t-shirt" is
tokenised "t - shirt"), so such a hyphen is joined to both neighbours
again; and English "n't" is split off its verb ("does n't", where Moses
splits "doesn 't"). Measured on the Multi30k test_2016_flickr references
(tokenised, then detokenised): `tests/test_detokenize.py` requires at
least 99% of the lines to come back exactly.
"""

import functools
from typing import Sequence


def join_letter_hyphens(tokens: Sequence[str]) -> list[str]:
    """Joins `a - b` into `a-b` where `a` ends and `b` starts with a letter.

    spaCy's tokenizer splits a hyphen between letters off as an infix, so in
    its output such a hyphen never stood between spaces.
    """
    joined: list[str] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if (token == "-" and joined and index + 1 < len(tokens) and joined[-1]
                and tokens[index + 1] and joined[-1][-1].isalpha()
                and tokens[index + 1][0].isalpha()):
            joined[-1] = joined[-1] + "-" + tokens[index + 1]
            index += 2
            continue
        joined.append(token)
        index += 1
    return joined


#: spaCy's English negation clitic, in the spellings its tokenizer splits off.
ENGLISH_NEGATIONS = frozenset({"n't", "N'T", "n’t", "N’T"})


def join_english_negations(tokens: Sequence[str]) -> list[str]:
    """Joins spaCy's `does n't` back into `doesn't`."""
    joined: list[str] = []
    for token in tokens:
        if token in ENGLISH_NEGATIONS and joined:
            joined[-1] = joined[-1] + token
        else:
            joined.append(token)
    return joined


class SpacyDetokenizer:
    """Undoes `spacy.blank(language).tokenizer`, as far as rules can.

    Args:
        language: ISO 639-1 code of the text (`en`, `de`, `cs`, ...), for the
            Moses rules (quotes, clitics, language-specific punctuation).
    """

    def __init__(self, language: str):
        from sacremoses import MosesDetokenizer  # only problems with raw targets need it

        self.language = language
        self._moses = MosesDetokenizer(lang=language)

    def __call__(self, tokens: Sequence[str]) -> str:
        tokens = join_letter_hyphens(list(tokens))
        if self.language == "en":
            tokens = join_english_negations(tokens)
        return self._moses.detokenize(tokens)


@functools.lru_cache(maxsize=None)
def spacy_detokenizer(language: str) -> SpacyDetokenizer:
    """One `SpacyDetokenizer` per language (building one compiles many regular expressions)."""
    return SpacyDetokenizer(language)
