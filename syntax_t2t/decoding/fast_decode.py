"""Incremental decoding of a model: the encoder once, then one token per step.

Per batch, the compiled function

1. runs the encoder once (`model.encode`);
2. projects the encoder-decoder keys and values of every decoder layer once
   (`model.decoder_memory`, told the beam size: a Transformer keeps one
   row per sentence that its beams share, other models repeat it per
   beam): they are the same for every beam of a sentence, so they stay in
   the step function's closure and are never reordered;
3. allocates each decoder layer's self-attention key/value cache at the
   batch's maximum output length (`model.initial_decoder_cache`), which the
   search reorders with the beams; without XLA each step writes its keys
   and values into the cache in place (`syntax_t2t.layers.attention_cache`);
4. runs `search` with `model.decode_step` as `symbols_to_logits_fn`, which
   feeds one new token per step.

A sentence may produce at most `input length + extra_length` tokens, its
`<EOS>` included, where the input length counts `inputs` up to and with its
`<EOS>` (T2T's `decode_length`). With a length model
(`syntax_t2t.decoding.length_model`) finished hypotheses are scored by
log p(y | x) + log p(len(y) | len(x)) (Eriguchi et al. 2016, eq. 16), without
the GNMT length penalty. The model contract is in `docs/design.md`
and `syntax_t2t/models/transformer.py`.

Forced scoring (`forced_log_probs`) feeds given targets through the same
incremental steps instead of searching: the log-probabilities it returns
are those the search adds up, so a found hypothesis scores the same.
"""

import tensorflow as tf

from syntax_t2t.decoding.search import search

EOS_ID = 1


def feature_signature(feature_keys):
    """The `tf.function` input signature of a batch: int32 [B, S] per key."""
    return {key: tf.TensorSpec([None, None], tf.int32, name=key) for key in sorted(feature_keys)}


def input_lengths(inputs):
    """Tokens of every `inputs` row, `<EOS>` included (padding is 0): int32 [B]."""
    return tf.reduce_sum(tf.cast(tf.not_equal(inputs, 0), tf.int32), axis=1)


def decode_batch(model, features, beam_size, alpha, extra_length, eos_id=EOS_ID,
                 length_model=None, in_place_cache=False, eos_candidates="all"):
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
        in_place_cache: write the self-attention caches in place (same
            outputs, less copying; `make_decode_function` does without
            XLA); not under XLA, which has no in-place update.
        eos_candidates: beam search's finishing rule, `"all"` (T2T) or
            `"beam"` (fairseq, CTranslate2); see `beam_search`.

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
    memory = model.decoder_memory(encoded, beam_size)
    cache = model.initial_decoder_cache(batch_size * beam_size, max_steps,
                                        in_place=in_place_cache)

    def symbols_to_logits(ids, step, cache):
        return model.decode_step(ids, step, cache, memory, training=False)

    initial_ids = tf.fill([batch_size], tf.constant(model.decode_start_id, tf.int32))
    result = search(symbols_to_logits, initial_ids, beam_size, max_steps, max_lengths, cache,
                    alpha=alpha, eos_id=eos_id, length_scores=length_scores,
                    eos_candidates=eos_candidates)
    outputs = {"ids": result.ids, "lengths": result.lengths, "scores": result.scores}
    head_key = getattr(model, "head_logits_key", "parse_logits")
    if head_key in encoded:
        outputs[head_key] = encoded[head_key]
    return outputs


def make_decode_function(model, feature_keys, beam_size, alpha, extra_length, jit_compile=False,
                         eos_id=EOS_ID, length_model=None, eos_candidates="all"):
    """`decode_batch` compiled once for batches of any size and length.

    Args:
        model: as in `decode_batch`.
        feature_keys: the batch keys the function takes.
        beam_size, alpha, extra_length, eos_id, length_model, eos_candidates:
            as in `decode_batch`.
        jit_compile: compile with XLA (one executable per batch shape).

    Returns:
        A `tf.function` mapping a feature dict of int32 [B, S] tensors to the
        outputs of `decode_batch`.
    """
    @tf.function(input_signature=[feature_signature(feature_keys)], jit_compile=jit_compile)
    def decode(features):
        return decode_batch(model, features, beam_size, alpha, extra_length, eos_id, length_model,
                            in_place_cache=not jit_compile, eos_candidates=eos_candidates)

    return decode


def forced_log_probs(model, features, targets):
    """log p(y_t | y_<t, x) of given targets, one incremental step per position.

    Args:
        model: as in `decode_batch`.
        features: the batch, at least the model's `decode_features`.
        targets: int32 [B, T], each row ids then `<EOS>`, padded with 0.

    Returns:
        float32 [B, T]: each target token's log-probability, 0 at padding.
    """
    targets = tf.cast(targets, tf.int32)
    batch_size, length = tf.shape(targets)[0], tf.shape(targets)[1]
    memory = model.decoder_memory(model.encode(features, training=False))
    cache = model.initial_decoder_cache(batch_size, length)

    def body(step, previous, cache, log_probs):
        logits, cache = model.decode_step(previous, step, cache, memory, training=False)
        token = targets[:, step]
        chosen = tf.gather(tf.nn.log_softmax(tf.cast(logits, tf.float32)), token[:, None],
                           batch_dims=1)[:, 0]
        return step + 1, token, cache, log_probs.write(step, chosen)

    initial = tf.fill([batch_size], tf.constant(model.decode_start_id, tf.int32))
    _, _, _, log_probs = tf.while_loop(
        lambda step, *_: step < length, body,
        (tf.constant(0), initial, cache, tf.TensorArray(tf.float32, size=length)))
    log_probs = tf.transpose(log_probs.stack())
    return tf.where(tf.not_equal(targets, 0), log_probs, tf.zeros_like(log_probs))


def make_forced_score_function(model, feature_keys):
    """`forced_log_probs` as a `tf.function` of (features, targets) for any batch shape."""
    @tf.function(input_signature=[feature_signature(feature_keys),
                                  tf.TensorSpec([None, None], tf.int32)])
    def score(features, targets):
        return forced_log_probs(model, features, targets)

    return score
