"""bin/train: errors before training, the run's files, resuming, and the executable itself."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from absl import flags
from absl.testing import flagsaver

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.cli import common, train
from syntax_t2t.decoding.model_loading import load_trained_model
from syntax_t2t.hparams import HParamsError
from syntax_t2t.problem import DataNotGeneratedError
from syntax_t2t.training import checkpoints, run_directory

FLAGS = flags.FLAGS
REPO = Path(__file__).resolve().parents[1]
PROBLEM = "synthetic_syntax_reorder"
TINY = ("hidden_size=16,filter_size=32,num_heads=2,num_encoder_layers=1,num_decoder_layers=1,"
        "batch_size=96,max_length=12,learning_rate_warmup_steps=10")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["train"])
    root = tmp_path_factory.mktemp("train_cli")
    problem = registry.problems.get(PROBLEM)(train_size=300, dev_size=30, test_size=5, max_length=8)
    problem.generate_data(str(root / "data"), str(root / "raw"))
    return str(root / "data")


def run_train(**flag_values):
    values = dict(problem=PROBLEM, model="transformer", hparams_set="transformer_tiny", hparams=TINY,
                  train_steps=4, save_checkpoints_steps=2, eval_steps=2, log_step_count_steps=2,
                  random_seed=1)
    values.update(flag_values)
    with flagsaver.flagsaver(**values):
        train.main(["train"])


def assert_untouched(output_dir):
    assert not os.path.exists(output_dir) or os.listdir(output_dir) == []


@pytest.mark.parametrize("flag, value, message", [
    ("model", "dep_pars", r"unknown model 'dep_pars'\. Did you mean dep_parse"),
    ("problem", "synthetic_syntax_reoder", r"unknown problem .*Did you mean synthetic_syntax_reorder"),
    ("hparams_set", "transformer_tiniest", r"unknown hparams set .*Did you mean transformer_tiny"),
])
def test_unknown_names_are_refused_with_a_suggestion(data_dir, tmp_path, flag, value, message):
    with pytest.raises(registry.RegistryError, match=message):
        run_train(data_dir=data_dir, output_dir=str(tmp_path / "run"), **{flag: value})
    assert_untouched(tmp_path / "run")


def test_a_bad_override_is_refused(data_dir, tmp_path):
    with pytest.raises(HParamsError, match="unknown hparam 'hiden_size'; did you mean hidden_size"):
        run_train(data_dir=data_dir, output_dir=str(tmp_path / "run"), hparams="hiden_size=8")
    assert_untouched(tmp_path / "run")


def test_missing_required_flags_are_named(tmp_path):
    with pytest.raises(common.UsageError, match="--data_dir, --output_dir"):
        run_train(data_dir=None, output_dir=None)


def test_missing_data_is_refused_with_the_datagen_command(data_dir, tmp_path):
    incomplete = tmp_path / "incomplete"
    shutil.copytree(data_dir, incomplete)
    os.remove(registry.problem(PROBLEM).filepaths(str(incomplete), "dev")[0])
    for directory in (tmp_path / "empty", incomplete):
        with pytest.raises(DataNotGeneratedError,
                           match=rf"no complete data of problem {PROBLEM} in {directory} \(.*\); generate it "
                                 rf"with bin/datagen --problem={PROBLEM} --data_dir={directory}"):
            run_train(data_dir=str(directory), output_dir=str(tmp_path / "run"))
    assert_untouched(tmp_path / "run")


def test_an_empty_dev_split_is_refused(tmp_path):
    problem = registry.problems.get(PROBLEM)(train_size=20, dev_size=0, test_size=1, max_length=5)
    problem.generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
    with pytest.raises(common.UsageError, match=r"the dev split of problem .* holds no examples"):
        run_train(data_dir=str(tmp_path / "data"), output_dir=str(tmp_path / "run"))
    assert_untouched(tmp_path / "run")


def test_an_output_dir_of_another_model_is_refused(data_dir, tmp_path):
    run = tmp_path / "run"
    run_directory.write_run_files(str(run), registry.hparams("transformer_tiny").parse(TINY),
                                  [f"--problem={PROBLEM}", "--model=dep_parse"])
    # A checkpoint makes it a run that trained (one without blocks nothing).
    (run / "checkpoint").write_text('model_checkpoint_path: "ckpt-5"\n')
    (run / "ckpt-5.index").write_bytes(b"")
    with pytest.raises(run_directory.RunDirectoryError,
                       match=r"holds a different run: --model=dep_parse "
                             r"\(this command: --model=transformer\)"):
        run_train(data_dir=data_dir, output_dir=str(run))
    assert sorted(os.listdir(run)) == ["checkpoint", "ckpt-5.index", "environment.json",
                                      "flags.txt", "hparams.json"]


def test_run_files_conflicting_overrides_and_resuming(data_dir, tmp_path, capsys):
    run = str(tmp_path / "run")
    run_train(data_dir=data_dir, output_dir=run)
    assert checkpoints.latest_checkpoint(run).endswith("ckpt-4")
    assert "final dev evaluation: loss/nmt" in capsys.readouterr().out
    saved = run_directory.load_hparams(run)
    assert saved == registry.hparams("transformer_tiny").parse(TINY)
    flags_saved = run_directory.load_flags(run)
    assert (flags_saved["model"], flags_saved["problem"], flags_saved["train_steps"]) == (
        "transformer", PROBLEM, "4")

    # Another model size would silently change the network: refused, listing
    # every difference, before anything is written.
    with pytest.raises(run_directory.RunDirectoryError) as error:
        run_train(data_dir=data_dir, output_dir=run,
                  hparams=TINY.replace("hidden_size=16", "hidden_size=32") + ",relu_dropout=0.5")
    assert "hidden_size: saved 16, requested 32" in str(error.value)
    assert "relu_dropout: saved 0.1, requested 0.5" in str(error.value)
    assert checkpoints.latest_checkpoint(run).endswith("ckpt-4")

    # The same command with more steps resumes at step 4 and stops at 6;
    # without --hparams_set the saved hparams are used.
    run_train(data_dir=data_dir, output_dir=run, train_steps=6)
    assert checkpoints.latest_checkpoint(run).endswith("ckpt-6")
    run_train(data_dir=data_dir, output_dir=run, train_steps=7, hparams_set=None, hparams="")
    assert checkpoints.latest_checkpoint(run).endswith("ckpt-7")
    assert run_directory.load_hparams(run) == saved
    assert run_directory.load_flags(run)["train_steps"] == "7"

    # bin/decode restores the model from the run's newest checkpoint.
    loaded = load_trained_model(output_dir=run)
    assert (loaded.model_name, loaded.checkpoint) == ("transformer", os.path.join(run, "ckpt-7"))


def test_bin_train_reports_a_model_the_problem_cannot_feed(tmp_path):
    # In a fresh process: --usr_dir registers a problem without source trees.
    completed = subprocess.run(
        [sys.executable, str(REPO / "bin" / "train"),
         "--usr_dir", str(REPO / "tests" / "stand_in_usr_dir"),
         "--problem=stand_in_plain_text", "--model=dep_parse", "--hparams_set=transformer_tiny",
         f"--data_dir={tmp_path / 'data'}", f"--output_dir={tmp_path / 'run'}"],
        capture_output=True, text=True, timeout=300)
    assert completed.returncode == 1
    assert ("error: model dep_parse needs the features src_heads, which problem stand_in_plain_text "
            "does not provide (it provides inputs, targets)") in completed.stderr
    assert "Traceback" not in completed.stderr
    assert os.access(REPO / "bin" / "train", os.X_OK)
    assert_untouched(tmp_path / "run")
