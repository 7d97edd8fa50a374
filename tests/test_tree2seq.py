"""Tests for syntax_t2t.models.tree2seq (Eriguchi et al. 2016) and its training and decoding paths."""

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

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.data.binary_tree import batch_binary_trees, binarize
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.decoding.length_model import FILE_NAME as LENGTH_MODEL_FILE
from syntax_t2t.hparams import HParamsError
from syntax_t2t.models.tree2seq import TREE_FEATURES, Tree2Seq, _masked_lstm, source_tree_arrays
from syntax_t2t.training.trainer import Trainer

FLAGS = flags.FLAGS
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PUD = DATA / "pud"
VOCAB = {"inputs": 30, "targets": 20}


def tiny_hparams(**overrides):
    registration.import_all()
    hparams = registry.hparams("tree2seq_tiny")
    hparams.override({"embedding_size": 8, "hidden_size": 6, "blackout_samples": 5, **overrides})
    return hparams


def make_model(**overrides):
    return Tree2Seq(tiny_hparams(**overrides), VOCAB)


def with_trees(model, batch):
    batch = {key: np.asarray(value, np.int32) for key, value in batch.items()}
    batch.update(model.derived_features.compute(batch))
    return {key: tf.constant(value) for key, value in batch.items()}


# "She saw cats ." (saw the root), a one-word sentence, and one without a parse.
BATCH = {
    "inputs": [[5, 6, 7, 8, 1, 0], [9, 1, 0, 0, 0, 0], [10, 11, 1, 0, 0, 0]],
    "targets": [[4, 5, 6, 1, 0, 0], [7, 1, 0, 0, 0, 0], [8, 9, 10, 11, 1, 0]],
    "src_heads": [[2, 0, 2, 2, -1, -1], [0, -1, -1, -1, -1, -1], [-1] * 6],
}


def test_source_trees_are_binarised_dependency_phrases_in_level_order():
    left, right, level = source_tree_arrays(np.array(BATCH["src_heads"]), rule="head")
    # Head rule: "saw" takes "cats", then ".", then "She": (She ((saw cats) .));
    # phrase slot k is node 6 + k.
    assert left.tolist()[0] == [1, 6, 0, -1, -1, -1]
    assert right.tolist()[0] == [2, 3, 7, -1, -1, -1]
    assert level.tolist()[0] == [1, 2, 3, -1, -1, -1]
    for array in (left, right, level):  # one word: no phrase; no parse: nothing
        assert array[1:].tolist() == [[-1] * 6] * 2
    # The same as binarising the phrase structure and batching it.
    heads = [3, 3, 0, 5, 3, 3]
    tree = binarize(phrase_structure_from_dependencies(
        DependencyTree.from_heads(["w"] * 6, heads)), "right")
    expected = batch_binary_trees([tree], 8)
    arrays = source_tree_arrays(np.array([heads + [-1, -1]]), rule="right")
    for array, key in zip(arrays, ("tree_left", "tree_right", "tree_level")):
        assert array[0, :7].tolist() == expected[key][0].tolist() and array[0, 7] == -1


def test_bad_heads_are_named_by_row():
    with pytest.raises(ValueError, match=r"src_heads row 1: heads must come first"):
        source_tree_arrays(np.array([[0, -1], [-1, 0]]))
    with pytest.raises(ValueError, match=r"src_heads row 0: .*cycle"):
        source_tree_arrays(np.array([[2, 1, 0]]))


def test_weights_exist_after_construction_and_start_as_in_the_paper():
    model = make_model()
    weights = {weight.path: weight.numpy() for weight in model.weights}
    assert "softmax/kernel" in weights and "tree_lstm/cell/kernel" in weights
    d = 6
    for name in ("encoder_lstm_0/bias", "decoder_lstm/bias"):  # gates i, f, c, o
        np.testing.assert_array_equal(weights[name], [0] * d + [1] * d + [0] * (2 * d))
    for name in ("tree_lstm/cell/bias", "decoder_initializer/bias"):  # i, f_l, f_r, o, u
        np.testing.assert_array_equal(weights[name], [0] * d + [1] * (2 * d) + [0] * (2 * d))
    np.testing.assert_array_equal(weights["softmax/kernel"], 0.0)
    np.testing.assert_array_equal(weights["softmax/bias"], 0.0)
    others = [w for name, w in weights.items() if not name.startswith("softmax")
              and not name.endswith("bias")]
    assert all(np.abs(w).max() <= 0.1 for w in others)
    assert all(np.abs(w).max() > 0.05 for w in others)  # uniform in [-0.1, 0.1], not tiny


def test_evaluation_uses_the_full_softmax_and_training_blackout():
    model = make_model()
    batch = with_trees(model, BATCH)
    outputs = model(batch, training=False)
    assert outputs["logits"].shape == (3, 6, 20) and "softmax_inputs" not in outputs
    # Zero softmax weights: every word has probability 1 / V. The objective
    # sums each sentence's 4, 2 and 5 tokens and averages over the 3 sentences.
    losses = model.compute_losses(batch, outputs)
    assert float(losses["nmt"]) == pytest.approx(math.log(20), rel=1e-6)
    assert float(losses["total"]) == pytest.approx(11 / 3 * math.log(20), rel=1e-6)
    per_token = make_model(loss_normalization="token")
    assert float(per_token.compute_losses(batch, outputs)["total"]) == pytest.approx(math.log(20))
    np.testing.assert_array_equal(model.output_layer.unigram_counts.numpy(), 0.0)
    outputs = model(batch, training=True)
    losses = model.compute_losses(batch, outputs)
    assert np.isfinite(float(losses["total"])) and float(losses["total"]) != pytest.approx(
        math.log(20))
    counts = model.output_layer.unigram_counts.numpy()
    assert counts.sum() == 11 and counts[1] == 3  # the target tokens, <EOS> included
    full = make_model(softmax="full")
    outputs = full(with_trees(full, BATCH), training=True)
    assert "softmax_inputs" not in outputs
    assert float(full.compute_losses(batch, outputs)["nmt"]) == pytest.approx(math.log(20), rel=1e-6)


def randomised(model, seed=0):
    """The model with random weights everywhere (the softmax starts at zero)."""
    rng = np.random.default_rng(seed)
    for weight in model.trainable_weights:
        weight.assign(rng.uniform(-0.5, 0.5, weight.shape))
    return model


def incremental_logits(model, batch):
    encoded = model.encode(batch)
    memory = model.decoder_memory(encoded)
    targets = batch["targets"]
    cache = model.initial_decoder_cache(targets.shape[0], targets.shape[1])
    ids = tf.fill([targets.shape[0]], model.decode_start_id)
    steps = []
    for step in range(targets.shape[1]):
        logits, cache = model.decode_step(ids, tf.constant(step), cache, memory)
        steps.append(logits)
        ids = targets[:, step]
    return tf.stack(steps, axis=1).numpy()


def test_teacher_forcing_and_incremental_decoding_agree():
    model = randomised(make_model())
    batch = with_trees(model, BATCH)
    np.testing.assert_allclose(model(batch)["logits"].numpy(), incremental_logits(model, batch),
                               rtol=1e-5, atol=1e-5)


def test_padding_does_not_change_a_sentence():
    model = randomised(make_model(), seed=1)
    first = {key: [values[0]] for key, values in BATCH.items()}
    padded = {key: [values[0] + [-1 if key == "src_heads" else 0] * 4] for key, values in BATCH.items()}
    alone, longer = (model(with_trees(model, b))["logits"].numpy()[0] for b in (first, padded))
    np.testing.assert_allclose(alone, longer[:6], rtol=1e-5, atol=1e-5)


def test_the_decoder_starts_from_the_last_state_and_the_root_or_zero_without_a_parse():
    model = randomised(make_model(), seed=2)
    batch = with_trees(model, BATCH)
    encoded = model.encode(batch)
    # Attended: the tokens with <EOS>, then the phrases (3, 0 and 0 of them).
    np.testing.assert_array_equal(tf.reduce_sum(tf.cast(encoded["padding_mask"], tf.int32), 1), [8, 2, 3])
    inputs = batch["inputs"]
    h, c = _masked_lstm(model.encoder_cells[0], model.source_embedding(inputs), inputs != 0)
    # Sentence 2 has no parse: s_1 = g_tree(h_n, c_n, 0, 0), h_n at <EOS>.
    zeros = tf.zeros([1, 6])
    expected_h, expected_c = model.decoder_initializer(h[2:, 2], c[2:, 2], zeros, zeros)
    np.testing.assert_allclose(encoded["initial_h"][2:].numpy(), expected_h.numpy(), rtol=1e-5)
    np.testing.assert_allclose(encoded["initial_c"][2:].numpy(), expected_c.numpy(), rtol=1e-5)
    # Sentence 1 is one word: its root is the word itself.
    root_h, root_c = h[1:2, 0], c[1:2, 0]
    expected_h, _ = model.decoder_initializer(h[1:2, 1], c[1:2, 1], root_h, root_c)
    np.testing.assert_allclose(encoded["initial_h"][1:2].numpy(), expected_h.numpy(), rtol=1e-5)
    # Another parse of sentence 0 changes its phrases and s_1.
    other = dict(BATCH, src_heads=[[0, 1, 2, 3, -1, -1]] + BATCH["src_heads"][1:])
    changed = model.encode(with_trees(model, other))
    assert not np.allclose(changed["initial_h"][0], encoded["initial_h"][0])
    np.testing.assert_allclose(changed["initial_h"][1:], encoded["initial_h"][1:], rtol=1e-6)


def test_missing_tree_features_and_bad_hparams_are_explained():
    model = make_model()
    batch = {key: tf.constant(value) for key, value in BATCH.items()}
    with pytest.raises(KeyError, match="src_tree_left, src_tree_right, src_tree_level.*derived_features"):
        model(batch)
    with pytest.raises(HParamsError, match="softmax='sampled': expected one of blackout, full"):
        make_model(softmax="sampled")
    with pytest.raises(HParamsError, match="tree_binarization='middle'"):
        make_model(tree_binarization="middle")
    with pytest.raises(HParamsError, match="loss_normalization='batch'"):
        make_model(loss_normalization="batch")


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


def test_a_vocabulary_the_problem_lacks_is_named_with_the_ones_it_gives():
    with pytest.raises(KeyError, match=r"model Tree2Seq needs vocab_sizes\['targets'\]; "
                                       r"the problem gives \['inputs'\]"):
        Tree2Seq(tiny_hparams(), {"inputs": 30})
