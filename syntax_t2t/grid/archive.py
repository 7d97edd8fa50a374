"""A grid's finished runs without their weights: the record that outlives the machine.

A grid spans several sessions, and the machine it trains on may be replaced
between them, taking the grid directory with it. Checkpoints are large, but
what the report needs of a finished run is small (about 100 kB): its
configuration, scores, test translations (for the significance tests against
it), validation history (for the learning curves) and training figures.
`bin/grid --archive_dir=A` keeps that record of each run in `A` as the run
finishes, for the user to commit, and restores it into a grid directory that
lacks the run, so that a grid begun on one machine is reported whole on
another, and only its unfinished runs train:

    A/runs/<system>/seed<k>/
        grid.json, scores.json, validation.json, training_time.json,
        hparams.json, flags.txt, environment.json
        tests/<test>.hyp          the test translations, as decoded
        tests/<test>.dev_alpha.hyp, tests/length_penalty.json, tests/dev/*.hyp.gz
                                  with length penalties chosen on dev: the test
                                  translations at the chosen alpha, the choice, and
                                  the dev translations it was made on (compressed)
        tests/sealed/<test>.hyp.gz
                                  a sealed test's translations, for the seal to score
                                  once every run is in (`grid/seal.py`)
        tests/<parse test>.conllu.gz, train.log.gz, test.log.gz
                                  the parse head's trees and the logs, compressed
                                  without timestamps (equal text, equal bytes)

A restored run is finished: it has no checkpoint, so it is neither decoded
again nor continued (`--continue_from` trains such a run from scratch).
Its configuration must be this grid's but for `data_dir`, which names a
directory of the machine that trained it; the data there must be the same
(`bin/datagen` with the same parser), which is the user's to ensure. It may
also come from another experiment (`REUSABLE_KEYS`): a record copied into
this grid's archive from another's is restored when the run is the same run,
and `grid.json` says where it came from.
"""

import contextlib
import gzip
import os
import shutil

from absl import logging

from syntax_t2t.grid import length_penalty, runner
from syntax_t2t.training import progress, run_directory, validation

#: Copied as they are.
PLAIN_FILES = (runner.STATE_FILE, runner.SCORES_FILE, validation.HISTORY_FILE,
               progress.TRAINING_TIME_FILE, run_directory.HPARAMS_FILE, run_directory.FLAGS_FILE,
               run_directory.ENVIRONMENT_FILE)
#: Kept gzip-compressed (`<name>.gz`) in the archive and in a restored run.
COMPRESSED_FILES = ("train.log", "test.log")
#: The configuration key that names a machine's directory, not the run.
MACHINE_KEYS = ("data_dir",)
#: What a restored record may differ in besides `MACHINE_KEYS`: the name of the
#: experiment it was trained for. A run is its problem, model, hparams, seed and
#: budget; another experiment's run of the same is the same run (e.g. the
#: baseline of docs/results.md §0 reused by a later experiment on the same data).
REUSABLE_KEYS = ("experiment",)


def run_file(run, name):
    """The path of file `name` of a run: as written, or `name.gz` in a run restored from here.

    The record keeps some files compressed (`_record_files`) and a restored run
    is a copy of the record, so a reader of a run's files looks for both.
    """
    path = os.path.join(run.directory, name)
    return path if os.path.exists(path) or not os.path.exists(path + ".gz") else path + ".gz"


def record_dir(archive_dir, run):
    return os.path.join(archive_dir, "runs", run.system.name, f"seed{run.seed}")


def _missing_stages(state, grid_runner, run):
    done = (state or {}).get("done", {})
    return [key for key, _ in grid_runner.stages(run, state or {}) if not done.get(key)]


def _finished(state, grid_runner, run):
    return bool((state or {}).get("done")) and not _missing_stages(state, grid_runner, run)


def _record_files(grid_runner, run):
    """`[(path in the run, path in the record, compress)]` of a finished run's record."""
    files = [(name, name, False) for name in PLAIN_FILES]
    files += [(name, name + ".gz", True) for name in COMPRESSED_FILES]
    experiment = grid_runner.experiment
    outputs = [runner.test_output]
    if experiment.length_penalties:
        outputs.append(length_penalty.test_output)
        files.append((length_penalty.CHOICE_FILE, length_penalty.CHOICE_FILE, False))
        for alpha in experiment.length_penalties:
            name = length_penalty.dev_output(experiment.dev_set, alpha)
            files.append((name, name + ".gz", True))
    files += [(output(test), output(test), False)
              for output in outputs for test in experiment.open_tests()]
    files += [(runner.sealed_output(test), runner.sealed_output(test) + ".gz", True)
              for test in experiment.sealed_tests()]
    if grid_runner.has_parse_head(run):
        for test in grid_runner.experiment.parse_tests:
            name = runner.parse_output(test)
            files.append((name, name + ".gz", True))
    return files


@contextlib.contextmanager
def _removed_if_interrupted(partial: str):
    """Removes the directory `partial` if the block raises (Ctrl-C, a full disk mid-copy).

    The next store or copy runs under another pid and would not find this
    one's half-record to remove.
    """
    try:
        yield
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def install_copy(run: runner.Run, source: str, state: dict, ignore=None) -> bool:
    """Copies the directory `source` to the run's place with `state` as its `grid.json`.

    The copy is made beside the run's directory and renamed into place, so
    the run appears whole or not at all.

    Returns:
        False when another process put the run there first (the copy is dropped).
    """
    partial = f"{run.directory}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    with _removed_if_interrupted(partial):
        shutil.copytree(source, partial, ignore=ignore)
        runner.write_json(os.path.join(partial, runner.STATE_FILE), state)
    os.makedirs(os.path.dirname(run.directory), exist_ok=True)
    try:
        os.rename(partial, run.directory)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        return False
    return True


def _replace_dir(partial, target):
    """Puts the directory `partial` at `target`, replacing what was there.

    Two grid processes may store the same finished run at once: whichever
    renames last wins, and the records are the same.
    """
    old = f"{target}.old-{os.getpid()}"
    try:
        os.rename(target, old)
    except FileNotFoundError:
        pass
    try:
        os.rename(partial, target)
    except OSError:  # the other process's record got there between the two renames
        shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)


def store(grid_runner, run, archive_dir):
    """Writes the record of `run` into `archive_dir` if the run is finished.

    The record is built beside its place and renamed into it, so an
    interrupted store leaves the previous record (or none), never half of one.

    Returns:
        Whether a record was written (False: the run is not finished, or
        was itself restored from a record).
    """
    state = runner.read_json(os.path.join(run.directory, runner.STATE_FILE))
    if not _finished(state, grid_runner, run) or "restored_from" in state:
        return False  # a restored run's record is the one it came from
    target = record_dir(archive_dir, run)
    partial = f"{target}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    with _removed_if_interrupted(partial):
        for source_name, record_name, compress in _record_files(grid_runner, run):
            source = os.path.join(run.directory, source_name)
            if not os.path.exists(source):
                continue
            destination = os.path.join(partial, record_name)
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            if compress:
                with open(source, "rb") as stream:
                    data = gzip.compress(stream.read(), mtime=0)
                with open(destination, "wb") as stream:
                    stream.write(data)
            else:
                shutil.copyfile(source, destination)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    _replace_dir(partial, target)
    return True


def restore(grid_runner, run, archive_dir):
    """Puts the archived record of `run` into the grid when the grid has no such run.

    Returns:
        True when the record was restored; False when the grid already holds
        the run (its directory is left alone) or the archive has no finished
        record of it.

    Raises:
        GridError: the record is of another configuration (named keys).
    """
    if os.path.exists(os.path.join(run.directory, runner.STATE_FILE)):
        return False
    source = record_dir(archive_dir, run)
    state = runner.read_json(os.path.join(source, runner.STATE_FILE))
    if not _finished(state, grid_runner, run):
        missing = _missing_stages(state, grid_runner, run)
        if missing and (state or {}).get("done", {}).get("train"):
            # Without its weights the run cannot do them, and training it again
            # from scratch behind the user's back would cost hours.
            raise runner.GridError(
                f"--archive_dir: {source} was archived before the experiment had the stages "
                f"{', '.join(missing)}, which need the run's weights; run the grid where its "
                f"checkpoints are (it does those stages and archives the run again), or move "
                f"the record away to train the run afresh")
        return False
    theirs, ours = state.get("config", {}), grid_runner.config(run)
    differences = runner.differing_keys(theirs, ours, ignore=MACHINE_KEYS + REUSABLE_KEYS)
    if differences:
        raise runner.GridError(
            f"--archive_dir: {source} holds a run of another configuration (differs in "
            f"{', '.join(differences)}); it is not restored: choose another --archive_dir")
    state["config"] = ours
    state["restored_from"] = {"record": os.path.abspath(source),
                              **{key: theirs.get(key) for key in MACHINE_KEYS}}
    if theirs.get("experiment") != ours["experiment"]:
        state["restored_from"]["experiment"] = theirs.get("experiment")
    if os.path.isdir(run.directory) and set(os.listdir(run.directory)) <= {runner.LOCK_FILE}:
        shutil.rmtree(run.directory)  # a lock file alone: nothing of the run was written
    if not install_copy(run, source, state):
        return False  # something else appeared there meanwhile: it wins
    logging.info("%s: restored from %s", run.name, source)
    return True
