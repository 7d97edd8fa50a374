"""Sinusoidal position signal, as T2T's `add_timing_signal_1d`."""

import math

import keras
from keras import ops

from syntax_t2t.backend import Tensor


def sinusoidal_signal(length: Tensor, channels: int, start: Tensor = 0, min_timescale: float = 1.0,
                      max_timescale: float = 1.0e4) -> Tensor:
    """T2T's timing signal: sines of all timescales, then cosines (thesis eq. 2.1).

    T2T 1.5.6 concatenates the sine half and the cosine half instead of
    interleaving them as eq. 2.1 writes; the model is the same up to a fixed
    permutation of the channels. Timescales grow geometrically from
    `min_timescale` to `max_timescale`.

    Args:
        length: number of positions, an int (or, in TensorFlow graphs, a
            scalar tensor).
        channels: D, a Python int; an odd D gets a zero last channel.
        start: position of the first row (the decoding step).
        min_timescale: shortest wavelength / 2 pi.
        max_timescale: longest wavelength / 2 pi.

    Returns:
        float32 [length, D].
    """
    positions = ops.cast(ops.arange(length, dtype="int32") + ops.cast(start, "int32"), "float32")
    num_timescales = channels // 2
    increment = math.log(max_timescale / min_timescale) / max(num_timescales - 1, 1)
    inverse_timescales = min_timescale * ops.exp(
        ops.arange(num_timescales, dtype="float32") * -increment)
    angles = positions[:, None] * inverse_timescales[None, :]
    signal = ops.concatenate([ops.sin(angles), ops.cos(angles)], axis=1)
    return ops.pad(signal, [[0, 0], [0, channels % 2]])


class SinusoidalPositionEncoding(keras.layers.Layer):
    """Adds `sinusoidal_signal` to a sequence of vectors.

    Args:
        min_timescale: see `sinusoidal_signal`.
        max_timescale: see `sinusoidal_signal`.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, min_timescale: float = 1.0, max_timescale: float = 1.0e4, **kwargs):
        super().__init__(**kwargs)
        self.min_timescale = float(min_timescale)
        self.max_timescale = float(max_timescale)

    def call(self, inputs: Tensor, start: Tensor = 0) -> Tensor:
        """Adds the signal of positions `start ..` to `inputs` [B, S, D]."""
        inputs = ops.cast(inputs, self.compute_dtype)
        signal = sinusoidal_signal(ops.shape(inputs)[1], inputs.shape[-1], start,
                                   self.min_timescale, self.max_timescale)
        return inputs + ops.cast(signal, self.compute_dtype)[None]

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(min_timescale=self.min_timescale, max_timescale=self.max_timescale)
        return config
