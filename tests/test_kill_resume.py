"""Interrupted and resumed training loses nothing.

* `bin/train --deterministic` is killed with SIGKILL at random moments
  (while starting, training or saving) and run again each time: it reaches
  the requested step, no kill costs more than the steps since the last
  checkpoint, and the final checkpoint equals, tensor for tensor and bit for
  bit, that of a run that was never interrupted (on this CPU).
* In process: what a killed save leaves behind is cleared, and a resumed run
  continues the input stream and the dropout draws where they were.
"""

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from syntax_t2t import registry
from syntax_t2t.checkpointing import directory_format
from syntax_t2t.cli import registration
from syntax_t2t.hparams import HParams
from syntax_t2t.training import checkpoints
from syntax_t2t.training.trainer import Trainer

REPO = Path(__file__).resolve().parents[1]
PROBLEM = "synthetic_syntax_reorder"
TINY = ("hidden_size=16,filter_size=32,num_heads=2,num_encoder_layers=1,num_decoder_layers=1,"
        "batch_size=96,max_length=12,learning_rate_warmup_steps=10")
TRAIN_STEPS = 40
SAVE_EVERY = 2
KILLS = 5
# The checkpoint parts compared between equal runs; the input iterator's
# position (tf_input_position/, a serialized variant) is compared through the
# batches it goes on to yield, i.e. the weights.
COMPARED_PARTS = ("model_weights", "optimizer", "random_state")
# What a killed save may leave: the directory format's staging and set-aside
# directories.
PARTIAL_SAVE = re.compile(r"\.ckpt-\d+\.(tmp|old)-.*")


def train_command(data_dir, output_dir):
    return [sys.executable, str(REPO / "bin" / "train"), f"--problem={PROBLEM}",
            "--model=transformer", "--hparams_set=transformer_tiny", f"--hparams={TINY}",
            f"--data_dir={data_dir}", f"--output_dir={output_dir}", f"--train_steps={TRAIN_STEPS}",
            f"--save_checkpoints_steps={SAVE_EVERY}", "--keep_checkpoint_max=3",
            "--log_step_count_steps=1", "--eval_steps=1", "--eval_every=0", "--random_seed=1",
            "--deterministic"]


def start(data_dir, output_dir, log_path):
    log = open(log_path, "w", encoding="utf-8")
    process = subprocess.Popen(train_command(data_dir, output_dir), stdout=log,
                               stderr=subprocess.STDOUT, cwd=REPO)
    log.close()
    return process


def logged_steps(log_path):
    """The steps whose progress line the run printed."""
    text = Path(log_path).read_text(encoding="utf-8", errors="replace")
    return [int(step) for step in re.findall(rf"step (\d+)/{TRAIN_STEPS} ", text)]


def resumed_from(log_path):
    match = re.search(r"training from step (\d+) to", Path(log_path).read_text(encoding="utf-8"))
    return int(match.group(1)) if match else None


def latest_step(output_dir):
    latest = checkpoints.latest_checkpoint(str(output_dir))
    return int(latest.rsplit("-", 1)[1]) if latest else 0


def checkpoint_tensors(path):
    stored = directory_format.open_checkpoint(path)
    tensors = {"step": np.array(stored.step)}
    for part in COMPARED_PARTS:
        tensors.update({f"{part}/{name}": value for name, value in stored.arrays(part).items()})
    return tensors


def run_to_completion(data_dir, output_dir, log_path):
    process = start(data_dir, output_dir, log_path)
    assert process.wait(timeout=600) == 0, Path(log_path).read_text()[-3000:]


@pytest.mark.slow
def test_killed_training_resumes_to_the_weights_of_an_uninterrupted_run(tmp_path):
    registration.import_all()
    data_dir = str(tmp_path / "data")
    registry.problems.get(PROBLEM)(train_size=300, dev_size=10, test_size=2, max_length=8) \
        .generate_data(data_dir, str(tmp_path / "raw"))

    reference = tmp_path / "reference"
    run_to_completion(data_dir, reference, tmp_path / "reference.log")

    rng = random.Random(20181)
    interrupted = tmp_path / "interrupted"
    report = {"kills": [], "resumed_weights_equal": None}
    for kill in range(KILLS):
        log_path = tmp_path / f"killed-{kill}.log"
        process = start(data_dir, interrupted, log_path)
        before = latest_step(interrupted)
        if kill == 0:
            # While starting: reading data, building, restoring, tracing.
            time.sleep(rng.uniform(1.0, 6.0))
        else:
            # While training: wait for a random step, then a moment more, so
            # that kills land in steps and in saves alike.
            # Spread over the steps left, so that every kill has room.
            span = max(1, (TRAIN_STEPS - 2 - before) // (KILLS - kill))
            target = min(before + rng.randint(1, span), TRAIN_STEPS - 1)
            deadline = time.monotonic() + 300
            while process.poll() is None and max(logged_steps(log_path), default=0) < target:
                assert time.monotonic() < deadline, "the run did not reach its kill step"
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.5))
        if process.poll() is not None:
            break  # finished before the kill came
        process.send_signal(signal.SIGKILL)
        process.wait()
        reached = max(logged_steps(log_path), default=before)
        kept = latest_step(interrupted)
        names = os.listdir(interrupted) if interrupted.exists() else []
        leftovers = sorted(name for name in names if PARTIAL_SAVE.fullmatch(name))
        report["kills"].append({"reached": reached, "checkpoint": kept, "lost": reached - kept,
                                "partial_save_left": leftovers})
        # The last complete checkpoint is always there and loadable.
        assert kept >= before
        assert reached - kept <= SAVE_EVERY
        if kept:
            checkpoint_tensors(str(interrupted / f"ckpt-{kept}"))

    final_log = tmp_path / "final.log"
    kept = latest_step(interrupted)
    run_to_completion(data_dir, interrupted, final_log)
    assert resumed_from(final_log) == kept
    assert latest_step(interrupted) == TRAIN_STEPS
    assert not [name for name in os.listdir(interrupted) if PARTIAL_SAVE.fullmatch(name)]

    expected = checkpoint_tensors(str(reference / f"ckpt-{TRAIN_STEPS}"))
    got = checkpoint_tensors(str(interrupted / f"ckpt-{TRAIN_STEPS}"))
    assert expected.keys() == got.keys()
    assert any(name.startswith("optimizer/") for name in expected)
    assert any(name.startswith("random_state/") for name in expected)
    differing = [name for name in expected if not np.array_equal(expected[name], got[name])]
    report["resumed_weights_equal"] = not differing
    print("kill/resume report: " + json.dumps(report))
    assert len(report["kills"]) >= 3
    assert differing == []


# In process -----------------------------------------------------------------------------

STAND_IN_FILE = Path(__file__).resolve().parent / "stand_in_usr_dir" / "stand_in.py"
VOCAB_SIZES = {"inputs": 12, "targets": 12, "deprel": 6, "upos": 6, "xpos": 6}


def stand_in_translator():
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.spec_from_file_location("kill_resume_stand_in", STAND_IN_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.StandInTranslator


def tiny_trainer(output_dir, **kwargs):
    hparams = HParams(
        hidden_size=16, optimizer="adam", adam_beta1=0.9, adam_beta2=0.997, adam_epsilon=1e-9,
        learning_rate=0.2, learning_rate_warmup_steps=10, clip_grad_norm=0.0,
        layer_prepostprocess_dropout=0.3, max_length=16)
    model_class = stand_in_translator()
    return Trainer(lambda: model_class(hparams, VOCAB_SIZES), hparams, str(output_dir),
                   log_step_count_steps=50, **kwargs)


def shuffled_batches(seed):
    """A seeded, shuffled, repeating stream of distinct batches (as the real pipeline is)."""
    words = np.random.default_rng(0).integers(4, 12, size=(40, 6)).astype(np.int32)
    inputs = np.concatenate([words, np.ones((40, 1), np.int32)], axis=1)
    examples = tf.data.Dataset.from_tensor_slices({"inputs": inputs, "targets": inputs})
    return examples.shuffle(40, seed=seed).batch(4, drop_remainder=True)


def test_resumed_training_continues_the_input_and_dropout_where_they_were(tmp_path):
    # Distinct batches in a shuffled stream and dropout at 0.3: a resumed
    # run matches an uninterrupted one only if the input position and the
    # dropout generators come back with the weights and the optimizer.
    keras.utils.set_random_seed(2)
    straight = tiny_trainer(tmp_path / "straight", save_checkpoints_steps=100)
    straight.train(shuffled_batches(7), train_steps=17)

    keras.utils.set_random_seed(2)
    first = tiny_trainer(tmp_path / "resumed", save_checkpoints_steps=4)
    first.train(shuffled_batches(7), train_steps=13)  # saved at 12 and 13, mid-epoch
    assert first.checkpoint.saves_input_position
    keras.utils.set_random_seed(99)  # the resumed process is seeded differently
    second = tiny_trainer(tmp_path / "resumed", save_checkpoints_steps=4)
    second.train(shuffled_batches(7), train_steps=17)
    assert second.checkpoint.restored_parts == {"model_weights", "optimizer", "step",
                                                "random_state", "data"}
    for expected, got in zip(straight.model.variables, second.model.variables):
        np.testing.assert_array_equal(np.array(got), np.array(expected))


def test_a_position_of_another_input_pipeline_restarts_the_input(tmp_path, caplog):
    keras.utils.set_random_seed(2)
    tiny_trainer(tmp_path, save_checkpoints_steps=4).train(shuffled_batches(7), train_steps=4)
    other_input = shuffled_batches(7).map(lambda batch: batch).prefetch(2)
    resumed = tiny_trainer(tmp_path, save_checkpoints_steps=4)
    with caplog.at_level("WARNING"):
        resumed.train(other_input, train_steps=6)
    assert int(resumed.global_step.numpy()) == 6
    assert "data" not in resumed.checkpoint.restored_parts
    assert any("the saved input position does not fit this input pipeline" in record.getMessage()
               for record in caplog.records)


def test_a_python_generator_input_trains_without_a_saved_position(tmp_path, caplog):
    def generate():
        for batch in shuffled_batches(1).repeat().take(12):
            yield {key: value.numpy() for key, value in batch.items()}

    spec = {key: tf.TensorSpec([4, 7], tf.int32) for key in ("inputs", "targets")}
    with caplog.at_level("WARNING"):
        trainer = tiny_trainer(tmp_path, save_checkpoints_steps=2)
        trainer.train(tf.data.Dataset.from_generator(generate, output_signature=spec), train_steps=3)
    assert not trainer.checkpoint.saves_input_position
    assert any("GeneratorDataset does not support checkpointing" in record.getMessage()
               for record in caplog.records)
    assert checkpoints.latest_checkpoint(str(tmp_path)).endswith("ckpt-3")


def test_what_a_killed_save_leaves_is_removed_and_the_last_complete_one_restores(tmp_path):
    keras.utils.set_random_seed(2)
    trainer = tiny_trainer(tmp_path, save_checkpoints_steps=2)
    trainer.train(shuffled_batches(7), train_steps=2)
    # As a kill during the save of step 4 leaves it: the staging directory,
    # its manifest not yet written.
    (tmp_path / ".ckpt-4.tmp-0a1b2c").mkdir()
    (tmp_path / ".ckpt-4.tmp-0a1b2c" / "arrays.npz").write_bytes(b"\0" * 64)
    # As a kill during a save by TensorFlow's format (runs before the
    # directory format) leaves them: the tensors' temporary directory,
    # merged files of step 5 not yet named by `checkpoint`, and a temporary
    # copy of `checkpoint` itself, the one that names ckpt-2.
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-2"\n'
                                         'all_model_checkpoint_paths: "ckpt-2"\n')
    (tmp_path / "ckpt-5_temp").mkdir()
    (tmp_path / "ckpt-5_temp" / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"\0" * 64)
    (tmp_path / "ckpt-5.index").write_bytes(b"half")
    (tmp_path / "checkpoint.tmp0123abcd").write_text('model_checkpoint_path: "ckpt-5"\n')
    kept = sorted(os.listdir(tmp_path))

    resumed = tiny_trainer(tmp_path, save_checkpoints_steps=2)
    resumed.train(shuffled_batches(7), train_steps=3)
    assert int(resumed.global_step.numpy()) == 3
    names = set(os.listdir(tmp_path))
    assert {".ckpt-4.tmp-0a1b2c", "ckpt-5_temp", "ckpt-5.index",
            "checkpoint.tmp0123abcd"}.isdisjoint(names)
    assert {"ckpt-2", "ckpt-3"} <= names
    assert "ckpt-2" in kept
