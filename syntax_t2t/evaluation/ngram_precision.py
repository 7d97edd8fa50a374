"""Corpus n-gram precision by order, and its change between systems (MG-SA's Figure 2).

Hao et al. (2019) show, per n-gram order, how much their phrase-aware
systems gain over the baseline: which phrase lengths the translations get
right more often. The precision of order n is BLEU's modified precision
(Papineni et al. 2002): the n-grams of the hypotheses found in the aligned
references, each counted at most as often as the reference has it, over
all n-grams of the hypotheses, for the whole corpus. The counts are
sacreBLEU's, on its tokens (`tokenize`, `lowercase` as in `translation.py`),
so they are the ones behind the BLEU that `bin/evaluate` reports.
"""

import dataclasses
from typing import Sequence

from sacrebleu.metrics import BLEU

from syntax_t2t.evaluation import translation

DEFAULT_MAX_ORDER = 4


@dataclasses.dataclass(frozen=True)
class NgramPrecisions:
    """A system's corpus n-gram precisions, orders 1 .. len(matches).

    Attributes:
        matches: clipped matching n-grams per order.
        totals: hypothesis n-grams per order.
        signature: sacreBLEU's BLEU signature of the counting.
    """

    matches: tuple[int, ...]
    totals: tuple[int, ...]
    signature: str

    @property
    def precisions(self) -> tuple[float, ...]:
        """100 * matches / totals per order; 0 for an order without hypothesis n-grams."""
        return tuple(100.0 * m / t if t else 0.0 for m, t in zip(self.matches, self.totals))


def ngram_precisions(hypotheses: Sequence[str], references: Sequence[str],
                     max_order: int = DEFAULT_MAX_ORDER, tokenize: str = translation.DEFAULT_TOKENIZE,
                     lowercase: bool = False) -> NgramPrecisions:
    """The corpus n-gram precisions of one system.

    Args:
        hypotheses: one output per segment.
        references: one reference per segment, aligned.
        max_order: the highest order counted (MG-SA's Figure 2: 4 and more).
        tokenize, lowercase: sacreBLEU's preprocessing (`translation.TOKENIZERS`).

    Raises:
        ValueError: different lengths, no segment, or `max_order` < 1.
        TokenizerError: an unknown or unavailable tokenizer.
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("n-gram precisions need at least one segment")
    if max_order < 1:
        raise ValueError(f"max_order must be at least 1, got {max_order}")
    translation.check_tokenizer(tokenize)
    metric = BLEU(max_ngram_order=max_order, tokenize=tokenize, lowercase=lowercase)
    result = metric.corpus_score(list(hypotheses), [list(references)])
    return NgramPrecisions(matches=tuple(int(m) for m in result.counts),
                           totals=tuple(int(t) for t in result.totals),
                           signature=str(metric.get_signature()))


def precision_changes(baseline: Sequence[str], systems: dict[str, Sequence[str]],
                      references: Sequence[str], max_order: int = DEFAULT_MAX_ORDER,
                      tokenize: str = translation.DEFAULT_TOKENIZE, lowercase: bool = False) -> dict:
    """Each system's n-gram precisions and their change over the baseline's.

    Args:
        baseline: the baseline's outputs.
        systems: `{name: outputs}` of the systems compared with it.
        references: the references, aligned with every output.
        max_order, tokenize, lowercase: as in `ngram_precisions`.

    Returns:
        A JSON-ready dict: `orders`, `signature`, the `baseline`'s
        `matches`, `totals`, `precisions`, and per system the same plus
        `differences` (system - baseline precision, per order).
    """
    base = ngram_precisions(baseline, references, max_order, tokenize, lowercase)

    def counts(result: NgramPrecisions) -> dict:
        return {"matches": list(result.matches), "totals": list(result.totals),
                "precisions": [round(p, 4) for p in result.precisions]}

    report = {"orders": list(range(1, max_order + 1)), "signature": base.signature,
              "baseline": counts(base), "systems": {}}
    for name, outputs in systems.items():
        result = ngram_precisions(outputs, references, max_order, tokenize, lowercase)
        report["systems"][name] = {**counts(result), "differences": [
            round(p - q, 4) for p, q in zip(result.precisions, base.precisions)]}
    return report
