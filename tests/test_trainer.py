"""The trainer on tiny stand-in models: learning, resuming, precision, XLA, metrics, two replicas."""

import glob
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from syntax_t2t import criteria
from syntax_t2t.checkpointing.variables import relative_path
from syntax_t2t.checkpointing.weights import read_model_weights
from syntax_t2t.hparams import HParams
from syntax_t2t.training import checkpoints
from syntax_t2t.training.trainer import ModelContractError, Trainer

REPO = Path(__file__).resolve().parents[1]
STAND_IN_FILE = Path(__file__).resolve().parent / "stand_in_usr_dir" / "stand_in.py"


def load_stand_in():
    # Loaded from its file without registering anything: the registry stays
    # as the library defines it.
    spec = importlib.util.spec_from_file_location("trainer_test_stand_in", STAND_IN_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


stand_in = load_stand_in()
VOCAB_SIZES = {"inputs": 12, "targets": 12, "deprel": 6, "upos": 6, "xpos": 6}


def tiny_hparams(**overrides):
    hparams = HParams(
        hidden_size=16, optimizer="adam", adam_beta1=0.9, adam_beta2=0.997, adam_epsilon=1e-9,
        learning_rate=0.2, learning_rate_warmup_steps=10, clip_grad_norm=0.0,
        layer_prepostprocess_dropout=0.0, parse_loss_weight=1.0, max_length=16)
    return hparams.override(overrides)


def example_batches(count=4, batch=8, length=6, seed=0):
    """Batches of a copy task with a chain tree: word i's head is word i+1, the last is the root."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        words = rng.integers(4, 12, size=(batch, length - 1))
        inputs = np.concatenate([words, np.ones((batch, 1), int)], axis=1)
        chain = np.tile(np.arange(2, length + 1), (batch, 1))
        heads = np.concatenate([chain, -np.ones((batch, 1), int)], axis=1)
        heads[:, length - 2] = 0
        batches.append({"inputs": inputs.astype(np.int32), "targets": inputs.astype(np.int32),
                        "src_heads": heads.astype(np.int32)})
    return batches


def dataset_of(batches):
    keys = batches[0].keys()
    stacked = {key: np.stack([batch[key] for batch in batches]) for key in keys}
    return tf.data.Dataset.from_tensor_slices(stacked)


def make_trainer(output_dir, model_class=None, hparams=None, **kwargs):
    hparams = hparams or tiny_hparams()
    model_class = model_class or stand_in.StandInTranslator
    kwargs.setdefault("log_step_count_steps", 5)
    return Trainer(lambda: model_class(hparams, VOCAB_SIZES), hparams, str(output_dir), **kwargs)


def weights_of(trainer):
    return [np.array(variable) for variable in trainer.model.weights]


def test_loss_falls_and_progress_is_logged_to_tensorboard(tmp_path):
    keras.utils.set_random_seed(1)
    batches = example_batches()
    trainer = make_trainer(tmp_path, save_checkpoints_steps=20)
    before = trainer.evaluate(dataset_of(batches), steps=0)
    results = trainer.train(dataset_of(batches), train_steps=40, eval_dataset=dataset_of(batches),
                            eval_every=20)
    assert results["loss/total"] < 0.5 * before["loss/total"]
    assert results["token_accuracy"] > before["token_accuracy"]
    assert int(trainer.global_step.numpy()) == 40
    assert sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "ckpt-*"))) == [
        "ckpt-20", "ckpt-40"]
    tags = {}
    for run in ("train", "eval"):
        for path in glob.glob(str(tmp_path / run / "events.*")):
            for event in tf.compat.v1.train.summary_iterator(path):
                for value in event.summary.value:
                    tags.setdefault(run, set()).add((value.tag, event.step))
    assert {("loss/total", 5), ("loss/nmt", 40), ("learning_rate", 40),
            ("tokens_per_second", 40)} <= tags["train"]
    assert {("loss/total", 20), ("token_accuracy", 40)} <= tags["eval"]


def test_resumed_training_equals_uninterrupted_training(tmp_path):
    # Every batch is the same, so the restarted input pipeline feeds the same
    # data: the results agree only if weights, Adam's moments and the step
    # counters (learning rate) are all restored.
    batch = example_batches(count=1)
    keras.utils.set_random_seed(3)
    straight = make_trainer(tmp_path / "straight", save_checkpoints_steps=100)
    straight.train(dataset_of(batch), train_steps=8)

    keras.utils.set_random_seed(3)
    first = make_trainer(tmp_path / "resumed", save_checkpoints_steps=2, keep_checkpoint_max=2)
    first.train(dataset_of(batch), train_steps=5)
    initial = [np.array(w) for w in first.model.weights]
    # Another model object, initialised differently, takes the saved state.
    keras.utils.set_random_seed(99)
    second = make_trainer(tmp_path / "resumed", keep_checkpoint_max=2)
    second.train(dataset_of(batch), train_steps=8)

    assert int(second.global_step.numpy()) == 8
    assert int(second.optimizer.iterations.numpy()) == 8
    for expected, got in zip(weights_of(straight), weights_of(second)):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert not all(np.allclose(a, b) for a, b in zip(initial, weights_of(second)))
    for expected, got in zip(straight.optimizer.variables, second.optimizer.variables):
        np.testing.assert_allclose(np.array(got), np.array(expected), rtol=1e-5, atol=1e-7)
    # Only the newest two checkpoints are kept.
    kept = glob.glob(str(tmp_path / "resumed" / "ckpt-*"))
    assert sorted(os.path.basename(p) for p in kept) == ["ckpt-5", "ckpt-8"]


def test_checkpoints_hold_every_weight_even_of_layers_in_lists(tmp_path):
    # Keras 3 leaves layers held in Python lists out of TensorFlow's
    # dependency graph; the checkpoint must still hold their weights.
    trainer = make_trainer(tmp_path)
    trainer.train(dataset_of(example_batches(count=1)), train_steps=1)
    saved = set(read_model_weights(str(tmp_path / "ckpt-1")))
    expected = {relative_path(trainer.model, weight.path) for weight in trainer.model.weights}
    assert any("hidden_1" in name for name in expected)
    assert expected <= saved


def test_nothing_is_trained_past_train_steps(tmp_path):
    batch = example_batches(count=1)
    first = make_trainer(tmp_path)
    first.train(dataset_of(batch), train_steps=3)
    again = make_trainer(tmp_path)
    assert again.train(dataset_of(batch), train_steps=2) == {}
    assert int(again.global_step.numpy()) == 3
    for expected, got in zip(weights_of(first), weights_of(again)):
        np.testing.assert_array_equal(got, expected)


def test_a_checkpoint_of_another_model_is_refused(tmp_path):
    batch = example_batches(count=1)
    make_trainer(tmp_path).train(dataset_of(batch), train_steps=1)
    parser = make_trainer(tmp_path, model_class=stand_in.StandInParser)
    with pytest.raises(checkpoints.CheckpointMismatchError,
                       match="ckpt-1: the checkpoint does not match"):
        parser.train(dataset_of(batch), train_steps=2)
    wider = make_trainer(tmp_path, hparams=tiny_hparams(hidden_size=8))
    with pytest.raises(checkpoints.CheckpointMismatchError, match="ckpt-1"):
        wider.train(dataset_of(batch), train_steps=2)


@pytest.mark.parametrize("policy_name, jit_compile", [
    ("mixed_float16", False), ("mixed_bfloat16", False), ("float32", True), ("mixed_bfloat16", True)])
def test_train_step_under_mixed_precision_and_xla(tmp_path, policy_name, jit_compile):
    batches = example_batches(count=2)
    trainer = make_trainer(tmp_path, model_class=stand_in.StandInParser,
                           policy_name=policy_name, jit_compile=jit_compile)
    assert trainer.model.source_embedding.compute_dtype == policy_name.replace("mixed_", "")
    trainer.build({key: tf.constant(value) for key, value in batches[0].items()})
    before = weights_of(trainer)
    results = trainer.train(dataset_of(batches), train_steps=6, eval_dataset=dataset_of(batches))
    assert all(np.isfinite(value) for value in results.values())
    assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer) == (
        policy_name == "mixed_float16")
    # Variables stay float32 under mixed precision, and training moved them.
    assert all(v.dtype == "float32" for v in trainer.model.trainable_variables)
    assert int(trainer.optimizer.iterations.numpy()) == 6
    assert not any(np.allclose(a, b) for a, b in zip(before, weights_of(trainer)))


def test_evaluation_matches_a_naive_computation(tmp_path):
    keras.utils.set_random_seed(5)
    batches = example_batches(count=3)
    batches[2]["targets"][:, 3:] = 0  # padding must not count
    trainer = make_trainer(tmp_path, model_class=stand_in.StandInParser)
    trainer.train(dataset_of(batches), train_steps=15)
    results = trainer.evaluate(dataset_of(batches), steps=2)

    correct_tokens = tokens = correct_heads = words = 0
    losses = []
    for batch in batches[:2]:
        features = {key: tf.constant(value) for key, value in batch.items()}
        outputs = trainer.model(features, training=False)
        losses.append(float(criteria.for_model(trainer.model)(features, outputs)["parse"]))
        predicted = np.argmax(outputs["logits"], -1)
        real = batch["targets"] != 0
        correct_tokens += np.sum((predicted == batch["targets"]) & real)
        tokens += np.sum(real)
        heads = np.argmax(outputs["parse_logits"], -1)[:, 1:]
        is_word = batch["src_heads"] >= 0
        correct_heads += np.sum((heads[:, :batch["src_heads"].shape[1]] == batch["src_heads"]) & is_word)
        words += np.sum(is_word)
    assert results["token_accuracy"] == pytest.approx(correct_tokens / tokens)
    assert results["uas"] == pytest.approx(correct_heads / words)
    assert results["loss/parse"] == pytest.approx(np.mean(losses), rel=1e-5)
    assert set(results) == {"loss/nmt", "loss/parse", "loss/total", "token_accuracy", "uas"}


def test_an_empty_training_dataset_is_refused(tmp_path):
    trainer = make_trainer(tmp_path)
    with pytest.raises(ValueError, match="the training dataset yields no batch"):
        trainer.train(dataset_of(example_batches(count=1)).take(0), train_steps=3)


def test_a_dataset_without_the_model_features_is_refused(tmp_path):
    batches = [{key: value for key, value in batch.items() if key != "src_heads"}
               for batch in example_batches(count=1)]
    trainer = make_trainer(tmp_path, model_class=stand_in.StandInParser)
    with pytest.raises(ModelContractError, match="needs batch features src_heads"):
        trainer.train(dataset_of(batches), train_steps=1)


MIRRORED_SCRIPT = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0],
        [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
    import keras, numpy as np
    sys.path.insert(0, sys.argv[1])
    import test_trainer as t
    from syntax_t2t.training import distribution

    strategy = distribution.make_strategy("mirrored")
    # A larger epsilon keeps Adam's update smooth in gradients that are
    # nearly zero, where summation order alone would flip their sign.
    hparams = t.tiny_hparams(clip_grad_norm=0.05, adam_epsilon=1e-4)
    batches = t.example_batches(count=3)
    report = {"replicas": strategy.num_replicas_in_sync, "max_difference": {}, "results": {}}
    for jit_compile in (False, True):
        weights = {}
        for name, chosen in (("single", None), ("mirrored", strategy)):
            keras.utils.set_random_seed(7)
            trainer = t.make_trainer(f"{sys.argv[2]}/{name}-{jit_compile}", hparams=hparams,
                                     strategy=chosen, jit_compile=jit_compile)
            results = trainer.train(t.dataset_of(batches), train_steps=4,
                                    eval_dataset=t.dataset_of(batches))
            weights[name] = [np.array(w) for w in trainer.model.weights]
        report["max_difference"][str(jit_compile)] = max(
            float(np.max(np.abs(a - b))) for a, b in zip(weights["single"], weights["mirrored"]))
        report["results"][str(jit_compile)] = results
    report["variable_type"] = type(trainer.model.weights[0].value).__name__
    scaled = t.make_trainer(f"{sys.argv[2]}/float16", hparams=hparams, strategy=strategy,
                            policy_name="mixed_float16", model_class=t.stand_in.StandInParser)
    report["results"]["float16"] = scaled.train(t.dataset_of(batches), train_steps=3,
                                                eval_dataset=t.dataset_of(batches))
    print(json.dumps(report))
""")


@pytest.mark.slow
def test_mirrored_strategy_on_two_cpu_devices_equals_one_device(tmp_path):
    # Logical devices must be configured before TensorFlow initialises them:
    # a fresh process. Both replicas see equally long halves of each batch,
    # so the mean of their losses is the whole batch's, and with clipping of
    # the summed gradient the updates equal the single-device ones, with and
    # without XLA. Float16 loss scaling runs under the strategy too.
    completed = subprocess.run(
        [sys.executable, "-c", MIRRORED_SCRIPT, str(Path(__file__).resolve().parent), str(tmp_path)],
        capture_output=True, text=True, cwd=REPO, timeout=300,
        # Hidden GPUs: the strategy must mirror over the two CPU devices.
        env=dict(os.environ, PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES=""))
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    assert report["replicas"] == 2
    assert report["variable_type"] == "MirroredVariable"
    assert report["max_difference"] == {"False": pytest.approx(0, abs=1e-5),
                                        "True": pytest.approx(0, abs=1e-5)}
    assert set(report["results"]["True"]) == {"loss/nmt", "loss/total", "token_accuracy"}
    assert set(report["results"]["float16"]) == {
        "loss/nmt", "loss/parse", "loss/total", "token_accuracy", "uas"}
    for results in report["results"].values():
        assert all(np.isfinite(value) for value in results.values())
