"""Forced scoring: the log-probability of given translations (`bin/decode --score_file`).

Two ways to give them, after T2T and fairseq:

* `--score_file=F` (T2T): one pair per line, `source<TAB>target`, both
  tokenised; for models that need no source trees;
* `--score_reference` (fairseq) with `--reference_file=R`: the sources of
  `--decode_from_file` in any decoding input format (CoNLL-U and CzEng for
  models that need trees) and their translations in R, one tokenised line
  per source sentence.

The output has one line per input sentence, `total<TAB>per_token`: the
natural-log probability log p(y | x) of the whole translation, `<EOS>`
included, and that divided by the number of target ids scored (`<EOS>` and,
on subword problems, every subword counted). No length penalty is applied:
these are the model's probabilities, which `Decoder.score` computes through
the same incremental decoder the search uses. An empty target scores
`<EOS>` alone; an empty or unusable source gives an empty line.
"""

from typing import Optional, Sequence

from syntax_t2t.data.parallel_text import read_plain_lines, split_tokens
from syntax_t2t.decoding.inputs import SourceSentence
from syntax_t2t.errors import InputError, counted

SCORE_FORMAT = "{:.6f}\t{:.6f}\n"


def read_score_file(path) -> tuple[list[SourceSentence], list[Optional[list[str]]]]:
    """The sources and targets of a `source<TAB>target` file, one entry per line.

    Raises:
        InputError: a line with no tab or several, invalid UTF-8, or an
            empty file, naming the file and the line.
    """
    sources, targets = [], []
    for number, text in read_plain_lines(path):
        location = f"{path}:{number}"
        if not text.strip():
            sources.append(SourceSentence(None, location, f"{location}: empty line"))
            targets.append(None)
            continue
        fields = text.split("\t")
        if len(fields) != 2:
            raise InputError(path, number, f"expected source<TAB>target, found {len(fields) - 1} "
                             f"tab(s)", reason="wrong column count")
        tokens = split_tokens(fields[0])
        sources.append(SourceSentence(tokens or None, location,
                                      None if tokens else f"{location}: empty source"))
        targets.append(split_tokens(fields[1]))
    return sources, targets


def read_references(path, count: int) -> list[list[str]]:
    """The tokenised translations of `count` source sentences, one per line.

    Raises:
        InputError: a line count other than `count`, invalid UTF-8 or an
            empty file.
    """
    references = [split_tokens(text) for _, text in read_plain_lines(path)]
    if len(references) != count:
        raise InputError(path, None, f"has {counted(len(references), 'line')}, but the sources to score "
                         f"have {count} sentences: give one translation per source sentence",
                         reason="line count mismatch")
    return references


def score_text(scores: Sequence) -> str:
    """One `total<TAB>per_token` line per `ForcedScore`; an empty line for None."""
    return "".join("\n" if score is None else SCORE_FORMAT.format(score.total, score.per_token)
                   for score in scores)
