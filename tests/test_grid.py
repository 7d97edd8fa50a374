"""`bin/grid`: experiments, their checks, the run plan, and the whole grid end to end."""

import fcntl
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from syntax_t2t import registry
from syntax_t2t.checkpointing.discovery import latest_checkpoint
from syntax_t2t.cli import registration
from syntax_t2t.grid import experiment as experiment_lib
from syntax_t2t.grid import archive, continuation, report, runner
from syntax_t2t.data.conllu_reader import write_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.data.parse_file import ParsedSentence, write_parsed
from syntax_t2t.grid.experiment import Experiment, ParseTest, System, TranslationTest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _registry():
    registration.import_all()


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
    (dict(parse_tests=[ParseTest("pud", "gold.conllu", length_edges=(9, 9))]),
     r"parse test 'pud': length bucket edges must be positive and increasing, got \[9, 9\]"),
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


@pytest.mark.parametrize("lock_file", [runner.LOCK_FILE, runner.LEGACY_LOCK_FILE])
def test_a_run_another_process_works_on_is_skipped(tmp_path, monkeypatch, lock_file):
    """Held by another bin/grid, a bin/train, or a bin/grid of the code before
    `directory_lock` (which held grid.lock)."""
    grid = runner.GridRunner(_experiment(), "toy", str(tmp_path), {"data_dir": str(tmp_path)})
    run = runner.plan(grid.experiment, str(tmp_path))[0]
    done = []
    monkeypatch.setattr(grid, "stages", lambda run, state: [("train", lambda: done.append(1))])
    os.makedirs(run.directory)
    with open(os.path.join(run.directory, lock_file), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as another process would
        assert grid.execute(run) is False
        assert done == [] and not (Path(run.directory) / runner.STATE_FILE).exists()
    assert grid.execute(run) is True and done == [1]
    assert grid.claim(run)["done"] == {"train": True}
    assert grid.execute(run) is True and done == [1]  # nothing is redone


def test_a_finished_run_whose_scores_were_deleted_is_scored_again(tmp_path, monkeypatch):
    """Issue 35, item 10: it stayed at "testing" for ever (its stages all marked done)."""
    grid = runner.GridRunner(_experiment(), "toy", str(tmp_path), {"data_dir": str(tmp_path)})
    run = runner.plan(grid.experiment, str(tmp_path))[0]
    done = []
    scores = Path(run.directory) / runner.SCORES_FILE
    monkeypatch.setattr(grid, "stages", lambda run, state: [
        ("train", lambda: done.append("train")),
        ("score", lambda: (done.append("score"), scores.write_text("{}")))])
    assert grid.execute(run) and done == ["train", "score"]
    scores.unlink()
    assert report.run_progress(grid, run)["stages_left"] == ["score"]
    assert grid.execute(run) and done == ["train", "score", "score"] and scores.exists()
    assert report.run_progress(grid, run)["stages_left"] == []


def _finished_source_run(grid_dir, experiment, train_done=True):
    """A run of `experiment` in `grid_dir` as bin/grid leaves it, with stand-in files."""
    grid = runner.GridRunner(experiment, "short", str(grid_dir), {"data_dir": str(grid_dir)})
    run = runner.plan(experiment, str(grid_dir))[0]
    state = grid.claim(run)
    state["done"] = {"train": train_done, "decode:test": train_done, "score": train_done}
    state["wall_seconds"] = 120.0
    grid._save_state(run, state)
    directory = Path(run.directory)
    for name in ("ckpt-300.index", "checkpoint", "validation.json", "train.log",
                 "best/checkpoint", "tests/test.hyp", runner.SCORES_FILE, runner.LOCK_FILE):
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(name)
    return run


def test_a_larger_budget_continues_the_runs_of_a_smaller_one(tmp_path):
    short = _experiment(train_steps=300, early_stopping_patience=2)
    source = _finished_source_run(tmp_path / "short", short)
    longer = runner.GridRunner(_experiment(train_steps=600, early_stopping_patience=0), "long",
                               str(tmp_path / "long"), {"data_dir": str(tmp_path / "short")})
    run = runner.plan(longer.experiment, str(tmp_path / "long"))[0]
    assert run.name == source.name
    assert continuation.continue_from(longer, run, str(tmp_path / "short")) is True
    copied = Path(run.directory)
    assert sorted(str(path.relative_to(copied)) for path in copied.rglob("*") if path.is_file()) \
        == ["best/checkpoint", "checkpoint", "ckpt-300.index", runner.STATE_FILE, "train.log",
            "validation.json"]
    state = longer.claim(run)  # this grid's configuration: accepted
    assert state["config"]["train_steps"] == 600 and state["done"] == {}
    assert state["wall_seconds"] == 120.0
    assert state["continued_from"] == os.path.abspath(source.directory)
    assert not list((tmp_path / "long" / "runs" / "base").glob("*.partial-*"))
    # Already there: left alone.
    (copied / "train.log").write_text("went on")
    assert continuation.continue_from(longer, run, str(tmp_path / "short")) is True
    assert (copied / "train.log").read_text() == "went on"
    # A seed the source grid never ran trains from scratch.
    unseen = runner.Run(run.system, 7, str(tmp_path / "long" / "runs" / "base" / "seed7"))
    assert continuation.continue_from(longer, unseen, str(tmp_path / "short")) is True
    assert not os.path.exists(unseen.directory)


def test_a_run_still_training_in_the_source_grid_is_not_started_one_never_trained_is(tmp_path):
    short = _experiment(train_steps=300, early_stopping_patience=2)
    _finished_source_run(tmp_path / "short", short, train_done=False)
    longer = runner.GridRunner(_experiment(train_steps=600, early_stopping_patience=0), "long",
                               str(tmp_path / "long"), {"data_dir": str(tmp_path / "short")})
    run = runner.plan(longer.experiment, str(tmp_path / "long"))[0]
    assert continuation.continue_from(longer, run, str(tmp_path / "short")) is False
    assert not os.path.exists(run.directory)
    # Claimed there but never trained (no checkpoint): nothing to wait for. Checkpoints are
    # found from their files, so TensorFlow's index alone missing would not do.
    for name in ("checkpoint", "ckpt-300.index"):
        os.remove(os.path.join(tmp_path / "short" / "runs" / "base" / "seed1", name))
    assert continuation.continue_from(longer, run, str(tmp_path / "short")) is True
    assert not os.path.exists(run.directory)


@pytest.mark.parametrize("theirs,ours,match", [
    (dict(systems=[System("base", "transformer", "dropout=0.3")]), {}, r"differs in hparams"),
    (dict(train_steps=900), {}, r"train_steps \(900 there, 600 here\)"),
    (dict(early_stopping_patience=3), dict(early_stopping_patience=2),
     r"early_stopping_patience \(3 there, 2 here\)"),
    (dict(early_stopping_patience=0), dict(early_stopping_patience=4),
     r"early_stopping_patience \(0 there, 4 here\)"),
])
def test_a_source_run_that_is_not_the_start_of_this_one_is_refused(tmp_path, theirs, ours, match):
    source = _experiment(**{"train_steps": 300, "early_stopping_patience": 2, **theirs})
    _finished_source_run(tmp_path / "short", source)
    longer = runner.GridRunner(
        _experiment(**{"train_steps": 600, "early_stopping_patience": 0, **ours}), "long",
        str(tmp_path / "long"), {"data_dir": str(tmp_path / "short")})
    run = runner.plan(longer.experiment, str(tmp_path / "long"))[0]
    with pytest.raises(runner.GridError, match="--continue_from: .*seed1 is not the start of "
                                               f"base/seed1 under this budget .*{match}"):
        continuation.continue_from(longer, run, str(tmp_path / "short"))
    assert not os.path.exists(run.directory)


def _finished_run_with_record(grid_dir, experiment):
    """A finished run of `experiment` with every file its archived record keeps, and a checkpoint."""
    run = _finished_source_run(grid_dir, experiment)
    directory = Path(run.directory)
    for name in ("hparams.json", "flags.txt", "environment.json", "training_time.json",
                 "test.log"):
        (directory / name).write_text(name)
    (directory / "train.log").write_text("step 100 loss 3.2\n" * 50)
    return run


def _stored_run(tmp_path):
    """A finished run in grid `G`, stored in archive `A`: `(experiment, run, grid, record dir)`."""
    experiment = _experiment(train_steps=300, translation_tests=[
        TranslationTest("test", "{data_dir}/test.src", "{data_dir}/test.ref")])
    run = _finished_run_with_record(tmp_path / "G", experiment)
    grid = runner.GridRunner(experiment, "short", str(tmp_path / "G"),
                             {"data_dir": str(tmp_path / "G")})
    assert archive.store(grid, run, str(tmp_path / "A")) is True
    record = tmp_path / "A" / "runs" / "base" / "seed1"
    return experiment, run, grid, record


def test_a_finished_run_is_archived_without_its_weights_and_restored_into_another_grid(tmp_path):
    experiment, run, grid, record = _stored_run(tmp_path)
    assert sorted(str(p.relative_to(record)) for p in record.rglob("*") if p.is_file()) == sorted([
        "environment.json", "flags.txt", runner.STATE_FILE, "hparams.json", runner.SCORES_FILE,
        "test.log.gz", "tests/test.hyp", "train.log.gz", "training_time.json",
        "validation.json"])
    assert gzip.decompress((record / "train.log.gz").read_bytes()) == \
        (Path(run.directory) / "train.log").read_bytes()
    first = (record / "train.log.gz").read_bytes()
    assert archive.store(grid, run, str(tmp_path / "A")) is True
    assert (record / "train.log.gz").read_bytes() == first  # no timestamp: git sees no change
    assert not list(record.parent.glob("*.partial-*")) and not list(record.parent.glob("*.old-*"))

    # Another machine: another data directory, an empty grid directory.
    other = runner.GridRunner(experiment, "short", str(tmp_path / "G2"),
                              {"data_dir": str(tmp_path / "D2")})
    there = runner.plan(experiment, str(tmp_path / "G2"))[0]
    assert archive.restore(other, there, str(tmp_path / "A")) is True
    restored = Path(there.directory)
    assert (restored / "tests" / "test.hyp").read_text() == "tests/test.hyp"
    assert not (restored / "checkpoint").exists() and not (restored / "best").exists()
    state = other.claim(there)  # this grid's configuration now: accepted
    assert state["restored_from"] == {"record": str(record), "data_dir": str(tmp_path / "G")}
    assert all(state["done"][key] for key, _ in other.stages(there, state))
    assert other.execute(there) is True  # finished: no stage runs
    # A restored run is not stored back over its record, nor restored twice.
    assert archive.store(other, there, str(tmp_path / "A")) is False
    assert archive.restore(other, there, str(tmp_path / "A")) is False


def test_another_experiments_record_of_the_same_run_is_restored_and_says_so(tmp_path):
    experiment = _experiment(train_steps=300, translation_tests=[
        TranslationTest("test", "{data_dir}/test.src", "{data_dir}/test.ref")])
    run = _finished_run_with_record(tmp_path / "G", experiment)
    archive.store(runner.GridRunner(experiment, "short", str(tmp_path / "G"),
                                    {"data_dir": str(tmp_path / "G")}), run, str(tmp_path / "A"))
    # A later experiment with the same run (same problem, model, hparams, seed, budget).
    later = runner.GridRunner(experiment, "pilot", str(tmp_path / "P"),
                              {"data_dir": str(tmp_path / "D")})
    there = runner.plan(experiment, str(tmp_path / "P"))[0]
    assert archive.restore(later, there, str(tmp_path / "A")) is True
    state = later.claim(there)
    assert state["config"]["experiment"] == "pilot"
    assert state["restored_from"]["experiment"] == "short"


def test_an_interrupted_store_or_restore_leaves_no_half_record(tmp_path, monkeypatch):
    """Ctrl-C in the middle of copying a record: the previous record stays whole, no
    `.partial-<pid>` directory is left (a later store runs under another pid and never removes
    it), and an interrupted restore leaves neither the run nor a half-copy."""
    experiment, run, grid, record = _stored_run(tmp_path)
    before = {path: path.read_bytes() for path in record.rglob("*") if path.is_file()}
    (Path(run.directory) / "flags.txt").write_text("changed")
    real_copyfile, copies = archive.shutil.copyfile, []

    def interrupted_copyfile(source, destination):
        copies.append(source)
        if len(copies) == 2:
            raise KeyboardInterrupt
        return real_copyfile(source, destination)

    monkeypatch.setattr(archive.shutil, "copyfile", interrupted_copyfile)
    with pytest.raises(KeyboardInterrupt):
        archive.store(grid, run, str(tmp_path / "A"))
    assert len(copies) == 2
    assert sorted(os.listdir(record.parent)) == ["seed1"]
    assert {path: path.read_bytes() for path in record.rglob("*") if path.is_file()} == before
    monkeypatch.undo()

    real_copytree = archive.shutil.copytree

    def copy_then_interrupt(*args, **kwargs):
        real_copytree(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(archive.shutil, "copytree", copy_then_interrupt)
    other = runner.GridRunner(experiment, "short", str(tmp_path / "G2"),
                              {"data_dir": str(tmp_path / "D2")})
    there = runner.plan(experiment, str(tmp_path / "G2"))[0]
    with pytest.raises(KeyboardInterrupt):
        archive.restore(other, there, str(tmp_path / "A"))
    assert not os.path.exists(there.directory)
    assert os.listdir(os.path.dirname(there.directory)) == []


def test_unfinished_runs_are_not_archived_and_foreign_records_are_refused(tmp_path):
    experiment = _experiment(train_steps=300)
    grid = runner.GridRunner(experiment, "short", str(tmp_path / "G"),
                             {"data_dir": str(tmp_path / "G")})
    unfinished = _finished_source_run(tmp_path / "G", experiment, train_done=False)
    assert archive.store(grid, unfinished, str(tmp_path / "A")) is False
    assert not (tmp_path / "A").exists()
    other = runner.GridRunner(experiment, "short", str(tmp_path / "G2"),
                              {"data_dir": str(tmp_path / "G2")})
    missing = runner.plan(experiment, str(tmp_path / "G2"))[0]
    assert archive.restore(other, missing, str(tmp_path / "A")) is False  # nothing archived

    run = _finished_run_with_record(tmp_path / "G3", experiment)
    archive.store(runner.GridRunner(experiment, "short", str(tmp_path / "G3"),
                                    {"data_dir": "D"}), run, str(tmp_path / "A"))
    longer = runner.GridRunner(_experiment(train_steps=600), "short", str(tmp_path / "G4"),
                               {"data_dir": "D"})
    target = runner.plan(longer.experiment, str(tmp_path / "G4"))[0]
    with pytest.raises(runner.GridError, match=r"--archive_dir: .*seed1 holds a run of another "
                                               r"configuration \(differs in train_steps\)"):
        archive.restore(longer, target, str(tmp_path / "A"))
    assert not os.path.exists(target.directory)
    # A grid that has the run already keeps its own.
    longer.claim(target)
    before = (Path(target.directory) / runner.STATE_FILE).read_text()
    assert archive.restore(longer, target, str(tmp_path / "A")) is False
    assert (Path(target.directory) / runner.STATE_FILE).read_text() == before


def test_the_report_says_where_each_unfinished_run_stands(tmp_path):
    experiment = _experiment(parse_tests=[ParseTest("pud", "{data_dir}/gold.conllu")])
    grid = runner.GridRunner(experiment, "toy", str(tmp_path), {"data_dir": str(tmp_path)})
    base1, parse1, base2, *_ = runner.plan(experiment, str(tmp_path))
    # base/seed1: evaluated twice while training, the first evaluation the better.
    grid.claim(base1)
    (Path(base1.directory) / "train.log").write_text("$ bin/train ...\n")
    (Path(base1.directory) / "validation.json").write_text(json.dumps({
        "evaluations": [{"step": 500, "bleu": 12.5}, {"step": 1000, "bleu": 11.0}],
        "best": {"step": 500, "metric": "bleu", "value": 12.5}, "stopped_early": None}))
    # parse/seed1: trained; its parse test and scoring are left.
    state = grid.claim(parse1)
    state["done"]["train"] = True
    runner.write_json(os.path.join(parse1.directory, runner.STATE_FILE), state)
    assert report.run_progress(grid, base1) == {
        "run": "base/seed1", "stage": "training", "stages_left": ["train", "score"],
        "step": 1000, "best": {"step": 500, "metric": "bleu", "value": 12.5}}
    assert report.run_progress(grid, parse1) == {"run": "parse/seed1", "stage": "testing",
                                     "stages_left": ["parse:pud", "score"]}
    grid.claim(base2)  # claimed by a task, not started yet
    assert report.run_progress(grid, base2) == {"run": "base/seed2", "stage": "not started"}
    built = report.build(grid, runner.plan(experiment, str(tmp_path)), "bin/grid ...")
    assert (built["runs"]["total"], built["runs"]["finished"]) == (5, 0)
    text = report.markdown(built, experiment)
    assert "**0 of 5 runs finished**" in text
    assert "| base/seed1 | training | 1000 | 500 (12.50) | train, score |" in text
    assert "| parse/seed1 | testing |  |  | parse:pud, score |" in text
    assert "| parse/seed3 | not started |  |  |  |" in text


def test_unknown_path_fields_are_named(tmp_path):
    grid = runner.GridRunner(_experiment(), "toy", str(tmp_path), {"data_dir": "D"})
    assert grid.path("{data_dir}/{problem}-test.ref.txt") == "D/synthetic_syntax_reorder-test.ref.txt"
    with pytest.raises(experiment_lib.ExperimentError, match="'{treebank_dir}/x'.*treebank_dir"):
        grid.path("{treebank_dir}/x")


# A program that, like bin/train, stops cleanly on its first SIGINT/SIGTERM:
# it takes a while to "save", then records how many signals reached it.
def _grid(data_dir, output_dir, *extra):
    command = [sys.executable, str(REPO / "bin" / "grid"), "--experiment=synthetic_reorder_smoke",
               f"--output_dir={output_dir}", f"--data_dir={data_dir}", *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=1500)


def test_the_report_gives_parse_uas_by_sentence_length_beside_the_teacher(tmp_path):
    experiment = _experiment(parse_tests=[ParseTest("pud", "{data_dir}/gold.conllu",
                                                    teacher_parser="spacy:teacher",
                                                    length_edges=(2,))])
    grid = runner.GridRunner(experiment, "toy", str(tmp_path), {"data_dir": str(tmp_path)})
    short = DependencyTree.from_heads(["a", "b"], [0, 1])
    long = DependencyTree.from_heads(["c", "d", "e", "f"], [0, 1, 2, 3])
    write_conllu([short, long], tmp_path / "gold.conllu")
    os.makedirs(os.path.dirname(grid.teacher_output(experiment.parse_tests[0])))
    # The teacher gets everything right but word 4 of the long sentence.
    write_parsed([ParsedSentence.predicted(short, [0, 1]),
                  ParsedSentence.predicted(long, [0, 1, 2, 2])],
                 grid.teacher_output(experiment.parse_tests[0]))
    heads = {1: ([0, 1], [0, 0, 0, 0]),   # short: 2 of 2 right; long: 1 of 4
             2: ([0, 2], [0, 1, 2, 0])}   # short: 1 of 2; long: 3 of 4
    runs = [run for run in runner.plan(experiment, str(tmp_path)) if run.system.name == "parse"]
    for run in runs[:2]:
        short_heads, long_heads = heads[run.seed]
        os.makedirs(os.path.join(run.directory, "tests"))
        # Seed 2 as restored from an archive, which keeps the parse gzipped.
        output = os.path.join(run.directory, runner.parse_output(experiment.parse_tests[0]))
        write_parsed([ParsedSentence.predicted(short, short_heads),
                      ParsedSentence.predicted(long, long_heads)],
                     output + (".gz" if run.seed == 2 else ""))
        runner.write_json(os.path.join(run.directory, runner.SCORES_FILE), {
            "system": "parse", "seed": run.seed, "steps": 10, "best": None, "stopped_early": None,
            "train_seconds": 1.0, "tokens_per_second": None, "translation": {},
            "parse": {"pud": {"UAS": 50.0, "LAS": None}}})
    built = report.build(grid, runs, "bin/grid ...")
    block = built["parse_tests"]["pud"]
    assert block["teacher"]["UAS"] == pytest.approx(100 * 5 / 6)
    assert block["by_length"] == [
        {"low": 1, "high": 2, "words": 2, "teacher": 100.0, "systems": {"parse": [100.0, 50.0]}},
        {"low": 3, "high": None, "words": 4, "teacher": 75.0, "systems": {"parse": [25.0, 75.0]}}]
    # Previous-word chains are these gold trees exactly; next-word chains miss every word.
    assert block["baselines"] == {"previous_word": 100.0, "next_word": 0.0}
    text = report.markdown(built, experiment)
    assert "each word on the previous word, UAS 100.00; on the next word, 0.00." in text
    assert "| sentence length | words | teacher | parse |" in text
    assert "| 1-2 | 2 | 100.0 | 75.0 (75%) |" in text and "| 3+ | 4 | 75.0 | 50.0 (67%) |" in text


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
    partial = (grid_dir / "results.md").read_text()
    assert "**1 of 4 runs finished**" in partial and "| dep_parse/seed2 | not started |" in partial
    finished = grid_dir / "runs" / "transformer" / "seed1"
    stamp = {name: (finished / name).stat().st_mtime_ns
             for name in ("train.log", "scores.json", "tests/test.hyp")}
    archive_dir = tmp_path / "archive"
    second = _grid(data_dir, grid_dir, f"--archive_dir={archive_dir}")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "4 of 4 runs finished" in second.stdout
    for name, mtime in stamp.items():
        assert (finished / name).stat().st_mtime_ns == mtime, f"{name} was redone"
    report = json.loads((grid_dir / "results.json").read_text())
    rows = report["tests"]["test"]
    assert rows["transformer"]["seeds"] == [1, 2] and rows["dep_parse"]["seeds"] == [1, 2]
    (versus,) = report["contrasts"]["test"]["comparisons"]
    assert (versus["system"], versus["against"], versus["seeds"]) == ("dep_parse", "transformer",
                                                                      [2, 2])
    assert 0 < versus["bootstrap"]["p_value"] <= 1
    assert set(versus["per_seed_p"]) == {"1", "2"}
    assert set(report["parse_tests"]["test_trees"]["systems"]) == {"dep_parse"}
    # Each run also tested at the alpha its dev translations chose.
    chosen = report["translation_dev_alpha"]["test"]
    assert chosen["transformer"]["seeds"] == chosen["dep_parse"]["seeds"] == [1, 2]
    assert set(chosen["dep_parse"]["alpha"]) <= {0.6, 1.5}
    assert report["translation_dev_alpha_contrasts"]["test"]["comparisons"][0]["system"] == \
        "dep_parse"
    markdown = (grid_dir / "results.md").read_text()
    assert "Runs not finished" not in markdown
    assert "| dep_parse | 2 |" in markdown and "bin/grid --experiment=synthetic_reorder_smoke" in markdown
    for png in ("bleu_test.png", "learning_curves.png"):
        assert (grid_dir / png).stat().st_size > 1000
    # Every run kept its best checkpoint and decoded from it.
    for system in ("transformer", "dep_parse"):
        for seed in (1, 2):
            run = grid_dir / "runs" / system / f"seed{seed}"
            assert latest_checkpoint(str(run / "best")) is not None
            assert "--output_dir=" + str(run / "best") in (run / "test.log").read_text()
    # A third call redoes nothing at all: no program is started.
    third = _grid(data_dir, grid_dir)
    assert third.returncode == 0
    assert "bin/train" not in third.stderr and "bin/decode" not in third.stderr
    for system in ("transformer", "dep_parse"):
        log = (grid_dir / "runs" / system / "seed2" / "train.log").read_text()
        assert log.count("\n$ ") == 1
    # The machine is lost: a new grid directory restored from the archive
    # reports the same results and trains nothing.
    for system in ("transformer", "dep_parse"):
        for seed in (1, 2):  # seed 1 of transformer finished before the flag was given
            assert (archive_dir / "runs" / system / f"seed{seed}" / "tests" / "test.hyp").exists()
    assert (archive_dir / "runs" / "dep_parse" / "seed1" / "tests" / "test_trees.conllu.gz").exists()
    assert (archive_dir / "runs" / "dep_parse" / "seed2" / "tests" / "dev" /
            "dev.alpha1.5.hyp.gz").exists()
    restored = _grid(data_dir, tmp_path / "grid2", f"--archive_dir={archive_dir}")
    assert restored.returncode == 0, restored.stderr[-3000:]
    assert "4 of 4 runs finished" in restored.stdout
    assert "bin/train" not in restored.stderr and "bin/decode" not in restored.stderr
    again = json.loads((tmp_path / "grid2" / "results.json").read_text())
    assert again["tests"] == report["tests"] and again["parse_tests"] == report["parse_tests"]
    assert again["contrasts"] == report["contrasts"]
    assert again["translation_dev_alpha"] == report["translation_dev_alpha"]


def test_the_report_says_how_small_a_difference_its_seeds_can_detect():
    experiment = _experiment()
    rows = {"base": {"seeds": [1, 2, 3], "BLEU": [38.21, 39.09, 39.71], "chrF": [58.0] * 3,
                     "BLEU_mean_sd": (39.0, 0.75), "chrF_mean_sd": (58.0, 0.0)},
            "parse": {"seeds": [1, 2, 3], "BLEU": [39.33, 38.71, 38.92], "chrF": [58.0] * 3,
                      "BLEU_mean_sd": (38.99, 0.31), "chrF_mean_sd": (58.0, 0.0)},
            "solo": {"seeds": [1], "BLEU": [40.09], "chrF": [59.61],
                     "BLEU_mean_sd": (40.09, None), "chrF_mean_sd": (59.61, None)}}
    contrasts = {"pooled_seed_sd": {"sd": 0.57774, "df": 4, "systems": 2,
                                    "ci95": [0.34614, 1.66017]}, "comparisons": [
        {"system": "parse", "against": "base", "seeds": [3, 3], "delta": -0.01,
         "t_test": {"p_value": 0.973, "t": -0.02, "df": 4, "ci": [-1.32, 1.30]}, "holm_p": 0.973,
         "bootstrap": {"p_value": 0.968, "ci": [-1.04, 1.04]}, "per_seed_p": {"1": 0.006},
         "detectable": 1.7536}],
        "seeds_needed": {"systems": 2, "seeds": {"0.5": 22, "1": 7},
                         "upper_bound": {"confidence": 0.8, "sd": 0.89987,
                                         "seeds": {"0.5": 52, "1": 14}}}}
    built = {"experiment": "toy", "command": "bin/grid ...", "problem": experiment.problem,
             "hparams_set": experiment.hparams_set, "checkpoint": "best", "baseline": "base",
             "decode_hparams": "", "systems": {}, "tests": {"test": rows},
             "contrasts": {"test": contrasts}, "parse_tests": {}, "samples": 10000,
             "runs": {"total": 6, "finished": 6, "unfinished": []}}
    text = report.markdown(built, experiment)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| comparison |"))
    parse = next(line for line in lines if line.startswith("| parse − base |"))
    assert header.count("|") == parse.count("|")
    cells = {key.strip(): value.strip() for key, value in zip(header.split("|"), parse.split("|"))}
    assert cells["detectable Δ (t)"] == "1.75"
    assert cells["p (t, pooled seed sd)"] == "0.973" and cells["p Holm"] == "0.973"
    assert cells["p (two-level bootstrap)"] == "0.968"
    assert cells["p per seed (paired bootstrap)"] == "s1: 0.006"
    assert ("Seed sd pooled over the systems with several seeds: 0.578 BLEU (4 degrees of "
            "freedom, 2 systems; 95% CI [0.346, 1.660], χ²)." in text)
    assert ("Seeds a system needed at this sd, with each of the table's 2 systems" in text
            and "0.5 BLEU from 22 seeds; 1 BLEU from 7 seeds." in text)
    assert ("at its one-sided 80% upper confidence bound, 0.900 BLEU (χ², Browne 1995): "
            "0.5 BLEU from 52 seeds; 1 BLEU from 14 seeds." in text)
    assert "every p two-sided" in text and "10000 resamples" in text
    assert "Bartlett" not in text  # no test of equal sds in the table's record
    built["contrasts"]["test"]["equal_sd"] = {"statistic": 1.2345, "df": 1, "p_value": 0.26655,
                                              "systems": 2}
    assert ("95% CI [0.346, 1.660], χ²). Pooling assumes one seed sd for every system; Bartlett's "
            "test of that over the 2 systems: χ² 1.23 at 1 degree of freedom, p = 0.267"
            in report.markdown(built, experiment))
    built["contrasts"]["test"]["pooled_seed_sd"] = {"sd": 0.22627, "df": 1, "systems": 1}
    assert "0.226 BLEU (1 degree of freedom, 1 system)." in report.markdown(built, experiment)
    built["contrasts"]["test"]["pooled_seed_sd"] = None
    assert "No system has two seeds: no seed sd" in report.markdown(built, experiment)
    score_header = next(line for line in lines if line.startswith("| system | seeds | BLEU"))
    base = next(line for line in lines if line.startswith("| base |"))
    assert score_header.count("|") == base.count("|")
    assert "| solo | 1 | 40.09 | 40.09 | 59.61 |" in lines  # one seed: no "± 0.00"
