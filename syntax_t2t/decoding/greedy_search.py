"""Greedy decoding: beam size 1, as T2T decodes it.

At each step every sentence takes its most probable next token; a sentence
stops at `<EOS>` or at its maximum length. The loop has the same fixed-shape
form, the same `symbols_to_logits_fn(ids, step, cache)` interface and the
same `keras.ops` on every backend as `beam_search`, with one row per
sentence.
"""

import typing

from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.decoding.beam_search import SearchResult, length_penalty, length_score


def greedy_search(symbols_to_logits_fn, initial_ids: Tensor, max_steps, max_lengths: Tensor,
                  cache, alpha: float = 0.6, eos_id: int = 1,
                  length_scores: typing.Optional[Tensor] = None) -> SearchResult:
    """Greedy search (see the module docstring); eager or inside a compiled function.

    Args:
        symbols_to_logits_fn: `(ids, step, cache) -> (logits, cache)`, with
            `ids` [batch] and `logits` [batch, vocab].
        initial_ids: int32 [batch], the id fed at step 0.
        max_steps: the size of the output buffer (at least
            `max(max_lengths)`): a Python int, or on TensorFlow without XLA
            a scalar int32 tensor.
        max_lengths: int32 [batch], the most tokens (`<EOS>` included) each
            output may have.
        cache: nested structure of [batch, ...] tensors, the initial decoder
            state.
        alpha: length-penalty exponent, used only to make `scores` comparable
            with `beam_search`'s.
        eos_id: the `<EOS>` id.
        length_scores: None, or float32 [batch, max_steps + 1] added to the
            score as in `beam_search` (it cannot change a greedy choice).

    Returns:
        A `SearchResult` with a beam dimension of 1.
    """
    initial_ids = ops.convert_to_tensor(initial_ids, "int32")
    max_lengths = ops.convert_to_tensor(max_lengths, "int32")
    batch_size = ops.shape(initial_ids)[0]
    ids = ops.zeros((batch_size, max_steps), "int32")
    log_probs = ops.zeros((batch_size,), "float32")
    lengths = ops.zeros((batch_size,), "int32")
    ended = ops.zeros((batch_size,), "bool")
    done = ops.zeros((batch_size,), "bool")
    positions = ops.arange(max_steps, dtype="int32")

    def condition(step, last_ids, ids, log_probs, lengths, ended, done, cache):
        return ops.logical_and(step < max_steps, ops.logical_not(ops.all(done)))

    def body(step, last_ids, ids, log_probs, lengths, ended, done, cache):
        logits, cache = symbols_to_logits_fn(last_ids, step, cache)
        step_log_probs = ops.log_softmax(ops.cast(logits, "float32"))
        # The best token and its log-probability in one pass (keras.ops.argmax
        # makes four more over the vocabulary on TensorFlow); ties go to the
        # lower id, as with an argmax.
        token_log_probs, tokens = ops.top_k(step_log_probs, k=1)
        token_log_probs, tokens = token_log_probs[:, 0], ops.cast(tokens[:, 0], "int32")
        # A done sentence keeps its tokens; it is fed 0 from now on.
        tokens = ops.where(done, 0, tokens)
        ids = ops.where(ops.equal(positions, step)[None, :], tokens[:, None], ids)
        log_probs = ops.where(done, log_probs, log_probs + token_log_probs)
        is_eos = ops.logical_and(ops.equal(tokens, eos_id), ops.logical_not(done))
        lengths = ops.where(ops.logical_or(done, is_eos), lengths, lengths + 1)
        ended = ops.logical_or(ended, is_eos)
        done = ops.logical_or(done, ops.logical_or(is_eos, step + 1 >= max_lengths))
        return step + 1, tokens, ids, log_probs, lengths, ended, done, cache

    loop_vars = (ops.convert_to_tensor(0, "int32"), initial_ids, ids, log_probs, lengths, ended,
                 done, cache)
    _, _, ids, log_probs, lengths, ended, _, _ = ops.while_loop(
        condition, body, loop_vars, maximum_iterations=max_steps)
    final_lengths = lengths + ops.cast(ended, "int32")
    scores = log_probs / length_penalty(final_lengths, alpha)
    if length_scores is not None:
        scores += length_score(length_scores, final_lengths)
    return SearchResult(ids=ids[:, None, :], lengths=lengths[:, None],
                        scores=scores[:, None], finished=ended[:, None])
