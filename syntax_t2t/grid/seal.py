"""Sealed test sets: decoded and scored once, after every run has finished, under fixed settings.

A test set that is looked at while systems, seeds or settings can still
change stops being a test: the next choice is made knowing its scores. A
pre-registered experiment (docs/preregistration.md) therefore marks its
primary test set `sealed` (`TranslationTest.sealed`), and `bin/grid`:

* leaves it out of every run's stages (no run decodes it as it finishes);
* opens it only when every run of the experiment has finished: decodes it
  with each run's tested checkpoint at the experiment's decoding settings,
  scores it, and writes the seal record `G/sealed/<test>.json` (the time,
  the git commit of the code, the settings, each run's scores) last, so
  that the scores exist only once every run was decoded;
* never opens it again: with a record present, the settings are compared
  with the record's, and other settings (decoding, checkpoint rule,
  systems, seeds, test files or their contents) are refused, not scored.

The translations are kept in `G/sealed/<test>/<system>/seed<k>.hyp` for the
report's significance tests. Decoding needs the runs' weights, so a run
restored from an archive (which has none) cannot open a seal.
"""

import datetime
import fcntl
import hashlib
import os
import subprocess
from pathlib import Path

from syntax_t2t import io_utils
from syntax_t2t.evaluation import translation
from syntax_t2t.grid import archive, runner

SEALED_DIR = "sealed"


class SealError(runner.GridError):
    """A sealed test that cannot be opened now, or not under these settings."""


def record_path(grid_runner, test):
    return os.path.join(grid_runner.output_dir, SEALED_DIR, f"{test.name}.json")


def output_path(grid_runner, test, run):
    """Where a run's translations of a sealed test go (the grid's, not the run's directory)."""
    return os.path.join(grid_runner.output_dir, SEALED_DIR, test.name, run.system.name,
                        f"seed{run.seed}.hyp")


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def settings(grid_runner, runs, test):
    """Everything the sealed scores depend on; a record under other settings is refused."""
    experiment = grid_runner.experiment
    return {"experiment": grid_runner.name, "test": test.name,
            "source_sha256": _sha256(grid_runner.path(test.source)),
            "reference_sha256": _sha256(grid_runner.path(test.reference)),
            "raw_source": test.raw_source, "detokenize": test.detokenize,
            "decode_hparams": experiment.decode_hparams, "checkpoint": experiment.checkpoint,
            "average_checkpoints": experiment.average_checkpoints,
            "runs": {run.name: {key: value for key, value in grid_runner.config(run).items()
                                if key not in archive.MACHINE_KEYS}
                     for run in runs}}


def git_commit():
    """`{"commit", "clean"}` of the code's git checkout (None when it is not one)."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True, timeout=60).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                 cwd=root, capture_output=True, text=True, check=True,
                                 timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "clean": None}
    return {"commit": commit, "clean": not changed}


def read_record(grid_runner, test):
    return runner.read_json(record_path(grid_runner, test))


def unfinished(grid_runner, runs):
    """The runs of `runs` not yet finished (some stage not done)."""
    left = []
    for run in runs:
        state = runner.read_json(os.path.join(run.directory, runner.STATE_FILE)) or {}
        done = state.get("done", {})
        if not done or any(not done.get(key) for key, _ in grid_runner.stages(run, state)):
            left.append(run)
    return left


def open_seal(grid_runner, runs, test, decode=None):
    """Decodes and scores the sealed `test` once every run of `runs` has finished.

    Args:
        grid_runner: the grid.
        runs: every run of the experiment (`runner.plan`), not a task's share.
        test: a sealed `TranslationTest`.
        decode: `decode(run, test, output_path)`, for tests; default
            `grid_runner.decode_test`.

    Returns:
        The seal record, or None while runs are unfinished (nothing is decoded).

    Raises:
        SealError: a record exists under other settings, or a run has no
            weights to decode with.
    """
    current = settings(grid_runner, runs, test)
    record = read_record(grid_runner, test)
    if record is not None:
        if record.get("settings") != current:
            changed = sorted(key for key in set(current) | set(record.get("settings", {}))
                             if current.get(key) != record.get("settings", {}).get(key))
            raise SealError(
                f"sealed test {test.name} was opened on {record.get('opened')} (commit "
                f"{record.get('git', {}).get('commit')}) under other settings (they differ in "
                f"{', '.join(changed)}); it is not scored again. Its scores are those of "
                f"{record_path(grid_runner, test)}")
        return record
    if unfinished(grid_runner, runs):
        return None
    os.makedirs(os.path.dirname(record_path(grid_runner, test)), exist_ok=True)
    with open(record_path(grid_runner, test) + ".lock", "a", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # another bin/grid process is opening it
        if read_record(grid_runner, test) is not None:  # it did, before we took the lock
            return open_seal(grid_runner, runs, test, decode)
        return _decode_and_score(grid_runner, runs, test, current, decode)


def _decode_and_score(grid_runner, runs, test, current, decode):
    """Decodes the sealed test with every run, scores it, writes the record last."""
    decode = decode or (lambda run, test, output: grid_runner.decode_test(run, test, output))
    for run in runs:
        state = runner.read_json(os.path.join(run.directory, runner.STATE_FILE)) or {}
        if "restored_from" in state:
            raise SealError(f"sealed test {test.name}: {run.name} was restored from an archive "
                            f"and has no weights to decode with; open the seal where the runs' "
                            f"checkpoints are")
    references = translation.read_segments(grid_runner.path(test.reference))
    scores = {}
    for run in runs:
        output = output_path(grid_runner, test, run)
        os.makedirs(os.path.dirname(output), exist_ok=True)
        decode(run, test, output)
        result = translation.score_files(output, grid_runner.path(test.reference), references)
        scores[run.name] = {"system": run.system.name, "seed": run.seed,
                            **{key: value.score for key, value in result.items()}}
    record = {"test": test.name,
              "opened": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "git": git_commit(), "settings": current, "scores": scores}
    runner.write_json(record_path(grid_runner, test), record)
    return record


def copy_to_archive(grid_runner, test, archive_dir):
    """Copies an opened seal's record and translations into `archive_dir/sealed/`."""
    record = read_record(grid_runner, test)
    if record is None:
        return False
    source = os.path.join(grid_runner.output_dir, SEALED_DIR)
    target = os.path.join(archive_dir, SEALED_DIR)
    for name in [f"{test.name}.json"] + [
            os.path.relpath(os.path.join(directory, file), source)
            for directory, _, files in os.walk(os.path.join(source, test.name)) for file in files]:
        destination = os.path.join(target, name)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        with open(os.path.join(source, name), encoding="utf-8") as stream:
            io_utils.atomic_write_text(destination, stream.read())
    return True
