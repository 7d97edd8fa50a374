"""`bin/grid --continue_from=G0`: a grid that goes on with another's runs under a larger budget.

More steps, or no (or longer) early stopping: patience only decides when a
run stops, so a run of the smaller budget is exactly the start of the same
run under the larger one; its training state is copied and bin/train goes
on from its newest checkpoint. Anything else that differs is refused.
"""

import os
import shutil

from absl import logging

from syntax_t2t.checkpointing import discovery
from syntax_t2t.grid import archive, backend_record, runner

#: What `--continue_from` may change: the configuration keys of the budget.
BUDGET_KEYS = ("experiment", "train_steps", "early_stopping_patience")


def continue_from(grid_runner, run, source_grid):
    """Copies the run's training from the grid `source_grid` to go on under this budget.

    The source's run (same system and seed) must differ only in the
    budget, and by growing it: at least as many steps, and no early
    stopping or at least its patience (a shorter budget, or patience
    where it had none, might have stopped it earlier, so it would not be
    the start of this run). Its checkpoints, best weights, validation
    history and logs are copied beside the run directory and renamed
    into place with this grid's `grid.json`; its test outputs and scores
    are not, since the tested checkpoint may change.

    Returns:
        True when the run is ready to be claimed: copied now, already
        there, or with nothing trained in the source (no such run, or
        one claimed that never saved a checkpoint: it trains here from
        scratch); False when the source's run has started training but
        not finished (copy it later rather than train it twice).

    Raises:
        runner.GridError: the source's run differs in more than a larger budget.
    """
    source = os.path.join(source_grid, "runs", run.system.name, f"seed{run.seed}")
    if os.path.exists(run.directory):
        return True
    source_state = runner.read_json(os.path.join(source, runner.STATE_FILE))
    if source_state is None:
        return True
    theirs, ours = source_state.get("config", {}), grid_runner.config(run)
    differences = runner.differing_keys(theirs, ours, ignore=BUDGET_KEYS)
    their_patience = theirs.get("early_stopping_patience", 0)
    our_patience = ours["early_stopping_patience"]
    if theirs.get("train_steps", 0) > ours["train_steps"]:
        differences.append(f"train_steps ({theirs['train_steps']} there, "
                           f"{ours['train_steps']} here)")
    if our_patience and not 0 < their_patience <= our_patience:
        differences.append(f"early_stopping_patience ({their_patience} there, "
                           f"{our_patience} here)")
    if differences:
        raise runner.GridError(f"--continue_from: {source} is not the start of {run.name} under "
                               f"this budget (differs in {', '.join(differences)})")
    if discovery.latest_checkpoint(source) is None:
        logging.info("%s: nothing trained in %s; starts here", run.name, source)
        return True
    if not source_state.get("done", {}).get("train"):
        logging.warning("%s: not started, since %s has not finished training; run again once "
                        "it has", run.name, source)
        return False
    state = {"config": ours, "done": {}, "continued_from": os.path.abspath(source),
             "wall_seconds": source_state.get("wall_seconds", 0.0),
             backend_record.STATE_KEY: backend_record.of_state(source_state)}
    if archive.install_copy(run, source, state, ignore=shutil.ignore_patterns(
            runner.STATE_FILE, runner.LOCK_FILE, runner.LEGACY_LOCK_FILE, runner.SCORES_FILE,
            "tests", "averaged")):
        logging.info("%s: continues %s (copied)", run.name, source)
    return True
