"""Incremental decoding of a model: the encoder once, then one token per step.

Per batch, the compiled function

1. runs the encoder once (`model.encode`);
2. projects the encoder-decoder keys and values of every decoder layer once
   (`model.decoder_memory`) and tiles them to the beams once: they are the
   same for every beam of a sentence, so they stay in the step function's
   closure and are never reordered;
3. allocates each decoder layer's self-attention key/value cache at the
   batch's maximum output length (`model.initial_decoder_cache`), which the
   search reorders with the beams;
4. runs `search` with `model.decode_step` as `symbols_to_logits_fn`, which
   feeds one new token per step.

A sentence may produce at most `input length + extra_length` tokens, its
`<EOS>` included, where the input length counts `inputs` up to and with its
`<EOS>` (T2T's `decode_length`). With a length model
(`syntax_t2t.decoding.length_model`) finished hypotheses are scored by
log p(y | x) + log p(len(y) | len(x)) (Eriguchi et al. 2016, eq. 16), without
the GNMT length penalty. The model contract is in `docs/design.md`
and `syntax_t2t/models/transformer.py`.
"""

import tensorflow as tf

from syntax_t2t.decoding.search import search, tile_beams

EOS_ID = 1


def input_lengths(inputs):
    """Tokens of every `inputs` row, `<EOS>` included (padding is 0): int32 [B]."""
    return tf.reduce_sum(tf.cast(tf.not_equal(inputs, 0), tf.int32), axis=1)


def decode_batch(model, features, beam_size, alpha, extra_length, eos_id=EOS_ID,
                 length_model=None):
    """Decodes one batch (call inside `tf.function`; see the module docstring).

    Args:
        model: a model with `encode`, `decoder_memory`,
            `initial_decoder_cache`, `decode_step` and `decode_start_id`.
        features: the batch, at least the model's `decode_features`
            (int32 [B, S] each).
        beam_size: Python int; 1 is greedy decoding.
        alpha: length-penalty exponent (not used with a length model).
        extra_length: Python int; see the module docstring.
        eos_id: the `<EOS>` id.
        length_model: a `LengthModel`, or None.

    Returns:
        dict with `"ids"` int32 [B, beam, S + extra_length], `"lengths"` and
        `"scores"` [B, beam] (best first), and the encoder head's logits
        under `model.head_logits_key` for models with one (`"parse_logits"`
        float32 [B, S + 1, S + 1]; SISA's `"sisa_logits"` [B, S, S]).
    """
    inputs = tf.cast(features["inputs"], tf.int32)
    batch_size = tf.shape(inputs)[0]
    max_steps = (inputs.shape[1] or tf.shape(inputs)[1]) + extra_length
    max_lengths = input_lengths(inputs) + extra_length
    length_scores = None
    if length_model is not None:
        # Eq. 16 replaces the length penalty; source lengths leave out <EOS>.
        length_scores = length_model.search_scores(input_lengths(inputs) - 1, max_steps)
        alpha = 0.0

    encoded = model.encode(features, training=False)
    memory = model.decoder_memory(encoded)
    if beam_size > 1:
        memory = tf.nest.map_structure(lambda tensor: tile_beams(tensor, beam_size), memory)
    cache = model.initial_decoder_cache(batch_size * beam_size, max_steps)

    def symbols_to_logits(ids, step, cache):
        return model.decode_step(ids, step, cache, memory, training=False)

    initial_ids = tf.fill([batch_size], tf.constant(model.decode_start_id, tf.int32))
    result = search(symbols_to_logits, initial_ids, beam_size, max_steps, max_lengths, cache,
                    alpha=alpha, eos_id=eos_id, length_scores=length_scores)
    outputs = {"ids": result.ids, "lengths": result.lengths, "scores": result.scores}
    head_key = getattr(model, "head_logits_key", "parse_logits")
    if head_key in encoded:
        outputs[head_key] = encoded[head_key]
    return outputs


def make_decode_function(model, feature_keys, beam_size, alpha, extra_length, jit_compile=False,
                         eos_id=EOS_ID, length_model=None):
    """`decode_batch` compiled once for batches of any size and length.

    Args:
        model: as in `decode_batch`.
        feature_keys: the batch keys the function takes.
        beam_size, alpha, extra_length, eos_id, length_model: as in `decode_batch`.
        jit_compile: compile with XLA (one executable per batch shape).

    Returns:
        A `tf.function` mapping a feature dict of int32 [B, S] tensors to the
        outputs of `decode_batch`.
    """
    signature = {key: tf.TensorSpec([None, None], tf.int32, name=key) for key in sorted(feature_keys)}

    @tf.function(input_signature=[signature], jit_compile=jit_compile)
    def decode(features):
        return decode_batch(model, features, beam_size, alpha, extra_length, eos_id, length_model)

    return decode
