"""Translation quality with sacreBLEU: BLEU, chrF, paired bootstrap (thesis 5.3).

Scores are corpus-level, computed by sacreBLEU, by default with its default
settings (cased, 13a tokenisation for BLEU, chrF2) so that the printed
signature is the one other papers report. The seeds score some language
pairs otherwise, and `tokenize` / `lowercase` reproduce them with
sacreBLEU's own tokenizers (`TOKENIZERS`): NSD's character-level BLEU on
Chinese and Japanese (`char`), its case-insensitive BLEU on English
(`lowercase`), Pascal's and Tree2Seq's WAT-style Japanese BLEU on
morphemes (`ja-mecab`, sacreBLEU's Japanese extra: `pip install
syntax_t2t[ja]`). `lowercase` lowercases chrF too. Significance is
sacreBLEU's paired bootstrap resampling (Koehn 2004), as the thesis did
with MT-ComparEval.
"""

import dataclasses
import importlib.util
import os
from typing import Callable, Optional, Sequence, Union

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from syntax_t2t import io_utils
from syntax_t2t.errors import InputError, counted

PathLike = Union[str, os.PathLike]

DEFAULT_BOOTSTRAP_SAMPLES = 1000

#: sacreBLEU's tokenizers offered for BLEU (and RIBES); `13a` is its default.
TOKENIZERS = ("13a", "intl", "zh", "ja-mecab", "char", "none")
DEFAULT_TOKENIZE = "13a"
#: What each tokenizer needs beyond sacreBLEU, and the extra that installs it.
_TOKENIZER_MODULES = {"ja-mecab": (("MeCab", "ipadic"), "syntax_t2t[ja]")}


class TokenizerError(ValueError):
    """An unknown tokenizer, or one whose optional dependencies are missing."""


def check_tokenizer(tokenize: str) -> None:
    """Raises `TokenizerError` unless sacreBLEU can tokenize with `tokenize` here.

    Args:
        tokenize: one of `TOKENIZERS`.
    """
    if tokenize not in TOKENIZERS:
        raise TokenizerError(f"unknown tokenizer {tokenize!r}; expected one of {', '.join(TOKENIZERS)}")
    modules, extra = _TOKENIZER_MODULES.get(tokenize, ((), None))
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise TokenizerError(f"tokenizer {tokenize!r} needs the Python packages of sacreBLEU's "
                             f"optional extra ({', '.join(missing)} missing): pip install '{extra}'")


@dataclasses.dataclass(frozen=True)
class MetricScore:
    """One corpus-level score.

    Attributes:
        name: the metric as sacreBLEU names it (`BLEU`, `chrF2`).
        score: the score, 0-100.
        signature: sacreBLEU's signature of the settings used.
        details: sacreBLEU's one-line description (n-gram precisions etc.).
    """

    name: str
    score: float
    signature: str
    details: str


@dataclasses.dataclass(frozen=True)
class BootstrapComparison:
    """A system compared with a baseline by paired bootstrap resampling.

    Attributes:
        metric: the metric compared (`BLEU`, `chrF2`).
        baseline, system: the two systems' names.
        baseline_score, system_score: their corpus scores.
        system_mean, system_ci: the system's mean score over the resamples
            and the half-width of its 95% confidence interval.
        p_value: probability of a difference at least this large if the
            systems were equally good.
        samples: number of resamples.
        signature: sacreBLEU's signature, including the seed and samples.
    """

    metric: str
    baseline: str
    system: str
    baseline_score: float
    system_score: float
    system_mean: float
    system_ci: float
    p_value: float
    samples: int
    signature: str


def read_segments(path: PathLike) -> list[str]:
    """Reads one segment per line (plain or gzip, strict UTF-8).

    Raises:
        InputError: on invalid UTF-8, naming the line.
    """
    return [line for _, line in io_utils.read_lines(path)]


def check_aligned(hypotheses: Sequence[str], references: Sequence[str],
                  hypotheses_path: PathLike, references_path: PathLike) -> None:
    """Raises `InputError` unless both sides have the same number of lines."""
    if len(hypotheses) != len(references):
        raise InputError(
            hypotheses_path, None,
            f"has {counted(len(hypotheses), 'line')} but the "
            f"references {os.fspath(references_path)} "
            f"have {len(references)}; every reference needs exactly one hypothesis line",
            reason="line count mismatch")


def _metrics(references: Sequence[str], tokenize: str = DEFAULT_TOKENIZE, lowercase: bool = False):
    check_tokenizer(tokenize)
    # The metrics cache the references' statistics; bootstrapping reuses them.
    return {"BLEU": BLEU(references=[list(references)], tokenize=tokenize, lowercase=lowercase),
            "chrF": CHRF(references=[list(references)], lowercase=lowercase)}


def segment_tokenizer(tokenize: str = DEFAULT_TOKENIZE, lowercase: bool = False
                      ) -> tuple[Callable[[str], str], str]:
    """sacreBLEU's BLEU preprocessing of one segment, for metrics scored on the same tokens.

    Args:
        tokenize: one of `TOKENIZERS`.
        lowercase: lowercase before tokenising, as BLEU does.

    Returns:
        `(function, signature)`: the function maps a segment to its
        space-separated tokens; the signature names the tokenizer as
        sacreBLEU's signature does (e.g. `ja-mecab-0.996-IPA`).

    Raises:
        TokenizerError: as `check_tokenizer`.
    """
    check_tokenizer(tokenize)
    tokenizer = BLEU(tokenize=tokenize).tokenizer

    def preprocess(segment: str) -> str:
        return tokenizer((segment.lower() if lowercase else segment).rstrip())

    return preprocess, tokenizer.signature()


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str], tokenize: str = DEFAULT_TOKENIZE,
                  lowercase: bool = False) -> dict[str, MetricScore]:
    """Corpus BLEU and chrF of one system.

    Args:
        hypotheses: one detokenised (or consistently tokenised) output per
            segment.
        references: one reference per segment, aligned with `hypotheses`.
        tokenize: BLEU's tokenizer, one of `TOKENIZERS`.
        lowercase: case-insensitive BLEU and chrF.

    Returns:
        `{"BLEU": MetricScore, "chrF": MetricScore}`.

    Raises:
        TokenizerError: as `check_tokenizer`.
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    scores = {}
    for key, metric in _metrics(references, tokenize, lowercase).items():
        result = metric.corpus_score(list(hypotheses), None)
        scores[key] = MetricScore(name=result.name, score=float(result.score),
                                  signature=str(metric.get_signature()),
                                  details=str(result))
    return scores


def paired_bootstrap(baseline: tuple[str, Sequence[str]], systems: Sequence[tuple[str, Sequence[str]]],
                     references: Sequence[str], samples: int = DEFAULT_BOOTSTRAP_SAMPLES,
                     tokenize: str = DEFAULT_TOKENIZE, lowercase: bool = False
                     ) -> list[BootstrapComparison]:
    """Compares each system with the baseline by sacreBLEU's paired bootstrap.

    The resampling seed is sacreBLEU's (environment variable `SACREBLEU_SEED`,
    12345 by default) and is part of the returned signature.

    Args:
        baseline: `(name, hypotheses)` of the reference system.
        systems: `(name, hypotheses)` of every system compared with it.
        references: one reference per segment.
        samples: number of bootstrap resamples (sacreBLEU's default: 1000).
        tokenize, lowercase: as in `corpus_scores`.

    Returns:
        One `BootstrapComparison` per system and metric (BLEU, chrF).
    """
    if samples < 1:
        raise ValueError(f"samples must be positive, got {samples}")
    for name, hypotheses in [baseline, *systems]:
        if len(hypotheses) != len(references):
            raise ValueError(f"system {name!r} has {counted(len(hypotheses), 'line')}, "
                             f"references {len(references)}")
    test = PairedTest([(name, list(hyps)) for name, hyps in [baseline, *systems]],
                      _metrics(references, tokenize, lowercase), references=None, test_type="bs", n_samples=samples)
    signatures, results = test()
    comparisons = []
    for metric, per_system in results.items():
        if metric == "System":
            continue
        baseline_result = per_system[0]
        for (name, hypotheses), result in zip(systems, per_system[1:]):
            p_value = result.p_value
            if list(hypotheses) == list(baseline[1]):
                # sacreBLEU counts resampled differences strictly larger than
                # the observed one; with identical outputs both are always 0,
                # which would read as the smallest p-value. They do not differ.
                p_value = 1.0
            comparisons.append(BootstrapComparison(
                metric=metric, baseline=baseline[0], system=name,
                baseline_score=float(baseline_result.score), system_score=float(result.score),
                system_mean=float(result.mean), system_ci=float(result.ci),
                p_value=float(p_value), samples=samples, signature=str(signatures[metric])))
    return comparisons


def score_files(hypotheses_path: PathLike, references_path: PathLike,
                references: Optional[Sequence[str]] = None, tokenize: str = DEFAULT_TOKENIZE,
                lowercase: bool = False) -> dict[str, MetricScore]:
    """`corpus_scores` of a hypothesis file against a reference file.

    Args:
        hypotheses_path: one output line per segment.
        references_path: one reference line per segment.
        references: the reference lines when already read.
        tokenize, lowercase: as in `corpus_scores`.

    Raises:
        InputError: unreadable lines or different line counts.
    """
    references = read_segments(references_path) if references is None else references
    hypotheses = read_segments(hypotheses_path)
    check_aligned(hypotheses, references, hypotheses_path, references_path)
    return corpus_scores(hypotheses, references, tokenize, lowercase)
