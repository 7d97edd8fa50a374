"""T2T and fairseq flag names: what they stand for, conflicts refused, --schedule and --update_freq in bin/train."""

import os

import pytest
from absl import flags
from absl.testing import flagsaver

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.cli import aliases, train  # noqa: F401  (train defines its aliases)
from syntax_t2t.training import checkpoints, distribution, run_directory

FLAGS = flags.FLAGS
PROBLEM = "synthetic_syntax_reorder"
TINY = ("hidden_size=16,filter_size=32,num_heads=2,num_encoder_layers=1,num_decoder_layers=1,"
        "batch_size=96,max_length=12,learning_rate_warmup_steps=10")


@pytest.fixture(autouse=True, scope="module")
def parsed_flags():
    if not FLAGS.is_parsed():
        FLAGS(["test"])


def applied(**given):
    """The flags after `aliases.apply` on a command line of `given` (as parsed)."""
    with flagsaver.as_parsed(**{name: str(value) for name, value in given.items()}):
        aliases.apply()
        return {name: FLAGS[name].value for name in
                ("usr_dir", "eval_every", "save_checkpoints_steps", "distribution", "hparams")}


def test_t2t_usr_dir_is_usr_dir():
    assert applied(t2t_usr_dir="mine")["usr_dir"] == "mine"
    assert applied(t2t_usr_dir="mine", usr_dir="mine")["usr_dir"] == "mine"
    with pytest.raises(aliases.AliasError, match="--t2t_usr_dir=mine means --usr_dir=mine, but "
                                                 "--usr_dir=other is given too"):
        applied(t2t_usr_dir="mine", usr_dir="other")


def test_local_eval_frequency_evaluates_and_saves():
    result = applied(local_eval_frequency=50)
    assert (result["eval_every"], result["save_checkpoints_steps"]) == (50, 50)
    with pytest.raises(aliases.AliasError, match="--eval_every=10"):
        applied(local_eval_frequency=50, eval_every=10)


def test_worker_gpu_mirrors():
    assert applied(worker_gpu=2)["distribution"] == "mirrored"
    assert applied(worker_gpu=1)["distribution"] == "none"
    with pytest.raises(aliases.AliasError, match="--distribution=none"):
        applied(worker_gpu=4, distribution="none")


def test_worker_gpu_count_is_checked_against_the_host():
    available = len(distribution._mirrored_devices())
    with pytest.raises(distribution.DistributionError, match=f"{available + 1} devices asked for"):
        distribution.make_strategy("mirrored", num_devices=available + 1)
    assert distribution.make_strategy("mirrored", num_devices=1).num_replicas_in_sync == 1


def test_hparam_aliases_join_the_overrides():
    assert applied(max_tokens=4096)["hparams"] == "batch_size=4096"
    assert applied(max_tokens=4096, update_freq=4, hparams="relu_dropout=0.2")["hparams"] == (
        "relu_dropout=0.2,batch_size=4096,update_freq=4")
    assert applied(max_tokens=4096, hparams="batch_size=4096")["hparams"] == "batch_size=4096"
    with pytest.raises(aliases.AliasError, match="--max_tokens=4096 means --hparams=batch_size=4096, "
                                                 "but --hparams gives batch_size=2048"):
        applied(max_tokens=4096, hparams="batch_size=2048")
    with pytest.raises(aliases.AliasError, match="update_freq=2"):
        applied(update_freq=4, hparams="update_freq=2")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    registration.import_all()
    root = tmp_path_factory.mktemp("aliases")
    problem = registry.problems.get(PROBLEM)(train_size=200, dev_size=20, test_size=5, max_length=8)
    problem.generate_data(str(root / "data"), str(root / "raw"))
    return str(root / "data")


def run_train(data_dir, output_dir, **given):
    values = dict(problem=PROBLEM, model="transformer", hparams_set="transformer_tiny", hparams=TINY,
                  data_dir=data_dir, output_dir=output_dir, train_steps=2, eval_steps=2,
                  log_step_count_steps=1, random_seed=1)
    values.update(given)
    parsed = {name: str(value) for name, value in values.items() if value is not None}
    unset = {name: None for name, value in values.items() if value is None}
    with flagsaver.flagsaver(**unset), flagsaver.as_parsed(**parsed):
        aliases.apply()
        train.main(["train"])


def test_update_freq_schedule_train_and_evaluate_only(data_dir, tmp_path, capsys):
    run = str(tmp_path / "run")
    run_train(data_dir, run, update_freq=2, schedule="train", local_eval_frequency=2)
    output = capsys.readouterr().out
    assert "final dev evaluation" not in output
    assert checkpoints.latest_checkpoint(run).endswith("ckpt-2")
    assert run_directory.load_hparams(run).update_freq == 2
    saved_flags = run_directory.load_flags(run)
    assert (saved_flags["schedule"], saved_flags["save_checkpoints_steps"]) == ("train", "2")

    before = sorted(os.listdir(run))
    run_train(data_dir, run, schedule="evaluate", hparams_set=None, hparams=None)
    output = capsys.readouterr().out
    assert f"dev evaluation of {os.path.join(run, 'ckpt-2')}: loss/nmt" in output
    assert sorted(os.listdir(run)) == before


def test_schedule_evaluate_needs_a_checkpoint(data_dir, tmp_path):
    from syntax_t2t.cli import common
    with pytest.raises(common.UsageError, match="holds no checkpoint to evaluate"):
        run_train(data_dir, str(tmp_path / "new"), schedule="evaluate")
