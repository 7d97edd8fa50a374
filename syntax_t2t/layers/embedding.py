"""Token embeddings that also serve as the output softmax weights (T2T symbol modality)."""

import keras
from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.layers.masks import padding_mask


class TokenEmbedding(keras.layers.Layer):
    """T2T's symbol modality: scaled lookup, zero padding, optional shared softmax.

    The table is initialised with N(0, D^-1/2) and looked-up vectors are
    multiplied by sqrt(D), so that they start at unit scale next to the
    sinusoidal signal; padding (id 0) embeds to zeros, as in T2T, so the
    decoder's shifted-in start position is a zero vector. `logits` multiplies
    by the unscaled table, which ties the target embedding to the softmax.

    Args:
        vocab_size: V.
        hidden_size: D.
        scale: multiply looked-up vectors by sqrt(D).
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, vocab_size: int, hidden_size: int, scale: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = int(vocab_size)
        self.hidden_size = int(hidden_size)
        self.scale = bool(scale)

    def build(self, ids_shape=None):
        """Creates the table [V, D] (it does not depend on `ids_shape`)."""
        self.embeddings = self.add_weight(
            name="embeddings", shape=(self.vocab_size, self.hidden_size),
            initializer=keras.initializers.RandomNormal(stddev=self.hidden_size ** -0.5))
        self.built = True

    def call(self, ids: Tensor) -> Tensor:
        """Looks up `ids` int [B, S]; returns [B, S, D] in the compute dtype."""
        table = ops.cast(self.embeddings, self.compute_dtype)
        vectors = ops.take(table, ids, axis=0)
        if self.scale:
            vectors *= ops.cast(self.hidden_size ** 0.5, self.compute_dtype)
        return vectors * ops.cast(padding_mask(ids), self.compute_dtype)[..., None]

    def logits(self, hidden: Tensor) -> Tensor:
        """Output logits against the (unscaled) table.

        Args:
            hidden: [..., D].

        Returns:
            float32 [..., V].
        """
        table = ops.cast(self.embeddings, self.compute_dtype)
        logits = ops.matmul(ops.cast(hidden, self.compute_dtype), ops.transpose(table))
        return ops.cast(logits, "float32")

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, hidden_size=self.hidden_size, scale=self.scale)
        return config
