"""`bin/grid --time_budget`: which runs start, the SIGINT at the end, and each run's backend."""

import os
import sys
import textwrap

import pytest

from syntax_t2t.cli import registration
from syntax_t2t.grid import backend_record, budget, runner, schedule
from syntax_t2t.grid.experiment import Experiment, System

pytestmark = pytest.mark.backends  # nothing here needs TensorFlow

# Like bin/train on Ctrl-C: saves (a file) and exits 130; never exits on its own.
_STOPPABLE = textwrap.dedent("""
    import signal, sys, time
    from pathlib import Path
    out = Path(sys.argv[1])
    stopped = []
    signal.signal(signal.SIGINT, lambda number, frame: stopped.append(number))
    (out / "started").write_text("yes")
    while not stopped:
        time.sleep(0.01)
    (out / "saved").write_text(str(stopped[0]))
    sys.exit(128 + stopped[0])
""")


@pytest.fixture(autouse=True)
def _registry():
    registration.import_all()


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _grid(tmp_path, stages_of):
    """A grid of one system over seeds 1-3 whose stages are `stages_of(grid, run, state)`."""
    experiment = Experiment(problem="synthetic_syntax_reorder", hparams_set="transformer_tiny",
                            systems=[System("base", "transformer")], baseline="base",
                            seeds=(1, 2, 3))
    grid = runner.GridRunner(experiment, "toy", str(tmp_path), {"data_dir": str(tmp_path)})
    grid.stages = lambda run, state: stages_of(grid, run, state)
    runs = runner.plan(experiment, str(tmp_path))
    for run in runs:
        grid.claim(run)
    return grid, runs


def _finish(run, seconds):
    """Marks `run` finished, as timed by an earlier invocation."""
    path = os.path.join(run.directory, runner.STATE_FILE)
    state = runner.read_json(path)
    state["done"] = {"train": True, "score": True}
    state[runner.STAGE_SECONDS] = seconds
    runner.write_json(path, state)
    runner.write_json(os.path.join(run.directory, runner.SCORES_FILE), {"seed": run.seed})


@pytest.mark.parametrize("text,seconds", [("8m", 480), ("90s", 90), ("1.5h", 5400), ("45", 45),
                                          (" 2m ", 120)])
def test_durations_are_read_in_seconds_minutes_or_hours(text, seconds):
    assert budget.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["8x", "0m", "", "m", "-5m", "8 minutes"])
def test_what_is_not_a_duration_is_refused(text):
    with pytest.raises(budget.BudgetError, match="give a positive duration such as 90s, 8m"):
        budget.parse_duration(text)


def test_an_estimate_is_the_longest_time_of_each_stage_left_less_what_the_run_spent():
    same = [{runner.STAGE_SECONDS: {"train": 100.0, "decode": 10.0, "score": 1.0}},
            {runner.STAGE_SECONDS: {"train": 120.0, "decode": 8.0, "score": 1.0}}]
    other = [{runner.STAGE_SECONDS: {"train": 999.0, "decode": 99.0, "score": 9.0}}]
    assert budget.estimate(["train", "decode", "score"], {}, same, other) == 131.0
    # Resumed: 50 s of training were done before it was stopped.
    resumed = {runner.STAGE_SECONDS: {"train": 50.0}}
    assert budget.estimate(["train", "decode", "score"], resumed, same, other) == 81.0
    # Without a timed run of its system, the other systems' times.
    assert budget.estimate(["train", "score"], {}, [{}], other) == 1008.0
    # A stage no finished run timed: no estimate (the run is its own measurement).
    assert budget.estimate(["train", "parse:pud"], {}, same, other) is None
    assert budget.estimate([], {}, [], []) == 0.0


def test_a_budget_that_fits_one_run_but_not_two_starts_one_and_leaves_the_next(tmp_path):
    clock = FakeClock()

    def stages_of(grid, run, state):
        def train():  # takes 100 s of the fake clock
            clock.now += 100
        return [("train", train), ("score", lambda: runner.write_json(
            os.path.join(run.directory, runner.SCORES_FILE), {"seed": run.seed}))]

    grid, (first, second, third) = _grid(tmp_path, stages_of)
    _finish(first, {"train": 100.0, "score": 1.0})  # timed by an earlier invocation
    grid.budget = budget.Budget(150, clock=clock)
    outcome = schedule.run_all(grid, [first, second, third], [first, second, third])
    assert outcome.left == [third] and outcome.skipped == []
    state = runner.read_json(os.path.join(second.directory, runner.STATE_FILE))
    assert state["done"] == {"train": True, "score": True}
    assert set(state[runner.STAGE_SECONDS]) == {"train", "score"}
    assert not runner.read_json(os.path.join(third.directory, runner.STATE_FILE)).get("done")
    # The next invocation, with a budget that fits it, finishes it.
    grid.budget = budget.Budget(150, clock=clock)
    assert schedule.run_all(grid, [third], [first, second, third]).left == []


def test_an_untimed_run_starts_and_the_budgets_end_stops_it_cleanly_to_resume(tmp_path):
    """No finished run to estimate from: the run starts (its first measurement), gets
    SIGINT when the budget ends, saves, and its stage stays not done for the next call."""
    script = tmp_path / "stoppable.py"
    script.write_text(_STOPPABLE)

    def stages_of(grid, run, state):
        return [("train", lambda: grid._call(run, [sys.executable, str(script), str(tmp_path)],
                                             "train.log"))]

    grid, (first, second, _) = _grid(tmp_path, stages_of)
    grid.budget = budget.Budget(8.0)  # time for the program to start on a busy machine
    outcome = schedule.run_all(grid, [first, second], [first, second])
    assert outcome.left == [first, second]
    assert (tmp_path / "started").exists()
    assert (tmp_path / "saved").read_text() == "2"  # SIGINT, once
    state = runner.read_json(os.path.join(first.directory, runner.STATE_FILE))
    assert not state["done"].get("train")
    assert state[runner.STAGE_SECONDS]["train"] >= 1.0  # counts towards its next estimate
    assert state[backend_record.STATE_KEY] == [backend_record.current()]
    assert "train.log" in os.listdir(first.directory)
    assert not os.path.exists(os.path.join(second.directory, "train.log"))  # never started


def test_no_program_is_started_once_the_budget_is_spent(tmp_path):
    clock = FakeClock()
    marker = tmp_path / "decoded"

    def stages_of(grid, run, state):
        def train():  # overruns the budget
            clock.now += 200
        return [("train", train), ("decode", lambda: grid._call(
            run, [sys.executable, "-c", f"open({str(marker)!r}, 'w')"], "test.log"))]

    grid, (first, *_) = _grid(tmp_path, stages_of)
    grid.budget = budget.Budget(100, clock=clock)
    assert schedule.run_all(grid, [first], [first]).left == [first]
    assert not marker.exists()
    state = runner.read_json(os.path.join(first.directory, runner.STATE_FILE))
    assert state["done"] == {"train": True}


def test_a_finished_run_is_not_left_for_lack_of_budget(tmp_path):
    grid, (first, second, third) = _grid(tmp_path, lambda grid, run, state: [
        ("train", lambda: None), ("score", lambda: None)])
    _finish(first, {"train": 100.0, "score": 1.0})
    clock = FakeClock()
    grid.budget = budget.Budget(10, clock=clock)
    clock.now += 20  # spent
    outcome = schedule.run_all(grid, [first, second, third], [first, second, third])
    assert outcome.left == [second, third]


def test_each_run_records_its_backend_and_a_mixed_report_says_so(tmp_path):
    state = {}
    backend_record.record(state)
    backend_record.record(state)
    assert backend_record.of_state(state) == [backend_record.current()]
    resumed = {backend_record.STATE_KEY: ["other"]}
    backend_record.record(resumed)
    assert backend_record.label({backend_record.SCORES_KEY: resumed[backend_record.STATE_KEY]}) == \
        f"other+{backend_record.current()}"
    assert backend_record.label({}) == backend_record.UNRECORDED
    grouped = backend_record.mixture([("a/seed1", {"backends": ["tensorflow"]}),
                                ("b/seed1", {"backends": ["jax"]}),
                                ("b/seed2", {"backends": ["jax"]})])
    assert grouped == {"tensorflow": ["a/seed1"], "jax": ["b/seed1", "b/seed2"]}
    from syntax_t2t.grid import report
    note = " ".join(report._backend_note(grouped))
    assert "**Mixed backends**" in note and "jax: b/seed1, b/seed2; tensorflow: a/seed1" in note
    assert report._backend_note({"jax": ["b/seed1"]})[0] == "Trained on the jax backend."
    assert "backend the runs were trained on was not recorded" in report._backend_note(
        {"unrecorded": ["b/seed1"]})[0]
    row = report._training_row("b", {"seed": 1, "steps": 5, "train_seconds": 60,
                                     "backends": ["jax"]})
    assert row.endswith("| jax |")
