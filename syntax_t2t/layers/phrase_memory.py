"""The phrase memory of multi-granularity self-attention (MG-SA; Hao et al. 2019).

`F_h` of the seed's eq. 4 in three steps, for G partitions of a sentence at
once (one granularity per group of phrase heads):

1. Partition: `phrase_ids` [B, G, S] give each token its phrase, numbered
   0, 1, .. from the left (`syntax_t2t.data.phrases`); -1 for no phrase
   (padding, `<EOS>`).
2. Composition (eq. 8), the same function for every phrase:
   * `"max"`: max-pooling over the phrase's tokens (the seed's CNN);
   * `"attention"`: attention inside the phrase, the max-pooled vector
     being the query (the seed's SAN composition, its default);
   * `"lstm"`: the last state of an LSTM run over the phrase's tokens.
3. Interaction (eq. 11, optional): an LSTM or an ON-LSTM over the phrase
   sequence of each granularity.

Everything is batched: phrases are segments of a flat [B * G * S] index
(unsorted segment operations, which drop the -1 tokens; their number of
segments is static wherever the shapes are, as JAX needs), and
the LSTM composition runs one recurrence over the whole sentence that resets
its state where a phrase starts. The memory has S slots per granularity (a
sentence never has more phrases than tokens): slot p holds phrase p, and
`mask` marks the slots that hold a phrase, so the attention layer can attend
over phrases with the same key length as over words.
"""

import keras
from keras import ops

from syntax_t2t.layers.on_lstm import ONLSTMCell

COMPOSITIONS = ("max", "attention", "lstm")
INTERACTIONS = ("none", "lstm", "on_lstm")


class _ResettingLSTMCell(keras.layers.Layer):
    """An LSTM cell whose state restarts from zero where the last input feature is 1."""

    def __init__(self, units: int, **kwargs):
        super().__init__(**kwargs)
        self.cell = keras.layers.LSTMCell(units, dtype=self.dtype_policy, name="lstm_cell")
        self.state_size = self.cell.state_size
        self.output_size = units

    def build(self, inputs_shape):
        self.cell.build((inputs_shape[0], int(inputs_shape[-1]) - 1))
        self.built = True

    def call(self, inputs, states, training=False):
        keep = 1.0 - inputs[:, -1:]
        return self.cell(inputs[:, :-1], [state * keep for state in states], training=training)


class PhraseMemory(keras.layers.Layer):
    """Composes phrase representations for every granularity of a batch.

    Args:
        hidden_size: D, the width of tokens and phrases.
        num_granularities: G, the number of partitions per sentence.
        composition: one of `COMPOSITIONS`.
        interaction: one of `INTERACTIONS`.
        chunk_size: ON-LSTM neurons per master-gate value.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, hidden_size: int, num_granularities: int, composition: str = "attention",
                 interaction: str = "none", chunk_size: int = 8, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = int(hidden_size)
        self.num_granularities = int(num_granularities)
        self.composition = composition
        self.interaction = interaction or "none"
        self.chunk_size = int(chunk_size)
        if self.composition not in COMPOSITIONS:
            raise ValueError(f"phrase memory {self.name!r}: composition={composition!r}, expected "
                             f"one of {', '.join(COMPOSITIONS)}")
        if self.interaction not in INTERACTIONS:
            raise ValueError(f"phrase memory {self.name!r}: interaction={interaction!r}, expected "
                             f"one of {', '.join(INTERACTIONS)}")
        if self.num_granularities < 1:
            raise ValueError(f"phrase memory {self.name!r}: needs at least one granularity")
        policy = self.dtype_policy
        self.composer = None
        if self.composition == "attention":
            self.composer = {
                name: keras.layers.Dense(self.hidden_size, use_bias=False, dtype=policy,
                                         name=f"composition_{name}")
                for name in ("query", "key", "value")}
        elif self.composition == "lstm":
            # Explicit names: checkpoints are restored by weight path.
            self.composer = keras.layers.RNN(_ResettingLSTMCell(self.hidden_size, dtype=policy,
                                                                name="resetting_lstm_cell"),
                                             return_sequences=True, dtype=policy,
                                             name="composition_lstm")
        self.interactor = None
        if self.interaction == "lstm":
            self.interactor = keras.layers.LSTM(self.hidden_size, return_sequences=True,
                                                dtype=policy, name="interaction_lstm")
        elif self.interaction == "on_lstm":
            self.interactor = keras.layers.RNN(
                ONLSTMCell(self.hidden_size, min(self.chunk_size, self.hidden_size), dtype=policy,
                           name="on_lstm_cell"),
                return_sequences=True, dtype=policy, name="interaction_on_lstm")

    def build(self, inputs_shape, phrase_ids_shape=None):
        width = (None, None, self.hidden_size)
        if self.composition == "attention":
            for dense in self.composer.values():
                dense.build(width)
        elif self.composition == "lstm":
            self.composer.build((None, None, self.hidden_size + 1))
        if self.interactor is not None:
            self.interactor.build(width)
        self.built = True

    def call(self, inputs, phrase_ids, training: bool = False, return_composition: bool = False):
        """Builds the phrase memory.

        Args:
            inputs: [B, S, D] token representations.
            phrase_ids: int [B, G, S], phrase of each token per granularity;
                -1 for tokens in no phrase.
            training: applies the recurrent layers' training behaviour.
            return_composition: also return G_x, the memory before the
                interaction (the seed's phrase tags are predicted from it,
                eq. 9).

        Returns:
            `(memory [B, G, S, D], mask bool [B, G, S])`, with
            `return_composition` a third element, the composed phrases
            [B, G, S, D] (the memory itself without interaction); slot p of
            granularity g holds phrase p, zeros where `mask` is False.
        """
        inputs = ops.cast(inputs, self.compute_dtype)
        phrase_ids = ops.cast(phrase_ids, "int32")
        batch, length = ops.shape(inputs)[0], ops.shape(inputs)[1]
        groups = self.num_granularities
        tokens = ops.reshape(ops.tile(inputs[:, None], [1, groups, 1, 1]), [-1, self.hidden_size])
        offsets = ops.reshape(ops.arange(batch * groups, dtype="int32") * length,
                              [batch, groups, 1])
        segments = ops.reshape(ops.where(phrase_ids >= 0, phrase_ids + offsets, -1), [-1])
        num_segments = batch * groups * length
        counts = ops.segment_sum(ops.ones_like(segments), segments, num_segments)
        mask = counts > 0
        if self.composition == "lstm":
            phrases = self._lstm_last_states(tokens, phrase_ids, segments, num_segments, training)
        else:
            phrases = self._max_pool(tokens, segments, num_segments, mask)
            if self.composition == "attention":
                phrases = self._attend_inside(tokens, phrases, segments, num_segments)
        phrases = ops.where(mask[:, None], phrases, ops.zeros_like(phrases))
        composed = ops.reshape(phrases, [batch * groups, length, self.hidden_size])
        mask = ops.reshape(mask, [batch * groups, length])
        memory = composed
        if self.interactor is not None:
            memory = self.interactor(composed, mask=mask, training=training)
            memory = ops.where(mask[..., None], memory, ops.zeros_like(memory))
        shape = [batch, groups, length, self.hidden_size]
        result = (ops.reshape(memory, shape), ops.reshape(mask, [batch, groups, length]))
        return result + (ops.reshape(composed, shape),) if return_composition else result

    @staticmethod
    def _max_pool(tokens, segments, num_segments, mask):
        pooled = ops.segment_max(tokens, segments, num_segments)
        # Empty segments hold the dtype's lowest value (or -inf); zero them before any arithmetic.
        return ops.where(mask[:, None], pooled, ops.zeros_like(pooled))

    def _attend_inside(self, tokens, pooled, segments, num_segments):
        """Attention over each phrase's tokens, queried by the phrase's max-pooled vector."""
        queries = self.composer["query"](pooled)
        keys = self.composer["key"](tokens)
        values = self.composer["value"](tokens)
        in_phrase = segments >= 0
        phrase_of_token = ops.maximum(segments, 0)
        token_queries = ops.take(queries, phrase_of_token, axis=0)
        scores = ops.cast(ops.sum(token_queries * keys, axis=-1), "float32")
        scores = scores * self.hidden_size ** -0.5
        # Softmax within each segment; tokens in no phrase (segment -1) are dropped by the
        # sums. They are shifted by their own score: exp(0) keeps them (and gradients) finite
        # whatever the maximum of the segment they borrow.
        highest = ops.segment_max(scores, segments, num_segments)
        shift = ops.where(in_phrase, ops.take(highest, phrase_of_token, axis=0), scores)
        exps = ops.exp(scores - shift)
        totals = ops.segment_sum(exps, segments, num_segments)
        weights = exps / ops.take(ops.maximum(totals, 1e-9), phrase_of_token, axis=0)
        weighted = ops.cast(weights, values.dtype)[:, None] * values
        return ops.segment_sum(weighted, segments, num_segments)

    def _lstm_last_states(self, tokens, phrase_ids, segments, num_segments, training):
        """The LSTM state at the last token of each phrase (the state restarts at each phrase)."""
        length = ops.shape(phrase_ids)[2]
        sequences = ops.reshape(tokens, [-1, length, self.hidden_size])
        ids = ops.reshape(phrase_ids, [-1, length])
        previous = ops.pad(ids[:, :-1], [[0, 0], [1, 0]], constant_values=-1)
        starts = ops.cast(ops.not_equal(ids, previous), sequences.dtype)[..., None]
        states = self.composer(ops.concatenate([sequences, starts], axis=-1), training=training)
        states = ops.reshape(states, [-1, self.hidden_size])
        positions = ops.arange(ops.shape(segments)[0], dtype="int32")
        last = ops.segment_max(positions, segments, num_segments)
        return ops.take(states, ops.maximum(last, 0), axis=0)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_granularities=self.num_granularities,
                      composition=self.composition, interaction=self.interaction,
                      chunk_size=self.chunk_size)
        return config
