"""A deep bi-affine scorer of token pairs (Dozat and Manning 2017), for SISA heads.

Strubell et al. (2018)'s syntactically-informed self-attention replaces one
head's query-key dot product with this scorer: each token is projected by a
feed-forward layer once as a dependent and once as a candidate head, and

    score[t, j] = [dep_t; 1]^T U head_j

scores token j as the head of token t. The appended 1 gives every candidate
head a learned prior `u^T head_j` besides the bilinear term.
The attention term `BiaffineHead(h)` (`layers/attention_terms/biaffine_head.py`)
uses these scores as the logits of head h.
"""

import keras
from keras import ops

from syntax_t2t.backend import Tensor


class BiaffineScorer(keras.layers.Layer):
    """Scores every (dependent, head) pair of a sequence.

    Args:
        units: width of the dependent and head projections.
        negative_slope: slope of the leaky ReLU after each projection.
        kernel_initializer: initializer of the projections and of U.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, units: int, negative_slope: float = 0.1,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if int(units) < 1:
            raise ValueError(f"biaffine scorer {self.name!r}: units must be positive, got {units}")
        self.units = int(units)
        self.negative_slope = float(negative_slope)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, inputs_shape):
        """Creates the weights for inputs [B, S, D]."""
        width = int(inputs_shape[-1])
        self.dependent_kernel = self.add_weight(
            name="dependent_kernel", shape=(width, self.units), initializer=self.kernel_initializer)
        self.dependent_bias = self.add_weight(
            name="dependent_bias", shape=(self.units,), initializer="zeros")
        self.head_kernel = self.add_weight(
            name="head_kernel", shape=(width, self.units), initializer=self.kernel_initializer)
        self.head_bias = self.add_weight(name="head_bias", shape=(self.units,), initializer="zeros")
        self.bilinear = self.add_weight(
            name="bilinear", shape=(self.units + 1, self.units),
            initializer=self.kernel_initializer)
        self.built = True

    def _project(self, inputs, kernel, bias):
        dtype = self.compute_dtype
        hidden = ops.matmul(inputs, ops.cast(kernel, dtype)) + ops.cast(bias, dtype)
        return ops.leaky_relu(hidden, negative_slope=self.negative_slope)

    def call(self, inputs: Tensor) -> Tensor:
        """Pair scores of `inputs` [B, S, D].

        Returns:
            float32 [B, S, S]; entry (t, j) scores token j as the head of token t.
        """
        inputs = ops.cast(inputs, self.compute_dtype)
        dependents = self._project(inputs, self.dependent_kernel, self.dependent_bias)
        heads = self._project(inputs, self.head_kernel, self.head_bias)
        dependents = ops.concatenate([dependents, ops.ones_like(dependents[..., :1])], axis=-1)
        bilinear = ops.cast(self.bilinear, self.compute_dtype)
        scores = ops.einsum("btu,uv,bjv->btj", dependents, bilinear, heads)
        return ops.cast(scores, "float32")

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(units=self.units, negative_slope=self.negative_slope,
                      kernel_initializer=keras.initializers.serialize(self.kernel_initializer))
        return config
