"""One entry point for both searches: beam size 1 is greedy decoding (as in T2T)."""

import typing

from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.decoding.beam_search import SearchResult, beam_search
from syntax_t2t.decoding.greedy_search import greedy_search


def tile_beams(tensor: Tensor, beam_size: int) -> Tensor:
    """Repeats every sentence's row `beam_size` times: [batch, ...] -> [batch * beam, ...].

    Rows are sentence-major (row `b * beam + k` is beam `k` of sentence `b`),
    the layout `beam_search` expects of its cache and closures.
    """
    return ops.repeat(ops.convert_to_tensor(tensor), beam_size, axis=0)


def search(symbols_to_logits_fn, initial_ids: Tensor, beam_size: int, max_steps,
           max_lengths: Tensor, cache, alpha: float = 0.6, eos_id: int = 1,
           length_scores: typing.Optional[Tensor] = None,
           eos_candidates: str = "all") -> SearchResult:
    """Greedy search when `beam_size` is 1, otherwise T2T beam search.

    Args:
        symbols_to_logits_fn: `(ids, step, cache) -> (logits, cache)`; see
            `beam_search`.
        initial_ids: int32 [batch], the id fed at step 0.
        beam_size: Python int >= 1.
        max_steps: size of the output buffer: a Python int, or on
            TensorFlow without XLA a scalar tensor.
        max_lengths: int32 [batch], the most output tokens per sentence.
        cache: the decoder state, [batch * beam_size, ...] leaves (use
            `tile_beams`).
        alpha: length-penalty exponent.
        eos_id: the `<EOS>` id.
        length_scores: None, or float32 [batch, max_steps + 1]: column l is
            added to the score of a finished hypothesis of l tokens (`<EOS>`
            counted); see `syntax_t2t.decoding.length_model`.
        eos_candidates: beam search's finishing rule, `"all"` (T2T) or
            `"beam"` (fairseq, CTranslate2); see `beam_search`. Greedy search
            has one candidate, so both rules are the same there.

    Returns:
        A `SearchResult` with `beam_size` hypotheses per sentence.
    """
    if beam_size == 1:
        return greedy_search(symbols_to_logits_fn, initial_ids, max_steps, max_lengths, cache,
                             alpha=alpha, eos_id=eos_id, length_scores=length_scores)
    return beam_search(symbols_to_logits_fn, initial_ids, beam_size, max_steps, max_lengths,
                       cache, alpha=alpha, eos_id=eos_id, length_scores=length_scores,
                       eos_candidates=eos_candidates)
