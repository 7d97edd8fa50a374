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
   search reorders with the beams; on TensorFlow without XLA each step
   writes its keys and values into the cache in place
   (`syntax_t2t.layers.attention_cache`);
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

Everything here is `keras.ops`, the same on every Keras backend; the
functions are compiled by `syntax_t2t.backend.compile` (TensorFlow:
`tf.function`, with XLA on request; JAX: `jax.jit` with the weights as
arguments). Where a program is compiled per input shape (XLA, JAX), the
compiled functions pad a batch's rows, by repeating its last sentence, to a
power of two no larger than the largest batch (`batch_size`), and forced
scoring pads target lengths to a multiple of `LENGTH_MULTIPLE`; the decoder
pads source lengths the same way (`decoder.pad_batch`). A file is then
decoded by a bounded number of programs, one per padded shape. A sentence's
result does not depend on the other rows of its batch, so the padding
changes no result.
"""

from typing import Any, Mapping, Optional, Sequence

import keras
import numpy as np
from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.backend.compile import CompiledFunction
from syntax_t2t.decoding.search import search

EOS_ID = 1
#: Where programs are compiled per shape, lengths are padded to a multiple of this.
LENGTH_MULTIPLE = 8


def input_lengths(inputs: Tensor) -> Tensor:
    """Tokens of every `inputs` row, `<EOS>` included (padding is 0): int32 [B]."""
    return ops.sum(ops.cast(ops.not_equal(inputs, 0), "int32"), axis=1)


def decode_batch(model, features: Mapping[str, Tensor], beam_size: int, alpha: float,
                 extra_length: int, eos_id: int = EOS_ID, length_model=None,
                 in_place_cache: bool = False, eos_candidates: str = "all") -> dict:
    """Decodes one batch (eagerly, or traced by a compiled function; see the module docstring).

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
            outputs, less copying; `make_decode_function` does on
            TensorFlow without XLA); TensorFlow only, not under XLA, which
            has no in-place update.
        eos_candidates: beam search's finishing rule, `"all"` (T2T) or
            `"beam"` (fairseq, CTranslate2); see `beam_search`.

    Returns:
        dict with `"ids"` int32 [B, beam, S + extra_length], `"lengths"` and
        `"scores"` [B, beam] (best first), and the encoder head's logits
        under `model.head_logits_key` for models with one (`"parse_logits"`
        float32 [B, S + 1, S + 1]; SISA's `"sisa_logits"` [B, S, S]).
    """
    inputs = ops.cast(features["inputs"], "int32")
    batch_size, source_length = ops.shape(inputs)[0], ops.shape(inputs)[1]
    max_steps = source_length + extra_length
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

    initial_ids = ops.full((batch_size,), model.decode_start_id, "int32")
    result = search(symbols_to_logits, initial_ids, beam_size, max_steps, max_lengths, cache,
                    alpha=alpha, eos_id=eos_id, length_scores=length_scores,
                    eos_candidates=eos_candidates)
    outputs = {"ids": result.ids, "lengths": result.lengths, "scores": result.scores}
    head_key = model.head_logits_key
    if head_key in encoded:
        outputs[head_key] = encoded[head_key]
    return outputs


def padded_rows(rows: int, batch_size: Optional[int] = None) -> int:
    """The rows a batch of `rows` sentences is padded to where programs are per shape.

    The next power of two, but no more than `batch_size` (the largest batch
    the caller makes) when `rows` fits in it: at most log2(batch_size) + 2
    row counts, and a single sentence (interactive decoding) stays one row.
    """
    if rows < 1:
        raise ValueError(f"a batch needs at least one sentence, got {rows}")
    size = 1 << (rows - 1).bit_length()
    if batch_size is not None and rows <= batch_size:
        size = min(size, batch_size)
    return size


def _host_array(value: Any) -> np.ndarray:
    """A batch feature as numpy, integers as int32 (the compiled functions' input type)."""
    array = np.asarray(value)
    return array.astype(np.int32, copy=False) if array.dtype.kind in "iub" else array


def _repeat_last_row(array: np.ndarray, rows: int) -> np.ndarray:
    extra = rows - array.shape[0]
    if extra == 0:
        return array
    return np.concatenate([array, np.repeat(array[-1:], extra, axis=0)])


def _first_rows(outputs: Any, rows: int) -> Any:
    return keras.tree.map_structure(lambda tensor: tensor[:rows], outputs)


class DecodeFunction:
    """`decode_batch` compiled by the backend (see the module docstring), for batches of any shape.

    Args:
        model: as in `decode_batch`.
        feature_keys: the batch keys the function reads (others are
            ignored).
        beam_size, alpha, extra_length, eos_id, length_model, eos_candidates:
            as in `decode_batch`.
        jit_compile: compile with XLA on TensorFlow (one program per padded
            shape); JAX always does.
        batch_size: the largest batch the caller passes, the bound of row
            padding (`padded_rows`); None: powers of two.

    Attributes:
        compiled: the `CompiledFunction` (its `traces` counts the programs).
    """

    def __init__(self, model, feature_keys: Sequence[str], beam_size: int, alpha: float,
                 extra_length: int, jit_compile: bool = False, eos_id: int = EOS_ID,
                 length_model=None, eos_candidates: str = "all",
                 batch_size: Optional[int] = None):
        self.feature_keys = sorted(feature_keys)
        self.batch_size = batch_size

        def decode(features):
            return decode_batch(model, features, beam_size, alpha, extra_length, eos_id,
                                length_model, in_place_cache=not self.compiled.xla,
                                eos_candidates=eos_candidates)

        self.compiled = CompiledFunction(decode, model, jit_compile=jit_compile)

    @property
    def per_shape(self) -> bool:
        """Whether each padded batch shape is a program of its own (XLA, JAX)."""
        return self.compiled.per_shape

    def __call__(self, features: Mapping[str, Any]) -> dict:
        """`decode_batch`'s outputs for `features` (int32 [B, S] arrays), as backend tensors."""
        batch = {key: _host_array(features[key]) for key in self.feature_keys}
        rows = batch["inputs"].shape[0]
        if not self.per_shape:
            return self.compiled(batch)
        size = padded_rows(rows, self.batch_size)
        batch = {key: _repeat_last_row(value, size) for key, value in batch.items()}
        outputs = self.compiled(batch)
        return outputs if size == rows else _first_rows(outputs, rows)


def make_decode_function(model, feature_keys: Sequence[str], beam_size: int, alpha: float,
                         extra_length: int, jit_compile: bool = False, eos_id: int = EOS_ID,
                         length_model=None, eos_candidates: str = "all",
                         batch_size: Optional[int] = None) -> DecodeFunction:
    """`decode_batch` compiled for batches of any size and length: a `DecodeFunction`."""
    return DecodeFunction(model, feature_keys, beam_size, alpha, extra_length,
                          jit_compile=jit_compile, eos_id=eos_id, length_model=length_model,
                          eos_candidates=eos_candidates, batch_size=batch_size)


def forced_log_probs(model, features: Mapping[str, Tensor], targets: Tensor) -> Tensor:
    """log p(y_t | y_<t, x) of given targets, one incremental step per position.

    Args:
        model: as in `decode_batch`.
        features: the batch, at least the model's `decode_features`.
        targets: int32 [B, T], each row ids then `<EOS>`, padded with 0.

    Returns:
        float32 [B, T]: each target token's log-probability, 0 at padding.
    """
    targets = ops.cast(targets, "int32")
    batch_size, length = ops.shape(targets)[0], ops.shape(targets)[1]
    memory = model.decoder_memory(model.encode(features, training=False))
    cache = model.initial_decoder_cache(batch_size, length)
    positions = ops.arange(length, dtype="int32")

    def body(step, state):
        previous, cache, log_probs = state
        logits, cache = model.decode_step(previous, step, cache, memory, training=False)
        token = targets[:, step]
        chosen = ops.take_along_axis(ops.log_softmax(ops.cast(logits, "float32")),
                                     token[:, None], axis=1)
        log_probs = ops.where(ops.equal(positions, step)[None, :], chosen, log_probs)
        return token, cache, log_probs

    initial = ops.full((batch_size,), model.decode_start_id, "int32")
    _, _, log_probs = ops.fori_loop(
        0, length, body, (initial, cache, ops.zeros((batch_size, length), "float32")))
    return ops.where(ops.not_equal(targets, 0), log_probs, ops.zeros_like(log_probs))


class ForcedScoreFunction:
    """`forced_log_probs` compiled by the backend, for batches and targets of any shape.

    Args:
        model: as in `decode_batch`.
        feature_keys: the batch keys the function reads.
        jit_compile: compile with XLA on TensorFlow; JAX always does.
        batch_size: the largest batch the caller passes (`padded_rows`).
    """

    def __init__(self, model, feature_keys: Sequence[str], jit_compile: bool = False,
                 batch_size: Optional[int] = None):
        self.feature_keys = sorted(feature_keys)
        self.batch_size = batch_size
        self.compiled = CompiledFunction(
            lambda features, targets: forced_log_probs(model, features, targets), model,
            jit_compile=jit_compile)

    def __call__(self, features: Mapping[str, Any], targets: Any) -> Tensor:
        """float32 [B, T] as `forced_log_probs`, a backend tensor."""
        batch = {key: _host_array(features[key]) for key in self.feature_keys}
        targets = _host_array(targets)
        if not self.compiled.per_shape:
            return self.compiled(batch, targets)
        rows, length = targets.shape
        size = padded_rows(rows, self.batch_size)
        padded_length = -(-length // LENGTH_MULTIPLE) * LENGTH_MULTIPLE
        # Zeros after a target change none of its log-probabilities: the decoder is causal.
        targets = np.pad(targets, [(0, 0), (0, padded_length - length)])
        batch = {key: _repeat_last_row(value, size) for key, value in batch.items()}
        log_probs = self.compiled(batch, _repeat_last_row(targets, size))
        return log_probs[:rows, :length]


def make_forced_score_function(model, feature_keys: Sequence[str], jit_compile: bool = False,
                               batch_size: Optional[int] = None) -> ForcedScoreFunction:
    """`forced_log_probs` compiled for batches of any shape: a `ForcedScoreFunction`."""
    return ForcedScoreFunction(model, feature_keys, jit_compile=jit_compile, batch_size=batch_size)
