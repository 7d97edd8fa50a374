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

With one seed a system the bootstrap cannot see the system's own seed
variance, and with two or three it sees too little of it: on the grid of
docs/results.md a nominal 5% single-seed test rejected a true null 11-23%
of the time. `seed_t_test` is the test on the seeds' corpus scores alone:
Student's t on the difference of the means with a seed standard deviation
pooled over every system of the comparison that has several seeds
(`pooled_seed_sd`), so that a system with one seed is tested against the
spread the others show. It counts the seed variance and not the test
sentences' (the test set is fixed: it asks whether retraining would
reproduce the difference on this test set).
"""

import dataclasses
import math
import statistics
from typing import Callable, Optional, Sequence

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

from syntax_t2t.evaluation import chi_square, student_t

# Resamples are cheap beside a training run; 10,000 keep the Monte Carlo
# error of a p near 0.05 at about 0.002.
DEFAULT_SAMPLES = 10_000
DEFAULT_SEED = 12345
DISTRIBUTIONS = ("t", "normal")


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


@dataclasses.dataclass(frozen=True)
class PooledSd:
    """A seed standard deviation pooled over systems, and its degrees of freedom.

    Attributes:
        sd: sqrt(sum over systems of squared deviations from the system's
            mean / df).
        df: sum over systems of (seeds - 1).
        systems: how many systems contributed (those with two seeds or more).
    """

    sd: float
    df: int
    systems: int


def pooled_seed_sd(score_lists: Sequence[Sequence[float]]) -> Optional[PooledSd]:
    """The seed standard deviation pooled over systems (equal variances assumed).

    Args:
        score_lists: per system, one corpus score per seed; systems with
            fewer than two seeds add nothing.

    Returns:
        None when no system has two seeds.
    """
    spread = [list(scores) for scores in score_lists if len(scores) > 1]
    df = sum(len(scores) - 1 for scores in spread)
    if not df:
        return None
    squares = sum((len(scores) - 1) * statistics.variance(scores) for scores in spread)
    return PooledSd(sd=(squares / df) ** 0.5, df=df, systems=len(spread))


def sd_confidence_interval(sd: float, df: int, level: float = 0.95) -> tuple[float, float]:
    """The two-sided confidence interval of the true seed sd behind a pooled `sd`.

    With normal seed scores df * sd^2 / sigma^2 is chi-square with df degrees
    of freedom, so sigma lies in [sd * sqrt(df / q_high), sd * sqrt(df / q_low)]
    with q the chi-square quantiles at (1 +- level) / 2. At one degree of
    freedom the 95% interval spans a factor of about 72; at six, of 3.4.

    Args:
        sd: a pooled seed sd (`pooled_seed_sd`).
        df: its degrees of freedom.
        level: the interval's coverage.

    Returns:
        (low, high).
    """
    tail = (1.0 - level) / 2.0
    return (sd * (df / chi_square.quantile(1.0 - tail, df)) ** 0.5,
            sd * (df / chi_square.quantile(tail, df)) ** 0.5)


def sd_upper_confidence_bound(sd: float, df: int, confidence: float = 0.8) -> float:
    """The one-sided upper confidence bound of the true seed sd behind a pooled `sd`.

    Planning a seed count from a pilot's sd alone falls short of the power
    aimed at about half the time, since the sd is as likely to be low as
    high; Browne (1995, "On the use of a pilot sample for sample size
    determination") plans from an upper confidence bound of it instead.

    Args:
        sd, df: as in `sd_confidence_interval`.
        confidence: P(sigma <= the bound).
    """
    return sd * (df / chi_square.quantile(1.0 - confidence, df)) ** 0.5


@dataclasses.dataclass(frozen=True)
class EqualSdTest:
    """Bartlett's test that every system has the same seed sd (what pooling assumes).

    Attributes:
        statistic: Bartlett's corrected statistic, chi-square under the null.
        df: systems - 1.
        p_value: upper tail of chi-square(df) at `statistic`.
        systems: the systems tested (those with two seeds or more).
    """

    statistic: float
    df: int
    p_value: float
    systems: int


def equal_sd_test(score_lists: Sequence[Sequence[float]]) -> Optional[EqualSdTest]:
    """Bartlett's (1937) test of equal seed variances across systems.

    `pooled_seed_sd` and `seed_t_test` assume one seed sd for every system.
    With n_i seeds, s_i^2 the variance of system i, N - k the pooled degrees
    of freedom and s^2 the pooled variance, the statistic is
    [(N - k) ln s^2 - sum (n_i - 1) ln s_i^2] / C with
    C = 1 + (sum 1 / (n_i - 1) - 1 / (N - k)) / (3 (k - 1)).
    It assumes normal scores and has little power with two or three seeds a
    system: a large p says the data do not contradict pooling, not that the
    sds are equal.

    Args:
        score_lists: per system, one corpus score per seed; systems with
            fewer than two seeds are left out.

    Returns:
        None with fewer than two such systems, or when a system's seeds all
        score the same (its log variance is undefined).
    """
    spread = [list(scores) for scores in score_lists if len(scores) > 1]
    variances = [statistics.variance(scores) for scores in spread]
    if len(spread) < 2 or min(variances) <= 0.0:
        return None
    pooled = pooled_seed_sd(spread)
    dfs = [len(scores) - 1 for scores in spread]
    correction = 1.0 + (sum(1.0 / df for df in dfs) - 1.0 / pooled.df) / (3.0 * (len(spread) - 1))
    statistic = (pooled.df * math.log(pooled.sd ** 2)
                 - sum(df * math.log(variance) for df, variance in zip(dfs, variances))) / correction
    df = len(spread) - 1
    return EqualSdTest(statistic=statistic, df=df,
                       p_value=1.0 - chi_square.cdf(statistic, df), systems=len(spread))


@dataclasses.dataclass(frozen=True)
class SeedTTest:
    """Student's t test of a difference of seed means (see the module docstring).

    Attributes:
        delta: system mean - baseline mean.
        standard_error: sd * sqrt(1/n_baseline + 1/n_system).
        t: delta / standard_error.
        df: the pooled sd's degrees of freedom.
        p_value: two-sided.
        sd: the pooled seed standard deviation used.
        seeds: (baseline seeds, system seeds).
    """

    delta: float
    standard_error: float
    t: float
    df: int
    p_value: float
    sd: float
    seeds: tuple


def seed_t_test(baseline_scores: Sequence[float], system_scores: Sequence[float],
                pooled: Optional[PooledSd] = None) -> Optional[SeedTTest]:
    """Two-sided t test of the difference of two systems' mean corpus scores over seeds.

    Args:
        baseline_scores, system_scores: one corpus score per seed.
        pooled: the seed sd to use (e.g. `pooled_seed_sd` over every system of
            the report); None pools the two systems' own.

    Returns:
        None without a spread to test against (no sd, or an sd of 0).
    """
    if not baseline_scores or not system_scores:
        return None
    if pooled is None:
        pooled = pooled_seed_sd([baseline_scores, system_scores])
    if pooled is None or pooled.sd == 0:
        return None
    delta = statistics.fmean(system_scores) - statistics.fmean(baseline_scores)
    error = pooled.sd * (1 / len(baseline_scores) + 1 / len(system_scores)) ** 0.5
    t = delta / error
    return SeedTTest(delta=delta, standard_error=error, t=t, df=pooled.df,
                     p_value=student_t.two_sided_p(t, pooled.df), sd=pooled.sd,
                     seeds=(len(baseline_scores), len(system_scores)))


def detectable_difference_from_sd(sd: float, df: Optional[int], n_baseline: int, n_system: int,
                                  level: float = 0.05, power: float = 0.8,
                                  distribution: str = "t") -> float:
    """The smallest difference of means a two-sided test at `level` detects with `power`.

    (q[1 - level/2] + q[power]) * sd * sqrt(1/n_baseline + 1/n_system),
    with q the quantiles of Student's t with `df` degrees of freedom, or of
    the normal distribution.
    """
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution={distribution!r}: expected one of {', '.join(DISTRIBUTIONS)}")
    if distribution == "t":
        q = student_t.quantile(1 - level / 2, df) + student_t.quantile(power, df)
    else:
        normal = statistics.NormalDist()
        q = normal.inv_cdf(1 - level / 2) + normal.inv_cdf(power)
    return q * sd * (1 / n_baseline + 1 / n_system) ** 0.5


def detectable_difference(baseline_scores: Sequence[float], system_scores: Sequence[float],
                          level: float = 0.05, power: float = 0.8,
                          distribution: str = "t") -> Optional[float]:
    """The smallest difference of mean scores that seeds this many and this spread can detect.

    How many seeds a comparison needs is set by how far one system's runs
    scatter: with a seed-to-seed standard deviation of 0.6 BLEU, three seeds a
    system cannot show a 0.5 BLEU gain however many test sentences there are.
    This is the answer for a two-sided test at `level` with the given power,
    from the pooled sample variance of the two systems' per-seed corpus
    scores (equal variances assumed), with Student's t quantiles at
    n_baseline + n_system - 2 degrees of freedom (`distribution="t"`, the
    test `seed_t_test` makes) or the normal approximation:
    (q[1 - level/2] + q[power]) * sd_pooled * sqrt(1/n_baseline + 1/n_system).
    It counts the seed variance only; the two-level bootstrap adds the test
    sentences' variance, so it is a lower bound on what that test resolves.

    Args:
        baseline_scores: one corpus score per baseline seed.
        system_scores: one corpus score per system seed.
        level: two-sided significance level (not the decoder's length penalty alpha).
        power: the probability of detecting a true difference of the returned size.
        distribution: `t` or `normal`.

    Returns:
        The difference, in the scores' units; None when neither system has two
        seeds (no spread to estimate).
    """
    n_base, n_sys = len(baseline_scores), len(system_scores)
    if not n_base or not n_sys:
        return None
    pooled = pooled_seed_sd([baseline_scores, system_scores])
    if pooled is None:
        return None
    return detectable_difference_from_sd(pooled.sd, pooled.df, n_base, n_sys, level, power,
                                         distribution)


def seeds_needed(sd: float, difference: float, systems: int = 2, level: float = 0.05,
                 power: float = 0.8, max_seeds: int = 10_000) -> Optional[int]:
    """The fewest seeds a system with which `detectable_difference_from_sd` reaches `difference`.

    Every system of the experiment gets n seeds and the sd is pooled over all
    of them, as `seed_t_test` pools it, so the t quantiles have
    `systems * (n - 1)` degrees of freedom.

    Args:
        sd: the seed standard deviation (e.g. a pilot's `pooled_seed_sd`).
        difference: the difference of means to detect, in the scores' units.
        systems: how many systems share the pooled sd (at least 2).
        level, power: as in `detectable_difference_from_sd`.
        max_seeds: give up above this many.

    Returns:
        n >= 2, or None when even `max_seeds` seeds do not reach `difference`.
    """
    if sd < 0 or difference <= 0 or systems < 2:
        raise ValueError(f"need sd >= 0, difference > 0 and systems >= 2; got sd={sd}, "
                         f"difference={difference}, systems={systems}")

    def reaches(n: int) -> bool:
        return detectable_difference_from_sd(sd, systems * (n - 1), n, n, level, power) <= difference

    if not reaches(max_seeds):
        return None
    low, high = 1, max_seeds  # reaches(high); the detectable difference falls as n grows
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return high


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
