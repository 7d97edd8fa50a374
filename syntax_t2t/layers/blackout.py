"""The output softmax, trained with BlackOut (Ji et al. 2016) or in full.

BlackOut replaces the softmax over the whole vocabulary in training by a
weighted softmax over the target word i and K sampled words S_K:

    a_j     = z_j - log q_j                      (weight 1 / q_j on exp z_j)
    p~(j)   = exp(a_j) / sum_{k in {i} + S_K} exp(a_k)
    loss    = -log p~(i) - sum_{j in S_K} log(1 - p~(j))

where z are the logits `W s + b` and q is the noise distribution: the
unigram distribution of the training targets raised to the power beta
(Mikolov et al. 2013; beta = 0.4 as Ji et al. recommend), renormalised. As
in Ji et al. one sample set serves every target position of a batch, and
samples equal to a position's target word are left out of that position's
sum. Samples are drawn with replacement, so a frequent word can be a negative
several times (Eriguchi et al. 2016, Section 5.1). At inference the same
weights give the full softmax (`logits`).

The unigram counts are estimated from the training data as training reads
it: every BlackOut step first adds its target tokens to a non-trainable
count of each word (checkpointed with the model), then samples from the
counts so far. The target words of the batch are thus always counted (q > 0,
so their weights are finite), a word never seen in training is never a
negative, and after a few hundred batches the counts are the unigram
distribution of the training targets up to sampling noise.
"""

import math

import keras
from keras import ops

PAD_ID = 0


def log1mexp(x):
    """`log(1 - exp(x))` for x <= 0, accurate for x near 0 and very negative x.

    Both branches only see inputs where they are finite, so neither
    poisons the gradient of `where` with NaN.
    """
    x = ops.convert_to_tensor(x)
    cut = -math.log(2.0)
    near_zero = x > cut
    far = ops.log1p(-ops.exp(ops.where(near_zero, cut, x)))
    near = ops.log(-ops.expm1(ops.minimum(ops.where(near_zero, x, cut), -1e-7)))
    return ops.where(near_zero, near, far)


def blackout_loss(target_logits, sample_logits, target_log_q, sample_log_q, sample_is_target):
    """The BlackOut loss of each target position (module docstring).

    Args:
        target_logits: float32 [N], z_i of each position's target word.
        sample_logits: float32 [N, K], z_j of the K samples at each position.
        target_log_q: float32 [N], log q of each target word.
        sample_log_q: float32 [K], log q of each sample.
        sample_is_target: bool [N, K], samples equal to the position's
            target; they are left out.

    Returns:
        float32 [N], `-log p~(i) - sum_j log(1 - p~(j))`.
    """
    target_scores = target_logits - target_log_q
    sample_scores = ops.where(sample_is_target, -math.inf, sample_logits - sample_log_q[None, :])
    log_normaliser = ops.logsumexp(
        ops.concatenate([target_scores[:, None], sample_scores], axis=1), axis=1)
    target_log_prob = target_scores - log_normaliser
    negatives = ops.where(sample_is_target, 0.0,
                          log1mexp(sample_scores - log_normaliser[:, None]))
    return -(target_log_prob + ops.sum(negatives, axis=1))


class BlackOut(keras.layers.Layer):
    """The softmax layer `z = W s + b`, with the BlackOut training loss.

    Args:
        vocab_size: V.
        num_samples: K, negative samples per training step.
        beta: the unigram counts are raised to this power to give q.
        kernel_initializer: initializer of W [V, D] (the paper: zeros).
        seed: seeds the sampling (None: from Keras's global seed).
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, vocab_size: int, num_samples: int, beta: float = 0.4,
                 kernel_initializer="zeros", seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        if num_samples < 1:
            raise ValueError(f"BlackOut needs at least one sample, got num_samples={num_samples}")
        if not 0.0 <= beta <= 1.0:
            raise ValueError(f"BlackOut's beta must lie in [0, 1], got {beta}")
        self.vocab_size = int(vocab_size)
        self.num_samples = int(num_samples)
        self.beta = float(beta)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.seed_generator = keras.random.SeedGenerator(seed)

    def build(self, input_shape):
        """Creates W [V, D], b [V] (zeros) and the unigram counts [V]."""
        self.kernel = self.add_weight(shape=(self.vocab_size, input_shape[-1]), name="kernel",
                                      initializer=self.kernel_initializer)
        self.bias = self.add_weight(shape=(self.vocab_size,), name="bias", initializer="zeros")
        self.unigram_counts = self.add_weight(
            shape=(self.vocab_size,), name="unigram_counts", initializer="zeros",
            trainable=False, autocast=False, dtype="float32", aggregation="sum")
        self.built = True

    def call(self, inputs):
        """The full logits, float32 [..., V], of inputs [..., D]."""
        return self.logits(inputs)

    def logits(self, inputs):
        """The full logits, float32 [..., V], of inputs [..., D]."""
        logits = ops.matmul(inputs, ops.transpose(ops.cast(self.kernel, inputs.dtype)))
        return ops.cast(logits, "float32") + ops.cast(self.bias, "float32")

    def noise_log_probs(self):
        """log q [V]: the unigram counts so far raised to `beta`, renormalised (-inf if unseen)."""
        counts = ops.convert_to_tensor(self.unigram_counts)
        powered = ops.where(counts > 0, self.beta * ops.log(ops.maximum(counts, 1.0)), -math.inf)
        return powered - ops.logsumexp(powered)

    def draw_samples(self, num_samples: int | None = None):
        """Word ids drawn with replacement from q: int32 [num_samples] (default K)."""
        num_samples = self.num_samples if num_samples is None else num_samples
        return ops.reshape(keras.random.categorical(
            self.noise_log_probs()[None, :], num_samples, seed=self.seed_generator,
            dtype="int32"), [-1])

    def loss(self, inputs, targets, samples=None):
        """The BlackOut loss of a training batch; first counts its target words.

        Args:
            inputs: [B, T, D], the states the softmax reads.
            targets: int [B, T], 0 = padding.
            samples: int [K'], negatives to use instead of drawing K (for
                tests and analyses).

        Returns:
            float32 scalar: the mean loss over non-padding target tokens.
        """
        targets = ops.reshape(ops.cast(targets, "int32"), [-1])
        weights = ops.cast(ops.not_equal(targets, PAD_ID), "float32")
        self.unigram_counts.assign_add(
            ops.segment_sum(weights, targets, num_segments=self.vocab_size))
        log_q = self.noise_log_probs()
        samples = (self.draw_samples() if samples is None
                   else ops.reshape(ops.cast(samples, "int32"), [-1]))

        states = ops.reshape(inputs, [-1, inputs.shape[-1]])
        kernel = ops.cast(self.kernel, states.dtype)
        bias = ops.cast(self.bias, "float32")
        target_logits = ops.cast(ops.sum(states * ops.take(kernel, targets, axis=0), axis=-1),
                                 "float32") + ops.take(bias, targets)
        sample_logits = ops.cast(
            ops.matmul(states, ops.transpose(ops.take(kernel, samples, axis=0))),
            "float32") + ops.take(bias, samples)[None, :]
        # Padding (never counted: log q = -inf) gets a finite stand-in; its weight is 0.
        target_log_q = ops.where(weights > 0, ops.take(log_q, targets), 0.0)
        losses = blackout_loss(target_logits, sample_logits, target_log_q,
                               ops.take(log_q, samples),
                               ops.equal(samples[None, :], targets[:, None]))
        return ops.sum(losses * weights) / ops.maximum(ops.sum(weights), 1.0)

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, num_samples=self.num_samples, beta=self.beta,
                      kernel_initializer=keras.initializers.serialize(self.kernel_initializer))
        return config
