"""bin/evaluate's --tokenize and --lowercase: the scores and signatures of sacreBLEU's own command line.

Every case writes the same files, scores them with `bin/evaluate` and with
`python -m sacrebleu` (the command line sacreBLEU installs), and compares
the BLEU and chrF scores (to 4 decimals) and signatures. RIBES is checked
against NLTK on the tokens sacreBLEU's tokenizer gives.
"""

import importlib.machinery
import importlib.util
import json
import subprocess
import sys

import pytest
from absl import flags
from absl.testing import flagsaver
from nltk.translate.ribes_score import sentence_ribes
from sacrebleu.metrics import BLEU

from syntax_t2t.cli import common, evaluate
from syntax_t2t.evaluation import ribes, translation

FLAGS = flags.FLAGS

HAS_MECAB = all(importlib.util.find_spec(name) for name in ("MeCab", "ipadic"))
NO_MECAB = "ja-mecab needs sacreBLEU's Japanese extra (pip install 'syntax_t2t[ja]'), not installed"

# Mixed case, punctuation glued to words, numbers, Chinese and Japanese: text
# on which the tokenizers disagree.
REFERENCES = [
    "The Cat sat on the mat, didn't it?",
    "Prices rose 3.5% in the U.S. last year.",
    "我们明天去北京。",
    "私は昨日学校に行きました。",
    "Das ist ein \"Test\" (mit Klammern).",
    "東京は日本の首都です。",
]
HYPOTHESES = [
    "the cat sat on The mat , didn't it ?",
    "Prices rose 3.5 % in the US last year.",
    "我们明天去上海。",
    "私は学校へ行った。",
    "Das ist ein Test (mit Klammern).",
    "東京は日本の首都である。",
]


@pytest.fixture
def files(tmp_path):
    if not FLAGS.is_parsed():
        FLAGS(["evaluate"])
    (tmp_path / "ref.txt").write_text("".join(r + "\n" for r in REFERENCES), encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("".join(h + "\n" for h in HYPOTHESES), encoding="utf-8")
    return tmp_path


def sacrebleu_cli(files, tokenize, lowercase):
    command = [sys.executable, "-m", "sacrebleu", str(files / "ref.txt"), "-i", str(files / "hyp.txt"),
               "-m", "bleu", "chrf", "--tokenize", tokenize, "--width", "4", "--format", "json"]
    if lowercase:
        command += ["--lowercase", "--chrf-lowercase"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return {entry["name"]: entry for entry in json.loads(done.stdout)}


TOKENIZERS = [pytest.param(name, marks=pytest.mark.skipif(not HAS_MECAB, reason=NO_MECAB))
              if name == "ja-mecab" else name for name in translation.TOKENIZERS]


@pytest.mark.parametrize("tokenize", TOKENIZERS)
@pytest.mark.parametrize("lowercase", [False, True])
def test_scores_and_signatures_are_sacrebleus_command_lines(files, capsys, tokenize, lowercase):
    with flagsaver.flagsaver(references=str(files / "ref.txt"), hypotheses=[str(files / "hyp.txt")],
                             system_names=["system"], bootstrap_samples=0, tokenize=tokenize,
                             lowercase=lowercase, json_output=str(files / "scores.json")):
        evaluate.main(["evaluate"])
    printed = capsys.readouterr().out
    report = json.loads((files / "scores.json").read_text(encoding="utf-8"))["translation"]
    [system] = report["systems"]
    expected = sacrebleu_cli(files, tokenize, lowercase)
    for name in ("BLEU", "chrF2"):
        assert round(system[name], 4) == pytest.approx(expected[name]["score"], abs=1e-4), name
        assert report["signatures"][name] == expected[name]["signature"]
        assert f"{name} signature: {expected[name]['signature']}" in printed
    assert ("case:lc" in expected["BLEU"]["signature"]) == lowercase


def test_the_tokenizers_score_the_files_differently(files):
    # Guards the comparison above: were --tokenize ignored, every tokenizer
    # would give the 13a score and the test would still pass.
    bleu = {tokenize: translation.corpus_scores(HYPOTHESES, REFERENCES, tokenize)["BLEU"].score
            for tokenize in ("13a", "intl", "zh", "char", "none")}
    assert len({round(score, 6) for score in bleu.values()}) == len(bleu)
    lowercased = translation.corpus_scores(HYPOTHESES, REFERENCES, "13a", lowercase=True)["BLEU"].score
    assert lowercased > bleu["13a"]


@pytest.mark.parametrize("tokenize, lowercase", [("none", False), ("13a", True), ("char", False),
                                                 pytest.param("ja-mecab", False, marks=pytest.mark.skipif(
                                                     not HAS_MECAB, reason=NO_MECAB))])
def test_ribes_scores_the_tokens_bleu_sees(tokenize, lowercase):
    tokenizer = BLEU(tokenize=tokenize).tokenizer

    def tokens(segment):
        return tokenizer((segment.lower() if lowercase else segment).rstrip()).split()

    expected = 100 * sum(sentence_ribes([tokens(r)], tokens(h), alpha=ribes.ALPHA, beta=ribes.BETA)
                         for h, r in zip(HYPOTHESES, REFERENCES)) / len(REFERENCES)
    score = ribes.corpus_ribes(HYPOTHESES, REFERENCES, tokenize=tokenize, lowercase=lowercase)
    assert score.score == pytest.approx(expected)
    assert f"tok:{tokenizer.signature()}" in score.signature
    assert ("case:lc" in score.signature) == lowercase


def test_character_ribes_sees_the_order_of_unspaced_text():
    # Unspaced Chinese is one whitespace token: RIBES cannot see the swap
    # unless it scores characters.
    reference, swapped = ["北京上海"], ["上海北京"]
    assert ribes.corpus_ribes(swapped, reference, tokenize="none").score == 0.0
    by_character = ribes.corpus_ribes(swapped, reference, tokenize="char").score
    # Ranks [2, 3, 0, 1]: 2 of 6 pairs increasing, tau (2/6 * 2 - 1 + 1) / 2 = 1/3.
    assert by_character == pytest.approx(100 / 3)


def test_ribes_and_bootstrap_use_the_chosen_tokenizer_in_the_cli(files, capsys):
    with flagsaver.flagsaver(references=str(files / "ref.txt"),
                             hypotheses=[str(files / "hyp.txt"), str(files / "ref.txt")],
                             system_names=["system", "perfect"], bootstrap_samples=20,
                             tokenize="char", lowercase=True, ribes=True,
                             json_output=str(files / "scores.json")):
        evaluate.main(["evaluate"])
    report = json.loads((files / "scores.json").read_text(encoding="utf-8"))["translation"]
    assert "tok:char" in report["signatures"]["RIBES"] and "case:lc" in report["signatures"]["RIBES"]
    system = report["systems"][0]
    assert system["RIBES"] == pytest.approx(
        ribes.corpus_ribes(HYPOTHESES, REFERENCES, tokenize="char", lowercase=True).score)
    [bleu] = [c for c in report["significance"] if c["metric"] == "BLEU"]
    assert "tok:char" in bleu["signature"] and "case:lc" in bleu["signature"]
    assert bleu["baseline_score"] == pytest.approx(system["BLEU"])


def test_a_missing_japanese_tokenizer_is_a_usage_error_naming_the_extra(files, monkeypatch):
    # As on a machine with only part of the extra (MeCab gone, ipadic present), whatever this one has:
    # the error names exactly what is missing.
    real_find_spec = importlib.util.find_spec
    fake_spec = importlib.machinery.ModuleSpec("ipadic", None)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "MeCab"
                        else fake_spec if name == "ipadic" else real_find_spec(name, *args))
    with flagsaver.flagsaver(references=str(files / "ref.txt"), hypotheses=[str(files / "hyp.txt")],
                             tokenize="ja-mecab"):
        with pytest.raises(common.UsageError, match=r"--tokenize=ja-mecab: .*\(MeCab missing\).*syntax_t2t\[ja\]"):
            evaluate.main(["evaluate"])


def test_unknown_tokenizers_are_refused():
    with pytest.raises(translation.TokenizerError, match="unknown tokenizer 'moses'"):
        translation.corpus_scores(["a"], ["a"], tokenize="moses")
