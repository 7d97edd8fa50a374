"""Syntactic positional encoding (Ma et al. 2019, eq. 15-16).

The Transformer's sinusoidal encoding (eq. 13) evaluated at a word's neural
syntactic distance instead of its position:

    PE(d_i)_{2k}   = sin(v_i / sigma_SPE^{2k/D})
    PE(d_i)_{2k+1} = cos(v_i / sigma_SPE^{2k/D})

with `v_i = d_i + (max(d) - min(d))` so that the argument is non-negative
(distances can be negative), max and min being the extremes of the clipped
distances, +-k. The periods then run from 2 pi to 2 pi sigma_SPE; sigma_SPE
(default 40) replaces the 10000 of eq. 13 because distances span a much
smaller range than positions. The seed adds it on top of the usual encoding.
"""

import keras
from keras import ops


def syntactic_position_signal(distances, channels: int, max_distance: int, sigma: float = 40.0):
    """The encoding of every distance.

    Args:
        distances: int [B, S] distances clipped to [-k, k].
        channels: D; an odd D gets a zero last channel.
        max_distance: k.
        sigma: sigma_SPE.

    Returns:
        float32 [B, S, D]: channel 2k holds the sine, 2k+1 the cosine.
    """
    values = ops.cast(distances, "float32") + 2.0 * max_distance
    half = channels // 2
    exponents = 2.0 * ops.arange(half, dtype="float32") / float(channels)
    angles = values[..., None] / ops.power(float(sigma), exponents)
    interleaved = ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1)
    batch, length = ops.shape(values)[0], ops.shape(values)[1]
    signal = ops.reshape(interleaved, (batch, length, 2 * half))
    return ops.pad(signal, [[0, 0], [0, 0], [0, channels % 2]])


class SyntacticPositionEncoding(keras.layers.Layer):
    """Adds `syntactic_position_signal` to the words of a sequence.

    Args:
        max_distance: k.
        sigma: sigma_SPE.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, max_distance: int, sigma: float = 40.0, **kwargs):
        super().__init__(**kwargs)
        self.max_distance = int(max_distance)
        self.sigma = float(sigma)
        if not self.sigma > 1.0:
            raise ValueError(f"syntactic positional encoding: sigma_SPE must exceed 1, got {sigma}")

    def call(self, inputs, distances, words):
        """`inputs` [B, S, D] plus the encoding where `words` (bool [B, S]) is True."""
        inputs = ops.cast(inputs, self.compute_dtype)
        signal = syntactic_position_signal(distances, inputs.shape[-1], self.max_distance,
                                           self.sigma)
        signal = signal * ops.cast(words, "float32")[..., None]
        return inputs + ops.cast(signal, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(max_distance=self.max_distance, sigma=self.sigma)
        return config
