"""hparams.json and flags.txt of a run: writing, reloading, refusing another run."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import tensorflow as tf

from syntax_t2t.errors import InputError
from syntax_t2t.hparams import HParams
from syntax_t2t.training import run_directory


def make_hparams(**overrides):
    return HParams(hidden_size=64, dropout=0.1, layers=[0, 1], pos="xpos").override(overrides)


def test_written_hparams_and_flags_are_read_back(tmp_path):
    hparams = make_hparams(hidden_size=32)
    run_directory.write_run_files(str(tmp_path / "run"), hparams,
                                  ["--model=dep_parse", "--hparams=hidden_size=32", "--noxla"])
    assert run_directory.load_hparams(str(tmp_path / "run")) == hparams
    assert run_directory.load_flags(str(tmp_path / "run")) == {
        "model": "dep_parse", "hparams": "hidden_size=32", "noxla": "true"}
    assert (tmp_path / "run" / "flags.txt").read_text() == (
        "--model=dep_parse\n--hparams=hidden_size=32\n--noxla\n")


def test_a_new_directory_has_no_saved_run(tmp_path):
    assert run_directory.load_hparams(str(tmp_path)) is None
    assert run_directory.load_flags(str(tmp_path)) == {}
    run_directory.check_same_run(str(tmp_path), {"model": "m", "problem": "p"})


def test_a_corrupt_hparams_file_names_the_file_and_line(tmp_path):
    (tmp_path / "hparams.json").write_text('{"values":\n  {oops}\n}')
    with pytest.raises(InputError, match=r"hparams.json:2: not a saved hparams file"):
        run_directory.load_hparams(str(tmp_path))
    (tmp_path / "hparams.json").write_text(json.dumps({"no": "values"}))
    with pytest.raises(InputError, match="hparams.json: not a saved hparams file"):
        run_directory.load_hparams(str(tmp_path))


def test_a_bad_flags_line_is_located(tmp_path):
    (tmp_path / "flags.txt").write_text("--model=m\nmodel=m\n")
    with pytest.raises(InputError, match=r"flags.txt:2: expected --name=value"):
        run_directory.load_flags(str(tmp_path))


def trained(directory):
    """Marks `directory` as holding a checkpoint (a run that trained)."""
    (directory / "checkpoint").write_text('model_checkpoint_path: "ckpt-5"\n')
    (directory / "ckpt-5.index").write_bytes(b"")
    return str(directory)


def test_a_different_model_or_problem_is_refused(tmp_path):
    run_directory.write_run_files(str(tmp_path), make_hparams(), ["--model=dep_parse", "--problem=p"])
    # Nothing trained yet: the record of a failed start blocks no other run.
    run_directory.check_same_run(str(tmp_path), {"model": "transformer", "problem": "p"})
    trained(tmp_path)
    run_directory.check_same_run(str(tmp_path), {"model": "dep_parse", "problem": "p"})
    with pytest.raises(run_directory.RunDirectoryError,
                       match=r"holds a different run: --model=dep_parse "
                             r"\(this command: --model=transformer\)"):
        run_directory.check_same_run(str(tmp_path), {"model": "transformer", "problem": "p"})
    with pytest.raises(run_directory.RunDirectoryError, match="--problem=p"):
        run_directory.check_same_run(str(tmp_path), {"model": "dep_parse", "problem": "q"})


def test_checkpoints_without_hparams_are_refused(tmp_path):
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-5"\n')
    (tmp_path / "ckpt-5.index").write_bytes(b"")
    with pytest.raises(run_directory.RunDirectoryError, match="holds checkpoints but no hparams.json"):
        run_directory.check_same_run(str(tmp_path), {"model": "m"})


def test_reconcile_new_run_resume_and_conflicts(tmp_path):
    saved = make_hparams(hidden_size=32)
    other = make_hparams(hidden_size=64, dropout=0.3)
    assert run_directory.reconcile_hparams(str(tmp_path), saved, other) is other  # nothing trained
    d = trained(tmp_path)
    assert run_directory.reconcile_hparams(d, None, saved) is saved
    assert run_directory.reconcile_hparams(d, saved, None) is saved
    assert run_directory.reconcile_hparams(d, saved, make_hparams(hidden_size=32)) is saved
    with pytest.raises(run_directory.RunDirectoryError, match="a new run needs --hparams_set"):
        run_directory.reconcile_hparams(d, None, None)
    with pytest.raises(run_directory.RunDirectoryError) as error:
        run_directory.reconcile_hparams(d, saved, other)
    message = str(error.value)
    assert "dropout: saved 0.1, requested 0.3" in message
    assert "hidden_size: saved 32, requested 64" in message
    assert "layers" not in message


def test_a_run_saved_before_a_parameter_existed_resumes_as_it_was_trained(tmp_path):
    d = trained(tmp_path)
    saved = make_hparams(hidden_size=32)
    requested = make_hparams(hidden_size=32).define("update_freq", 1)
    assert run_directory.reconcile_hparams(d, saved, requested) == requested
    # A default that changed since (MG-SA's phrase rule) does not change the saved run.
    newer = make_hparams(hidden_size=32).define("update_freq", 1).define(
        "mgsa_dependency_phrases", "right_first")
    resumed = run_directory.reconcile_hparams(d, saved, newer)
    assert resumed.mgsa_dependency_phrases == "projection" and resumed.update_freq == 1
    # Resumed once, its hparams.json holds the old value: the next resume keeps it too.
    assert run_directory.reconcile_hparams(d, resumed, newer).mgsa_dependency_phrases == (
        "projection")
    # Parameters that existed still have to match.
    with pytest.raises(run_directory.RunDirectoryError, match="hidden_size"):
        run_directory.reconcile_hparams(d, saved, make_hparams(hidden_size=64).define(
            "update_freq", 1))


def test_each_start_records_versions_and_commit(tmp_path):
    run = str(tmp_path / "run")
    run_directory.write_run_files(run, make_hparams(), ["--model=x"])
    run_directory.write_run_files(run, make_hparams(), ["--model=x"])
    with open(os.path.join(run, run_directory.ENVIRONMENT_FILE), encoding="utf-8") as file:
        starts = json.load(file)
    assert len(starts) == 2
    assert starts[0]["packages"]["tensorflow"] == tf.__version__
    repo = Path(run_directory.__file__).resolve().parents[2]
    if (repo / ".git").exists():
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        assert starts[1]["git"]["commit"] == head


def test_a_damaged_environment_record_is_named(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / run_directory.ENVIRONMENT_FILE).write_text("{not json")
    with pytest.raises(InputError, match=r"environment.json:1: not the run's environment record"):
        run_directory.record_environment(str(run))
