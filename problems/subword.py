"""Subword variants of the registered problems, as the Pascal paper's models read them.

`<problem>_subword` is `<problem>` with a joint WordPiece vocabulary of both
languages (the paper learns joint BPE), the source syntax projected onto the
subwords and lemma ids for Sennrich and Haddow's factors (see
`syntax_t2t.problem`). Train the Pascal-paper models on them with
`--hparams=source_word_positions=true`, so that the models read word
boundaries from `src_word_position`.

Vocabulary sizes follow the data: the paper's 16,000 merges for its
low-resource corpora (here de2cs) and 32,000 for large ones (CzEng); PUD and
the synthetic languages are small, so their sizes are small enough that
words are really split.
"""

from syntax_t2t.problems.czeng import CzengSyntax
from syntax_t2t.problems.de2cs import De2csSyntax
from syntax_t2t.problems.multi30k import Multi30kSyntaxCsEn
from syntax_t2t.problems.pud import PudSyntaxCsEn, PudSyntaxDeCs
from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder
from syntax_t2t import registry


@registry.register_problem
class SyntheticSyntaxReorderSubword(SyntheticSyntaxReorder):
    """`synthetic_syntax_reorder` over a joint vocabulary of 300 subwords (about 560 words)."""

    subwords = "joint"
    subword_vocab_size = 300
    source_lemmas = True


@registry.register_problem
class PudSyntaxCsEnSubword(PudSyntaxCsEn):
    """`pud_syntax_cs_en` over a joint vocabulary of 4,000 subwords."""

    subwords = "joint"
    subword_vocab_size = 4_000
    source_lemmas = True


@registry.register_problem
class PudSyntaxDeCsSubword(PudSyntaxDeCs):
    """`pud_syntax_de_cs` over a joint vocabulary of 4,000 subwords."""

    subwords = "joint"
    subword_vocab_size = 4_000
    source_lemmas = True


@registry.register_problem
class De2csSyntaxSubword(De2csSyntax):
    """`de2cs_syntax` over a joint vocabulary of 16,000 subwords."""

    subwords = "joint"
    subword_vocab_size = 16_000
    source_lemmas = True


@registry.register_problem
class CzengSyntaxSubword(CzengSyntax):
    """`czeng_syntax` over a joint vocabulary of 32,000 subwords."""

    subwords = "joint"
    subword_vocab_size = 32_000
    source_lemmas = True


@registry.register_problem
class Multi30kSyntaxCsEnSubword(Multi30kSyntaxCsEn):
    """`multi30k_syntax_cs_en` over a joint vocabulary of 8,000 subwords.

    Word level, the 29,000 training captions give 23,589 Czech types, most
    of them seen once: a word-level model cannot learn them and meets many
    unknown words in the test set and in PUD. 8,000 joint pieces is the
    usual size for a corpus of this size (Multi30k shared-task systems used
    BPE vocabularies of about 10,000).
    """

    subwords = "joint"
    subword_vocab_size = 8_000
    source_lemmas = True
