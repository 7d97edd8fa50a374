"""RIBES (Isozaki et al. 2010), the Pascal paper's word-order score for English-Japanese.

RIBES rewards translations whose words come in the reference's order:

    RIBES = NKT * P^alpha * BP^beta

with NKT the normalised Kendall's tau of the ranks of the hypothesis words
aligned to the reference, P the unigram precision and BP the brevity
penalty (alpha = 0.25, beta = 0.10, as at WAT). The sentence scores come
from NLTK's maintained implementation (`nltk.translate.ribes_score`) and the
corpus score is their mean, as in the official script; it is reported on
the same 0-100 scale as BLEU. Segments are compared as tokens of sacreBLEU's
BLEU preprocessing (`translation.segment_tokenizer`), so RIBES and BLEU
count the same words: `tokenize="none"` splits at whitespace only,
`ja-mecab` gives Japanese morphemes (WAT tokenises with KyTea instead,
which has no maintained Python package).
"""

from typing import Sequence

from nltk.translate.ribes_score import sentence_ribes

from syntax_t2t.evaluation.translation import MetricScore, segment_tokenizer

ALPHA = 0.25
BETA = 0.10


def signature(tokenizer: str = "none", lowercase: bool = False, alpha: float = ALPHA,
              beta: float = BETA) -> str:
    """The settings of a RIBES score, printed next to it (in sacreBLEU's style)."""
    case = "lc" if lowercase else "mixed"
    return f"RIBES|nltk|case:{case}|tok:{tokenizer}|alpha:{alpha}|beta:{beta}"


def corpus_ribes(hypotheses: Sequence[str], references: Sequence[str], alpha: float = ALPHA,
                 beta: float = BETA, tokenize: str = "none", lowercase: bool = False) -> MetricScore:
    """The mean sentence RIBES of a system, 0-100.

    Args:
        hypotheses: one output per segment.
        references: one reference per segment, aligned.
        alpha: weight of the unigram precision.
        beta: weight of the brevity penalty.
        tokenize: sacreBLEU's tokenizer applied to both sides first
            (`translation.TOKENIZERS`; "none": whitespace tokens as given).
        lowercase: lowercase both sides first.

    Returns:
        A `MetricScore` named `RIBES`. An empty hypothesis or reference
        scores 0.

    Raises:
        ValueError: the two lists differ in length or are empty.
        TokenizerError: an unknown or unavailable tokenizer.
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("RIBES needs at least one segment")
    preprocess, tokenizer = segment_tokenizer(tokenize, lowercase)
    scores = [sentence_ribes([preprocess(reference).split()], preprocess(hypothesis).split(),
                             alpha=alpha, beta=beta)
              for hypothesis, reference in zip(hypotheses, references)]
    score = 100.0 * sum(scores) / len(scores)
    return MetricScore(name="RIBES", score=score,
                       signature=signature(tokenizer, lowercase, alpha, beta),
                       details=f"RIBES = {score:.2f} (mean of {len(scores)} sentence scores)")
