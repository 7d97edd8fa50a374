"""`bin/grid`: experiments, their checks, the run plan, and the whole grid end to end."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from syntax_t2t import registry
from syntax_t2t.grid import experiment as experiment_lib
from syntax_t2t.grid import runner
from syntax_t2t.grid.experiment import Experiment, System

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _registry():
    registry.import_all()


def _experiment(**changes):
    fields = dict(problem="synthetic_syntax_reorder", hparams_set="transformer_tiny",
                  systems=[System("base", "transformer"),
                           System("parse", "dep_parse", "parse_layer=0", seeds=(1, 2, 3))],
                  baseline="base", seeds=(1, 2))
    fields.update(changes)
    return Experiment(**fields)


def test_registered_experiments_are_listed_and_pass_their_checks():
    assert {"multi30k_cs_en_syntax", "synthetic_reorder_smoke"} <= set(
        registry.experiments.names())
    assert "experiments (" in registry.help_string()
    for name in registry.experiments.names():
        experiment_lib.check(registry.experiment(name), name)


@pytest.mark.parametrize("changes,match", [
    (dict(systems=[System("base", "transformr")]), "system 'base': unknown model 'transformr'"),
    (dict(systems=[System("base", "transformer", hparams_set="nope")]),
     "system 'base': unknown hparams set 'nope'"),
    (dict(systems=[System("base", "transformer", "hiden_size=3")]), "system 'base'.*hiden_size"),
    (dict(systems=[System("base", "transformer", "hidden_size=big")]), "system 'base'"),
    (dict(baseline="other"), "the baseline 'other' is not one of its systems"),
    (dict(systems=[System("base", "transformer"), System("base", "dep_parse")]),
     "not unique"),
    (dict(problem="no_such_problem"), "unknown problem"),
    (dict(checkpoint="newest"), "checkpoint='newest'"),
    (dict(systems=[System("../x", "transformer")], baseline="../x"), "plain directory name"),
])
def test_bad_experiments_are_refused_naming_the_entry(changes, match):
    with pytest.raises(experiment_lib.ExperimentError, match=f"experiment toy: .*{match}"):
        experiment_lib.check(_experiment(**changes), "toy")


def test_a_model_that_rejects_its_hparams_is_refused_when_built():
    experiment = _experiment(systems=[System("base", "transformer"),
                                      System("parse", "dep_parse", "parse_layer=7")])
    sizes = {"inputs": 10, "targets": 10, "deprel": 5, "upos": 5, "xpos": 5}
    experiment_lib.check(experiment, "toy")  # the set and override are fine as such
    with pytest.raises(experiment_lib.ExperimentError, match="system 'parse': parse_layer=7"):
        experiment_lib.check(experiment, "toy", sizes)


def test_plan_goes_seed_by_seed_and_tasks_share_it(tmp_path):
    experiment = _experiment()
    runs = runner.plan(experiment, str(tmp_path))
    assert [run.name for run in runs] == ["base/seed1", "parse/seed1", "base/seed2",
                                          "parse/seed2", "parse/seed3"]
    assert runs[0].directory == str(tmp_path / "runs" / "base" / "seed1")
    assert [r.name for r in runner.plan(experiment, str(tmp_path), ["parse"], [2, 3])] == [
        "parse/seed2", "parse/seed3"]
    shares = [runner.share(runs, 2, task) for task in (0, 1)]
    assert sorted(r.name for share in shares for r in share) == sorted(r.name for r in runs)
    assert not set(r.name for r in shares[0]) & set(r.name for r in shares[1])
    with pytest.raises(experiment_lib.ExperimentError, match="no system 'nope'"):
        runner.plan(experiment, str(tmp_path), ["nope"])
    with pytest.raises(experiment_lib.ExperimentError, match="--task_id=2"):
        runner.share(runs, 2, 2)


def test_a_run_directory_of_another_configuration_is_refused(tmp_path):
    grid = runner.GridRunner(_experiment(), "toy", str(tmp_path), {"data_dir": str(tmp_path)})
    run = runner.plan(grid.experiment, str(tmp_path))[0]
    grid.claim(run)
    assert grid.claim(run)["config"]["model"] == "transformer"  # the same: accepted
    other = runner.GridRunner(_experiment(train_steps=99_999), "toy", str(tmp_path),
                              {"data_dir": str(tmp_path)})
    before = (Path(run.directory) / runner.STATE_FILE).read_text()
    with pytest.raises(runner.GridError, match="another configuration .*train_steps"):
        other.claim(run)
    assert (Path(run.directory) / runner.STATE_FILE).read_text() == before


def test_unknown_path_fields_are_named(tmp_path):
    grid = runner.GridRunner(_experiment(), "toy", str(tmp_path), {"data_dir": "D"})
    assert grid.path("{data_dir}/{problem}-test.ref.txt") == "D/synthetic_syntax_reorder-test.ref.txt"
    with pytest.raises(experiment_lib.ExperimentError, match="'{treebank_dir}/x'.*treebank_dir"):
        grid.path("{treebank_dir}/x")


def _grid(data_dir, output_dir, *extra):
    command = [sys.executable, str(REPO / "bin" / "grid"), "--experiment=synthetic_reorder_smoke",
               f"--output_dir={output_dir}", f"--data_dir={data_dir}", *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=1500)


@pytest.mark.slow
def test_grid_end_to_end_resumes_without_redoing_finished_runs(tmp_path):
    data_dir = tmp_path / "data"
    subprocess.run([sys.executable, str(REPO / "bin" / "datagen"),
                    "--problem=synthetic_syntax_reorder", f"--data_dir={data_dir}",
                    f"--tmp_dir={tmp_path / 'tmp'}", "--max_examples=150"],
                   check=True, capture_output=True, timeout=600)
    grid_dir = tmp_path / "grid"
    # A first, partial grid: only the baseline's first seed (an interrupted grid).
    first = _grid(data_dir, grid_dir, "--systems=transformer", "--seeds=1")
    assert first.returncode == 0, first.stderr[-3000:]
    finished = grid_dir / "runs" / "transformer" / "seed1"
    stamp = {name: (finished / name).stat().st_mtime_ns
             for name in ("train.log", "scores.json", "tests/test.hyp")}
    second = _grid(data_dir, grid_dir)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "4 of 4 runs finished" in second.stdout
    for name, mtime in stamp.items():
        assert (finished / name).stat().st_mtime_ns == mtime, f"{name} was redone"
    report = json.loads((grid_dir / "results.json").read_text())
    rows = report["tests"]["test"]
    assert rows["transformer"]["seeds"] == [1, 2] and rows["dep_parse"]["seeds"] == [1, 2]
    versus = rows["dep_parse"]["vs_baseline"]
    assert versus["seeds"] == [2, 2] and 0 < versus["p_value"] <= 1
    assert set(rows["dep_parse"]["per_seed_bootstrap_p"]) == {"1", "2"}
    assert set(report["parse_tests"]["test_trees"]["systems"]) == {"dep_parse"}
    markdown = (grid_dir / "results.md").read_text()
    assert "| dep_parse | 2 |" in markdown and "bin/grid --experiment=synthetic_reorder_smoke" in markdown
    for png in ("bleu_test.png", "learning_curves.png"):
        assert (grid_dir / png).stat().st_size > 1000
    # Every run kept its best checkpoint and decoded from it.
    for system in ("transformer", "dep_parse"):
        for seed in (1, 2):
            run = grid_dir / "runs" / system / f"seed{seed}"
            assert (run / "best" / "checkpoint").exists()
            assert "--output_dir=" + str(run / "best") in (run / "test.log").read_text()
    # A third call redoes nothing at all: no program is started.
    third = _grid(data_dir, grid_dir)
    assert third.returncode == 0
    assert "bin/train" not in third.stderr and "bin/decode" not in third.stderr
    for system in ("transformer", "dep_parse"):
        log = (grid_dir / "runs" / system / "seed2" / "train.log").read_text()
        assert log.count("\n$ ") == 1
