"""Analytic FLOPs of a Transformer training step, and the machine's measured matmul rate.

FLOPs count the matrix products only (2 per multiply-add), as model FLOPs
utilisation does (Chowdhery et al. 2022): embeddings are lookups, and
softmax, layer norm, dropout and the optimizer update are a few operations
per element, far below the products. The backward pass costs twice the
forward (a gradient for the activations and one for the weights of each
product), so a training step is 3x the forward pass.

Per sentence of `S` source and `T` target positions, width `D`, filter `F`,
target vocabulary `V`:

    encoder layer:  8 S D^2  (Q, K, V, O)  + 4 S^2 D  (scores, weighted sum)  + 4 S D F
    decoder layer:  8 T D^2 + 4 T^2 D       (self-attention)
                  + 4 T D^2 + 4 S D^2 + 4 T S D   (encoder-decoder attention)
                  + 4 T D F
    softmax layer:  2 T D V
"""

import time

import keras

from syntax_t2t.benchmarks import measure

#: Backward = 2 x forward.
TRAINING_MULTIPLIER = 3


def encoder_layer_flops(source_length, hidden_size, filter_size):
    s, d, f = source_length, hidden_size, filter_size
    return 8 * s * d * d + 4 * s * s * d + 4 * s * d * f


def decoder_layer_flops(source_length, target_length, hidden_size, filter_size):
    s, t, d, f = source_length, target_length, hidden_size, filter_size
    self_attention = 8 * t * d * d + 4 * t * t * d
    cross_attention = 4 * t * d * d + 4 * s * d * d + 4 * t * s * d
    return self_attention + cross_attention + 4 * t * d * f


def forward_flops(hparams, target_vocab_size, batch_size, source_length, target_length):
    """Matmul FLOPs of the forward pass of `transformer` on a [B, S] -> [B, T] batch."""
    d, f = hparams.hidden_size, hparams.filter_size
    per_sentence = (
        hparams.num_encoder_layers * encoder_layer_flops(source_length, d, f)
        + hparams.num_decoder_layers * decoder_layer_flops(source_length, target_length, d, f)
        + 2 * target_length * d * target_vocab_size)
    return batch_size * per_sentence


def training_step_flops(hparams, target_vocab_size, batch_size, source_length, target_length):
    """Matmul FLOPs of one training step (forward and backward)."""
    return TRAINING_MULTIPLIER * forward_flops(hparams, target_vocab_size, batch_size,
                                               source_length, target_length)


def peak_matmul_flops(size=1024, repetitions=5, iterations=10, dtype="float32"):
    """The machine's float matmul rate (FLOP/s), measured with the running Keras backend.

    Times `iterations` chained [size, size] products per repetition inside
    one compiled function (a `tf.function` on TensorFlow, `jax.jit` on JAX)
    and returns the median rate over repetitions.
    """
    if keras.backend.backend() == "jax":
        chain, a = _jax_chain(size, iterations, dtype)
    else:
        chain, a = _tensorflow_chain(size, iterations, dtype)
    chain(a)  # traces and compiles

    def run():
        start = time.perf_counter()
        chain(a)
        return time.perf_counter() - start

    seconds = measure.Summary.of([run() for _ in range(repetitions)]).median
    return iterations * 2 * size ** 3 / seconds


def _tensorflow_chain(size, iterations, dtype):
    """`(function that runs the chain and waits for it, its input)` on TensorFlow."""
    import tensorflow as tf

    a = tf.random.stateless_normal([size, size], seed=[1, 2], dtype=dtype)
    b = tf.random.stateless_normal([size, size], seed=[3, 4], dtype=dtype) / size

    @tf.function
    def chain(x):
        for _ in range(iterations):
            x = tf.matmul(x, b)
        return x

    return (lambda x: chain(x).numpy()), a


def _jax_chain(size, iterations, dtype):
    """`(function that runs the chain and waits for it, its input)` on JAX."""
    import jax

    a = jax.random.normal(jax.random.key(1), (size, size), dtype)
    b = jax.random.normal(jax.random.key(3), (size, size), dtype) / size

    @jax.jit
    def chain(x):
        for _ in range(iterations):
            x = x @ b
        return x

    return (lambda x: chain(x).block_until_ready()), a


def model_flops_utilisation(step_flops, step_seconds, peak_flops):
    """Achieved FLOP/s of a step as a share of the peak rate."""
    return step_flops / step_seconds / peak_flops


def policies_mfu(step_flops, steps, matmul_size, rates):
    """MFU of steps under dtype policies, each against the matmul rate of its compute dtype.

    Args:
        step_flops: analytic FLOPs of one step.
        steps: `{name: (Keras dtype policy name, seconds per step)}`.
        matmul_size: side of the timed square matmul.
        rates: `{dtype: FLOP/s}` already measured; the missing dtypes are
            measured now (best of three) and added to it.

    Returns:
        `{name: MFU}`.
    """
    mfu = {}
    for name, (policy_name, seconds) in steps.items():
        dtype = keras.DTypePolicy(policy_name).compute_dtype
        if dtype not in rates:
            rates[dtype] = max(peak_matmul_flops(matmul_size, dtype=dtype) for _ in range(3))
        mfu[name] = model_flops_utilisation(step_flops, seconds, rates[dtype])
    return mfu
