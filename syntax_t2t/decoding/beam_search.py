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
once at the maximum length and written in place), so the loop compiles
under `tf.function`, with XLA where `jit_compile` is on.

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

import tensorflow as tf

from syntax_t2t.decoding.decode_hparams import EOS_CANDIDATES

NEG_INF = float("-inf")


def length_penalty(length, alpha):
    """GNMT length penalty `((5 + length) / 6) ** alpha`.

    Args:
        length: number of tokens of the hypothesis, `<EOS>` included
            (any numeric tensor or Python number).
        alpha: the penalty's exponent; 0 disables it.

    Returns:
        float32 tensor of `length`'s shape.
    """
    length = tf.cast(length, tf.float32)
    return tf.pow((5.0 + length) / 6.0, tf.cast(alpha, tf.float32))


class SearchResult(typing.NamedTuple):
    """What a search returns (a named tuple, so `tf.function` can return it).

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

    ids: tf.Tensor
    lengths: tf.Tensor
    scores: tf.Tensor
    finished: tf.Tensor


def shape_list(tensor):
    """The dimensions of `tensor`: Python ints where static, scalar tensors elsewhere.

    Reshaping with static sizes keeps shapes static, which `tf.while_loop`
    needs to see its loop variables keep their shapes.
    """
    dynamic = tf.shape(tensor)
    return [dynamic[i] if size is None else size for i, size in enumerate(tensor.shape.as_list())]


def _unflatten_beams(tensor, batch_size, beam_size):
    """[batch * beam, ...] -> [batch, beam, ...]."""
    return tf.reshape(tensor, [batch_size, beam_size] + shape_list(tensor)[1:])


def _flatten_beams(tensor):
    """[batch, beam, ...] -> [batch * beam, ...]."""
    shape = shape_list(tensor)
    return tf.reshape(tensor, [shape[0] * shape[1]] + shape[2:])


def gather_beams(tensor, beam_indices):
    """Picks, for every sentence, the beams named by `beam_indices`.

    Args:
        tensor: [batch, old_beam, ...].
        beam_indices: int32 [batch, new_beam], indices into `old_beam`.

    Returns:
        [batch, new_beam, ...].
    """
    return tf.gather(tensor, beam_indices, axis=1, batch_dims=1)


def _gather_cache(cache, beam_indices, beam_size):
    """Reorders every [batch * beam, ...] cache leaf to follow `beam_indices`."""
    batch_size = shape_list(beam_indices)[0]

    def gather(leaf):
        beams = _unflatten_beams(leaf, batch_size, beam_size)
        return _flatten_beams(gather_beams(beams, beam_indices))

    return tf.nest.map_structure(gather, cache)


def _write_position(sequences, position, tokens):
    """`sequences[..., position] = tokens` without changing any shape."""
    at_position = tf.equal(tf.range(tf.shape(sequences)[-1]), position)
    return tf.where(at_position, tokens[..., None], sequences)


def _hold(done, old, new):
    """`new` for sentences not done yet, `old` for the done ones.

    `done` is [batch]; `old` and `new` are [batch, ...].
    """
    mask = tf.reshape(done, [-1] + [1] * (new.shape.rank - 1))
    return tf.where(mask, old, new)


def _first_eos_lengths(ids, eos_id, max_lengths):
    """Tokens before the first `<EOS>` (or `max_lengths` when there is none)."""
    is_eos = tf.equal(ids, eos_id)
    first = tf.argmax(tf.cast(is_eos, tf.int32), axis=-1, output_type=tf.int32)
    cut = tf.broadcast_to(max_lengths[:, None], tf.shape(first))
    return tf.where(tf.reduce_any(is_eos, axis=-1), first, cut)


def length_score(length_scores, lengths):
    """The length scores of hypotheses of `lengths` tokens (`<EOS>` counted).

    Args:
        length_scores: float32 [batch, max_steps + 1].
        lengths: int32 [batch] or [batch, k].

    Returns:
        float32 of `lengths`' shape.
    """
    length_scores = tf.cast(length_scores, tf.float32)
    lengths = tf.cast(lengths, tf.int32)
    if lengths.shape.rank == 1:
        return tf.gather(length_scores, lengths[:, None], batch_dims=1)[:, 0]
    return tf.gather(length_scores, lengths, batch_dims=1)


def best_reachable_length_scores(length_scores):
    """`best[b, l] = max over l' >= l of length_scores[b, l']`: what ending later can still add."""
    reversed_columns = tf.reverse(tf.transpose(length_scores), axis=[0])
    return tf.transpose(tf.reverse(tf.scan(tf.maximum, reversed_columns), axis=[0]))


def beam_search(symbols_to_logits_fn, initial_ids, beam_size, max_steps, max_lengths,
                cache, alpha=0.6, eos_id=1, length_scores=None, eos_candidates="all"):
    """T2T beam search (see the module docstring).

    Call it inside a `tf.function` (optionally `jit_compile=True`): the loop
    is a `tf.while_loop` whose tensors keep their shapes.

    Args:
        symbols_to_logits_fn: `(ids, step, cache) -> (logits, cache)` as in the
            module docstring.
        initial_ids: int32 [batch], the id fed at step 0.
        beam_size: Python int >= 1, hypotheses kept per sentence.
        max_steps: Python int or scalar int32 tensor, the size of the output
            buffer (at least `max(max_lengths)`); static under XLA.
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
    initial_ids = tf.convert_to_tensor(initial_ids, tf.int32)
    max_lengths = tf.convert_to_tensor(max_lengths, tf.int32)
    batch_size = shape_list(initial_ids)[0]
    buffer_size = max_steps + 1  # position 0 holds the start id

    # Position 0 of every alive sequence is the start id; only beam 0 is live
    # at first, so the first step does not pick the same token `beam` times.
    alive_ids = tf.zeros([batch_size, beam_size, buffer_size], tf.int32)
    alive_ids = _write_position(alive_ids, 0, tf.tile(initial_ids[:, None], [1, beam_size]))
    alive_log_probs = tf.tile(
        tf.constant([[0.0] + [NEG_INF] * (beam_size - 1)], tf.float32), [batch_size, 1])
    finished_ids = tf.zeros_like(alive_ids)
    finished_scores = tf.fill([batch_size, beam_size], NEG_INF)
    finished_flags = tf.zeros([batch_size, beam_size], tf.bool)
    done = tf.zeros([batch_size], tf.bool)
    # Sentences that reached their length limit with an alive hypothesis that
    # could still beat the finished ones.
    cut_off = tf.zeros([batch_size], tf.bool)
    max_penalty = length_penalty(max_lengths, alpha)
    if length_scores is not None:
        length_scores = tf.cast(length_scores, tf.float32)
        best_reachable = best_reachable_length_scores(length_scores)
        last_length = tf.shape(length_scores)[1] - 1

    def extend(step, alive_ids, alive_log_probs, cache):
        """The best `2 * beam` one-token extensions of the alive hypotheses."""
        last_ids = _flatten_beams(alive_ids[:, :, step])
        logits, cache = symbols_to_logits_fn(last_ids, step, cache)
        vocab_size = logits.shape[-1] or tf.shape(logits)[-1]
        log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32))
        log_probs = _unflatten_beams(log_probs, batch_size, beam_size)
        totals = tf.reshape(alive_log_probs[:, :, None] + log_probs, [batch_size, -1])
        # XLA needs a static k; a vocabulary is never smaller than 2 tokens.
        num_candidates = (min(2 * beam_size, beam_size * vocab_size)
                          if isinstance(vocab_size, int) else 2 * beam_size)
        candidate_log_probs, flat_indices = tf.math.top_k(totals, k=num_candidates)
        origins = flat_indices // vocab_size
        tokens = flat_indices % vocab_size
        candidate_ids = _write_position(gather_beams(alive_ids, origins), step + 1, tokens)
        return candidate_ids, candidate_log_probs, origins, tf.equal(tokens, eos_id), cache

    def grow_alive(candidate_ids, candidate_log_probs, origins, is_eos):
        """The best candidates that did not end; also where they came from."""
        scores = tf.where(is_eos, NEG_INF, candidate_log_probs)
        log_probs, chosen = tf.math.top_k(scores, k=beam_size)
        return gather_beams(candidate_ids, chosen), log_probs, gather_beams(origins, chosen)

    def grow_finished(step, candidate_ids, candidate_log_probs, is_eos,
                      finished_ids, finished_scores, finished_flags):
        """Merges the candidates that just ended into the finished set.

        Existing finished hypotheses come first, so a tie keeps the older one.
        """
        ended = is_eos & tf.math.is_finite(candidate_log_probs)
        if eos_candidates == "beam":
            # top_k returned the candidates best first, so rank = position.
            ended &= tf.range(tf.shape(is_eos)[1]) < beam_size
        scores = candidate_log_probs / length_penalty(step + 1, alpha)
        if length_scores is not None:
            scores += length_score(length_scores, tf.fill([batch_size], step + 1))[:, None]
        scores = tf.where(ended, scores, NEG_INF)
        all_ids = tf.concat([finished_ids, candidate_ids], axis=1)
        all_scores = tf.concat([finished_scores, scores], axis=1)
        all_flags = tf.concat([finished_flags, ended], axis=1)
        best_scores, chosen = tf.math.top_k(all_scores, k=beam_size)
        return (gather_beams(all_ids, chosen), best_scores, gather_beams(all_flags, chosen))

    def condition(step, alive_ids, alive_log_probs, finished_ids, finished_scores,
                  finished_flags, done, cut_off, cache):
        return (step < max_steps) & ~tf.reduce_all(done)

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
            best_possible_alive += best_reachable[:, tf.minimum(step + 2, last_length)]
        cannot_improve = finished_scores[:, 0] > best_possible_alive
        at_max_length = step + 1 >= max_lengths
        cut_off = cut_off | (~done & at_max_length & ~cannot_improve)
        done = done | cannot_improve | at_max_length
        return (step + 1, alive_ids, alive_log_probs, finished_ids, finished_scores,
                finished_flags, done, cut_off, cache)

    loop_vars = (tf.constant(0, tf.int32), alive_ids, alive_log_probs, finished_ids,
                 finished_scores, finished_flags, done, cut_off, cache)
    (_, alive_ids, alive_log_probs, finished_ids, finished_scores, finished_flags,
     _, cut_off, _) = tf.while_loop(condition, body, loop_vars, maximum_iterations=max_steps)

    # Alive hypotheses are scored as if they ended at the maximum length.
    alive_scores = alive_log_probs / max_penalty[:, None]
    if length_scores is not None:
        alive_scores += length_score(length_scores, max_lengths)[:, None]
    any_finished = tf.reduce_any(finished_flags, axis=1)
    if eos_candidates == "beam":
        # The cut-off hypotheses compete with the finished ones (finished
        # first, so a tie keeps the finished one).
        cut_off_scores = tf.where(cut_off[:, None], alive_scores, NEG_INF)
        all_ids = tf.concat([finished_ids, alive_ids], axis=1)
        all_flags = tf.concat([finished_flags, tf.zeros_like(finished_flags)], axis=1)
        finished_scores, chosen = tf.math.top_k(
            tf.concat([finished_scores, cut_off_scores], axis=1), k=beam_size)
        finished_ids, finished_flags = gather_beams(all_ids, chosen), gather_beams(all_flags, chosen)
        any_finished |= cut_off
    # Sentences that never produced <EOS> return their alive hypotheses.
    ids = _hold(~any_finished, alive_ids, finished_ids)[:, :, 1:]
    scores = _hold(~any_finished, alive_scores, finished_scores)
    flags = finished_flags & any_finished[:, None]
    lengths = _first_eos_lengths(ids, eos_id, max_lengths)
    return SearchResult(ids=ids, lengths=lengths, scores=scores, finished=flags)
