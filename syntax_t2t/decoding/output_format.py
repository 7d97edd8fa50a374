"""How `bin/decode` writes one input sentence's translation.

Three layouts:

* best (the default): the best hypothesis, one line per input sentence;
* beams (`return_beams=true`): every hypothesis on one line, tab-separated,
  best first (T2T's layout without scores);
* n-best (`return_beams=true,write_beam_scores=true`, or `--nbest=N` for the
  best N): one line per hypothesis, `hypothesis<TAB>score`, best first, the
  hypotheses of one input sentence together and a blank line after them.
  The score is the beam search's own: the log-probability divided by the
  GNMT length penalty `((5 + length) / 6) ** alpha` (plus the length model's
  score with `length_model=true`), natural logarithm.

An unusable input sentence gives an empty line (n-best: an empty block, that
is the blank line alone), so outputs stay aligned with the inputs.
"""

import dataclasses
from typing import Callable, Optional, Sequence

from syntax_t2t.hparams import HParamsError

SCORE_FORMAT = "{:.6f}"


@dataclasses.dataclass(frozen=True)
class OutputFormat:
    """The layout of the output (see the module docstring).

    Attributes:
        beams: write every hypothesis, not only the best.
        scores: the n-best layout (hypothesis and score per line).
        nbest: with `scores`, at most this many hypotheses (None = all).
        detokenize: turns a hypothesis' tokens into its text.
    """

    beams: bool = False
    scores: bool = False
    nbest: Optional[int] = None
    detokenize: Callable[[Sequence[str]], str] = " ".join

    def text(self, translation) -> str:
        """The output of one input sentence, newline-terminated.

        Args:
            translation: a `decoder.Translation`, or None for an unusable
                input sentence.
        """
        if self.scores:
            beams = () if translation is None else translation.beams[:self.nbest]
            return "".join(f"{self.detokenize(tokens)}\t{SCORE_FORMAT.format(score)}\n"
                           for tokens, score in beams) + "\n"
        if translation is None:
            return "\n"
        if self.beams:
            return "\t".join(self.detokenize(tokens) for tokens, _ in translation.beams) + "\n"
        return self.detokenize(translation.tokens) + "\n"


def output_format(settings, nbest: Optional[int] = None,
                  detokenize: Callable[[Sequence[str]], str] = " ".join) -> OutputFormat:
    """The layout asked for by the decode hparams and `--nbest`.

    Args:
        settings: from `decode_hparams` (`return_beams`, `write_beam_scores`,
            `beam_size`).
        nbest: `--nbest`, or None.
        detokenize: as `OutputFormat.detokenize`.

    Raises:
        HParamsError: scores without beams, or more best hypotheses than beams.
    """
    if settings.write_beam_scores and not settings.return_beams:
        raise HParamsError("decode hparam write_beam_scores=true writes the score of every beam: "
                           "it needs return_beams=true (or use --nbest=N)")
    if nbest is not None and nbest > settings.beam_size:
        raise HParamsError(f"--nbest={nbest} asks for more hypotheses than the beam holds "
                           f"(beam_size={settings.beam_size}); raise beam_size in "
                           f"--decode_hparams")
    scores = nbest is not None or settings.write_beam_scores
    return OutputFormat(beams=scores or settings.return_beams, scores=scores, nbest=nbest,
                        detokenize=detokenize)
