"""Beam search with Tensor2Tensor's semantics, in a fixed-shape compiled loop.

The search keeps two sets of `beam_size` hypotheses per sentence, as T2T does:

* *alive* hypotheses have not produced `<EOS>` and are extended every step;
* *finished* hypotheses ended with `<EOS>`; they are frozen (never extended)
  and ranked by their log-probability divided by the GNMT length penalty
  `((5 + length) / 6) ** alpha` (Wu et al. 2016), `length` counting `<EOS>`.

With a `length_scores` table (the length model of Eriguchi et al. 2016,
`syntax_t2t.decoding.length_model`) a finished hypothesis of `length`
tokens is scored `log-probability / penalty + length_scores[length]`.

Every step takes the best `2 * beam_size` one-token extensions of the alive
hypotheses: at most `beam_size` of them end in `<EOS>`, so at least
`beam_size` remain to stay alive. Which of the candidates that end in `<EOS>`
join the finished set is `eos_candidates`: `"all"` of them (T2T), or only
those among the best `beam_size` (`"beam"`: fairseq's and CTranslate2's
rule, under which a hypothesis ends only where it would otherwise have
stayed in the beam). Under `"beam"` the hypotheses that the length limit
cut off are also ranked with the finished ones by score, as fairseq and
CTranslate2 do; T2T returns them only when nothing finished. At alpha 0 the
`"beam"` rule gives CTranslate2's results, which is how an export is
checked against `bin/decode`. A sentence is done when no alive hypothesis
can still beat its best finished one (log-probabilities only fall, and the
penalty is largest at the maximum length; with length scores, plus the best
score of the lengths still reachable), or when it reached its maximum
length; a done sentence's hypotheses no longer change, so its result does not
depend on the other sentences in the batch. Sentences that never finish
return their alive hypotheses.

All tensors keep one shape through the loop (the output buffer is allocated
once at the maximum length and written in place), and the loop is
`keras.ops.while_loop`, so the search runs on every Keras backend and
compiles under `tf.function` (with or without XLA) and `jax.jit`
(`syntax_t2t.backend.compile`). On TensorFlow the `keras.ops` do the
arithmetic the TensorFlow search did before it was backend-neutral (its
gathers and maxima are exact in any form), so its results there are
unchanged.

The model is reached through one function,

    symbols_to_logits_fn(ids, step, cache) -> (logits, cache)

where `ids` [batch * beam] are the tokens chosen at the previous step (the
start id at step 0), `step` is the int32 position being predicted, `logits`
are [batch * beam, vocab] and `cache` is a nested structure of tensors whose
first dimension is batch * beam (sentence-major: row `b * beam + k` is beam
`k` of sentence `b`). The search reorders the cache rows to follow the
surviving beams. Anything the same for every beam of a sentence (encoder
output, cross-attention keys and values) belongs in the function's closure,
not in the cache (tiled once, or one row per sentence that the beams share,
as the Transformer's cross-attention memory). The reordering gathers every
leaf into a new tensor, which `attention_cache.InPlaceCache` writes rely on.
"""

import typing

import numpy as np
from keras import ops
from keras import tree as keras_tree

from syntax_t2t.backend import Tensor
from syntax_t2t.decoding.decode_hparams import EOS_CANDIDATES

NEG_INF = float("-inf")


def length_penalty(length: Tensor, alpha: Tensor) -> Tensor:
    """GNMT length penalty `((5 + length) / 6) ** alpha`.

    Args:
        length: number of tokens of the hypothesis, `<EOS>` included
            (any numeric tensor or Python number).
        alpha: the penalty's exponent; 0 disables it.

    Returns:
        float32 tensor of `length`'s shape.
    """
    length = ops.cast(length, "float32")
    return ops.power((5.0 + length) / 6.0, ops.cast(alpha, "float32"))


class SearchResult(typing.NamedTuple):
    """What a search returns (a named tuple, so compiled functions can return it).

    Attributes:
        ids: int32 [batch, beam, max_steps]: the hypotheses, best first; the
            tokens after a hypothesis' end are 0.
        lengths: int32 [batch, beam]: tokens of each hypothesis, without the
            final `<EOS>`.
        scores: float32 [batch, beam]: log-probability divided by the length
            penalty of the hypothesis' length (`<EOS>` counted), plus its
            length score where the search has a `length_scores` table; -inf
            for empty slots.
        finished: bool [batch, beam]: whether the hypothesis ended with `<EOS>`
            (false when the maximum length cut it off).
    """

    ids: Tensor
    lengths: Tensor
    scores: Tensor
    finished: Tensor


def gather_beams(tensor: Tensor, beam_indices: Tensor) -> Tensor:
    """Picks, for every sentence, the beams named by `beam_indices`.

    Args:
        tensor: [batch, old_beam, ...].
        beam_indices: int32 [batch, new_beam], indices into `old_beam`.

    Returns:
        [batch, new_beam, ...].
    """
    shape = ops.shape(tensor)
    rows = ops.reshape(tensor, (shape[0] * shape[1],) + tuple(shape[2:]))
    return ops.take(rows, flat_beam_indices(beam_indices, shape[1]), axis=0)


def flat_beam_indices(beam_indices: Tensor, beam_size: int) -> Tensor:
    """Rows of a sentence-major [batch * beam, ...] tensor for `beam_indices` [batch, k]."""
    batch_size = ops.shape(beam_indices)[0]
    first_rows = ops.arange(batch_size, dtype="int32") * beam_size
    return first_rows[:, None] + ops.cast(beam_indices, "int32")


def _gather_cache(cache, beam_indices: Tensor, beam_size: int):
    """Reorders every [batch * beam, ...] cache leaf to follow `beam_indices`.

    A gather makes every leaf a new tensor, which in-place caches rely on
    (`syntax_t2t.backend.inplace_cache`).
    """
    rows = ops.reshape(flat_beam_indices(beam_indices, beam_size), (-1,))
    return keras_tree.map_structure(lambda leaf: ops.take(leaf, rows, axis=0), cache)


def _write_position(sequences: Tensor, position: Tensor, tokens: Tensor) -> Tensor:
    """`sequences[..., position] = tokens` without changing any shape."""
    at_position = ops.equal(ops.arange(ops.shape(sequences)[-1], dtype="int32"), position)
    return ops.where(at_position, tokens[..., None], sequences)


def _hold(done: Tensor, old: Tensor, new: Tensor) -> Tensor:
    """`new` for sentences not done yet, `old` for the done ones.

    `done` is [batch]; `old` and `new` are [batch, ...].
    """
    mask = ops.reshape(done, (-1,) + (1,) * (len(new.shape) - 1))
    return ops.where(mask, old, new)


def _first_eos_lengths(ids: Tensor, eos_id: int, max_lengths: Tensor) -> Tensor:
    """Tokens before the first `<EOS>` (or `max_lengths` when there is none)."""
    is_eos = ops.equal(ids, eos_id)
    first = ops.cast(ops.argmax(ops.cast(is_eos, "int32"), axis=-1), "int32")
    cut = ops.broadcast_to(max_lengths[:, None], ops.shape(first))
    return ops.where(ops.any(is_eos, axis=-1), first, cut)


def length_score(length_scores: Tensor, lengths: Tensor) -> Tensor:
    """The length scores of hypotheses of `lengths` tokens (`<EOS>` counted).

    Args:
        length_scores: float32 [batch, max_steps + 1].
        lengths: int32 [batch] or [batch, k].

    Returns:
        float32 of `lengths`' shape.
    """
    length_scores = ops.cast(length_scores, "float32")
    lengths = ops.cast(lengths, "int32")
    if len(lengths.shape) == 1:
        return ops.take_along_axis(length_scores, lengths[:, None], axis=1)[:, 0]
    return ops.take_along_axis(length_scores, lengths, axis=1)


def best_reachable_length_scores(length_scores: Tensor) -> Tensor:
    """`best[b, l] = max over l' >= l of length_scores[b, l']`: what ending later can still add.

    A maximum over a [l, l'] mask rather than a reversed cumulative maximum,
    which `keras.ops` lacks; the table is one row of a few hundred lengths
    per sentence.
    """
    length_scores = ops.cast(length_scores, "float32")
    positions = ops.arange(ops.shape(length_scores)[1], dtype="int32")
    later = positions[None, :] >= positions[:, None]
    return ops.max(ops.where(later[None], length_scores[:, None, :], NEG_INF), axis=-1)


def beam_search(symbols_to_logits_fn, initial_ids: Tensor, beam_size: int, max_steps,
                max_lengths: Tensor, cache, alpha: float = 0.6, eos_id: int = 1,
                length_scores: typing.Optional[Tensor] = None,
                eos_candidates: str = "all") -> SearchResult:
    """T2T beam search (see the module docstring).

    Runs eagerly, or traced by a compiled function (`backend/compile.py`):
    the loop is a `keras.ops.while_loop` whose tensors keep their shapes.

    Args:
        symbols_to_logits_fn: `(ids, step, cache) -> (logits, cache)` as in the
            module docstring.
        initial_ids: int32 [batch], the id fed at step 0.
        beam_size: Python int >= 1, hypotheses kept per sentence.
        max_steps: the size of the output buffer (at least
            `max(max_lengths)`): a Python int, or on TensorFlow without XLA
            a scalar int32 tensor.
        max_lengths: int32 [batch], the most tokens (`<EOS>` included) each
            sentence's output may have.
        cache: nested structure of [batch * beam, ...] tensors, the initial
            decoder state (already tiled to the beams).
        alpha: length-penalty exponent (thesis: 0.6).
        eos_id: the `<EOS>` id.
        length_scores: None, or float32 [batch, max_steps + 1]: column l is
            added to the score of a hypothesis of l tokens, `<EOS>` counted.
        eos_candidates: `"all"` (T2T) or `"beam"` (fairseq, CTranslate2):
            which of a step's `2 * beam_size` candidates may end a
            hypothesis (see the module docstring).

    Returns:
        A `SearchResult`, hypotheses sorted best first.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be at least 1, got {beam_size}")
    if eos_candidates not in EOS_CANDIDATES:
        raise ValueError(f"eos_candidates must be one of {EOS_CANDIDATES}, got {eos_candidates!r}")
    initial_ids = ops.convert_to_tensor(initial_ids, "int32")
    max_lengths = ops.convert_to_tensor(max_lengths, "int32")
    batch_size = ops.shape(initial_ids)[0]
    buffer_size = max_steps + 1  # position 0 holds the start id

    # Position 0 of every alive sequence is the start id; only beam 0 is live
    # at first, so the first step does not pick the same token `beam` times.
    alive_ids = ops.zeros((batch_size, beam_size, buffer_size), "int32")
    alive_ids = _write_position(alive_ids, 0, ops.tile(initial_ids[:, None], (1, beam_size)))
    first_beam_only = np.array([[0.0] + [NEG_INF] * (beam_size - 1)], np.float32)
    alive_log_probs = ops.broadcast_to(ops.convert_to_tensor(first_beam_only),
                                       (batch_size, beam_size))
    finished_ids = ops.zeros_like(alive_ids)
    finished_scores = ops.full((batch_size, beam_size), NEG_INF, "float32")
    finished_flags = ops.zeros((batch_size, beam_size), "bool")
    done = ops.zeros((batch_size,), "bool")
    # Sentences that reached their length limit with an alive hypothesis that
    # could still beat the finished ones.
    cut_off = ops.zeros((batch_size,), "bool")
    max_penalty = length_penalty(max_lengths, alpha)
    if length_scores is not None:
        length_scores = ops.cast(length_scores, "float32")
        best_reachable = best_reachable_length_scores(length_scores)
        last_length = ops.shape(length_scores)[1] - 1

    def extend(step, alive_ids, alive_log_probs, cache):
        """The best `2 * beam` one-token extensions of the alive hypotheses."""
        last_ids = ops.reshape(alive_ids[:, :, step], (-1,))
        logits, cache = symbols_to_logits_fn(last_ids, step, cache)
        vocab_size = ops.shape(logits)[-1]
        log_probs = ops.log_softmax(ops.cast(logits, "float32"))
        log_probs = ops.reshape(log_probs, (batch_size, beam_size, vocab_size))
        totals = ops.reshape(alive_log_probs[:, :, None] + log_probs, (batch_size, -1))
        # XLA needs a static k; a vocabulary is never smaller than 2 tokens.
        num_candidates = (min(2 * beam_size, beam_size * vocab_size)
                          if isinstance(vocab_size, int) else 2 * beam_size)
        candidate_log_probs, flat_indices = ops.top_k(totals, k=num_candidates)
        origins = flat_indices // vocab_size
        tokens = flat_indices % vocab_size
        candidate_ids = _write_position(gather_beams(alive_ids, origins), step + 1, tokens)
        return candidate_ids, candidate_log_probs, origins, ops.equal(tokens, eos_id), cache

    def grow_alive(candidate_ids, candidate_log_probs, origins, is_eos):
        """The best candidates that did not end; also where they came from."""
        scores = ops.where(is_eos, NEG_INF, candidate_log_probs)
        log_probs, chosen = ops.top_k(scores, k=beam_size)
        return gather_beams(candidate_ids, chosen), log_probs, gather_beams(origins, chosen)

    def grow_finished(step, candidate_ids, candidate_log_probs, is_eos,
                      finished_ids, finished_scores, finished_flags):
        """Merges the candidates that just ended into the finished set.

        Existing finished hypotheses come first, so a tie keeps the older one.
        """
        ended = ops.logical_and(is_eos, ops.isfinite(candidate_log_probs))
        if eos_candidates == "beam":
            # top_k returned the candidates best first, so rank = position.
            in_beam = ops.arange(ops.shape(is_eos)[1], dtype="int32") < beam_size
            ended = ops.logical_and(ended, in_beam[None, :])
        scores = candidate_log_probs / length_penalty(step + 1, alpha)
        if length_scores is not None:
            scores += length_scores[:, step + 1][:, None]
        scores = ops.where(ended, scores, NEG_INF)
        all_ids = ops.concatenate([finished_ids, candidate_ids], axis=1)
        all_scores = ops.concatenate([finished_scores, scores], axis=1)
        all_flags = ops.concatenate([finished_flags, ended], axis=1)
        best_scores, chosen = ops.top_k(all_scores, k=beam_size)
        return gather_beams(all_ids, chosen), best_scores, gather_beams(all_flags, chosen)

    def condition(step, alive_ids, alive_log_probs, finished_ids, finished_scores,
                  finished_flags, done, cut_off, cache):
        return ops.logical_and(step < max_steps, ops.logical_not(ops.all(done)))

    def body(step, alive_ids, alive_log_probs, finished_ids, finished_scores,
             finished_flags, done, cut_off, cache):
        candidate_ids, candidate_log_probs, origins, is_eos, new_cache = extend(
            step, alive_ids, alive_log_probs, cache)
        new_alive_ids, new_alive_log_probs, alive_origins = grow_alive(
            candidate_ids, candidate_log_probs, origins, is_eos)
        new_finished = grow_finished(step, candidate_ids, candidate_log_probs, is_eos,
                                     finished_ids, finished_scores, finished_flags)

        # A done sentence keeps its hypotheses: its result must not depend on
        # how long the other sentences of the batch keep the loop running.
        alive_ids = _hold(done, alive_ids, new_alive_ids)
        alive_log_probs = _hold(done, alive_log_probs, new_alive_log_probs)
        finished_ids, finished_scores, finished_flags = (
            _hold(done, old, new) for old, new in zip(
                (finished_ids, finished_scores, finished_flags), new_finished))
        cache = _gather_cache(new_cache, alive_origins, beam_size)

        # Alive log-probabilities only fall and the penalty only grows, so
        # the best alive hypothesis can at most reach this score.
        best_possible_alive = alive_log_probs[:, 0] / max_penalty
        if length_scores is not None:
            # Alive hypotheses end at step + 2 tokens or later.
            best_possible_alive += best_reachable[:, ops.minimum(step + 2, last_length)]
        cannot_improve = finished_scores[:, 0] > best_possible_alive
        at_max_length = step + 1 >= max_lengths
        cut_off = ops.logical_or(cut_off, ops.logical_and(
            ops.logical_and(ops.logical_not(done), at_max_length), ops.logical_not(cannot_improve)))
        done = ops.logical_or(done, ops.logical_or(cannot_improve, at_max_length))
        return (step + 1, alive_ids, alive_log_probs, finished_ids, finished_scores,
                finished_flags, done, cut_off, cache)

    loop_vars = (ops.convert_to_tensor(0, "int32"), alive_ids, alive_log_probs, finished_ids,
                 finished_scores, finished_flags, done, cut_off, cache)
    (_, alive_ids, alive_log_probs, finished_ids, finished_scores, finished_flags,
     _, cut_off, _) = ops.while_loop(condition, body, loop_vars, maximum_iterations=max_steps)

    # Alive hypotheses are scored as if they ended at the maximum length.
    alive_scores = alive_log_probs / max_penalty[:, None]
    if length_scores is not None:
        alive_scores += length_score(length_scores, max_lengths)[:, None]
    any_finished = ops.any(finished_flags, axis=1)
    if eos_candidates == "beam":
        # The cut-off hypotheses compete with the finished ones (finished
        # first, so a tie keeps the finished one).
        cut_off_scores = ops.where(cut_off[:, None], alive_scores, NEG_INF)
        all_ids = ops.concatenate([finished_ids, alive_ids], axis=1)
        all_flags = ops.concatenate([finished_flags, ops.zeros_like(finished_flags)], axis=1)
        finished_scores, chosen = ops.top_k(
            ops.concatenate([finished_scores, cut_off_scores], axis=1), k=beam_size)
        finished_ids = gather_beams(all_ids, chosen)
        finished_flags = gather_beams(all_flags, chosen)
        any_finished = ops.logical_or(any_finished, cut_off)
    # Sentences that never produced <EOS> return their alive hypotheses.
    none_finished = ops.logical_not(any_finished)
    ids = _hold(none_finished, alive_ids, finished_ids)[:, :, 1:]
    scores = _hold(none_finished, alive_scores, finished_scores)
    flags = ops.logical_and(finished_flags, any_finished[:, None])
    lengths = _first_eos_lengths(ids, eos_id, max_lengths)
    return SearchResult(ids=ids, lengths=lengths, scores=scores, finished=flags)
