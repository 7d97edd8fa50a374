"""Tests for syntax_t2t.layers.blackout: BlackOut (Ji et al. 2016) and the full softmax."""

import math

import keras
import numpy as np
import pytest
from keras import ops
from layer_gradients import value_and_gradients

from syntax_t2t.layers.blackout import BlackOut, blackout_loss, log1mexp

pytestmark = pytest.mark.backends


def numpy(value):
    return ops.convert_to_numpy(value)


def naive_blackout_loss(logits, target, samples, q):
    """Ji et al.'s loss for one position, written out with Python loops.

    Args:
        logits: [V] float64, z.
        target: the target word i.
        samples: the sampled words S_K (repeats allowed).
        q: [V] the noise distribution.
    """
    negatives = [j for j in samples if j != target]
    weighted = {j: math.exp(logits[j]) / q[j] for j in [target] + negatives}
    normaliser = weighted[target] + sum(weighted[j] for j in negatives)
    loss = -math.log(weighted[target] / normaliser)
    for j in negatives:
        loss -= math.log(1.0 - weighted[j] / normaliser)
    return loss


def test_the_loss_equals_its_formula():
    rng = np.random.default_rng(0)
    vocab, positions = 7, 5
    logits = rng.normal(size=(positions, vocab)) * 2
    q = rng.uniform(0.1, 1.0, vocab)
    q /= q.sum()
    targets = np.array([3, 1, 3, 6, 2])
    samples = np.array([1, 3, 3, 5, 0, 6])  # repeats, and targets among the samples
    losses = blackout_loss(
        logits[np.arange(positions), targets].astype(np.float32),
        logits[:, samples].astype(np.float32),
        np.log(q[targets]).astype(np.float32), np.log(q[samples]).astype(np.float32),
        samples[None, :] == targets[:, None])
    expected = [naive_blackout_loss(logits[n], targets[n], samples, q) for n in range(positions)]
    np.testing.assert_allclose(numpy(losses), expected, rtol=1e-5)


def test_with_every_other_word_sampled_once_under_uniform_q_it_is_the_softmax_loss():
    # Uniform weights cancel and the normaliser is the full softmax's:
    # loss = -log p(i) - sum_{j != i} log(1 - p(j)).
    logits = np.array([0.5, -1.0, 2.0, 0.0])
    p = np.exp(logits) / np.exp(logits).sum()
    log_q = np.full(4, -math.log(4))
    target, samples = 2, np.array([0, 1, 3])
    loss = blackout_loss(np.array([logits[target]], np.float32),
                         np.array([logits[samples]], np.float32),
                         np.array([log_q[target]], np.float32),
                         log_q[samples].astype(np.float32), np.zeros([1, 3], bool))
    expected = -math.log(p[target]) - sum(math.log(1 - p[j]) for j in samples)
    assert float(loss[0]) == pytest.approx(expected, rel=1e-5)


def test_log1mexp_is_accurate_and_has_finite_gradients():
    # float32: the dtype the loss runs in (JAX has no float64 by default).
    x = keras.Variable(np.array([-1e-6, -1e-3, -0.5, -math.log(2), -1.0, -30.0, -math.inf]),
                       dtype="float32")
    y = numpy(log1mexp(x))
    expected = [math.log(-math.expm1(v)) if v > -1 else math.log1p(-math.exp(v))
                for v in numpy(x)[:-1].astype(np.float64)]
    np.testing.assert_allclose(y[:-1], expected, rtol=1e-5)
    assert y[-1] == 0.0
    _, (gradient,) = value_and_gradients(lambda: ops.sum(log1mexp(x)), [x])
    assert np.all(np.isfinite(numpy(gradient)))


def make_layer(vocab=6, width=3, samples=4, beta=0.4, seed=1):
    layer = BlackOut(vocab, samples, beta=beta, seed=seed)
    layer.build((None, width))
    rng = np.random.default_rng(seed)
    layer.kernel.assign(rng.normal(size=(vocab, width)))
    layer.bias.assign(rng.normal(size=vocab))
    return layer


def test_the_layer_counts_targets_then_scores_its_samples_by_the_formula():
    layer = make_layer()
    layer.unigram_counts.assign([0, 5, 0, 2, 1, 0])  # counts from earlier batches
    rng = np.random.default_rng(2)
    states = rng.normal(size=(2, 3, 3)).astype(np.float32)
    targets = np.array([[1, 2, 0], [3, 1, 1]])  # 0 is padding
    samples = np.array([4, 1, 3, 3])
    loss = layer.loss(states, targets, samples=samples)
    counts = np.array([0, 8, 1, 3, 1, 0], np.float64)
    np.testing.assert_array_equal(numpy(layer.unigram_counts), counts)
    q = np.where(counts > 0, counts ** 0.4, 0.0)
    q /= q.sum()
    logits = (states.reshape(-1, 3).astype(np.float64) @ numpy(layer.kernel).T
              + numpy(layer.bias))
    flat_targets = targets.reshape(-1)
    expected = np.mean([naive_blackout_loss(logits[n], flat_targets[n], samples, q)
                        for n in range(flat_targets.size) if flat_targets[n] != 0])
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_samples_follow_the_unigram_distribution_raised_to_beta():
    layer = make_layer(vocab=5, beta=0.5)
    layer.unigram_counts.assign([0, 1, 4, 16, 0])  # q ~ 0, 1, 2, 4, 0
    samples = numpy(layer.draw_samples(20_000))
    frequencies = np.bincount(samples, minlength=5) / samples.size
    np.testing.assert_allclose(frequencies, [0, 1 / 7, 2 / 7, 4 / 7, 0], atol=0.015)


def test_inference_uses_the_full_softmax_logits():
    layer = make_layer()
    states = np.random.default_rng(3).normal(size=(2, 4, 3)).astype(np.float32)
    expected = states @ numpy(layer.kernel).T + numpy(layer.bias)
    np.testing.assert_allclose(numpy(layer(states)), expected, rtol=1e-5, atol=1e-5)


def test_training_lowers_the_loss_and_raises_the_target_probability():
    layer = make_layer(vocab=8, width=4, samples=6)
    states = np.random.default_rng(4).normal(size=(1, 4, 4)).astype(np.float32)
    targets = np.array([[5, 2, 7, 1]])
    optimizer = keras.optimizers.SGD(0.5)
    weights = [layer.kernel, layer.bias]

    def target_log_prob():
        log_probs = numpy(ops.log_softmax(layer(states)[0], axis=-1))
        return float(np.mean(log_probs[np.arange(4), targets[0]]))

    before = target_log_prob()
    # The counts and the sampler's seed change every step: the state the loss updates.
    state = layer.non_trainable_variables
    for _ in range(30):
        _, gradients = value_and_gradients(lambda: layer.loss(states, targets), weights, state)
        optimizer.apply(gradients, weights)
    assert target_log_prob() > before + 0.5
    assert numpy(layer.unigram_counts).sum() == 30 * 4


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="at least one sample"):
        BlackOut(10, 0)
    with pytest.raises(ValueError, match=r"beta must lie in \[0, 1\], got 1.5"):
        BlackOut(10, 5, beta=1.5)
