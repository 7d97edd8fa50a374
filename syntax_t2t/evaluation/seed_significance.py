"""Significance of a BLEU difference that accounts for the variance between training seeds.

Clark, Dyer, Lavie and Smith (2011, "Better hypothesis testing for statistical
machine translation: controlling for optimizer instability") show that one
run per system confounds the systems' difference with the luck of one
optimisation, and ask for several replicas per system with a test over all
of them. Here the replicas are training seeds, and the test is a two-level
paired bootstrap: each resample draws the test sentences with replacement
(the same draw for both systems, so the pairing is kept) and, for each
system independently, its seeds with replacement; the statistic is the
difference of the two systems' mean corpus scores over their drawn seeds.
With one seed per system it is Koehn's (2004) paired bootstrap.

The p-value is two-sided and taken from the bootstrap distribution centred
on the observed difference (Efron and Tibshirani's way of testing with a
bootstrap; Berg-Kirkpatrick et al. 2012 use the one-sided form): the share
of resamples whose difference lies at least as far from the observed one as
the observed one lies from 0, with the usual +1 in numerator and denominator
so that a finite number of resamples never claims p = 0.

Corpus BLEU is recomputed per resample from per-sentence sufficient
statistics (sacreBLEU's n-gram counts and lengths), which sum over a
resample exactly as over the whole corpus.
"""

import dataclasses
import statistics
from typing import Callable, Optional, Sequence

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

DEFAULT_SAMPLES = 1000
DEFAULT_SEED = 12345


@dataclasses.dataclass(frozen=True)
class SeedComparison:
    """A system against a baseline over all seeds of both.

    Attributes:
        baseline_mean, system_mean: mean corpus score over each system's seeds.
        delta: system_mean - baseline_mean.
        ci_low, ci_high: the 95% percentile interval of the resampled delta.
        p_value: two-sided, see the module docstring.
        samples: number of resamples.
        seeds: (baseline seeds, system seeds).
    """

    baseline_mean: float
    system_mean: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    samples: int
    seeds: tuple


def _metric(name):
    if name == "BLEU":
        return BLEU()
    if name == "chrF":
        return CHRF()
    raise ValueError(f"unknown metric {name!r}: BLEU or chrF")


def sentence_statistics(hypotheses: Sequence[str], references: Sequence[str], metric="BLEU"):
    """Per-sentence sufficient statistics [N, k] and the function that scores their sum."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    scorer = _metric(metric)
    # The same (private but stable) pair sacreBLEU's own significance tests use.
    stats = np.asarray(scorer._extract_corpus_statistics(list(hypotheses), [list(references)]),
                       dtype=np.float64)

    def score(summed):
        return float(scorer._compute_score_from_stats(list(summed)).score)

    return stats, score


def compare_over_seeds(baseline: Sequence[np.ndarray], system: Sequence[np.ndarray],
                       score: Callable, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                       draws: Optional[Sequence[tuple]] = None) -> SeedComparison:
    """The two-level paired bootstrap on per-sentence statistics.

    Args:
        baseline: one [N, k] statistics array per baseline seed.
        system: one [N, k] array per system seed (the same N sentences).
        score: maps summed statistics [k] to a corpus score.
        samples: number of resamples (ignored when `draws` is given).
        seed: the resampling generator's seed.
        draws: explicit resamples `(sentence indices, baseline seed indices,
            system seed indices)`, for tests.

    Returns:
        A `SeedComparison`.
    """
    if not baseline or not system:
        raise ValueError("each system needs at least one seed")
    sizes = {array.shape[0] for array in [*baseline, *system]}
    if len(sizes) != 1:
        raise ValueError(f"the outputs cover different numbers of sentences: {sorted(sizes)}")
    count = sizes.pop()

    def mean_score(arrays, seeds, indices):
        return float(np.mean([score(arrays[s][indices].sum(axis=0)) for s in seeds]))

    everything = np.arange(count)
    baseline_mean = mean_score(baseline, range(len(baseline)), everything)
    system_mean = mean_score(system, range(len(system)), everything)
    observed = system_mean - baseline_mean
    if draws is None:
        rng = np.random.default_rng(seed)
        draws = [(rng.integers(count, size=count), rng.integers(len(baseline), size=len(baseline)),
                  rng.integers(len(system), size=len(system))) for _ in range(samples)]
    deltas = np.array([mean_score(system, system_seeds, indices)
                       - mean_score(baseline, baseline_seeds, indices)
                       for indices, baseline_seeds, system_seeds in draws])
    extreme = int(np.sum(np.abs(deltas - observed) >= abs(observed) - 1e-12))
    return SeedComparison(
        baseline_mean=baseline_mean, system_mean=system_mean, delta=observed,
        ci_low=float(np.percentile(deltas, 2.5)), ci_high=float(np.percentile(deltas, 97.5)),
        p_value=(extreme + 1) / (len(deltas) + 1), samples=len(deltas),
        seeds=(len(baseline), len(system)))


def detectable_difference(baseline_scores: Sequence[float], system_scores: Sequence[float],
                          level: float = 0.05, power: float = 0.8) -> Optional[float]:
    """The smallest difference of mean scores that seeds this many and this spread can detect.

    How many seeds a comparison needs is set by how far one system's runs
    scatter: with a seed-to-seed standard deviation of 0.6 BLEU, three seeds a
    system cannot show a 0.5 BLEU gain however many test sentences there are.
    This is the normal-approximation answer for a two-sided test at `level`
    with the given power, from the pooled sample variance of the two
    systems' per-seed corpus scores (equal variances assumed):
    (z[1 - level/2] + z[power]) * sd_pooled * sqrt(1/n_baseline + 1/n_system).
    It counts the seed variance only; the two-level bootstrap adds the test
    sentences' variance, so it is a lower bound on what that test resolves.

    Args:
        baseline_scores: one corpus score per baseline seed.
        system_scores: one corpus score per system seed.
        level: two-sided significance level (not the decoder's length penalty alpha).
        power: the probability of detecting a true difference of the returned size.

    Returns:
        The difference, in the scores' units; None when neither system has two
        seeds (no spread to estimate).
    """
    n_base, n_sys = len(baseline_scores), len(system_scores)
    if n_base + n_sys <= 2 or not n_base or not n_sys:
        return None
    squares = sum((len(scores) - 1) * statistics.variance(scores)
                  for scores in (baseline_scores, system_scores) if len(scores) > 1)
    pooled_sd = (squares / (n_base + n_sys - 2)) ** 0.5
    normal = statistics.NormalDist()
    z = normal.inv_cdf(1 - level / 2) + normal.inv_cdf(power)
    return z * pooled_sd * (1 / n_base + 1 / n_sys) ** 0.5


def compare_translations(baseline: Sequence[Sequence[str]], system: Sequence[Sequence[str]],
                         references: Sequence[str], metric: str = "BLEU",
                         samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED) -> SeedComparison:
    """`compare_over_seeds` of translations: one list of hypotheses per seed of each system."""
    score = None
    arrays = []
    for hypotheses in [*baseline, *system]:
        stats, score = sentence_statistics(hypotheses, references, metric)
        arrays.append(stats)
    return compare_over_seeds(arrays[:len(baseline)], arrays[len(baseline):], score,
                              samples=samples, seed=seed)
