"""A non-finite loss or gradient never reaches the weights: training stops, or skips the batch.

The stand-in translator is given a "poison" source word: a batch holding it
gets a NaN or infinite loss, or a finite loss with a NaN gradient, so the
bad step is known in advance.
"""

import glob
import importlib.util
import os
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from syntax_t2t.checkpointing.variables import relative_path
from syntax_t2t.checkpointing.weights import read_model_weights
from syntax_t2t.hparams import HParams
from syntax_t2t.training import checkpoints
from syntax_t2t.training.nonfinite import NonFiniteLossError
from syntax_t2t.training.trainer import Trainer

STAND_IN_FILE = Path(__file__).resolve().parent / "stand_in_usr_dir" / "stand_in.py"
VOCAB_SIZES = {"inputs": 12, "targets": 12, "deprel": 6, "upos": 6, "xpos": 6}
POISON = 11  # a source word id that only poisoned batches hold


def load_stand_in():
    spec = importlib.util.spec_from_file_location("nonfinite_test_stand_in", STAND_IN_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


stand_in = load_stand_in()


class PoisonedLoss(stand_in.TranslationLoss):
    """The stand-in translator's loss, gone bad on batches holding the POISON word.

    The model's `poison` is "nan" (NaN loss), "inf" (infinite loss) or
    "gradient" (a finite loss whose gradient is NaN: 0 * sqrt(0) has the
    derivative 0 * inf).
    """

    def __call__(self, features, outputs):
        losses = super().__call__(features, outputs)
        poisoned = ops.any(ops.equal(features["inputs"], POISON))
        if self.model.poison == "gradient":
            # sqrt(0 * sum(kernel) + 1 - poisoned) - (1 - poisoned) is 0; its
            # gradient is 0 on clean batches and 0 * inf = NaN on poisoned ones.
            clean = 1.0 - ops.cast(poisoned, "float32")
            bad = ops.sqrt(ops.sum(self.model.output_layer.kernel) * 0.0 + clean) - clean
        else:
            value = float("nan") if self.model.poison == "nan" else float("inf")
            bad = ops.where(poisoned, value, 0.0)
        total = losses["total"] + bad
        return {"nmt": total, "total": total}


class PoisonedTranslator(stand_in.StandInTranslator):
    """The stand-in translator trained against `PoisonedLoss`."""

    poison = "nan"
    criterion = PoisonedLoss


def tiny_hparams():
    return HParams(
        hidden_size=16, optimizer="adam", adam_beta1=0.9, adam_beta2=0.997, adam_epsilon=1e-9,
        learning_rate=0.2, learning_rate_warmup_steps=10, clip_grad_norm=0.0,
        layer_prepostprocess_dropout=0.0, max_length=16)


def batches(count, poisoned_index=None):
    """Distinct copy-task batches; the one at `poisoned_index` holds the POISON word."""
    rng = np.random.default_rng(5)
    result = []
    for index in range(count):
        words = rng.integers(4, POISON, size=(4, 5))
        if index == poisoned_index:
            words[0, 0] = POISON
        inputs = np.concatenate([words, np.ones((4, 1), int)], axis=1).astype(np.int32)
        result.append({"inputs": inputs, "targets": inputs})
    return result


def dataset_of(batch_list):
    return tf.data.Dataset.from_tensor_slices(
        {key: np.stack([batch[key] for batch in batch_list]) for key in batch_list[0]})


def make_trainer(output_dir, poison="nan", **kwargs):
    model_class = type(f"Poisoned_{poison}", (PoisonedTranslator,), {"poison": poison})
    hparams = tiny_hparams()
    keras.utils.set_random_seed(4)
    return Trainer(lambda: model_class(hparams, VOCAB_SIZES), hparams, str(output_dir),
                   save_checkpoints_steps=2, log_step_count_steps=5, **kwargs)


def saved_weights(path):
    return read_model_weights(path)


@pytest.mark.parametrize("poison", ["nan", "inf", "gradient"])
def test_a_non_finite_step_stops_training_naming_it_and_keeps_the_last_good_checkpoint(
        tmp_path, poison):
    # Batch 7 (step 7) is poisoned; steps are saved every 2 and read back
    # every 5, so the trainer only learns of it at step 8, before saving.
    trainer = make_trainer(tmp_path, poison)
    with pytest.raises(NonFiniteLossError) as raised:
        trainer.train(dataset_of(batches(10, poisoned_index=6)), train_steps=10)
    error = raised.value
    assert error.step == 7
    assert error.last_checkpoint == str(tmp_path / "ckpt-6")
    assert "not finite (NaN or infinite) at step 7" in str(error)
    assert f"the last checkpoint, {tmp_path / 'ckpt-6'}, holds the last good weights" in str(error)
    assert "--skip_nonfinite_batches" in str(error)
    assert checkpoints.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ckpt-6")
    assert not glob.glob(str(tmp_path / "ckpt-8*"))
    # The weights in memory never took the bad update (nor any after it):
    # they are still those of step 6, and finite.
    saved = saved_weights(str(tmp_path / "ckpt-6"))
    current = {relative_path(trainer.model, w.path): np.array(w) for w in trainer.model.weights}
    assert saved.keys() == current.keys()
    for name, value in saved.items():
        assert np.all(np.isfinite(value)), name
        np.testing.assert_array_equal(current[name], value)
    assert int(trainer.optimizer.iterations.numpy()) == 6


def test_skipping_leaves_out_exactly_the_bad_batch(tmp_path):
    # Skipping the poisoned batch trains exactly as if it were not in the
    # data: no update, no optimizer iteration, no dropout draw (rate 0).
    skipping = make_trainer(tmp_path / "skip", skip_nonfinite_batches=True)
    poisoned = batches(10, poisoned_index=6)
    skipping.train(dataset_of(poisoned), train_steps=10)
    assert skipping.nonfinite_batches == 1
    assert int(skipping.global_step.numpy()) == 10
    assert int(skipping.optimizer.iterations.numpy()) == 9

    clean = make_trainer(tmp_path / "clean")
    clean.train(dataset_of(poisoned[:6] + poisoned[7:]), train_steps=9)
    assert clean.nonfinite_batches == 0
    for got, expected in zip(skipping.model.weights, clean.model.weights):
        assert np.all(np.isfinite(np.array(got)))
        np.testing.assert_allclose(np.array(got), np.array(expected), rtol=1e-6, atol=1e-7)


def test_progress_means_leave_skipped_batches_out(tmp_path, caplog):
    trainer = make_trainer(tmp_path, skip_nonfinite_batches=True)
    with caplog.at_level("INFO"):
        trainer.train(dataset_of(batches(5, poisoned_index=2)), train_steps=5)
    progress = [record.getMessage() for record in caplog.records
                if record.getMessage().startswith("step 5/5")]
    assert len(progress) == 1 and "nan" not in progress[0] and "loss " in progress[0]
    assert any("skipped 1 batch(es) whose loss or gradient was not finite (1 so far)"
               in record.getMessage() for record in caplog.records)


def test_bin_train_reports_an_exploding_learning_rate_as_one_line(tmp_path, capsys):
    # The program boundary: a learning rate of 1e30 makes the loss infinite
    # within a few steps; bin/train names the step and exits with status 1,
    # and the checkpoints it kept hold finite weights only.
    from bad_input_harness import TINY, generated_data, run_program  # noqa: PLC0415

    data_dir = generated_data(tmp_path / "data")
    run_dir = tmp_path / "run"
    status, _, err = run_program(
        "train", capsys, problem="synthetic_syntax_reorder", model="transformer",
        hparams_set="transformer_tiny", hparams=TINY + ",learning_rate=1e30",
        data_dir=data_dir, output_dir=str(run_dir), train_steps=30, save_checkpoints_steps=1,
        log_step_count_steps=1, eval_steps=1, random_seed=1)
    assert status == 1
    assert err.startswith("error: the loss or its gradient is not finite (NaN or infinite) at step ")
    step = int(err.split(" at step ")[1].split(";")[0])
    assert 1 <= step <= 30
    kept = sorted(glob.glob(str(run_dir / "ckpt-*")))
    assert kept and all(int(os.path.basename(p)[5:]) < step for p in kept)
    for prefix in kept:
        for name, value in saved_weights(prefix).items():
            assert np.all(np.isfinite(value)), (prefix, name)
