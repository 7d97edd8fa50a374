"""Sealed test sets: scored once, after every run has finished, under fixed settings.

A test set that is looked at while systems, seeds or settings can still
change stops being a test: the next choice is made knowing its scores. A
pre-registered experiment (docs/preregistration.md) therefore marks its
primary test set `sealed` (`TranslationTest.sealed`), and `bin/grid`:

* translates it in each run as the run finishes, where the run's weights
  are (stage `sealed:<test>`, into `tests/sealed/<test>.hyp`), recording
  the decoding settings in the run's `grid.json`, and scores nothing: a
  GPU session keeps no weights beyond its end (a few megabytes come back),
  so the translations, which the run's archive keeps, are what can wait
  for the last run;
* opens it only when every run of the experiment has finished: checks that
  every run translated it under the same settings as the grid's now,
  scores each run's translations, and writes the seal record
  `G/sealed/<test>.json` (the time, the git commit of the code, the
  settings, each translation file's SHA-256 and each run's scores) last,
  so that scores exist only once every run is in;
* never opens it again: with a record present, the settings are compared
  with the record's, and other settings (decoding, checkpoint rule,
  systems, seeds, test files or their contents) are refused, not scored.

The scored translations are copied to `G/sealed/<test>/<system>/seed<k>.hyp`
for the report's significance tests. A run restored from an archive brings
its translations with it.
"""

import datetime
import fcntl
import os
import shutil
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


def settings(grid_runner, runs, test):
    """Everything the sealed scores depend on; a record under other settings is refused."""
    return {"experiment": grid_runner.name, "test": test.name,
            **grid_runner.decoding_settings(test),
            "reference_sha256": io_utils.sha256_file(grid_runner.path(test.reference)),
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


def open_seal(grid_runner, runs, test):
    """Scores the sealed `test` once every run of `runs` has finished.

    Args:
        grid_runner: the grid.
        runs: every run of the experiment (`runner.plan`), not a task's share.
        test: a sealed `TranslationTest`.

    Returns:
        The seal record, or None while runs are unfinished (nothing is scored).

    Raises:
        SealError: a record exists under other settings, or a run translated
            the test under other settings or has no translations of it.
    """
    current = settings(grid_runner, runs, test)
    record = read_record(grid_runner, test)
    if record is not None:
        if record.get("settings") != current:
            changed = runner.differing_keys(current, record.get("settings", {}))
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
            return open_seal(grid_runner, runs, test)
        return _score(grid_runner, runs, test, current)


def _translations(run, test, expected):
    """The run's translations of the sealed test, checked against the grid's decoding settings
    now (`expected`)."""
    state = runner.read_json(os.path.join(run.directory, runner.STATE_FILE)) or {}
    path = archive.run_file(run, runner.sealed_output(test))
    if not os.path.exists(path):
        raise SealError(f"sealed test {test.name}: {run.name} has no translations of it "
                        f"({path}); its stage sealed:{test.name} did not run")
    recorded = state.get(runner.SEALED_KEY, {}).get(test.name)
    if recorded != expected:
        changed = runner.differing_keys(expected, recorded or {})
        raise SealError(f"sealed test {test.name}: {run.name} translated it under other settings "
                        f"than the grid's now (they differ in {', '.join(changed)}); the seal "
                        f"scores every run under one setting and is not opened")
    return path


def _score(grid_runner, runs, test, current):
    """Scores every run's translations of the sealed test; writes the record last."""
    expected = grid_runner.decoding_settings(test)  # hashes the source (and its parse) once
    sources = {run.name: _translations(run, test, expected) for run in runs}
    references = translation.read_segments(grid_runner.path(test.reference))
    scores, digests = {}, {}
    for run in runs:
        output = output_path(grid_runner, test, run)
        os.makedirs(os.path.dirname(output), exist_ok=True)
        with io_utils.open_binary(sources[run.name]) as source, \
                io_utils.atomic_write(output, "wb") as target:
            shutil.copyfileobj(source, target)  # decompressed when the archive kept it gzipped
        digests[run.name] = io_utils.sha256_file(output)
        result = translation.score_files(output, grid_runner.path(test.reference), references)
        scores[run.name] = {"system": run.system.name, "seed": run.seed,
                            **{key: value.score for key, value in result.items()}}
    record = {"test": test.name,
              "opened": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "git": git_commit(), "settings": current, "translations_sha256": digests,
              "scores": scores}
    runner.write_json(record_path(grid_runner, test), record)
    return record


def _copy_seal(source_root, target_root, test):
    """Copies a seal's translations, then its record (last: a record means a whole seal)."""
    names = [os.path.relpath(os.path.join(directory, file), source_root)
             for directory, _, files in os.walk(os.path.join(source_root, test.name))
             for file in files]
    for name in sorted(names) + [f"{test.name}.json"]:
        destination = os.path.join(target_root, name)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        with open(os.path.join(source_root, name), "rb") as source, \
                io_utils.atomic_write(destination, "wb") as target:
            shutil.copyfileobj(source, target)


def copy_to_archive(grid_runner, test, archive_dir):
    """Copies an opened seal's record and translations into `archive_dir/sealed/`."""
    if read_record(grid_runner, test) is None:
        return False
    _copy_seal(os.path.join(grid_runner.output_dir, SEALED_DIR),
               os.path.join(archive_dir, SEALED_DIR), test)
    return True


def restore_from_archive(grid_runner, test, archive_dir):
    """Puts a seal opened elsewhere (`copy_to_archive`) into a grid that has none.

    So that a grid restored from the archive reads the seal's record, and
    compares its settings, instead of opening the seal a second time.
    """
    source = os.path.join(archive_dir, SEALED_DIR)
    if read_record(grid_runner, test) is not None or not os.path.exists(
            os.path.join(source, f"{test.name}.json")):
        return False
    _copy_seal(source, os.path.join(grid_runner.output_dir, SEALED_DIR), test)
    return True
