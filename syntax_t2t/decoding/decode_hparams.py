"""Decoding settings, given as T2T's `--decode_hparams` string."""

from syntax_t2t.hparams import HParams, HParamsError

# Which hypotheses may end a sentence: every candidate ("all", T2T) or only those
# inside the beam ("beam", fairseq/Marian); beam_search.py reads it from here so
# that the settings import without the search's backend.
EOS_CANDIDATES = ("all", "beam")


def decode_hparams(overrides: str = "") -> HParams:
    """The decoding settings with `overrides` applied.

    Defaults are the thesis's (Section 5.2: beam 4, alpha 0.6) and T2T's.

    Args:
        overrides: e.g. `"beam_size=1,extra_length=20"`.

    Returns:
        `HParams` with
        `beam_size` (1 = greedy), `alpha` (length-penalty exponent),
        `batch_size` (sentences per batch), `extra_length` (an output may
        have at most input length + extra_length tokens), `return_beams`
        (write every beam, tab-separated, instead of the best only),
        `write_beam_scores` (with `return_beams`: one `hypothesis<TAB>score`
        line per beam, a blank line between input sentences; see
        `syntax_t2t.decoding.output_format`),
        `length_model` (score finished hypotheses by log p(y | x) +
        log p(len(y) | len(x)) from training statistics, Eriguchi et al.
        2016, instead of the length penalty alpha; see
        `syntax_t2t.decoding.length_model`),
        `eos_candidates` (which of a beam step's 2 * beam_size candidates may
        end a hypothesis: `all`, T2T's rule, or `beam`, the best beam_size
        only, as fairseq and CTranslate2 do; see
        `syntax_t2t.decoding.beam_search`).

    Raises:
        HParamsError: an unknown name, a wrong type or an out-of-range value.
    """
    hparams = HParams(beam_size=4, alpha=0.6, batch_size=32, extra_length=50, return_beams=False,
                      write_beam_scores=False, length_model=False, eos_candidates="all")
    hparams.parse(overrides)
    if hparams.beam_size < 1:
        raise HParamsError(f"decode hparam beam_size={hparams.beam_size} must be at least 1")
    if hparams.batch_size < 1:
        raise HParamsError(f"decode hparam batch_size={hparams.batch_size} must be at least 1")
    if hparams.extra_length < 0:
        raise HParamsError(f"decode hparam extra_length={hparams.extra_length} must be >= 0")
    if hparams.alpha < 0:
        # The search's stopping bound assumes the penalty grows with length.
        raise HParamsError(f"decode hparam alpha={hparams.alpha} must be >= 0")
    if hparams.eos_candidates not in EOS_CANDIDATES:
        raise HParamsError(f"decode hparam eos_candidates={hparams.eos_candidates} must be one of "
                           f"{', '.join(EOS_CANDIDATES)}")
    return hparams
