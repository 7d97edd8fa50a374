"""BLEU of two systems by source-sentence length (Bugliarello & Okazaki 2020, Figure 3).

Sentences are grouped by the number of source words; each group is scored
as a corpus of its own, and the difference system - baseline shows where a
syntax-aware model gains or loses.
"""

import dataclasses
from typing import Sequence

from sacrebleu.metrics import BLEU

DEFAULT_EDGES = (10, 20, 30, 40, 50)


@dataclasses.dataclass(frozen=True)
class LengthBucket:
    """One source-length group.

    Attributes:
        low, high: the group holds sources of `low..high` words (`high` is
            None for the open last group).
        sentences: how many sentences fall into it.
        baseline_bleu, system_bleu: corpus BLEU of the group for each system.
    """

    low: int
    high: int | None
    sentences: int
    baseline_bleu: float
    system_bleu: float

    @property
    def label(self) -> str:
        return f"{self.low}-{self.high}" if self.high is not None else f"{self.low}+"

    @property
    def difference(self) -> float:
        return self.system_bleu - self.baseline_bleu

    def as_dict(self) -> dict:
        return {"bucket": self.label, "low": self.low, "high": self.high,
                "sentences": self.sentences, "baseline_bleu": self.baseline_bleu,
                "system_bleu": self.system_bleu, "difference": self.difference}


def bucket_bounds(edges: Sequence[int]) -> list[tuple[int, int | None]]:
    """`(10, 20)` -> `[(1, 10), (11, 20), (21, None)]`.

    Raises:
        ValueError: if the edges are not positive and strictly increasing.
    """
    edges = list(edges)
    if any(e < 1 for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"length bucket edges must be positive and increasing, got {edges}")
    lows = [1] + [e + 1 for e in edges]
    return list(zip(lows, edges + [None]))


def bleu_by_source_length(source_lengths: Sequence[int], baseline: Sequence[str],
                          system: Sequence[str], references: Sequence[str],
                          edges: Sequence[int] = DEFAULT_EDGES) -> list[LengthBucket]:
    """Corpus BLEU of both systems in every source-length bucket.

    Args:
        source_lengths: words of each source sentence.
        baseline, system: the two systems' outputs, one per sentence.
        references: one reference per sentence.
        edges: upper ends of the closed buckets; a last open bucket follows.

    Returns:
        One `LengthBucket` per non-empty bucket, shortest first. Empty
        sources (0 words) belong to no bucket.
    """
    count = len(references)
    if not len(source_lengths) == len(baseline) == len(system) == count:
        raise ValueError(
            f"need one entry per sentence: {len(source_lengths)} source lengths, "
            f"{len(baseline)} baseline and {len(system)} system lines, {count} references")
    buckets = []
    for low, high in bucket_bounds(edges):
        members = [i for i, n in enumerate(source_lengths)
                   if n >= low and (high is None or n <= high)]
        if not members:
            continue

        def bleu(hypotheses):
            picked_references = [references[i] for i in members]
            return float(BLEU().corpus_score([hypotheses[i] for i in members],
                                             [picked_references]).score)

        buckets.append(LengthBucket(low=low, high=high, sentences=len(members),
                                    baseline_bleu=bleu(baseline), system_bleu=bleu(system)))
    return buckets
