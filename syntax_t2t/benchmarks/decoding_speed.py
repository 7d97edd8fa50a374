"""Decoding speed: cached incremental decoding against recomputing the decoder each step.

The cached decoder is the library's (`syntax_t2t.decoding.fast_decode`): one
new token per step through per-layer key/value caches. The uncached
reference below is what decoding costs without them: at step `t` it runs
the model's teacher-forced decoder (`model.decode`) over the whole prefix
`y_0 .. y_{t-1}` and keeps the last position's logits, so step `t` costs
`t` positions and a sentence of `n` tokens costs O(n^2) positions instead of
O(n). Both use the same search (`syntax_t2t.decoding.search`), so the two
differ only in how the logits of a step are computed, and both give the
same outputs (the benchmark reports the share of identical hypotheses).

The cached decoder is `keras.ops` on every backend (compiled by
`backend/compile.py`); the uncached reference is TensorFlow's (its shapes
grow every step, one XLA program per step under JAX): under another backend
only the cached decoder is timed, and the speed-up is not measured.

To time exactly `output_tokens` steps per sentence with an untrained model,
the `<EOS>` id given to the search is one no token has (-1): no hypothesis
finishes early.
"""

import keras
import numpy as np

from syntax_t2t.benchmarks import measure
from syntax_t2t.decoding import fast_decode
from syntax_t2t.decoding.search import search, tile_beams

#: An id no token has: the search never sees `<EOS>` and decodes every step.
NO_EOS = -1


def _write_column(ids, column, tokens):
    """`ids[:, column] = tokens` for int32 [B, T]; a negative column writes nothing."""
    import tensorflow as tf

    at_column = tf.equal(tf.range(tf.shape(ids)[1]), column)[None, :]
    return tf.where(at_column, tokens[:, None], ids)


def uncached_decode_batch(model, features, beam_size, alpha, extra_length, eos_id=NO_EOS):
    """Decodes a batch recomputing the full decoder every step (the reference).

    Args: as `fast_decode.decode_batch`.

    Returns:
        dict with `"ids"`, `"lengths"` and `"scores"` as `decode_batch`.
    """
    import tensorflow as tf

    inputs = tf.cast(features["inputs"], tf.int32)
    batch_size = tf.shape(inputs)[0]
    max_steps = tf.shape(inputs)[1] + extra_length
    max_lengths = fast_decode.input_lengths(inputs) + extra_length

    encoded = model.encode(features, training=False)
    memory = {"outputs": encoded["outputs"], "padding_mask": encoded["padding_mask"]}
    if beam_size > 1:
        memory = tf.nest.map_structure(lambda tensor: tile_beams(tensor, beam_size), memory)
    # The "cache" is only the tokens so far; the search reorders it with the beams.
    state = {"targets": tf.zeros([batch_size * beam_size, max_steps], tf.int32)}

    def symbols_to_logits(ids, step, state):
        # `ids` is the token at position step - 1 (the start id at step 0,
        # which the teacher-forced decoder adds itself by shifting right).
        targets = _write_column(state["targets"], step - 1, tf.cast(ids, tf.int32))
        # Position `step` of the shifted input is y_{step-1}; its value in
        # `targets` is never read (causal mask), only the prefix is.
        logits = model.decode(targets[:, :step + 1], memory, training=False)[:, -1]
        return logits, {"targets": targets}

    initial_ids = tf.fill([batch_size], tf.constant(model.decode_start_id, tf.int32))
    result = search(symbols_to_logits, initial_ids, beam_size, max_steps, max_lengths, state,
                    alpha=alpha, eos_id=eos_id)
    return {"ids": result.ids, "lengths": result.lengths, "scores": result.scores}


def make_uncached_decode_function(model, feature_keys, beam_size, alpha, extra_length,
                                  eos_id=NO_EOS):
    """`uncached_decode_batch` as a `tf.function` (as `fast_decode.make_decode_function`)."""
    import tensorflow as tf

    signature = {key: tf.TensorSpec([None, None], tf.int32, name=key) for key in sorted(feature_keys)}

    @tf.function(input_signature=[signature])
    def decode(features):
        return uncached_decode_batch(model, features, beam_size, alpha, extra_length, eos_id)

    return decode


def measure_decoding(model, batch, output_tokens, beam_sizes=(1, 4), repetitions=3, alpha=0.6,
                     jit_compile=False, peers=None):
    """Sentences/s and tokens/s of cached and uncached decoding, interleaved.

    Args:
        model: a built model (weights need not be trained).
        batch: `{feature: np.int32 [B, S]}` with the model's decode features;
            every row should fill S (`output_tokens` counts from it).
        output_tokens: output length per sentence (>= S; the search's
            `extra_length` is `output_tokens - S`).
        beam_sizes: beam sizes to time (1 = greedy).
        repetitions: timed rounds after one untimed call that compiles.
        alpha: length-penalty exponent.
        jit_compile: compile the cached decoder with XLA (the reference never is:
            its shapes change every step).
        peers: `{label: {beam: runner}}` of other decoders of the same batch
            (`ctranslate2_peer.decoding_runners`), interleaved with ours;
            each runner decodes once and returns its seconds.

    Returns:
        `{"beam<k>": {"cached": {...}, "uncached": {...}, "speedup": Summary
        dict of per-round uncached/cached time ratios, "cpu_speedup": the
        same of process CPU times, "identical_outputs":
        share of hypotheses the two agree on, "peers": {label: the same
        three entries and "speed_ratio", a Summary dict of per-round
        peer/cached time ratios (our speed / the peer's)}}}`, each of "cached"
        and "uncached" with "seconds" (Summary dict), "sentences_per_second"
        and "tokens_per_second". Off TensorFlow "uncached", "speedup",
        "cpu_speedup" and "identical_outputs" are left out.
    """
    # The uncached reference is TensorFlow code (see the module docstring).
    uncached = keras.backend.backend() == "tensorflow"
    features = {key: np.asarray(batch[key], np.int32) for key in sorted(model.decode_features)}
    length = int(batch["inputs"].shape[1])
    if output_tokens < length:
        raise ValueError(f"output_tokens={output_tokens} is shorter than the source length "
                         f"{length}")
    extra_length = output_tokens - length
    sentences = int(batch["inputs"].shape[0])
    kinds = ("cached", "uncached") if uncached else ("cached",)
    decoders = {}
    for beam in beam_sizes:
        decoders[(beam, "cached")] = fast_decode.make_decode_function(
            model, features, beam, alpha, extra_length, jit_compile=jit_compile, eos_id=NO_EOS,
            batch_size=sentences)
        if uncached:
            decoders[(beam, "uncached")] = make_uncached_decode_function(
                model, features, beam, alpha, extra_length)
    inputs = _backend_inputs(features, uncached)
    outputs = {key: decode(inputs) for key, decode in decoders.items()}  # compiles
    runners = {key: (lambda decode=decode: measure.timed(
        lambda: keras.ops.convert_to_numpy(decode(inputs)["ids"])))
        for key, decode in decoders.items()}
    peers = peers or {}
    for label, by_beam in peers.items():
        for beam in beam_sizes:
            by_beam[beam]()  # untimed: warms the peer up as the compiling call does ours
            runners[(beam, label)] = by_beam[beam]
    cpu = {key: [] for key in runners}
    timings = measure.interleaved(
        {key: measure.with_cpu_time(runner, cpu[key]) for key, runner in runners.items()},
        repetitions)
    results = {}

    def speeds(times):
        seconds = measure.Summary.of(times)
        return {"seconds": seconds.as_dict(), "sentences_per_second": sentences / seconds.median,
                "tokens_per_second": sentences * output_tokens / seconds.median}

    def ratios(numerators, denominators):
        return measure.Summary.of([n / d for n, d in zip(numerators, denominators)]).as_dict()

    for beam in beam_sizes:
        entry = {kind: speeds(timings[(beam, kind)]) for kind in kinds}
        entry["peers"] = {
            label: dict(speeds(timings[(beam, label)]), speed_ratio=ratios(
                timings[(beam, label)], timings[(beam, "cached")])) for label in peers}
        entry["output_tokens"] = output_tokens
        entry["sentences"] = sentences
        results[f"beam{beam}"] = entry
        if not uncached:
            continue
        entry["speedup"] = ratios(timings[(beam, "uncached")], timings[(beam, "cached")])
        entry["cpu_speedup"] = ratios(cpu[(beam, "uncached")], cpu[(beam, "cached")])
        cached_ids = keras.ops.convert_to_numpy(outputs[(beam, "cached")]["ids"])
        uncached_ids = outputs[(beam, "uncached")]["ids"].numpy()
        entry["identical_outputs"] = float((cached_ids == uncached_ids).all(axis=-1).mean())
    return results


def _backend_inputs(features, uncached):
    """The features as the decoders take them: TensorFlow constants for the `tf.function`s."""
    if not uncached:
        return features
    import tensorflow as tf

    return {key: tf.constant(value) for key, value in features.items()}
