"""The run's validation state: best checkpoint, early stopping (kept across resumes), curves."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.evaluation import training_plots
from syntax_t2t.training import checkpoints, validation
from syntax_t2t.training.trainer import Trainer


def _saver(calls):
    def save_best(directory, step):
        calls.append(step)
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "weights"), "w") as stream:
            stream.write(str(step))

    return save_best


def _validation(directory, calls, **options):
    return validation.Validation(str(directory), save_best=_saver(calls), **options)


def test_best_by_loss_and_early_stopping(tmp_path):
    calls = []
    checker = _validation(tmp_path, calls, metric="loss", patience=2)
    losses = {100: 3.0, 200: 2.5, 300: 2.6, 400: 2.5, 500: 2.7}
    stops = {}
    for step, loss in losses.items():
        _, stops[step] = checker.after_evaluation(step, {"loss/nmt": loss}, model=None)
        if stops[step]:
            break
    # 2.5 at step 400 does not beat 2.5: two evaluations without improvement.
    assert calls == [100, 200]
    assert stops == {100: False, 200: False, 300: False, 400: True}
    assert (tmp_path / "best" / "weights").read_text() == "200"
    state = json.loads((tmp_path / "validation.json").read_text())
    assert state["best"] == {"step": 200, "metric": "loss", "value": 2.5}
    assert state["stopped_early"] == 400
    assert [entry["step"] for entry in state["evaluations"]] == [100, 200, 300, 400]


def test_bleu_is_higher_better_and_patience_survives_a_resume(tmp_path):
    calls = []
    first = _validation(tmp_path, calls, metric="uas", patience=3)
    first.after_evaluation(100, {"uas": 0.5}, None)
    first.after_evaluation(200, {"uas": 0.7}, None)
    first.after_evaluation(300, {"uas": 0.6}, None)
    # The process ends; a new one reads the counter back.
    second = _validation(tmp_path, calls, metric="uas", patience=3)
    assert second.evaluations_without_improvement == 1
    _, stop = second.after_evaluation(400, {"uas": 0.65}, None)
    assert not stop
    _, stop = second.after_evaluation(500, {"uas": 0.69}, None)
    assert stop and second.stopped_early == 500
    assert calls == [100, 200]
    # A run that stopped early stays stopped under the same patience...
    assert _validation(tmp_path, calls, metric="uas", patience=3).stopped_early == 500
    assert _validation(tmp_path, calls, metric="uas", patience=2).stopped_early == 500


def test_a_patience_that_would_not_have_stopped_the_run_lets_it_train_on(tmp_path):
    calls = []
    first = _validation(tmp_path, calls, metric="bleu", patience=2,
                        dev_translation=lambda model: {})
    for step, bleu in ((100, 10.0), (200, 12.0), (300, 11.0), (400, 11.5)):
        _, stop = first.after_evaluation(step, {"bleu": bleu}, None)
    assert stop and first.stopped_early == 400
    # No patience, or more than the two evaluations it went without improving: trains on.
    assert _validation(tmp_path, calls, metric="bleu", patience=0,
                       dev_translation=lambda model: {}).stopped_early is None
    longer = _validation(tmp_path, calls, metric="bleu", patience=3,
                         dev_translation=lambda model: {})
    assert longer.stopped_early is None
    _, stop = longer.after_evaluation(500, {"bleu": 11.8}, None)
    assert stop and longer.stopped_early == 500
    state = json.loads((tmp_path / "validation.json").read_text())
    assert state["stopped_early"] == 500 and state["best"]["step"] == 200
    assert [entry["step"] for entry in state["evaluations"]] == [100, 200, 300, 400, 500]
    assert calls == [100, 200]


def test_an_evaluation_done_again_after_a_resume_replaces_the_old_one(tmp_path):
    calls = []
    checker = _validation(tmp_path, calls, metric="loss")
    checker.after_evaluation(100, {"loss/nmt": 3.0}, None)
    checker.after_evaluation(200, {"loss/nmt": 2.0}, None)
    # Killed after the evaluation of 200 but before its checkpoint: redone from 100.
    again = _validation(tmp_path, calls, metric="loss")
    again.after_evaluation(200, {"loss/nmt": 2.2}, None)
    state = json.loads((tmp_path / "validation.json").read_text())
    assert [entry["loss/nmt"] for entry in state["evaluations"]] == [3.0, 2.2]
    assert state["best"]["value"] == 2.2 and calls == [100, 200, 200]


def test_a_failed_save_names_no_new_best(tmp_path):
    calls = []
    checker = _validation(tmp_path, calls, metric="loss")
    checker.after_evaluation(100, {"loss/nmt": 3.0}, None)

    def broken(directory, step):
        raise OSError("disk full")

    checker.save_best = broken
    with pytest.raises(OSError):
        checker.after_evaluation(200, {"loss/nmt": 2.0}, None)
    state = json.loads((tmp_path / "validation.json").read_text())
    assert state["best"]["step"] == 100
    assert (tmp_path / "best" / "weights").read_text() == "100"


def test_best_weights_through_save_averaged_restore(tmp_path):
    """The real saver (bin/train's): `best/` is a decodable directory holding the evaluated weights."""
    from syntax_t2t.training import checkpoint_averaging
    from syntax_t2t.training.checkpoints import latest_checkpoint, restore_model

    registration.import_all()
    hparams = registry.hparams("transformer_tiny")
    hparams.override(dict(hidden_size=16, filter_size=32, num_heads=2, num_encoder_layers=1,
                          num_decoder_layers=1))
    run = tmp_path / "run"
    run.mkdir()
    (run / "hparams.json").write_text(hparams.to_json())
    # A best/ of an earlier version (no averaging marker) is the run's own: replaced.
    (run / "best").mkdir()
    for name in ("checkpoint", "hparams.json", "flags.txt"):
        (run / "best" / name).write_text("old")
    sizes = {"inputs": 20, "targets": 20}
    model = registry.model("transformer")(hparams, sizes)
    checker = validation.Validation(
        str(run), metric="loss",
        save_best=lambda directory, step: checkpoint_averaging.save_model_directory(
            model, str(run), directory, step))
    for step, loss in ((10, 2.0), (20, 1.0)):
        model.set_weights([np.full_like(w, step) for w in model.get_weights()])
        checker.after_evaluation(step, {"loss/nmt": loss}, model)
    other = registry.model("transformer")(hparams, sizes)
    restore_model(other, latest_checkpoint(str(run / "best")))
    assert all(np.all(w == 20) for w in other.get_weights())
    assert (run / "best" / "hparams.json").exists()


def test_bleu_needs_decoding_and_unknown_metrics_are_refused(tmp_path):
    with pytest.raises(ValueError, match="needs dev-set decoding"):
        validation.Validation(str(tmp_path), metric="bleu")
    with pytest.raises(ValueError, match="unknown best-checkpoint metric 'ter'"):
        validation.Validation(str(tmp_path), metric="ter")


def test_an_evaluation_step_without_evaluation_is_missing(tmp_path):
    checker = _validation(tmp_path, [], metric="loss")
    checker.after_evaluation(500, {"loss/nmt": 2.0}, None)
    assert not checker.missing_evaluation(500, 500)
    assert checker.missing_evaluation(1000, 500)
    assert not checker.missing_evaluation(1200, 500) and not checker.missing_evaluation(0, 500)


def test_learning_curve_is_drawn_by_the_plot_handed_in(tmp_path):
    checker = validation.Validation(str(tmp_path), metric="loss",
                                    plot=training_plots.plot_learning_curve)
    for step, loss in ((100, 3.0), (200, 2.0)):
        checker.after_evaluation(step, {"loss/nmt": loss, "uas": 0.5}, None)
    assert (tmp_path / validation.PLOT_FILE).stat().st_size > 1000


def test_the_plot_gets_the_history_and_a_failing_plot_does_not_stop_training(tmp_path):
    calls = []

    def plot(evaluations, path, best_step=None):
        calls.append(([entry["step"] for entry in evaluations], path, best_step))
        raise OSError("disk full")

    checker = validation.Validation(str(tmp_path), metric="loss", plot=plot)
    for step, loss in ((100, 3.0), (200, 4.0)):
        checker.after_evaluation(step, {"loss/nmt": loss}, None)
    plot_path = str(tmp_path / validation.PLOT_FILE)
    assert calls == [([100], plot_path, 100), ([100, 200], plot_path, 100)]
    assert not os.path.exists(plot_path)
    # Without a plot nothing is drawn.
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    validation.Validation(str(quiet), metric="loss").after_evaluation(100, {"loss/nmt": 1.0}, None)
    assert sorted(os.listdir(quiet)) == [validation.HISTORY_FILE]


class _StopAtSecond:
    """A validation that asks to stop at its second evaluation."""

    output_dir = "unused"
    stopped_early = None

    def __init__(self, missing=()):
        self.steps = []
        self.missing = missing

    def missing_evaluation(self, step, eval_every):
        return step in self.missing

    def after_evaluation(self, step, results, model):
        self.steps.append(step)
        return dict(results, seen=1.0), len(self.steps) == 2


def test_the_trainer_stops_when_validation_says_so_and_saves_that_step(tmp_path):
    registration.import_all()
    hparams = registry.hparams("transformer_tiny")
    hparams.override(dict(hidden_size=16, filter_size=32, num_heads=2, num_encoder_layers=1,
                          num_decoder_layers=1))
    rng = np.random.default_rng(0)
    batch = {"inputs": rng.integers(4, 20, (4, 6)).astype(np.int32),
             "targets": rng.integers(4, 20, (4, 5)).astype(np.int32)}
    dataset = tf.data.Dataset.from_tensors(batch)
    trainer = Trainer(lambda: registry.model("transformer")(
        hparams, {"inputs": 20, "targets": 20}), hparams, str(tmp_path),
        save_checkpoints_steps=100, log_step_count_steps=1)
    checker = _StopAtSecond()
    results = trainer.train(dataset, train_steps=50, eval_dataset=dataset, eval_every=3,
                            eval_steps=1, validation=checker)
    assert checker.steps == [3, 6] and results["seen"] == 1.0
    assert int(trainer.global_step.numpy()) == 6
    assert checkpoints.latest_checkpoint(str(tmp_path)).endswith("ckpt-6")
    # Resumed at step 6, whose evaluation the history lacks: evaluated first.
    resumed = Trainer(lambda: registry.model("transformer")(
        hparams, {"inputs": 20, "targets": 20}), hparams, str(tmp_path),
        save_checkpoints_steps=100, log_step_count_steps=1)
    again = _StopAtSecond(missing=(6,))
    resumed.train(dataset, train_steps=8, eval_dataset=dataset, eval_every=3, eval_steps=1,
                  validation=again)
    assert again.steps == [6, 8]
