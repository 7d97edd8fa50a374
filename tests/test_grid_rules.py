"""Issue 32's rules of a fair grid: one word-boundary rule, named contrasts, other data per
system, and the sealed test set that is scored once and never under other settings."""

import json
import os
from pathlib import Path

import pytest

from syntax_t2t.cli import registration
from syntax_t2t.evaluation import multiple_testing, seed_significance
from syntax_t2t.grid import experiment as experiment_lib
from syntax_t2t.grid import archive, report, runner, seal
from syntax_t2t.grid.experiment import Experiment, System, TranslationTest

REFERENCES = ["a man rides a horse", "two dogs play in the snow", "a child eats an apple",
              "people walk down a busy street"] * 3


@pytest.fixture(autouse=True)
def _registry():
    registration.import_all()


def _experiment(**changes):
    fields = dict(problem="synthetic_syntax_reorder", hparams_set="transformer_tiny",
                  systems=[System("base", "transformer"),
                           System("tree", "tree_distance", seeds=(1, 2, 3)),
                           System("tree_random", "tree_distance", data_dir="{data_dir}_random",
                                  problem_options="tree_source=random")],
                  baseline="base", seeds=(1, 2))
    fields.update(changes)
    return Experiment(**fields)


def test_one_word_boundary_rule_for_every_system():
    experiment_lib.check(_experiment(source_word_positions=False), "toy")
    with pytest.raises(experiment_lib.ExperimentError,
                       match="system 'tree': source_word_positions=true, but the experiment's "
                             "word-boundary rule gives every system source_word_positions=false"):
        experiment_lib.check(_experiment(source_word_positions=False, systems=[
            System("base", "transformer"),
            System("tree", "tree_distance", "source_word_positions=true")]), "toy")
    # Giving word boundaries to all cannot hold where a baseline never reads them.
    with pytest.raises(experiment_lib.ExperimentError,
                       match="model 'transformer' does not read word boundaries"):
        experiment_lib.check(_experiment(source_word_positions=True, systems=[
            System("base", "transformer", "source_word_positions=true"),
            System("tree", "tree_distance", "source_word_positions=true")]), "toy")
    # No rule (the experiments before issue 32): mixed is allowed.
    experiment_lib.check(_experiment(systems=[
        System("base", "transformer"),
        System("tree", "tree_distance", "source_word_positions=true")]), "toy")


def test_contrasts_name_two_systems_and_default_to_the_baseline():
    assert _experiment().comparisons() == [("tree", "base"), ("tree_random", "base")]
    named = _experiment(contrasts=[("tree", "tree_random"), ("tree", "base")])
    experiment_lib.check(named, "toy")
    assert named.comparisons() == [("tree", "tree_random"), ("tree", "base")]
    for contrasts, match in [([("tree", "nope")], "contrast"), ([("tree", "tree")], "contrast"),
                             ([("tree", "base"), ("tree", "base")], "listed twice")]:
        with pytest.raises(experiment_lib.ExperimentError, match=match):
            experiment_lib.check(_experiment(contrasts=contrasts), "toy")


def test_a_sealed_dev_set_is_refused():
    dev = TranslationTest("dev", "d.src", "d.ref", sealed=True)
    with pytest.raises(experiment_lib.ExperimentError, match="dev_set 'dev' is sealed"):
        experiment_lib.check(_experiment(length_penalties=(0.6, 1.0), dev_set=dev), "toy")


def test_a_system_trains_on_its_own_data_and_records_its_options(tmp_path):
    experiment = _experiment()
    grid = runner.GridRunner(experiment, "toy", str(tmp_path / "G"), {"data_dir": str(tmp_path / "D")})
    runs = {run.name: run for run in runner.plan(experiment, str(tmp_path / "G"))}
    control = grid.config(runs["tree_random/seed1"])
    assert control["data_dir"] == str(tmp_path / "D_random")
    assert control["problem_options"] == "tree_source=random"
    # Systems on the grid's data keep the configuration of earlier grids.
    assert grid.config(runs["base/seed1"])["data_dir"] == str(tmp_path / "D")
    assert "problem_options" not in grid.config(runs["base/seed1"])


def _sealed_experiment(tmp_path, **changes):
    (tmp_path / "test.src").write_text("x\n" * len(REFERENCES))
    (tmp_path / "test.ref").write_text("\n".join(REFERENCES) + "\n")
    (tmp_path / "sealed.src").write_text("y\n" * len(REFERENCES))
    (tmp_path / "sealed.ref").write_text("\n".join(REFERENCES) + "\n")
    fields = dict(systems=[System("base", "transformer"), System("tree", "tree_distance")],
                  translation_tests=[
                      TranslationTest("test", "{data_dir}/test.src", "{data_dir}/test.ref"),
                      TranslationTest("sealed", "{data_dir}/sealed.src", "{data_dir}/sealed.ref",
                                      sealed=True)])
    fields.update(changes)
    experiment = _experiment(**fields)
    grid = runner.GridRunner(experiment, "toy", str(tmp_path / "G"), {"data_dir": str(tmp_path)})
    return grid, runner.plan(experiment, str(tmp_path / "G"))


def _fake_decode(calls):
    """A stand-in for `GridRunner.decode_test`: the tree system gets one sentence more right
    per seed."""
    def decode(run, test, output=None, alpha=None):
        calls.append((run.name, test.name))
        lines = list(REFERENCES)
        wrong = 4 - (run.seed if run.system.name == "tree" else 0)
        for index in range(wrong):
            lines[index] = "something else entirely"
        path = Path(run.directory) / (output or runner.test_output(test))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
    return decode


def _finish(grid, run, calls=None):
    """Marks every stage of `run` done; a sealed test's stage runs, with a fake decoder."""
    state = grid.claim(run)
    grid.decode_test = _fake_decode([] if calls is None else calls)
    for test in grid.experiment.sealed_tests():
        grid.decode_sealed(run, test, state)
    state["done"] = {key: True for key, _ in grid.stages(run, state)}
    grid._save_state(run, state)


def test_a_sealed_test_is_translated_by_each_run_and_scored_by_none(tmp_path):
    grid, runs = _sealed_experiment(tmp_path)
    keys = [key for key, _ in grid.stages(runs[0], {})]
    assert "decode:test" in keys and "sealed:sealed" in keys
    calls = []
    _finish(grid, runs[0], calls)
    assert calls == [(runs[0].name, "sealed")]
    assert (Path(runs[0].directory) / "tests" / "sealed" / "sealed.hyp").exists()
    state = json.loads((Path(runs[0].directory) / runner.STATE_FILE).read_text())
    assert state[runner.SEALED_KEY]["sealed"]["decode_hparams"] == grid.experiment.decode_hparams
    # A run's scores are of the open tests alone.
    grid.decode_test(runs[0], grid.experiment.open_tests()[0])
    assert set(grid._score_translations(runs[0], runner.test_output)) == {"test"}


def test_the_seal_opens_once_when_every_run_has_finished_and_refuses_other_settings(tmp_path):
    grid, runs = _sealed_experiment(tmp_path)
    test = grid.experiment.sealed_tests()[0]
    for run in runs[:-1]:
        _finish(grid, run)
    assert seal.open_seal(grid, runs, test) is None
    assert not os.path.exists(seal.record_path(grid, test))

    _finish(grid, runs[-1])
    record = seal.open_seal(grid, runs, test)
    assert record["opened"] and "commit" in record["git"]
    assert record["settings"]["decode_hparams"] == grid.experiment.decode_hparams
    assert record["scores"]["base/seed1"]["BLEU"] < record["scores"]["tree/seed2"]["BLEU"]
    assert set(record["translations_sha256"]) == {run.name for run in runs}
    saved = json.loads(Path(seal.record_path(grid, test)).read_text())
    assert saved == record
    for run in runs:  # the scored translations are the runs' own, byte for byte
        assert Path(seal.output_path(grid, test, run)).read_bytes() == (
            Path(run.directory) / runner.sealed_output(test)).read_bytes()

    # Once opened, never again: the same settings read the record.
    assert seal.open_seal(grid, runs, test) == record

    # Other decoding settings: refused, not scored.
    other, other_runs = _sealed_experiment(tmp_path, decode_hparams="beam_size=4,alpha=1.0")
    with pytest.raises(seal.SealError, match=r"sealed test sealed was opened on .* under other "
                                             r"settings \(they differ in decode_hparams\); it is "
                                             r"not scored again"):
        seal.open_seal(other, other_runs, test)
    # Changed references (the file's contents): refused too.
    (tmp_path / "sealed.ref").write_text("\n".join(REFERENCES[::-1]) + "\n")
    with pytest.raises(seal.SealError, match="reference_sha256"):
        seal.open_seal(grid, runs, test)
    assert json.loads(Path(seal.record_path(grid, test)).read_text()) == record


def test_the_seal_scores_runs_restored_from_an_archive(tmp_path):
    """The confirmatory runs train over many GPU sessions, none of which keeps weights: the
    seal opens on archived records, each with its sealed translations."""
    grid, runs = _sealed_experiment(tmp_path)
    test = grid.experiment.sealed_tests()[0]
    archive_dir = tmp_path / "archive"
    for run in runs:
        _finish(grid, run)
        assert archive.store(grid, run, str(archive_dir))
    assert (Path(archive.record_dir(str(archive_dir), runs[0])) / "tests" / "sealed"
            / "sealed.hyp.gz").exists()
    elsewhere, _ = _sealed_experiment(tmp_path)
    elsewhere.output_dir = str(tmp_path / "G2")
    restored = runner.plan(elsewhere.experiment, elsewhere.output_dir)
    assert all(archive.restore(elsewhere, run, str(archive_dir)) for run in restored)
    record = seal.open_seal(elsewhere, restored, test)
    assert record["scores"] == seal.open_seal(grid, runs, test)["scores"]

    # The seal opened there, archived, is not opened again by a third grid: it reads it.
    assert seal.copy_to_archive(elsewhere, test, str(archive_dir))
    third, _ = _sealed_experiment(tmp_path)
    third.output_dir = str(tmp_path / "G3")
    third_runs = runner.plan(third.experiment, third.output_dir)
    assert all(archive.restore(third, run, str(archive_dir)) for run in third_runs)
    assert seal.restore_from_archive(third, test, str(archive_dir))
    assert not seal.restore_from_archive(third, test, str(archive_dir))  # it has one now
    assert seal.open_seal(third, third_runs, test) == record  # the same opening, not a new one
    for run in third_runs:
        assert Path(seal.output_path(third, test, run)).read_bytes() == Path(
            seal.output_path(elsewhere, test, run)).read_bytes()


def test_a_run_that_translated_the_sealed_test_under_other_settings_keeps_the_seal_shut(tmp_path):
    grid, runs = _sealed_experiment(tmp_path)
    test = grid.experiment.sealed_tests()[0]
    for run in runs:
        _finish(grid, run)
    state_path = Path(runs[1].directory) / runner.STATE_FILE
    state = json.loads(state_path.read_text())
    state[runner.SEALED_KEY]["sealed"]["decode_hparams"] = "beam_size=1"
    state_path.write_text(json.dumps(state))
    with pytest.raises(seal.SealError, match=rf"{runs[1].name} translated it under other "
                                             rf"settings .*differ in decode_hparams"):
        seal.open_seal(grid, runs, test)
    os.remove(Path(runs[1].directory) / runner.sealed_output(test))
    with pytest.raises(seal.SealError, match=f"{runs[1].name} has no translations of it"):
        seal.open_seal(grid, runs, test)
    assert not os.path.exists(seal.record_path(grid, test))


def test_a_raw_text_sealed_test_is_scored_only_on_the_parse_every_run_read(tmp_path):
    """A raw-text test is decoded from its parse (`G/sources/<test>.conllu`, made once per grid or
    bundle): the same text parsed by another parser version is other input."""
    grid, runs = _sealed_experiment(tmp_path, translation_tests=[TranslationTest(
        "sealed", "{data_dir}/sealed.src", "{data_dir}/sealed.ref", sealed=True, raw_source=True)])
    test = grid.experiment.sealed_tests()[0]
    parse = Path(grid.output_dir) / "sources" / "sealed.conllu"
    parse.parent.mkdir(parents=True)
    parse.write_text("1\ty\t_\t_\t_\t_\t0\troot\t_\t_\n\n" * len(REFERENCES))
    for run in runs:
        _finish(grid, run)
    parse.write_text(parse.read_text().replace("\troot\t", "\tROOT\t"))
    with pytest.raises(seal.SealError, match="differ in parsed_source_sha256"):
        seal.open_seal(grid, runs, test)
    assert not os.path.exists(seal.record_path(grid, test))


def test_the_report_tables_a_sealed_test_only_once_opened(tmp_path):
    grid, runs = _sealed_experiment(tmp_path)
    test = grid.experiment.sealed_tests()[0]
    built = report.build(grid, runs, "bin/grid ...", samples=50)
    assert built["sealed"]["sealed"] == {"opened": None, "unfinished_runs": 4}
    assert "Sealed: translated by each run, scored once every run has finished (4 not yet)." in \
        report.markdown(built, grid.experiment)
    for run in runs:
        _finish(grid, run)
    seal.open_seal(grid, runs, test)
    built = report.build(grid, runs, "bin/grid ...", samples=50)
    block = built["sealed"]["sealed"]
    assert block["rows"]["tree"]["seeds"] == [1, 2]
    (comparison,) = block["contrasts"]["comparisons"]
    assert comparison["delta"] > 0 and comparison["t_test"]["p_value"] < 1
    assert "## sealed: translation (sealed test set)" in report.markdown(built, grid.experiment)


def _scored_runs(tmp_path, seeds_of):
    """Runs of three systems whose test translations and scores are on disk."""
    systems = [System(name, "transformer", seeds=tuple(seeds)) for name, seeds in seeds_of.items()]
    experiment = _experiment(systems=systems, contrasts=[("b", "a"), ("c", "a")],
                             translation_tests=[TranslationTest("test", "{data_dir}/test.src",
                                                                "{data_dir}/test.ref")])
    (tmp_path / "test.ref").write_text("\n".join(REFERENCES) + "\n")
    grid = runner.GridRunner(experiment, "toy", str(tmp_path / "G"), {"data_dir": str(tmp_path)})
    runs = runner.plan(experiment, str(tmp_path / "G"))
    right = {("a", 1): 2, ("a", 2): 3, ("a", 3): 1, ("b", 1): 5, ("b", 2): 6, ("c", 1): 4}
    for run in runs:
        lines = ["wrong words here"] * len(REFERENCES)
        for index in range(right[(run.system.name, run.seed)]):
            lines[index] = REFERENCES[index]
        hyp = Path(run.directory) / runner.test_output(experiment.translation_tests[0])
        hyp.parent.mkdir(parents=True, exist_ok=True)
        hyp.write_text("\n".join(lines) + "\n")
        _finish(grid, run)
        runner.write_json(os.path.join(run.directory, runner.SCORES_FILE), {
            "system": run.system.name, "seed": run.seed, "steps": 10, "best": None,
            "stopped_early": None, "train_seconds": 1.0, "tokens_per_second": None,
            "translation": grid._score_translations(run, runner.test_output), "parse": {}})
    return grid, runs


def test_a_one_seed_system_gets_a_t_test_with_the_pooled_sd_and_no_bootstrap_p(tmp_path):
    grid, runs = _scored_runs(tmp_path, {"a": [1, 2, 3], "b": [1, 2], "c": [1]})
    built = report.build(grid, runs, "bin/grid ...", samples=100)
    contrasts = built["contrasts"]["test"]
    rows = built["tests"]["test"]
    pooled = contrasts["pooled_seed_sd"]
    assert (pooled["df"], pooled["systems"]) == (3, 2)  # a: 2 df, b: 1 df; c adds nothing
    assert rows["c"]["BLEU_mean_sd"] == (rows["c"]["BLEU"][0], None)  # one seed has no sd
    b, c = contrasts["comparisons"]
    assert (b["system"], c["system"]) == ("b", "c")
    assert b["bootstrap"] is not None and c["bootstrap"] is None  # one seed: no bootstrap p
    assert c["t_test"]["df"] == 3 and 0 < c["t_test"]["p_value"] < 1
    assert c["delta"] == pytest.approx(rows["c"]["BLEU"][0] - sum(rows["a"]["BLEU"]) / 3)
    assert set(c["per_seed_p"]) == {"1"} and set(b["per_seed_p"]) == {"1", "2"}
    assert [b["holm_p"], c["holm_p"]] == pytest.approx(multiple_testing.holm(
        [b["t_test"]["p_value"], c["t_test"]["p_value"]]))
    # How many seeds the table's three systems would each need, at its pooled sd.
    needed = contrasts["seeds_needed"]
    assert needed["systems"] == 3
    for difference, count in needed["seeds"].items():
        assert count == seed_significance.seeds_needed(pooled["sd"], float(difference), systems=3)
    # Three df leave the sd uncertain: its interval, and the counts at its 80% upper bound.
    assert pooled["ci95"] == pytest.approx(
        seed_significance.sd_confidence_interval(pooled["sd"], 3))
    assert pooled["ci95"][0] < pooled["sd"] < needed["upper_bound"]["sd"] < pooled["ci95"][1]
    for difference, count in needed["upper_bound"]["seeds"].items():
        assert count == seed_significance.seeds_needed(
            needed["upper_bound"]["sd"], float(difference), systems=3)
        assert count is None or count >= needed["seeds"][difference]


def test_the_pilot_and_the_confirmatory_experiment_follow_the_rules():
    from syntax_t2t import registry

    sizes = {"inputs": 100, "targets": 100, "deprel": 10, "upos": 10, "xpos": 10}
    for name in ("multi30k_cs_en_pilot", "multi30k_cs_en_confirmatory",
                 "multi30k_cs_en_relative_syntax"):
        experiment = registry.experiment(name)
        experiment_lib.check(experiment, name, sizes)  # builds every model
        assert experiment.source_word_positions is False
    pilot = registry.experiment("multi30k_cs_en_pilot")
    confirmatory = registry.experiment("multi30k_cs_en_confirmatory")
    assert len(confirmatory.comparisons()) == 4 == len(pilot.comparisons())
    assert ("relative_tree_distance", "relative_tree_distance_random") in pilot.comparisons()
    # The random-tree systems differ from theirs only in their data.
    for experiment in (pilot, confirmatory):
        tree, control = (experiment.system("relative_tree_distance"),
                         experiment.system("relative_tree_distance_random"))
        assert (tree.model, tree.hparams) == (control.model, control.hparams)
        assert control.problem_options == "tree_source=random" and tree.data_dir is None
    # The pilot's baselines are §0's runs: the same configuration but for the experiment's name.
    record = registry.experiment("multi30k_cs_en_syntax_full_budget")
    for name in ("transformer", "transformer_relative"):
        assert pilot.system(name).hparams == record.system(name).hparams
    assert (pilot.train_steps, pilot.early_stopping_patience, pilot.hparams_set) == (
        record.train_steps, record.early_stopping_patience, record.hparams_set)
    # Relative positions and TreeDistance in one model: both label kinds.
    system = pilot.system("relative_tree_distance")
    hparams = registry.hparams(pilot.hparams_set).parse(system.hparams)
    model = registry.model(system.model)(hparams, sizes)
    assert model.relative_label_vocab_sizes() == {"relative": 41}
    assert "tree_distance" in model.tree_label_vocab_sizes()
    # The confirmatory primary test is sealed, parsed from raw text; the secondary is open.
    primary, secondary = confirmatory.translation_tests
    assert (primary.name, primary.sealed, primary.raw_source) == ("test_2018_flickr", True, True)
    assert (secondary.name, secondary.sealed) == ("test_2016_flickr", False)
    assert len(confirmatory.seeds) == 20 and confirmatory.checkpoint == "average"


def test_a_bundle_holds_every_file_the_runs_read_at_the_grid_paths_of_the_bundle(tmp_path):
    from syntax_t2t.grid import bundle

    data, raw = tmp_path / "D", tmp_path / "T"
    for directory in (data, tmp_path / "D_random", raw):
        directory.mkdir()
        (directory / "file.txt").write_text(directory.name)
    (data / runner.LOCK_FILE).write_text("held")  # another process's lock: not copied
    (raw / "sealed.src").write_text("y\n")
    (raw / "sealed.ref").write_text("a man\n")
    (data / "test.src").write_text("x\n")
    experiment = _experiment(translation_tests=[
        TranslationTest("test", "{data_dir}/test.src", "{data_dir}/file.txt"),
        TranslationTest("sealed", "{tmp_dir}/sealed.src", "{tmp_dir}/sealed.ref", sealed=True)])
    grid = runner.GridRunner(experiment, "toy", str(tmp_path / "G"),
                             {"data_dir": str(data), "tmp_dir": str(raw)})
    made = bundle.write(grid, str(tmp_path / "B"))
    assert made["places"] == {"data_dir": "data", "tmp_dir": "tmp"}
    assert set(made["copied"]) == {"data", "data_random", "tmp/sealed.src", "tmp/sealed.ref"}
    assert (tmp_path / "B" / "data_random" / "file.txt").read_text() == "D_random"
    assert (tmp_path / "B" / "tmp" / "sealed.ref").read_text() == "a man\n"
    assert not (tmp_path / "B" / "data" / runner.LOCK_FILE).exists()
    assert (tmp_path / "B" / "grid").is_dir() and made["parsed"] == []
    assert json.loads((tmp_path / "B" / bundle.RECORD_FILE).read_text()) == made
    with pytest.raises(runner.GridError, match="is not empty"):
        bundle.write(grid, str(tmp_path / "B"))
    # A file named outside the grid's directories cannot move with it.
    elsewhere = _experiment(translation_tests=[
        TranslationTest("test", str(raw / "sealed.src"), "{data_dir}/file.txt")])
    with pytest.raises(runner.GridError, match="names no directory of the grid"):
        bundle.write(runner.GridRunner(elsewhere, "toy", str(tmp_path / "G"),
                                       {"data_dir": str(data)}), str(tmp_path / "B2"))
    assert not (tmp_path / "B2").exists()
    assert not [path for path in tmp_path.iterdir() if ".partial" in path.name]
