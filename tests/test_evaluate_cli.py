"""bin/evaluate: tables on stdout and the same numbers in JSON."""

import json

import pytest
from absl import flags
from absl.testing import flagsaver

from syntax_t2t.cli import common, evaluate
from syntax_t2t.data.conllu_reader import write_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.data.parse_file import ParsedSentence, write_parsed

FLAGS = flags.FLAGS


@pytest.fixture
def files(tmp_path):
    if not FLAGS.is_parsed():
        FLAGS(["evaluate"])
    references = [f"the reference sentence number {i} ends here ." for i in range(30)]
    (tmp_path / "ref.txt").write_text("".join(r + "\n" for r in references), encoding="utf-8")
    baseline = ["x y z" if i % 2 else r for i, r in enumerate(references)]
    (tmp_path / "base.txt").write_text("".join(line + "\n" for line in baseline), encoding="utf-8")
    (tmp_path / "good.txt").write_text("".join(r + "\n" for r in references), encoding="utf-8")
    gold = [DependencyTree.from_heads(["a", "b", "c"], [2, 0, 2], labels=["x", "root", "y"])] * 4
    write_conllu(gold, tmp_path / "gold.conllu")
    predicted = [ParsedSentence.predicted(tree, [2, 0, 1]) for tree in gold]  # 2 of 3 heads right
    write_parsed(predicted, tmp_path / "parse.conllu")
    write_parsed([ParsedSentence.predicted(tree, [0, 1, 2]) for tree in gold], tmp_path / "diag.conllu")
    return tmp_path


def test_scores_significance_and_parses_in_table_and_json(files, capsys):
    with flagsaver.flagsaver(references=str(files / "ref.txt"),
                             hypotheses=[str(files / "base.txt"), str(files / "good.txt")],
                             system_names=["base", "good"], bootstrap_samples=200,
                             gold_parse=str(files / "gold.conllu"), parses=[str(files / "parse.conllu")],
                             diagonal_parses=[str(files / "diag.conllu")],
                             json_output=str(files / "scores.json")):
        evaluate.main(["evaluate"])
    out = capsys.readouterr().out
    assert "BLEU signature: nrefs:1|case:mixed|eff:no|tok:13a" in out
    assert "Paired bootstrap resampling against base (200 samples)" in out
    report = json.loads((files / "scores.json").read_text(encoding="utf-8"))
    systems = {s["name"]: s for s in report["translation"]["systems"]}
    assert systems["good"]["BLEU"] == pytest.approx(100) and systems["good"]["chrF2"] == pytest.approx(100)
    assert systems["base"]["BLEU"] < 60
    [bleu] = [c for c in report["translation"]["significance"] if c["metric"] == "BLEU"]
    assert bleu["system"] == "good" and bleu["p_value"] < 0.05
    [parse] = report["parsing"]["systems"]
    assert (parse["words"], parse["correct_heads"]) == (12, 8)
    assert parse["uas"] == pytest.approx(100 * 8 / 12) and parse["las"] is None
    [diagonal] = report["diagonal_parsing"]
    assert diagonal["precision"] == pytest.approx(100)
    # The table shows the same numbers.
    assert "66.67" in out and "100.00" in out


def test_missing_inputs_are_usage_errors(files):
    with flagsaver.flagsaver(hypotheses=[str(files / "base.txt")], references=None):
        with pytest.raises(common.UsageError, match="missing required flag.*--references"):
            evaluate.main(["evaluate"])
    with flagsaver.flagsaver(hypotheses=[], parses=[], diagonal_parses=[]):
        with pytest.raises(common.UsageError, match="nothing to evaluate"):
            evaluate.main(["evaluate"])
    with flagsaver.flagsaver(references=str(files / "ref.txt"), hypotheses=[str(files / "base.txt")],
                             system_names=["a", "b"]):
        with pytest.raises(common.UsageError, match="--system_names has 2 names for 1 --hypotheses"):
            evaluate.main(["evaluate"])


def test_ribes_is_scored_on_request(files, capsys):
    with flagsaver.flagsaver(references=str(files / "ref.txt"),
                             hypotheses=[str(files / "base.txt"), str(files / "good.txt")],
                             system_names=["base", "good"], bootstrap_samples=0, ribes=True,
                             json_output=str(files / "scores.json")):
        evaluate.main(["evaluate"])
    assert "RIBES" in capsys.readouterr().out
    systems = {s["name"]: s for s in json.loads(
        (files / "scores.json").read_text(encoding="utf-8"))["translation"]["systems"]}
    # Identical output orders every word as the reference does; "x y z" shares no word.
    assert systems["good"]["RIBES"] == pytest.approx(100)
    assert systems["base"]["RIBES"] == pytest.approx(50)
