"""The subword kinds of `subwords` problems: which vocabulary class, and how it is made.

The problem option `subword_model` names it:

* `wordpiece` (the default): WordPiece learnt by tensorflow-text
  (`syntax_t2t.data.subwords`);
* `sentencepiece_unigram`, `sentencepiece_bpe`: a SentencePiece model learnt
  from the training split (`syntax_t2t.data.sentencepiece_vocab`);
* `sentencepiece:PATH`: the user's own SentencePiece `.model` file, used for
  both sides.

Whatever the kind, each word is split into pieces on its own, so the
word-level syntax is projected onto pieces the same way
(`syntax_t2t.data.subword_syntax`).
"""

from typing import Mapping

from syntax_t2t.data.sentencepiece_vocab import (SentencePieceVocabulary,
                                                 build_sentencepiece_vocabularies)
from syntax_t2t.data.subwords import SubwordVocabulary, build_subword_vocabularies

WORDPIECE = "wordpiece"
LEARNT_SENTENCEPIECE = {"sentencepiece_unigram": "unigram", "sentencepiece_bpe": "bpe"}
SENTENCEPIECE_FILE = "sentencepiece:"
SUBWORD_MODELS = (WORDPIECE, *LEARNT_SENTENCEPIECE, SENTENCEPIECE_FILE + "PATH")


def check_subword_model(subword_model: str) -> None:
    """Raises ValueError unless `subword_model` names a kind (see the module docstring)."""
    if subword_model in (WORDPIECE, *LEARNT_SENTENCEPIECE):
        return
    if subword_model.startswith(SENTENCEPIECE_FILE) and subword_model[len(SENTENCEPIECE_FILE):]:
        return
    raise ValueError(f"subword_model={subword_model!r}; expected one of "
                     f"{', '.join(SUBWORD_MODELS)}")


def vocabulary_class(subword_model: str):
    """The class whose `load` reads the saved vocabularies of this kind."""
    return SubwordVocabulary if subword_model == WORDPIECE else SentencePieceVocabulary


def build_vocabularies(subword_model: str, source_counts: Mapping[str, int],
                       target_counts: Mapping[str, int], vocab_size: int, joint: bool):
    """`(source, target)` vocabularies of this kind (the same object twice when joint).

    Args:
        subword_model: the kind.
        source_counts, target_counts: word counts of the training split.
        vocab_size: the largest size of a learnt vocabulary (reserved ids included).
        joint: one vocabulary for both sides; a user's model is always used for both.
    """
    if subword_model == WORDPIECE:
        return build_subword_vocabularies(source_counts, target_counts, vocab_size, joint=joint)
    if subword_model.startswith(SENTENCEPIECE_FILE):
        model = SentencePieceVocabulary.load(subword_model[len(SENTENCEPIECE_FILE):])
        return model, model
    return build_sentencepiece_vocabularies(source_counts, target_counts, vocab_size, joint=joint,
                                            model_type=LEARNT_SENTENCEPIECE[subword_model])
