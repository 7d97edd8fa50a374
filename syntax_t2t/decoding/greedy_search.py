"""Greedy decoding: beam size 1, as T2T decodes it.

At each step every sentence takes its most probable next token; a sentence
stops at `<EOS>` or at its maximum length. The loop has the same fixed-shape
form and the same `symbols_to_logits_fn(ids, step, cache)` interface as
`beam_search`, with one row per sentence.
"""

import tensorflow as tf

from syntax_t2t.decoding.beam_search import SearchResult, length_penalty, length_score, shape_list


def greedy_search(symbols_to_logits_fn, initial_ids, max_steps, max_lengths, cache,
                  alpha=0.6, eos_id=1, length_scores=None):
    """Greedy search (see the module docstring); call it inside a `tf.function`.

    Args:
        symbols_to_logits_fn: `(ids, step, cache) -> (logits, cache)`, with
            `ids` [batch] and `logits` [batch, vocab].
        initial_ids: int32 [batch], the id fed at step 0.
        max_steps: Python int or scalar int32 tensor, the size of the output
            buffer (at least `max(max_lengths)`).
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
    initial_ids = tf.convert_to_tensor(initial_ids, tf.int32)
    max_lengths = tf.convert_to_tensor(max_lengths, tf.int32)
    batch_size = shape_list(initial_ids)[0]
    ids = tf.zeros([batch_size, max_steps], tf.int32)
    log_probs = tf.zeros([batch_size], tf.float32)
    lengths = tf.zeros([batch_size], tf.int32)
    ended = tf.zeros([batch_size], tf.bool)
    done = tf.zeros([batch_size], tf.bool)

    def condition(step, last_ids, ids, log_probs, lengths, ended, done, cache):
        return (step < max_steps) & ~tf.reduce_all(done)

    def body(step, last_ids, ids, log_probs, lengths, ended, done, cache):
        logits, cache = symbols_to_logits_fn(last_ids, step, cache)
        step_log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32))
        tokens = tf.argmax(step_log_probs, axis=-1, output_type=tf.int32)
        # A done sentence keeps its tokens; it is fed 0 from now on.
        tokens = tf.where(done, 0, tokens)
        token_log_probs = tf.gather(step_log_probs, tokens, axis=1, batch_dims=1)
        at_step = tf.equal(tf.range(max_steps), step)
        ids = tf.where(at_step[None, :], tokens[:, None], ids)
        log_probs = tf.where(done, log_probs, log_probs + token_log_probs)
        is_eos = tf.equal(tokens, eos_id) & ~done
        lengths = tf.where(done | is_eos, lengths, lengths + 1)
        ended = ended | is_eos
        done = done | is_eos | (step + 1 >= max_lengths)
        return step + 1, tokens, ids, log_probs, lengths, ended, done, cache

    loop_vars = (tf.constant(0, tf.int32), initial_ids, ids, log_probs, lengths, ended,
                 done, cache)
    _, _, ids, log_probs, lengths, ended, _, _ = tf.while_loop(
        condition, body, loop_vars, maximum_iterations=max_steps)
    final_lengths = lengths + tf.cast(ended, tf.int32)
    scores = log_probs / length_penalty(final_lengths, alpha)
    if length_scores is not None:
        scores += length_score(length_scores, final_lengths)
    return SearchResult(ids=ids[:, None, :], lengths=lengths[:, None],
                        scores=scores[:, None], finished=ended[:, None])
