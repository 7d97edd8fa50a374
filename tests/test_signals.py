"""SIGINT and SIGTERM stop training cleanly: the step reached is saved and the run resumes there.

In process, the signal is sent by the input pipeline when it reads a given
batch, so it arrives while training runs; `bin/train` itself is signalled
from outside (a slow test: two runs of the program).
"""

import gc
import importlib.util
import os
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
from syntax_t2t.cli import registration
from syntax_t2t.hparams import HParams
from syntax_t2t.training import checkpoints
from syntax_t2t.training.stop_signals import StopSignals, TrainingInterrupted
from syntax_t2t.training.trainer import Trainer

REPO = Path(__file__).resolve().parents[1]
STAND_IN_FILE = Path(__file__).resolve().parent / "stand_in_usr_dir" / "stand_in.py"
VOCAB_SIZES = {"inputs": 12, "targets": 12, "deprel": 6, "upos": 6, "xpos": 6}
FOREVER = 10**9


def signalling_translator(signals_at):
    """The stand-in translator, sending `signals_at[k]` to this process during training step k.

    The signal is sent from inside the compiled step (a `tf.py_function`),
    so it arrives while the trainer is busy and is seen once the step ends.
    """
    spec = importlib.util.spec_from_file_location("signals_test_stand_in", STAND_IN_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    class SignallingTranslator(module.StandInTranslator):
        steps = 0

        def call(self, features, training=False):
            outputs = super().call(features, training)
            if training:
                tick = tf.py_function(self.tick, [], tf.float32)
                tick.set_shape(())
                outputs["logits"] = outputs["logits"] + 0.0 * tick
            return outputs

        def tick(self):
            type(self).steps += 1
            if type(self).steps in signals_at:
                os.kill(os.getpid(), signals_at[type(self).steps])
            return np.float32(0.0)

    return SignallingTranslator


def make_trainer(output_dir, signals_at=None):
    hparams = HParams(
        hidden_size=8, optimizer="adam", adam_beta1=0.9, adam_beta2=0.997, adam_epsilon=1e-9,
        learning_rate=0.2, learning_rate_warmup_steps=10, clip_grad_norm=0.0,
        layer_prepostprocess_dropout=0.1, max_length=16)
    model_class = signalling_translator(signals_at or {})
    # Saves are far apart: only the signal makes a checkpoint mid-run.
    return Trainer(lambda: model_class(hparams, VOCAB_SIZES), hparams, str(output_dir),
                   save_checkpoints_steps=100_000, log_step_count_steps=1_000)


def batches():
    words = np.random.default_rng(1).integers(4, 12, size=(8, 4, 5)).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices({"inputs": words, "targets": words}).shuffle(8, seed=3)


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_saves_the_step_reached_and_stops(tmp_path, number):
    handler_before = signal.getsignal(number)
    trainer = make_trainer(tmp_path, {13: number})
    with pytest.raises(TrainingInterrupted) as raised:
        trainer.train(batches(), train_steps=FOREVER)
    stopped = raised.value
    # Step 13 finishes, then the trainer saves and stops.
    assert stopped.step == 13 == int(trainer.global_step.numpy())
    assert stopped.checkpoint == str(tmp_path / "ckpt-13")
    assert checkpoints.latest_checkpoint(str(tmp_path)) == stopped.checkpoint
    assert stopped.exit_status == 128 + number
    assert str(stopped) == (f"training stopped by {signal.Signals(number).name} at step 13 (the "
                            f"checkpoint {tmp_path / 'ckpt-13'} holds it); run the same command "
                            f"again to resume")
    assert signal.getsignal(number) is handler_before

    # Nothing was lost: the next run starts at that step, input position included.
    resumed = make_trainer(tmp_path)
    resumed.train(batches(), train_steps=15)
    assert resumed.checkpoint.restored_parts >= {"model_weights", "optimizer", "data"}
    assert int(resumed.optimizer.iterations.numpy()) == 15


def test_a_signal_right_after_a_save_saves_nothing_more(tmp_path):
    trainer = make_trainer(tmp_path, {4: signal.SIGTERM})
    trainer.save_checkpoints_steps = 4
    with pytest.raises(TrainingInterrupted) as raised:
        trainer.train(batches(), train_steps=FOREVER)
    assert (raised.value.step, raised.value.checkpoint) == (4, str(tmp_path / "ckpt-4"))
    assert sorted(name for name in os.listdir(tmp_path) if name.startswith("ckpt-")) == [
        "ckpt-4"]


def test_the_first_signal_is_recorded_and_the_second_acts_as_usual():
    # "As usual" is whatever handler was there before; Python's default one
    # here, since a suite started in the background by a shell inherits
    # SIGINT ignored (SIG_IGN), and then nothing would be raised.
    outer = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    handlers_before = {number: signal.getsignal(number) for number in outer}
    # Python runs a signal's handler at the next bytecode of the main thread,
    # which may be inside a gc callback (hypothesis installs one); there a
    # KeyboardInterrupt is unraisable and lost, so no collection may run here.
    gc.disable()
    try:
        with pytest.raises(KeyboardInterrupt):
            with StopSignals() as stop:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler runs between bytecodes
                assert stop.received == signal.SIGINT
                # A user who will not wait for the save: the second one interrupts.
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
        assert {number: signal.getsignal(number) for number in outer} == handlers_before
    finally:
        gc.enable()
        for number, handler in outer.items():
            signal.signal(number, handler)


def wait_for(path, pattern, process, timeout=300, accept=lambda match: True):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        for match in re.finditer(pattern, text):
            if accept(match):
                return match
        assert process.poll() is None, Path(path).read_text()[-3000:]
        time.sleep(0.05)
    raise AssertionError(f"{pattern!r} not logged in {timeout} s")


@pytest.mark.slow
def test_bin_train_saves_and_exits_on_sigterm_then_sigint(tmp_path):
    registration.import_all()
    data_dir = tmp_path / "data"
    registry.problems.get("synthetic_syntax_reorder")(train_size=200, dev_size=10, test_size=2,
                                                       max_length=8).generate_data(
        str(data_dir), str(tmp_path / "raw"))
    run_dir = tmp_path / "run"
    command = [sys.executable, str(REPO / "bin" / "train"), "--problem=synthetic_syntax_reorder",
               "--model=transformer", "--hparams_set=transformer_tiny",
               "--hparams=hidden_size=16,filter_size=32,num_heads=2,num_encoder_layers=1,"
               "num_decoder_layers=1,batch_size=96,max_length=12",
               f"--data_dir={data_dir}", f"--output_dir={run_dir}", f"--train_steps={FOREVER}",
               "--save_checkpoints_steps=100000", "--log_step_count_steps=5", "--eval_steps=1"]
    stopped_at = 0
    for number in (signal.SIGTERM, signal.SIGINT):
        log = tmp_path / f"{signal.Signals(number).name}.log"
        with open(log, "w", encoding="utf-8") as stream:
            process = subprocess.Popen(command, stdout=stream, stderr=subprocess.STDOUT, cwd=REPO)
        started = wait_for(log, r"training from step (\d+) to", process)
        assert int(started.group(1)) == stopped_at
        # Progress is logged every 5 steps counted from 0, so a run resumed at step 11 logs
        # 15, 20, 25...: wait for any step at least 10 past the start.
        wait_for(log, r"step (\d+)/", process,
                 accept=lambda match, start=stopped_at: int(match.group(1)) >= start + 10)
        process.send_signal(number)
        assert process.wait(timeout=120) == 128 + number
        text = log.read_text(encoding="utf-8")
        match = re.search(rf"stopped: training stopped by {signal.Signals(number).name} at step "
                          r"(\d+) \(the checkpoint (\S+) holds it\); run the same command again "
                          r"to resume", text)
        assert match, text[-3000:]
        assert "Traceback" not in text
        stopped_at = int(match.group(1))
        assert match.group(2) == str(run_dir / f"ckpt-{stopped_at}")
        assert checkpoints.latest_checkpoint(str(run_dir)) == match.group(2)
        assert re.search(r"training input: read \d+ examples", text)


def test_a_run_stopped_by_a_signal_and_resumed_trains_on_the_uninterrupted_stream(tmp_path):
    # The signal's checkpoint holds the input position after the last batch trained, not one
    # past it (the batch read ahead for the next step): resumed, the run ends where one never
    # stopped does.
    def final_weights(output_dir, signals_at):
        keras.utils.set_random_seed(5)
        trainer = make_trainer(output_dir, signals_at)
        try:
            trainer.train(batches(), train_steps=15)
        except TrainingInterrupted:
            keras.utils.set_random_seed(6)  # the resumed run must not depend on the seed it gets
            trainer = make_trainer(output_dir)
            trainer.train(batches(), train_steps=15)
        return [w.numpy() for w in trainer.model.weights]

    uninterrupted = final_weights(tmp_path / "a", {})
    resumed = final_weights(tmp_path / "b", {13: signal.SIGTERM})
    assert len(uninterrupted) == len(resumed)
    for a, b in zip(uninterrupted, resumed):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
