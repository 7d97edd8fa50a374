"""Tree2Seq's training and decoding paths: the trainer's input pipeline, SGD with the rate
halving, an XLA train step, bin/train and bin/decode end to end (TensorFlow: the trainer's)."""

import json
import math
import re
import shutil
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import flags
from absl.testing import flagsaver
from test_tree2seq import BATCH, VOCAB, make_model, tiny_hparams

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.decoding.length_model import FILE_NAME as LENGTH_MODEL_FILE
from syntax_t2t.models.tree2seq import TREE_FEATURES, Tree2Seq, source_tree_arrays
from syntax_t2t.training.trainer import Trainer

FLAGS = flags.FLAGS
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PUD = DATA / "pud"


def test_the_trainer_adds_the_trees_in_the_input_pipeline(tmp_path):
    dataset = tf.data.Dataset.from_tensors({key: tf.constant(value) for key, value in BATCH.items()})
    trainer = Trainer(lambda: make_model(), tiny_hparams(), str(tmp_path))
    batch = next(iter(trainer._select_features(dataset)))
    assert set(batch) == {"inputs", "targets", "src_heads", *TREE_FEATURES}
    expected = source_tree_arrays(np.array(BATCH["src_heads"]))
    for key, array in zip(TREE_FEATURES, expected):
        np.testing.assert_array_equal(batch[key].numpy(), array)


@pytest.mark.parametrize("softmax", ["blackout", "full"])
def test_sgd_training_fits_a_batch(tmp_path, softmax):
    keras.utils.set_random_seed(1)
    dataset = tf.data.Dataset.from_tensors(
        {key: tf.constant(value, tf.int32) for key, value in BATCH.items()}).repeat(40)
    hparams = tiny_hparams(softmax=softmax, hidden_size=16, embedding_size=16)
    trainer = Trainer(lambda: Tree2Seq(hparams, VOCAB), hparams, str(tmp_path),
                      log_step_count_steps=40, save_checkpoints_steps=40)
    before = trainer.evaluate(dataset, steps=1)["loss/nmt"]
    after = trainer.train(dataset, train_steps=40, eval_dataset=dataset, eval_steps=1)["loss/nmt"]
    assert before == pytest.approx(math.log(20), rel=1e-6) and after < before - 0.3


def test_the_trainer_halves_the_sgd_rate_when_the_dev_loss_gets_worse(tmp_path, monkeypatch):
    dataset = tf.data.Dataset.from_tensors(
        {key: tf.constant(value, tf.int32) for key, value in BATCH.items()}).repeat(6)
    trainer = Trainer(lambda: make_model(), tiny_hparams(), str(tmp_path), log_step_count_steps=2,
                      save_checkpoints_steps=2)
    dev_losses = iter([3.0, 3.5, 3.2])  # evaluations at steps 2, 4 and 6
    rates = []

    def evaluate(dataset, steps):
        rates.append(float(trainer.optimizer.learning_rate))
        return {"loss/total": next(dev_losses), "loss/nmt": 1.0, "token_accuracy": 0.0}

    monkeypatch.setattr(trainer, "evaluate", evaluate)
    trainer.train(dataset, train_steps=6, eval_dataset=dataset, eval_every=2)
    assert rates == [1.0, 1.0, 0.5] and float(trainer.optimizer.learning_rate) == 0.5


@pytest.mark.slow
def test_an_xla_compiled_train_step(tmp_path):
    dataset = tf.data.Dataset.from_tensors(
        {key: tf.constant(value, tf.int32) for key, value in BATCH.items()}).repeat(3)
    trainer = Trainer(lambda: make_model(), tiny_hparams(), str(tmp_path), jit_compile=True,
                      log_step_count_steps=1)
    trainer.train(dataset, train_steps=3)
    assert int(trainer.global_step.numpy()) == 3
    assert trainer.model.output_layer.unigram_counts.numpy().sum() == 33


# --------------------------------------------------------------- end to end

def run_cli(module, argv0, **flag_values):
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS([argv0])
    with flagsaver.flagsaver(**flag_values):
        module.main([argv0])


def train_and_decode(problem_name, data_dir, run_dir, test_source, train_steps, hparams, capsys):
    from syntax_t2t.cli import decode, train
    run_cli(train, "train", problem=problem_name, model="tree2seq", hparams_set="tree2seq_tiny",
            hparams=hparams, data_dir=data_dir, output_dir=run_dir,
            train_steps=train_steps, eval_every=0, eval_steps=0, save_checkpoints_steps=train_steps,
            log_step_count_steps=train_steps, random_seed=1)
    final = re.search(r"final dev evaluation: loss/nmt (\S+)", capsys.readouterr().out)
    outputs = {}
    for name, settings in (("greedy", "beam_size=1"), ("length_model", "beam_size=3,length_model=true")):
        output = Path(run_dir) / f"{name}.txt"
        run_cli(decode, "decode", output_dir=run_dir, decode_from_file=test_source,
                decode_to_file=str(output), decode_hparams=settings)
        outputs[name] = output.read_text(encoding="utf-8").split("\n")[:-1]
    return float(final.group(1)), outputs


@pytest.mark.slow
def test_trains_and_decodes_synthetic_syntax_reorder(tmp_path, capsys):
    registration.import_all()
    problem = registry.problems.get("synthetic_syntax_reorder")(
        train_size=400, dev_size=20, test_size=6, max_length=8)
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, str(tmp_path / "raw"))
    run_dir = str(tmp_path / "run")
    test_source = problem.raw_paths(data_dir, "test")["source"]
    dev_loss, outputs = train_and_decode(problem.name, data_dir, run_dir, test_source, 40,
                                         "batch_size=256,max_length=16", capsys)
    # 40 SGD steps at rate 1.0 barely leave the uniform start (and can
    # overshoot it): the run must only stay finite; learning is tested elsewhere.
    assert math.isfinite(dev_loss)
    assert len(outputs["greedy"]) == len(outputs["length_model"]) == 6
    assert (Path(run_dir) / LENGTH_MODEL_FILE).is_file()
    # Targets have as many words as sources here: the length model sees that.
    pairs = json.loads(Path(run_dir, LENGTH_MODEL_FILE).read_text())["pairs"]
    assert pairs and all(n == m for n, m, _ in pairs)


@pytest.mark.slow
@pytest.mark.real_data
@pytest.mark.skipif(not PUD.is_dir(), reason=f"real data folder {PUD} is absent")
def test_trains_and_decodes_pud_syntax_cs_en(tmp_path, capsys):
    raw = tmp_path / "raw"
    raw.mkdir()
    for language in ("cs", "en"):
        shutil.copy(PUD / f"{language}_pud-ud-test.conllu.gz", raw)
    registration.import_all()
    problem = registry.problems.get("pud_syntax_cs_en")(train_size=200, dev_size=10, test_size=5)
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, str(raw))
    run_dir = str(tmp_path / "run")
    test_source = problem.raw_paths(data_dir, "test")["source"]
    dev_loss, outputs = train_and_decode(problem.name, data_dir, run_dir, test_source, 10,
                                         "batch_size=512,max_length=64", capsys)
    assert np.isfinite(dev_loss)
    assert len(outputs["greedy"]) == len(outputs["length_model"]) == 5
