"""Progress lines and TensorBoard scalars."""

import glob
import logging

import pytest
import tensorflow as tf

from syntax_t2t.training import progress


@pytest.mark.parametrize("seconds, text", [
    (0, "0s"), (7.4, "7s"), (65, "1m05s"), (3599, "59m59s"), (3725, "1h02m"), (-3, "0s"),
    (90061, "25h01m")])
def test_format_duration(seconds, text):
    assert progress.format_duration(seconds) == text


def test_format_losses_puts_the_total_first():
    assert progress.format_losses({"total": 3.5, "parse": 0.25, "nmt": 3.25}) == (
        "loss 3.5000 (nmt 3.2500, parse 0.2500)")
    assert progress.format_losses({"total": 2.0, "nmt": 2.0}) == "loss 2.0000 (nmt 2.0000)"


def read_scalars(directory):
    scalars = {}
    for path in glob.glob(f"{directory}/events.*"):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                assert value.metadata.plugin_data.plugin_name == "scalars"
                scalars[(value.tag, event.step)] = float(tf.make_ndarray(value.tensor))
    return scalars


def test_reports_are_logged_and_written_for_tensorboard(tmp_path, caplog):
    reporter = progress.ProgressReporter(str(tmp_path), train_steps=1000)
    with caplog.at_level(logging.INFO):
        reporter.report_training(400, {"total": 3.5, "nmt": 3.0, "parse": 0.5},
                                 tokens_per_second=12345.6, steps_per_second=2.0,
                                 learning_rate=0.000425)
        reporter.report_evaluation(400, {"loss/total": 3.25, "token_accuracy": 0.5, "uas": 0.75})
    reporter.close()
    lines = [record.getMessage() for record in caplog.records]
    # 600 steps left at 2 steps/s.
    assert ("step 400/1000  loss 3.5000 (nmt 3.0000, parse 0.5000)  12346 tokens/s  "
            "lr 0.000425  ETA 5m00s") in lines
    assert "eval at step 400: loss/total 3.2500  token_accuracy 0.5000  uas 0.7500" in lines
    train = read_scalars(tmp_path / "train")
    assert train == pytest.approx({
        ("loss/total", 400): 3.5, ("loss/nmt", 400): 3.0, ("loss/parse", 400): 0.5,
        ("tokens_per_second", 400): 12345.6, ("steps_per_second", 400): 2.0,
        ("learning_rate", 400): 0.000425})
    assert read_scalars(tmp_path / "eval") == pytest.approx({
        ("loss/total", 400): 3.25, ("token_accuracy", 400): 0.5, ("uas", 400): 0.75})


def test_workers_other_than_the_chief_write_no_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    reporter = progress.ProgressReporter(None, train_steps=10)
    reporter.report_training(5, {"total": 1.0}, 1.0, 1.0, 0.1)
    reporter.close()
    assert list(tmp_path.iterdir()) == []


def test_event_files_written_without_tensorflow_read_as_tensorflow_writes_them(tmp_path):
    from syntax_t2t.training import event_files

    writer = event_files.EventFileWriter(str(tmp_path / "train"))
    writer.scalar("loss/total", 3.5, 1)
    writer.scalar("loss/total", 2.25, 300)
    writer.scalar("learning_rate", 0.000425, 2**40)  # a step past 32 bits
    writer.close()
    assert read_scalars(tmp_path / "train") == pytest.approx({
        ("loss/total", 1): 3.5, ("loss/total", 300): 2.25, ("learning_rate", 2**40): 0.000425})
    events = list(tf.compat.v1.train.summary_iterator(writer.path))
    assert events[0].file_version == "brain.Event:2"
    assert events[0].wall_time > 1.7e9


def test_the_reporter_writes_event_files_without_tensorflow_on_other_backends(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setattr(progress.keras.backend, "backend", lambda: "jax")
    reporter = progress.ProgressReporter(str(tmp_path), train_steps=1000)
    reporter.report_training(400, {"total": 3.5, "nmt": 3.5}, 10.0, 2.0, 0.001)
    reporter.report_evaluation(400, {"loss/total": 3.25, "uas": 0.75})
    reporter.close()
    assert read_scalars(tmp_path / "train") == pytest.approx({
        ("loss/total", 400): 3.5, ("loss/nmt", 400): 3.5, ("tokens_per_second", 400): 10.0,
        ("steps_per_second", 400): 2.0, ("learning_rate", 400): 0.001})
    assert read_scalars(tmp_path / "eval") == pytest.approx({
        ("loss/total", 400): 3.25, ("uas", 400): 0.75})


def test_report_schedule_reports_every_n_steps_at_the_end_and_at_least_once_a_minute():
    now = [0.0]
    schedule = progress.ReportSchedule(every=100, train_steps=250, clock=lambda: now[0])
    due = []
    for step in range(1, 251):
        now[0] += 3.5  # a transformer_small step on 2 CPU cores (#34 item 4: 5 min 40 s to the first line)
        if schedule.due(step):
            due.append(step)
    # 60 s are 18 steps of 3.5 s: a line at step 18, then the minute restarts.
    assert due[:3] == [18, 36, 54]
    assert 100 in due and 200 in due and due[-1] == 250
    gaps = [b - a for a, b in zip([0] + due, due)]
    assert max(gaps) <= 18


def test_report_schedule_on_fast_steps_is_every_n_steps():
    now = [0.0]
    schedule = progress.ReportSchedule(every=10, train_steps=35, clock=lambda: now[0])
    due = []
    for step in range(1, 36):
        now[0] += 0.01
        if schedule.due(step):
            due.append(step)
    assert due == [10, 20, 30, 35]
