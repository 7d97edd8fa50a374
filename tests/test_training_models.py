"""Every registered model trains on synthetic_syntax_reorder; DepParse learns to parse."""

import keras
import pytest

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.training import checkpoints
from syntax_t2t.training.trainer import Trainer

PROBLEM = "synthetic_syntax_reorder"
registration.import_all()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    problem = registry.problems.get(PROBLEM)(train_size=2000, dev_size=100, test_size=5, max_length=12)
    problem.generate_data(str(root / "data"), str(root / "raw"))
    return str(root / "data")


def make_trainer(model_name, data_dir, output_dir, overrides):
    hparams = registry.hparams("transformer_tiny").parse(
        "batch_size=512,max_length=16,num_decoder_layers=1," + overrides)
    vocab_sizes = registry.problem(PROBLEM).vocab_sizes(data_dir)
    trainer = Trainer(lambda: registry.model(model_name)(hparams, vocab_sizes), hparams,
                      str(output_dir), log_step_count_steps=10, save_checkpoints_steps=1000)
    return trainer, hparams


def datasets(data_dir, hparams):
    problem = registry.problem(PROBLEM)
    return (problem.dataset("train", data_dir, hparams, seed=1),
            problem.dataset("eval", data_dir, hparams))


# tree2seq and its baseline anmt are LSTMs with their own hparams sets and SGD;
# test_tree2seq.py and test_anmt.py train them.
TRANSFORMER_MODELS = [name for name in registry.models.names() if name not in ("tree2seq", "anmt")]


@pytest.mark.parametrize("model_name", TRANSFORMER_MODELS)
def test_every_registered_model_learns(data_dir, tmp_path, model_name):
    keras.utils.set_random_seed(2)
    trainer, hparams = make_trainer(
        model_name, data_dir, tmp_path,
        "hidden_size=32,filter_size=64,num_encoder_layers=1,parse_layer=0,learning_rate=0.05,"
        "learning_rate_warmup_steps=20")
    train, dev = datasets(data_dir, hparams)
    before = trainer.evaluate(dev, steps=0)
    after = trainer.train(train, train_steps=30, eval_dataset=dev, eval_steps=0)
    assert after["loss/nmt"] < before["loss/nmt"] - 0.5
    assert after["loss/total"] < before["loss/total"]
    # Models with a supervised head are scored on it (DiagonalParse against
    # its own previous-token gold, SISA in its own frame); UAS rises fast.
    assert ("uas" in after) == ("loss/parse" in after)
    if "uas" in after:
        assert after["uas"] > before["uas"]
    assert checkpoints.latest_checkpoint(str(tmp_path)).endswith("ckpt-30")


@pytest.mark.slow
def test_dep_parse_reaches_90_percent_uas_on_the_dev_set(data_dir, tmp_path):
    keras.utils.set_random_seed(1)
    trainer, hparams = make_trainer("dep_parse", data_dir, tmp_path, "learning_rate_warmup_steps=100")
    train, dev = datasets(data_dir, hparams)
    results = trainer.train(train, train_steps=300, eval_dataset=dev, eval_steps=0)
    assert results["uas"] >= 0.9
