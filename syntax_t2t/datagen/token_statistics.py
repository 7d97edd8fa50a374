"""Per split and side: tokens written and how many are `<UNK>`, as fairseq-preprocess reports.

A high unknown rate on dev or test (a word-level vocabulary too small for
the data, or text in another script or normalisation than training's) costs
BLEU silently; datagen prints it with the vocabulary's size so that the user
sees it before training.
"""

import collections
from typing import Mapping

import numpy as np
from absl import logging

from syntax_t2t.data.schema import INPUTS, TARGETS
from syntax_t2t.data.vocab import EOS_ID, PAD_ID, ROOT_ID, UNK_ID

#: The encoded features counted, and the side each is reported as.
SIDES = {INPUTS: "source", TARGETS: "target"}
_NOT_TOKENS = np.array([PAD_ID, EOS_ID, ROOT_ID])


def example_counts(features: Mapping) -> dict[str, tuple[int, int]]:
    """`{side: (tokens, unknown tokens)}` of one encoded example (reserved ids other than `<UNK>` left out)."""
    counts = {}
    for key, side in SIDES.items():
        if key in features:
            ids = np.asarray(features[key])
            ids = ids[~np.isin(ids, _NOT_TOKENS)]
            counts[side] = (int(ids.size), int(np.count_nonzero(ids == UNK_ID)))
    return counts


class TokenStatistics:
    """Sums of `example_counts` per split and side."""

    def __init__(self):
        self._sums = collections.defaultdict(lambda: [0, 0])

    def add(self, split: str, counts: Mapping[str, tuple[int, int]]) -> None:
        for side, (tokens, unknown) in counts.items():
            sums = self._sums[split, side]
            sums[0] += tokens
            sums[1] += unknown

    def summary(self) -> dict:
        """`{split: {side: {"tokens": n, "unknown": k, "unknown_rate": k / n}}}`."""
        record = {}
        for (split, side), (tokens, unknown) in sorted(self._sums.items()):
            record.setdefault(split, {})[side] = {
                "tokens": tokens, "unknown": unknown,
                "unknown_rate": round(unknown / tokens, 6) if tokens else 0.0}
        return record

    def log(self, problem_name: str, vocab_sizes: Mapping[str, int]) -> None:
        """One line per split and side: tokens, `<UNK>` rate, the vocabulary's size."""
        for split, sides in self.summary().items():
            for side, entry in sides.items():
                key = next(key for key, name in SIDES.items() if name == side)
                size = vocab_sizes.get(key)
                logging.info("%s: %s %s: %d tokens, %.2f%% <UNK> (%d), vocabulary of %s entries",
                             problem_name, split, side, entry["tokens"],
                             100.0 * entry["unknown_rate"], entry["unknown"],
                             f"{size:,}" if size is not None else "?")
