"""The seed-aware significance test against hand computation and sacreBLEU."""

import math
import statistics

import numpy as np
import pytest
import sacrebleu
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from syntax_t2t.evaluation import seed_significance


def _accuracy(summed):
    # A toy corpus metric: per-sentence statistics are (correct, 1).
    return 100.0 * summed[0] / summed[1]


def _stats(correct):
    return np.array([[c, 1.0] for c in correct])


def test_two_level_bootstrap_by_hand():
    """Three sentences, two baseline seeds, one system seed, three explicit resamples."""
    baseline = [_stats([1, 0, 0]), _stats([0, 0, 1])]  # 33.3 and 33.3
    system = [_stats([1, 1, 0])]  # 66.7
    draws = [
        # sentences 0, 0, 1; baseline seeds (0, 0); system seed 0:
        # system 100 * (1+1+1)/3 = 100, baseline seed 0: (1+1+0)/3 = 66.7 -> delta 33.3
        (np.array([0, 0, 1]), np.array([0, 0]), np.array([0])),
        # sentences 2, 2, 2; baseline seeds (1, 0): seed 1 gives 100, seed 0 gives 0
        # -> baseline 50; system 0 -> delta -50
        (np.array([2, 2, 2]), np.array([1, 0]), np.array([0])),
        # sentences 0, 1, 2; seeds (1, 1): baseline 33.3, system 66.7 -> delta 33.3
        (np.array([0, 1, 2]), np.array([1, 1]), np.array([0])),
    ]
    result = seed_significance.compare_over_seeds(baseline, system, _accuracy, draws=draws)
    assert result.baseline_mean == pytest.approx(100 / 3)
    assert result.system_mean == pytest.approx(200 / 3)
    assert result.delta == pytest.approx(100 / 3)
    # |delta_r - observed| >= |observed|: only the second draw (|-50 - 33.3| = 83.3).
    assert result.p_value == pytest.approx((1 + 1) / (3 + 1))
    assert result.samples == 3 and result.seeds == (2, 1)
    deltas = [100 / 3, -50, 100 / 3]
    assert result.ci_low == pytest.approx(np.percentile(deltas, 2.5))


def test_identical_systems_are_not_significant():
    stats = [_stats([1, 0, 1, 1]), _stats([0, 1, 1, 0])]
    result = seed_significance.compare_over_seeds(stats, stats, _accuracy, samples=200)
    assert result.delta == 0.0 and result.p_value == 1.0


def test_a_clear_difference_is_significant_and_a_seed_lottery_is_not():
    rng = np.random.default_rng(0)
    count = 300
    good = [_stats(rng.random(count) < 0.7) for _ in range(3)]
    bad = [_stats(rng.random(count) < 0.4) for _ in range(3)]
    assert seed_significance.compare_over_seeds(bad, good, _accuracy, samples=300).p_value < 0.01
    # One lucky seed of a system whose other seeds are the baseline's: with
    # seed variance in the test, the difference of means is not significant.
    same = [_stats(rng.random(count) < 0.5) for _ in range(3)]
    lucky = same[:2] + [_stats(rng.random(count) < 0.75)]
    assert seed_significance.compare_over_seeds(same, lucky, _accuracy,
                                                samples=300).p_value > 0.05


def test_bleu_from_sentence_statistics_is_sacrebleus_corpus_bleu():
    references = ["the cat sat on the mat", "a dog barks", "it rains today in Prague"]
    hypotheses = ["the cat sat on a mat", "a dog barked", "today it rains in Prague"]
    stats, score = seed_significance.sentence_statistics(hypotheses, references)
    assert stats.shape[0] == 3
    expected = sacrebleu.corpus_bleu(hypotheses, [references]).score
    assert score(stats.sum(axis=0)) == pytest.approx(expected)
    # A resample's statistics score as the resampled corpus does.
    indices = [0, 0, 2]
    resampled = sacrebleu.corpus_bleu([hypotheses[i] for i in indices],
                                      [[references[i] for i in indices]]).score
    assert score(stats[indices].sum(axis=0)) == pytest.approx(resampled)


def test_compare_translations_one_seed_each_is_koehns_paired_bootstrap():
    references = ["a b c d", "e f g h", "i j k l", "m n o p"] * 5
    baseline = [["a b c d", "e f x x", "i x x l", "m n o p"] * 5]
    system = [["a b c d", "e f g h", "i j k l", "m n x p"] * 5]
    result = seed_significance.compare_translations(baseline, system, references, samples=200)
    assert result.system_mean > result.baseline_mean
    assert result.seeds == (1, 1)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="different numbers of sentences"):
        seed_significance.compare_over_seeds([_stats([1, 0])], [_stats([1])], _accuracy)


# z[0.975] + z[0.8] from a printed normal table: 1.95996 + 0.84162.
_Z_5_PERCENT_80_POWER = 2.80158


def test_detectable_difference_by_hand():
    """docs/results.md §0: `transformer` against `dep_parse_attention`, three seeds each."""
    baseline, system = [38.21, 39.09, 39.71], [39.33, 38.71, 38.92]
    # Means 39.00333 and 38.98667; squared deviations summed: 1.13627 and 0.19887.
    squares = (0.79333 ** 2 + 0.08667 ** 2 + 0.70667 ** 2
               + 0.34333 ** 2 + 0.27667 ** 2 + 0.06667 ** 2)
    pooled_sd = (squares / 4) ** 0.5  # 0.57774
    expected = _Z_5_PERCENT_80_POWER * pooled_sd * (2 / 3) ** 0.5  # 1.3216
    assert seed_significance.detectable_difference(
        baseline, system, distribution="normal") == pytest.approx(expected, abs=1e-3)
    # Student's t at 4 degrees of freedom, from a printed table: t[0.975] = 2.77645,
    # t[0.80] = 0.94096; 3.71741 * 0.57774 * 0.81650 = 1.7536.
    assert seed_significance.detectable_difference(baseline, system) == pytest.approx(
        (2.77645 + 0.94096) * pooled_sd * (2 / 3) ** 0.5, abs=1e-3)


def test_seeds_needed_for_half_a_bleu_at_the_record_sd():
    """docs/results.md: at the pooled seed sd 0.576, +0.5 needs about 22 seeds a system; the
    pre-registration's 20 seeds a system (six systems, 114 degrees of freedom) detect +0.51."""
    assert seed_significance.seeds_needed(0.576, 0.5, systems=2) == 22
    assert seed_significance.detectable_difference_from_sd(0.576, 114, 20, 20) == pytest.approx(
        0.515, abs=1e-3)
    assert seed_significance.seeds_needed(0.576, 0.5, systems=6) == 22
    assert seed_significance.seeds_needed(0.576, 0.52, systems=6) == 20
    assert seed_significance.seeds_needed(0.0, 0.5) == 2
    assert seed_significance.seeds_needed(50.0, 0.01, max_seeds=100) is None
    with pytest.raises(ValueError):
        seed_significance.seeds_needed(0.5, 0.0)


@settings(max_examples=25, deadline=None)
@given(sd=st.floats(0.05, 2.0), difference=st.floats(0.2, 3.0), systems=st.integers(2, 8))
def test_seeds_needed_is_the_first_count_of_a_naive_search(sd, difference, systems):
    def detectable(n):
        return seed_significance.detectable_difference_from_sd(sd, systems * (n - 1), n, n)

    naive = next((n for n in range(2, 201) if detectable(n) <= difference), None)
    assert seed_significance.seeds_needed(sd, difference, systems=systems, max_seeds=200) == naive


def test_detectable_difference_uses_whichever_system_has_a_spread():
    # One baseline seed: the spread is the system's alone (sd 1 over 3 seeds).
    assert seed_significance.detectable_difference(
        [30.0], [29.0, 30.0, 31.0], distribution="normal") == pytest.approx(
            _Z_5_PERCENT_80_POWER * 1.0 * (1 + 1 / 3) ** 0.5, abs=1e-4)
    # t at 2 degrees of freedom: t[0.975] = 4.30265, t[0.80] = 1.06066.
    assert seed_significance.detectable_difference([30.0], [29.0, 30.0, 31.0]) == pytest.approx(
        (4.30265 + 1.06066) * 1.0 * (1 + 1 / 3) ** 0.5, abs=1e-4)
    assert seed_significance.detectable_difference([30.0], [31.0]) is None
    assert seed_significance.detectable_difference([], [31.0, 30.0]) is None


def test_detectable_difference_shrinks_with_seeds_and_grows_with_power():
    three = seed_significance.detectable_difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    twelve = seed_significance.detectable_difference([1.0, 2.0, 3.0] * 4, [1.0, 2.0, 3.0] * 4)
    assert twelve < three / 1.9  # 4x the seeds: about half (the pooled sd also shrinks a little)
    assert seed_significance.detectable_difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0],
                                                    power=0.9) > three
    assert seed_significance.detectable_difference([1.0, 2.0, 3.0], [1.0, 2.0, 3.0],
                                                    level=0.01) > three


def test_pooled_seed_sd_by_hand():
    # Squared deviations: 2 (over 2 df) and 8 (over 2 df); one seed adds nothing.
    pooled = seed_significance.pooled_seed_sd([[1.0, 2.0, 3.0], [4.0, 6.0, 8.0], [9.0]])
    assert (pooled.df, pooled.systems) == (4, 2)
    assert pooled.sd == pytest.approx(math.sqrt(10 / 4))
    assert seed_significance.pooled_seed_sd([[1.0], [2.0]]) is None


def test_t_test_of_one_seed_against_three_with_a_pooled_sd_by_hand():
    """Finding 1 of issue 32: tree_distance (one seed, +1.29) against transformer (three)."""
    transformer = [38.21, 39.09, 39.71]
    tree_distance = [39.00333 + 1.29]
    pooled = seed_significance.PooledSd(sd=0.576, df=4, systems=2)
    result = seed_significance.seed_t_test(transformer, tree_distance, pooled)
    t = 1.29 / (0.576 * math.sqrt(1 + 1 / 3))  # 1.9395
    # At 4 degrees of freedom P(|T| < t) = 1.5 u - 0.5 u^3 with u = t / sqrt(4 + t^2).
    u = t / math.sqrt(4 + t * t)
    assert result.t == pytest.approx(t, abs=1e-4)
    assert result.p_value == pytest.approx(1 - (1.5 * u - 0.5 * u ** 3), abs=1e-4)  # 0.124
    assert result.seeds == (3, 1) and result.df == 4


def test_t_test_pools_the_two_systems_without_a_given_sd():
    # sd 1 over 4 df, delta 2, standard error sqrt(2/3).
    result = seed_significance.seed_t_test([1.0, 2.0, 3.0], [3.0, 4.0, 5.0])
    t = 2 / math.sqrt(2 / 3)
    u = t / math.sqrt(4 + t * t)
    assert result.p_value == pytest.approx(1 - (1.5 * u - 0.5 * u ** 3), abs=1e-6)
    assert seed_significance.seed_t_test([1.0], [2.0]) is None
    assert seed_significance.seed_t_test([1.0, 1.0], [2.0, 2.0]) is None  # no spread


def test_ten_thousand_resamples_by_default():
    assert seed_significance.DEFAULT_SAMPLES == 10_000


def test_the_sd_interval_of_the_pilots_first_two_seeds_by_hand():
    """results.md: relative_tree_distance seeds 1 and 2, 40.22 and 40.54 (sd 0.226, one df).
    Printed chi-square(1) quantiles: 0.000982 and 5.024; 0.0642 at 20%."""
    sd = statistics.stdev([40.22, 40.54])
    low, high = seed_significance.sd_confidence_interval(sd, 1)
    assert (low, high) == pytest.approx((sd / 5.024 ** 0.5, sd / 0.000982 ** 0.5), rel=1e-3)
    assert high / low == pytest.approx(71.5, abs=0.1)  # one df says next to nothing
    assert seed_significance.sd_upper_confidence_bound(sd, 1, 0.8) == pytest.approx(
        sd / 0.0642 ** 0.5, rel=1e-3)
    # At six df (two seeds of each of six systems): a factor of 3.4.
    low, high = seed_significance.sd_confidence_interval(1.0, 6)
    assert (low, high) == pytest.approx(((6 / 14.449) ** 0.5, (6 / 1.237) ** 0.5), rel=1e-3)


@pytest.mark.parametrize("seeds", [2, 4])
def test_the_sd_interval_and_bound_cover_the_true_sd_as_often_as_they_say(seeds):
    """Simulated pilots: three systems, `seeds` normal scores each, true sd 0.6."""
    rng = np.random.default_rng(7)
    covered = bounded = 0
    trials = 4000
    for _ in range(trials):
        pooled = seed_significance.pooled_seed_sd(
            rng.normal(40.0, 0.6, size=(3, seeds)).tolist())
        low, high = seed_significance.sd_confidence_interval(pooled.sd, pooled.df)
        covered += low <= 0.6 <= high
        bounded += 0.6 <= seed_significance.sd_upper_confidence_bound(pooled.sd, pooled.df)
    # Binomial sd of the shares: 0.0034 and 0.0063.
    assert covered / trials == pytest.approx(0.95, abs=0.015)
    assert bounded / trials == pytest.approx(0.80, abs=0.025)


def test_equal_sd_test_by_hand():
    # Variances 2 and 8 at one degree of freedom each: pooled 5, so the statistic is
    # (2 ln 5 - ln 2 - ln 8) / (1 + (1 + 1 - 1/2) / 3) = ln(25/16) / 1.5, and at one degree of
    # freedom P(chi-square > x) = erfc(sqrt(x / 2)).
    result = seed_significance.equal_sd_test([[0.0, 2.0], [0.0, 4.0], [7.0]])
    statistic = math.log(25 / 16) / 1.5
    assert result.statistic == pytest.approx(statistic, rel=1e-12)
    assert result.p_value == pytest.approx(math.erfc(math.sqrt(statistic / 2)), rel=1e-9)
    assert (result.df, result.systems) == (1, 2)


def test_equal_sd_test_needs_two_systems_with_a_spread():
    assert seed_significance.equal_sd_test([[1.0, 2.0], [3.0]]) is None
    assert seed_significance.equal_sd_test([[1.0, 2.0], [3.0, 3.0]]) is None


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.floats(-50, 50), min_size=2, max_size=5), min_size=2, max_size=6),
       st.floats(0.01, 100), st.floats(-100, 100))
def test_equal_sd_test_ignores_units_and_offsets(score_lists, scale, offset):
    assume(all(statistics.variance(scores) > 1e-6 for scores in score_lists))
    plain = seed_significance.equal_sd_test(score_lists)
    moved = seed_significance.equal_sd_test(
        [[scale * score + offset for score in scores] for scores in score_lists])
    assert moved.statistic == pytest.approx(plain.statistic, rel=1e-6, abs=1e-9)


def test_equal_sd_test_rejects_as_often_as_it_says_and_finds_an_unequal_sd():
    rng = np.random.default_rng(7)
    # Six systems of 20 seeds (the confirmatory experiment) with one sd: about 5% below 0.05;
    # at two seeds a system the test is conservative.
    for seeds, low, high in ((20, 0.038, 0.062), (2, 0.0, 0.05)):
        rejected = np.mean([seed_significance.equal_sd_test(
            rng.normal(size=(6, seeds)).tolist()).p_value < 0.05 for _ in range(4000)])
        assert low <= rejected <= high, (seeds, rejected)
    wider = rng.normal(size=(6, 20))
    wider[0] *= 3.0
    assert seed_significance.equal_sd_test(wider.tolist()).p_value < 0.001
