"""One invocation's runs in order, each admitted under the time budget (`grid/budget.py`)."""

import dataclasses

from absl import logging

from syntax_t2t.grid import archive, budget, runner


@dataclasses.dataclass
class Outcome:
    """What an invocation did with its runs.

    Attributes:
        skipped: names of runs another process held.
        left: the runs the budget left for the next invocation (not started,
            or stopped when it ran out, to resume).
    """

    skipped: list = dataclasses.field(default_factory=list)
    left: list = dataclasses.field(default_factory=list)


def fits(grid_runner, run, everything, time_budget) -> bool:
    """Whether `run` may start in what is left of the budget: its estimate fits, or it has none."""
    estimate = budget.run_estimate(grid_runner, run, everything)
    if time_budget.fits(estimate):
        if estimate is None:
            logging.info("%s: not timed yet; started as its first measurement", run.name)
        return True
    if estimate is None:
        logging.info("%s: the time budget is spent: left for the next invocation", run.name)
    else:
        logging.info("%s: needs about %s, %s left of the time budget: left for the next "
                     "invocation", run.name, budget.format_duration(estimate),
                     budget.format_duration(time_budget.remaining()))
    return False


def run_all(grid_runner, ready, everything, archive_dir=None, after_run=None) -> Outcome:
    """Does the stages of each run in `ready` that `grid_runner.budget` admits.

    Args:
        ready: the claimed runs, in order.
        everything: all the experiment's runs (the finished ones time the rest).
        archive_dir: where each finished run's record is stored, if anywhere.
        after_run: called after each run that finished (writes the report).

    Raises:
        GridInterrupted: a signal stopped the grid (the running program saved).
    """
    outcome = Outcome()
    time_budget = grid_runner.budget
    for number, run in enumerate(ready, start=1):
        if time_budget is not None and not fits(grid_runner, run, everything, time_budget):
            outcome.left.append(run)
            continue
        logging.info("run %d of %d: %s", number, len(ready), run.name)
        try:
            if not grid_runner.execute(run):
                outcome.skipped.append(run.name)
                continue
        except runner.BudgetSpent as spent:
            logging.warning("%s", spent)
            outcome.left.append(run)
            continue
        if archive_dir:
            archive.store(grid_runner, run, archive_dir)
        if after_run is not None:
            after_run()
    return outcome
