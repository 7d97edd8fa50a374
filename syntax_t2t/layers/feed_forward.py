"""The position-wise feed-forward block, as T2T's `dense_relu_dense`."""

import keras

from syntax_t2t.backend import Tensor


class FeedForward(keras.layers.Layer):
    """`Dense(filter, relu) -> dropout -> Dense(hidden)`, applied at every position.

    Args:
        hidden_size: D, the input and output width.
        filter_size: width of the hidden ReLU layer.
        relu_dropout: dropout on the ReLU activations in training.
        kernel_initializer: initializer of both kernels (T2T: Glorot uniform).
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, hidden_size: int, filter_size: int, relu_dropout: float = 0.0,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = int(hidden_size)
        self.filter_size = int(filter_size)
        self.relu_dropout = float(relu_dropout)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.filter_layer = keras.layers.Dense(
            self.filter_size, activation="relu", kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy, name="filter")
        self.dropout_layer = keras.layers.Dropout(self.relu_dropout, dtype=self.dtype_policy)
        self.output_layer = keras.layers.Dense(
            self.hidden_size, kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy, name="output")

    def build(self, inputs_shape):
        """Builds both dense layers for inputs [B, S, D]."""
        self.filter_layer.build(inputs_shape)
        self.output_layer.build(tuple(inputs_shape[:-1]) + (self.filter_size,))
        self.built = True

    def call(self, inputs: Tensor, training: bool = False) -> Tensor:
        """[B, S, D] -> [B, S, D]."""
        hidden = self.filter_layer(inputs)
        return self.output_layer(self.dropout_layer(hidden, training=training))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size, filter_size=self.filter_size,
            relu_dropout=self.relu_dropout,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer))
        return config
