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
import tensorflow as tf


def syntactic_position_signal(distances, channels, max_distance, sigma=40.0):
    """The encoding of every distance.

    Args:
        distances: int [B, S] distances clipped to [-k, k].
        channels: D; an odd D gets a zero last channel.
        max_distance: k.
        sigma: sigma_SPE.

    Returns:
        float32 [B, S, D]: channel 2k holds the sine, 2k+1 the cosine.
    """
    values = tf.cast(distances, tf.float32) + 2.0 * max_distance
    half = channels // 2
    exponents = 2.0 * tf.range(half, dtype=tf.float32) / float(channels)
    angles = values[..., None] / tf.pow(float(sigma), exponents)
    interleaved = tf.stack([tf.sin(angles), tf.cos(angles)], axis=-1)
    shape = tf.concat([tf.shape(values), [2 * half]], axis=0)
    signal = tf.reshape(interleaved, shape)
    return tf.pad(signal, [[0, 0], [0, 0], [0, channels % 2]])


class SyntacticPositionEncoding(keras.layers.Layer):
    """Adds `syntactic_position_signal` to the words of a sequence.

    Args:
        max_distance: k.
        sigma: sigma_SPE.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, max_distance, sigma=40.0, **kwargs):
        super().__init__(**kwargs)
        self.max_distance = int(max_distance)
        self.sigma = float(sigma)
        if not self.sigma > 1.0:
            raise ValueError(f"syntactic positional encoding: sigma_SPE must exceed 1, got {sigma}")

    def call(self, inputs, distances, words):
        """`inputs` [B, S, D] plus the encoding where `words` (bool [B, S]) is True."""
        inputs = tf.cast(inputs, self.compute_dtype)
        signal = syntactic_position_signal(distances, inputs.shape[-1], self.max_distance,
                                           self.sigma)
        signal *= tf.cast(words, tf.float32)[..., None]
        return inputs + tf.cast(signal, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(max_distance=self.max_distance, sigma=self.sigma)
        return config
