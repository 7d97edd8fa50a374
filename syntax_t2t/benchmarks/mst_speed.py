"""MST parse decoding time per sentence length (`--parse_decoder=mst`).

Each length gets a fixed set of head log-probability matrices, as
`decoding/parse_heads.head_log_probs` gives them, of random logits: random
scores rarely put the best heads in a tree, so every call runs the
contraction that trained parsers' cycles need. A repetition decodes the
whole set; the time per sentence is its median over repetitions.
"""

import time

import numpy as np

from syntax_t2t.benchmarks import measure
from syntax_t2t.decoding.mst import maximum_spanning_tree
from syntax_t2t.decoding.parse_heads import head_log_probs

DEFAULT_LENGTHS = (10, 20, 40, 80, 100)
#: The sentence length of the speed target (docs/performance.md).
TARGET_LENGTH = 80


def measure_mst(lengths=DEFAULT_LENGTHS, sentences=100, repetitions=5, seed=0):
    """Seconds per sentence of `maximum_spanning_tree` at each length.

    Args:
        lengths: sentence lengths in words.
        sentences: score matrices per length (one repetition decodes them all).
        repetitions: timed rounds, interleaved over the lengths.
        seed: seeds the random logits.

    Returns:
        `{str(length): {"seconds": Summary dict of seconds per sentence,
        "sentences": sentences}}`.
    """
    rng = np.random.default_rng(seed)
    matrices = {length: [head_log_probs(rng.normal(size=(length + 1, length + 1)), length)
                         for _ in range(sentences)] for length in lengths}

    def runner(length):
        def run():
            start = time.perf_counter()
            for scores in matrices[length]:
                maximum_spanning_tree(scores)
            return (time.perf_counter() - start) / sentences
        return run

    for length in lengths:  # untimed: first calls pay for imports and caches
        maximum_spanning_tree(matrices[length][0])
    timings = measure.interleaved({length: runner(length) for length in lengths}, repetitions)
    return {str(length): {"seconds": measure.Summary.of(timings[length]).as_dict(),
                          "sentences": sentences}
            for length in lengths}
