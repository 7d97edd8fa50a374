"""Ordered-neurons LSTM (ON-LSTM; Shen et al. 2019) as a Keras RNN cell.

ON-LSTM orders the cell's neurons so that high-ranking neurons keep
long-lived (higher-level) information and low-ranking ones are erased
often. Two master gates, computed with the cumulative softmax
`cumax(x) = cumsum(softmax(x))`, make this ordering explicit:

    f~_t = cumax(W_f~ x_t + U_f~ h_{t-1} + b_f~)       (master forget gate, rises 0 -> 1)
    i~_t = 1 - cumax(W_i~ x_t + U_i~ h_{t-1} + b_i~)   (master input gate, falls 1 -> 0)
    w_t = f~_t * i~_t
    f^_t = f_t * w_t + (f~_t - w_t)
    i^_t = i_t * w_t + (i~_t - w_t)
    c_t = f^_t * c_{t-1} + i^_t * c^_t
    h_t = o_t * tanh(c_t)

with the usual LSTM gates f, i, o and candidate c^. As in the authors' code,
the master gates have one value per chunk of `chunk_size` neurons (repeated
over the chunk), which saves parameters. MG-SA (Hao et al. 2019) runs it over
the phrase sequence of each granularity ("phrase interaction").
"""

import keras
from keras import ops


def cumax(logits, axis: int = -1):
    """Cumulative softmax: a monotone non-decreasing vector from 0 to 1."""
    return ops.cumsum(ops.softmax(logits, axis=axis), axis=axis)


class ONLSTMCell(keras.layers.Layer):
    """One ON-LSTM step; wrap it in `keras.layers.RNN` to run a sequence.

    Args:
        units: width of the hidden state and cell; a multiple of `chunk_size`.
        chunk_size: neurons per master-gate value.
        kernel_initializer: initializer of the input kernel.
        recurrent_initializer: initializer of the recurrent kernel.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, units: int, chunk_size: int = 1, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", **kwargs):
        super().__init__(**kwargs)
        self.units = int(units)
        self.chunk_size = int(chunk_size)
        if self.units < 1 or self.chunk_size < 1 or self.units % self.chunk_size:
            raise ValueError(f"ON-LSTM {self.name!r}: units={units} must be a positive multiple "
                             f"of chunk_size={chunk_size}")
        self.num_chunks = self.units // self.chunk_size
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.state_size = [self.units, self.units]
        self.output_size = self.units

    def build(self, inputs_shape):
        width = 4 * self.units + 2 * self.num_chunks
        self.kernel = self.add_weight(name="kernel", shape=(int(inputs_shape[-1]), width),
                                      initializer=self.kernel_initializer)
        self.recurrent_kernel = self.add_weight(name="recurrent_kernel", shape=(self.units, width),
                                                initializer=self.recurrent_initializer)
        self.bias = self.add_weight(name="bias", shape=(width,), initializer="zeros")
        self.built = True

    def _expand(self, chunk_gates):
        """[B, num_chunks] -> [B, units]: every neuron of a chunk shares its master gate."""
        return ops.repeat(chunk_gates, self.chunk_size, axis=-1)

    def gates(self, inputs, hidden):
        """Pre-activations split into (master forget, master input, f, i, o, candidate)."""
        z = (ops.matmul(inputs, ops.cast(self.kernel, inputs.dtype))
             + ops.matmul(hidden, ops.cast(self.recurrent_kernel, inputs.dtype))
             + ops.cast(self.bias, inputs.dtype))
        chunks, units = self.num_chunks, self.units
        ends = [chunks, 2 * chunks] + [2 * chunks + k * units for k in range(1, 5)]
        return tuple(z[:, start:end] for start, end in zip([0] + ends[:-1], ends))

    def master_gates(self, inputs, hidden):
        """The master forget and input gates, each [B, units] in [0, 1]."""
        master_forget, master_input, *_ = self.gates(inputs, hidden)
        return (self._expand(cumax(master_forget)), self._expand(1.0 - cumax(master_input)))

    def call(self, inputs, states, training=False):
        hidden, cell = states
        master_forget, master_input, forget, input_, output, candidate = self.gates(inputs, hidden)
        master_forget = self._expand(cumax(master_forget))
        master_input = self._expand(1.0 - cumax(master_input))
        overlap = master_forget * master_input
        forget = ops.sigmoid(forget) * overlap + (master_forget - overlap)
        input_ = ops.sigmoid(input_) * overlap + (master_input - overlap)
        cell = forget * cell + input_ * ops.tanh(candidate)
        hidden = ops.sigmoid(output) * ops.tanh(cell)
        return hidden, [hidden, cell]

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, chunk_size=self.chunk_size,
                      kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
                      recurrent_initializer=keras.initializers.serialize(
                          self.recurrent_initializer))
        return config
