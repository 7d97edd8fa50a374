"""A grid's wall-clock budget per invocation (`bin/grid --time_budget=8m`).

A machine lent for a few minutes should come back with finished, archived
runs, not with runs cut off half-way. The rule:

* A run is started only when its estimated duration fits in what is left
  of the budget. The estimate is measured, never guessed: for each stage
  the run has not done, the longest time that stage took in a finished run
  of the same system in this grid (`grid.json` records each stage's
  seconds), less what this run already spent in it; without a finished run
  of the system, those of the experiment's other systems; a stage no
  finished run timed leaves the run without an estimate.
* A run without an estimate is started (that is its first measurement).
* Whatever runs when the budget ends gets SIGINT, once, as from Ctrl-C:
  bin/train saves a checkpoint and stops, the stage is not marked done,
  and the next invocation resumes it. Nothing is killed half-written.
* Runs that do not fit are left for the next invocation; the grid writes
  its report, archives every finished run, exits 0 and prints what is
  left and the command that continues.

Saving a checkpoint after the signal takes a few seconds (more on a loaded
machine): give a budget a little under the machine's lease.
"""

import os
import re
import time

from syntax_t2t.grid import runner

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


class BudgetError(ValueError):
    """A `--time_budget` that is not a duration."""


def parse_duration(text: str) -> float:
    """Seconds of a duration such as "8m", "90s", "1.5h" (a bare number is seconds).

    Raises:
        BudgetError: not a positive duration.
    """
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smh]?)\s*", text or "")
    if not match or float(match.group(1)) <= 0:
        raise BudgetError(f"--time_budget={text}: give a positive duration such as 90s, 8m "
                          f"or 1.5h")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def format_duration(seconds: float) -> str:
    """"1h05m", "7m30s", "45s": for messages."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


class Budget:
    """The wall-clock time left to this invocation of the grid.

    Args:
        seconds: the budget.
        clock: a monotonic clock (tests pass a fake one).
    """

    def __init__(self, seconds: float, clock=time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self.deadline = clock() + seconds

    def remaining(self) -> float:
        return max(0.0, self.deadline - self.clock())

    def spent(self) -> bool:
        return self.remaining() <= 0

    def fits(self, estimate) -> bool:
        """Whether a run of `estimate` seconds (None: unknown, to be measured) may start.

        A run with nothing left to do (0) always may: it only reports.
        """
        if estimate == 0:
            return True
        if self.spent():
            return False
        return estimate is None or estimate <= self.remaining()


def stage_times(state: dict) -> dict:
    """`{stage key: seconds}` that a run's stages took (summed over invocations)."""
    return dict(state.get(runner.STAGE_SECONDS, {}))


def reference_times(finished_states: list) -> dict:
    """`{stage key: seconds}`: the longest each stage took in the given finished runs."""
    longest = {}
    for state in finished_states:
        for key, seconds in stage_times(state).items():
            longest[key] = max(longest.get(key, 0.0), seconds)
    return longest


def estimate(stages_left: list, state: dict, same_system: list, other_systems: list):
    """Seconds a run still needs, or None when no finished run timed one of its stages.

    Args:
        stages_left: the keys of the run's stages not done yet.
        state: the run's `grid.json` (what it already spent in each stage).
        same_system: `grid.json` of the finished runs of the run's system.
        other_systems: those of the experiment's other systems (used when
            `same_system` has no timed run).
    """
    if not stages_left:
        return 0.0
    reference = reference_times(same_system) or reference_times(other_systems)
    spent = stage_times(state)
    total = 0.0
    for key in stages_left:
        if key not in reference:
            return None
        total += max(0.0, reference[key] - spent.get(key, 0.0))
    return total


def run_estimate(grid_runner, run, everything: list):
    """Seconds `run` still needs, from the finished runs among `everything` (see `estimate`)."""
    state = runner.read_json(os.path.join(run.directory, runner.STATE_FILE), {})
    left = [key for key, _ in grid_runner.stages(run, state)
            if not runner.is_done(run, state, key)]
    same, other = [], []
    for finished in everything:
        finished_state = runner.read_json(os.path.join(finished.directory, runner.STATE_FILE), {})
        if finished == run or not runner.is_done(finished, finished_state, "score"):
            continue
        (same if finished.system.name == run.system.name else other).append(finished_state)
    return estimate(left, state, same, other)
