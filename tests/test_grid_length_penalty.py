"""`bin/grid`'s length penalty chosen on the dev set (`syntax_t2t/grid/length_penalty.py`)."""

import gzip
import json
import os
from pathlib import Path

import pytest
import sacrebleu

from syntax_t2t.cli import registration
from syntax_t2t.grid import archive, length_penalty, report, runner
from syntax_t2t.grid import experiment as experiment_lib
from syntax_t2t.grid.experiment import Experiment, System, TranslationTest

REFERENCE = ["a man rides a red bike down the hill", "two dogs play in the snow",
             "a woman is reading a book on a bench", "children run across the green field"]
# What each candidate alpha "translates" the dev set to: 1.0 is closest to the reference.
DEV_OUTPUT = {0.6: ["a man rides", "two dogs", "a woman is reading", "children run"],
              1.0: REFERENCE[:3] + ["children run across the field"],
              1.5: [line + " and more words here" for line in REFERENCE]}


@pytest.fixture(autouse=True)
def _registry():
    registration.import_all()


def _experiment(**changes):
    fields = dict(problem="synthetic_syntax_reorder", hparams_set="transformer_tiny",
                  systems=[System("base", "transformer"), System("parse", "dep_parse",
                                                                 "parse_layer=0")],
                  baseline="base", seeds=(1,), decode_hparams="beam_size=4,alpha=0.6",
                  translation_tests=[TranslationTest("test", "{data_dir}/test.src",
                                                     "{data_dir}/test.ref")],
                  length_penalties=(0.6, 1.0, 1.5),
                  dev_set=TranslationTest("dev", "{data_dir}/dev.src", "{data_dir}/dev.ref"))
    fields.update(changes)
    return Experiment(**fields)


def test_the_highest_dev_bleu_wins_and_the_first_listed_among_equals():
    assert length_penalty.choose([(0.6, 30.0), (1.0, 31.5), (1.5, 31.0)]) == 1.0
    assert length_penalty.choose([(1.2, 31.5), (0.6, 31.5), (2.0, 12.0)]) == 1.2
    assert length_penalty.choose([(2.0, 0.0)]) == 2.0
    with pytest.raises(ValueError):
        length_penalty.choose([])


def test_only_alpha_changes_in_the_decoding_settings():
    assert length_penalty.with_alpha("beam_size=4,alpha=0.6,extra_length=10", 1.5) == \
        "beam_size=4,alpha=1.5,extra_length=10"
    assert length_penalty.with_alpha("beam_size=4", 1) == "beam_size=4,alpha=1.0"


@pytest.mark.parametrize("changes,match", [
    (dict(dev_set=None), "dev_set is not given"),
    (dict(length_penalties=(0.6, 0.6)), r"length_penalties=\(0.6, 0.6\): expected distinct"),
    (dict(length_penalties=(0.6, -1.0)), "expected distinct numbers >= 0"),
    (dict(length_penalties=(0.6, True)), "expected distinct numbers >= 0"),
    (dict(dev_set=TranslationTest("test", "d.src", "d.ref")),
     "dev_set 'test' is also a test set"),
    (dict(decode_hparams="beam_size=0"), "decode_hparams='beam_size=0': .*at least 1"),
    (dict(decode_hparams="beam=4"), "decode_hparams='beam=4'"),
])
def test_bad_length_penalty_settings_are_refused(changes, match):
    with pytest.raises(experiment_lib.ExperimentError, match=f"experiment toy: .*{match}"):
        experiment_lib.check(_experiment(**changes), "toy")


def _fake_decode(grid, calls):
    """Stands in for bin/decode: writes DEV_OUTPUT[alpha] for the dev set, the reference else."""
    def call(run, command, log_name):
        flags = dict(part[2:].split("=", 1) for part in command if part.startswith("--"))
        calls.append(flags)
        alpha = float(flags["decode_hparams"].split("alpha=")[1].split(",")[0])
        lines = DEV_OUTPUT[alpha] if flags["decode_from_file"].endswith("dev.src") else \
            REFERENCE if alpha == 1.0 else REFERENCE[::-1]
        Path(flags["decode_to_file"]).write_text("\n".join(lines) + "\n")
    grid._call = call


def _trained_run(tmp_path, experiment, system=0):
    for name in ("dev.ref", "test.ref"):
        (tmp_path / name).write_text("\n".join(REFERENCE) + "\n")
    grid = runner.GridRunner(experiment, "toy", str(tmp_path / "G"), {"data_dir": str(tmp_path)})
    run = runner.plan(experiment, str(tmp_path / "G"))[system]
    state = grid.claim(run)
    state["done"]["train"] = True
    grid._save_state(run, state)
    (Path(run.directory) / "validation.json").write_text(json.dumps({"evaluations": []}))
    return grid, run


def test_each_run_is_tested_with_the_alpha_its_dev_translations_choose(tmp_path):
    grid, run = _trained_run(tmp_path, _experiment())
    calls = []
    _fake_decode(grid, calls)
    keys = [key for key, _ in grid.stages(run, {})]
    assert keys == ["train", "decode:test", "dev:alpha=0.6", "dev:alpha=1", "dev:alpha=1.5",
                    "choose:alpha", "decode:test:dev_alpha", "score"]
    assert grid.execute(run)
    # Every candidate decoded the dev set with the rest of the settings unchanged.
    dev_calls = [c for c in calls if c["decode_from_file"].endswith("dev.src")]
    assert [c["decode_hparams"] for c in dev_calls] == [
        "beam_size=4,alpha=0.6", "beam_size=4,alpha=1.0", "beam_size=4,alpha=1.5"]
    choice = json.loads((Path(run.directory) / length_penalty.CHOICE_FILE).read_text())
    expected = {f"{alpha:g}": sacrebleu.corpus_bleu(lines, [REFERENCE]).score
                for alpha, lines in DEV_OUTPUT.items()}
    assert choice["bleu"] == pytest.approx(expected)
    assert choice == {"dev_set": "dev", "bleu": choice["bleu"], "alpha": 1.0}
    # The test set: once at the experiment's alpha, once at the chosen one.
    test_calls = [c for c in calls if c["decode_from_file"].endswith("test.src")]
    assert [c["decode_hparams"] for c in test_calls] == ["beam_size=4,alpha=0.6",
                                                         "beam_size=4,alpha=1.0"]
    assert test_calls[1]["decode_to_file"] == os.path.join(run.directory, "tests",
                                                           "test.dev_alpha.hyp")
    scores = json.loads((Path(run.directory) / runner.SCORES_FILE).read_text())
    assert scores["translation"]["test"]["BLEU"] == pytest.approx(
        sacrebleu.corpus_bleu(REFERENCE[::-1], [REFERENCE]).score)
    assert scores[length_penalty.SCORES_KEY]["test"]["BLEU"] == pytest.approx(100.0)
    assert scores["length_penalty"]["alpha"] == 1.0
    # Done: a second execution decodes nothing.
    calls.clear()
    assert grid.execute(run) and calls == []


def test_an_interrupted_choice_redoes_only_the_stages_left(tmp_path):
    grid, run = _trained_run(tmp_path, _experiment())
    calls = []
    _fake_decode(grid, calls)
    state = grid.claim(run)
    state["done"].update({"decode:test": True, "dev:alpha=0.6": True})
    grid._save_state(run, state)
    os.makedirs(os.path.join(run.directory, "tests", "dev"))
    Path(run.directory, "tests", "test.hyp").write_text("\n".join(REFERENCE) + "\n")
    Path(run.directory, length_penalty.dev_output(grid.experiment.dev_set, 0.6)).write_text(
        "\n".join(DEV_OUTPUT[0.6]) + "\n")
    grid.execute(run)
    assert [c["decode_hparams"][-3:] for c in calls] == ["1.0", "1.5", "1.0"]


def test_the_report_tables_the_dev_chosen_alpha_and_tests_it_against_the_baseline(tmp_path):
    experiment = _experiment()
    base_grid, base = _trained_run(tmp_path, experiment, 0)
    _fake_decode(base_grid, [])
    base_grid.execute(base)
    parse_grid, parse = _trained_run(tmp_path, experiment, 1)
    _fake_decode(parse_grid, [])
    parse_grid.execute(parse)
    built = report.build(base_grid, [base, parse], "bin/grid ...", samples=200)
    rows = built[length_penalty.SCORES_KEY]["test"]
    assert rows["base"]["alpha"] == rows["parse"]["alpha"] == [1.0]
    assert rows["parse"]["BLEU"] == [pytest.approx(100.0)]
    (versus,) = built[length_penalty.SCORES_KEY + "_contrasts"]["test"]["comparisons"]
    assert (versus["system"], versus["against"]) == ("parse", "base")
    assert versus["delta"] == pytest.approx(0.0)
    assert built["tests"]["test"]["parse"]["BLEU"][0] < 100  # the fixed alpha's table
    text = report.markdown(built, experiment)
    assert "## test: translation, length penalty chosen on dev" in text
    assert "alpha among 0.6, 1, 1.5 whose translations of `dev`" in text
    line = next(line for line in text.split("## test: translation, length penalty")[1].splitlines()
                if line.startswith("| parse |"))
    header = next(line for line in text.splitlines() if line.endswith(" alpha per seed |"))
    assert line.count("|") == header.count("|") and line.endswith(" 1 |")
    report.write(base_grid, [base, parse], "bin/grid ...", samples=200)
    for png in ("bleu_test.png", "bleu_test.dev_alpha.png"):
        assert os.path.getsize(os.path.join(base_grid.output_dir, png)) > 1000


def test_the_record_keeps_the_choice_and_an_older_record_is_not_trained_again(tmp_path):
    experiment = _experiment()
    grid, run = _trained_run(tmp_path, experiment)
    _fake_decode(grid, [])
    grid.execute(run)
    assert archive.store(grid, run, str(tmp_path / "A"))
    record = tmp_path / "A" / "runs" / "base" / "seed1"
    assert (record / "tests" / "test.dev_alpha.hyp").read_text().splitlines() == REFERENCE
    assert json.loads((record / length_penalty.CHOICE_FILE).read_text())["alpha"] == 1.0
    assert gzip.decompress((record / "tests" / "dev" / "dev.alpha1.5.hyp.gz").read_bytes()) \
        .decode().splitlines() == DEV_OUTPUT[1.5]
    # A record made before the experiment chose alphas on dev: the new stages
    # need weights it does not have; refused, not trained again from scratch.
    state = json.loads((record / runner.STATE_FILE).read_text())
    state["done"] = {"train": True, "decode:test": True, "score": True}
    (record / runner.STATE_FILE).write_text(json.dumps(state))
    other = runner.GridRunner(experiment, "toy", str(tmp_path / "G2"),
                              {"data_dir": str(tmp_path)})
    there = runner.plan(experiment, str(tmp_path / "G2"))[0]
    with pytest.raises(runner.GridError, match=r"archived before the experiment had the stages "
                                               r"dev:alpha=0.6, .*choose:alpha, "
                                               r"decode:test:dev_alpha"):
        archive.restore(other, there, str(tmp_path / "A"))
    assert not os.path.exists(there.directory)


def test_a_run_scored_before_the_experiment_chose_alphas_does_the_new_stages_and_is_rescored(
        tmp_path):
    grid, run = _trained_run(tmp_path, _experiment())
    calls = []
    _fake_decode(grid, calls)
    Path(run.directory, "tests").mkdir()
    Path(run.directory, "tests", "test.hyp").write_text("\n".join(REFERENCE[::-1]) + "\n")
    runner.write_json(os.path.join(run.directory, runner.SCORES_FILE), {"old": True})
    state = grid.claim(run)
    state["done"].update({"decode:test": True, "score": True})
    grid._save_state(run, state)
    grid.execute(run)
    assert len(calls) == 4  # three dev decodes and the test at the chosen alpha
    scores = json.loads((Path(run.directory) / runner.SCORES_FILE).read_text())
    assert "old" not in scores and scores["length_penalty"]["alpha"] == 1.0
    assert scores[length_penalty.SCORES_KEY]["test"]["BLEU"] == pytest.approx(100.0)
