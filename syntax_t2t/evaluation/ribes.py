"""RIBES (Isozaki et al. 2010), the Pascal paper's word-order score for English-Japanese.

RIBES rewards translations whose words come in the reference's order:

    RIBES = NKT * P^alpha * BP^beta

with NKT the normalised Kendall's tau of the ranks of the hypothesis words
aligned to the reference, P the unigram precision and BP the brevity
penalty (alpha = 0.25, beta = 0.10, as at WAT). The sentence scores come
from NLTK's maintained implementation (`nltk.translate.ribes_score`) and the
corpus score is their mean, as in the official script; it is reported on
the same 0-100 scale as BLEU. Segments are compared as whitespace-separated
tokens, so hypotheses and references must be tokenised the same way (WAT
tokenises Japanese with KyTea first).
"""

from typing import Sequence

from nltk.translate.ribes_score import sentence_ribes

from syntax_t2t.evaluation.translation import MetricScore

ALPHA = 0.25
BETA = 0.10


def signature(alpha: float = ALPHA, beta: float = BETA) -> str:
    """The settings of a RIBES score, printed next to it."""
    return f"RIBES|nltk|tok:whitespace|alpha:{alpha}|beta:{beta}"


def corpus_ribes(hypotheses: Sequence[str], references: Sequence[str], alpha: float = ALPHA,
                 beta: float = BETA) -> MetricScore:
    """The mean sentence RIBES of a system, 0-100.

    Args:
        hypotheses: one tokenised output per segment.
        references: one tokenised reference per segment, aligned.
        alpha: weight of the unigram precision.
        beta: weight of the brevity penalty.

    Returns:
        A `MetricScore` named `RIBES`. An empty hypothesis or reference
        scores 0.

    Raises:
        ValueError: the two lists differ in length or are empty.
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("RIBES needs at least one segment")
    scores = [sentence_ribes([reference.split()], hypothesis.split(), alpha=alpha, beta=beta)
              for hypothesis, reference in zip(hypotheses, references)]
    score = 100.0 * sum(scores) / len(scores)
    return MetricScore(name="RIBES", score=score, signature=signature(alpha, beta),
                       details=f"RIBES = {score:.2f} (mean of {len(scores)} sentence scores)")
