"""The files that describe a training run in its output directory.

`hparams.json` holds the run's hyper-parameters (`HParams.to_json`) and
`flags.txt` the flags it was started with, one `--name=value` per line (an
absl flagfile: `bin/train --flagfile=<output_dir>/flags.txt` repeats the
run). `environment.json` lists, for each start of the run (resumes
included), the Python and package versions and the git commit of the code. A resumed run reloads both: it refuses to continue a different model or
problem, and reports every hyper-parameter that the new command line would
change instead of silently building a different network.
"""

import datetime
import glob
import importlib.metadata
import json
import os
import platform
import subprocess
from typing import Any, Mapping, Optional, Sequence

from absl import logging

from syntax_t2t import directory_lock, registry
from syntax_t2t.errors import InputError
from syntax_t2t.hparams import HParams
from syntax_t2t.io_utils import atomic_write_text, read_json_record, read_lines
from syntax_t2t.training import checkpoints

HPARAMS_FILE = "hparams.json"
FLAGS_FILE = "flags.txt"
ENVIRONMENT_FILE = "environment.json"
# Distributions whose versions change what a run computes.
RECORDED_PACKAGES = ("syntax_t2t", "tensorflow", "tensorflow-text", "keras", "numpy", "absl-py",
                     "sacrebleu", "spacy", "stanza", "torch", "sentencepiece")

# Parameters the sets gained after runs were saved, with the value that trains
# as those runs did. A saved run without one keeps that value, whatever the
# set's default has become (a warning says so when the command asks for
# another), so resuming with its original command continues the same model.
# `None` types are given where the value alone does not fix the type.
ADDED_PARAMETERS = {
    "update_freq": (1, None),
    "parse_loss": ("logits", None),
    "parse_label_smoothing": (None, "float"),
    "tree_value_bias": (False, None),
    "mgsa_dependency_phrases": ("projection", None),
    "mgsa_tag_loss_reduction": ("mean", None),
    "nsd_distance_loss_reduction": ("mean", None),
    "nsd_entropy_loss_reduction": ("mean", None),
    "pascal_weighting": ("gaussian", None),
    "reverse_source": (False, None),
}


# What shows that a directory is a run (of bin/train, or a bin/grid run before bin/train started).
_RUN_MARKERS = frozenset({HPARAMS_FILE, FLAGS_FILE, ENVIRONMENT_FILE, "validation.json", "grid.json",
                          "checkpoint"})
# What a directory may hold and still be new: locks and the log bin/grid opens before bin/train.
_NOT_A_RUN_YET = frozenset({directory_lock.LOCK_FILE, "grid.lock", "train.log"})


class RunDirectoryError(ValueError):
    """An output directory that holds a run this command cannot continue."""


def hparams_path(output_dir: str) -> str:
    return os.path.join(output_dir, HPARAMS_FILE)


def flags_path(output_dir: str) -> str:
    return os.path.join(output_dir, FLAGS_FILE)


def load_hparams(output_dir: str) -> Optional[HParams]:
    """The saved hparams of the run in `output_dir`, or None for a new run.

    Raises:
        InputError: `hparams.json` exists but is not a saved `HParams`.
    """
    path = hparams_path(output_dir)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as stream:
        text = stream.read()
    try:
        saved = HParams.from_json(text)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as error:
        line = getattr(error, "lineno", None)
        raise InputError(path, line, f"not a saved hparams file: {error}") from error
    _check_names(output_dir, path, saved)
    return saved


def _check_names(output_dir: str, path: str, saved: HParams) -> None:
    """Refuses names its hparams set lacks; fills names the file lacks from the set, with a warning.

    A name the model does not read would be ignored without a word (on the
    command line an unknown hparam is refused); a missing one would fail
    deep in the model. A set that gained a parameter after the run was
    trained gives its default, which is how a new parameter keeps the old
    behaviour. Without a registered `--hparams_set` in `flags.txt` (a
    user's set whose `--usr_dir` is not loaded) there is nothing to check
    against.
    """
    set_name = load_flags(output_dir).get("hparams_set")
    if not set_name or set_name not in registry.hparams_sets:
        return
    reference = registry.hparams(set_name)
    unknown = sorted(set(saved.values()) - set(reference.values()))
    if unknown:
        raise InputError(path, None, f"holds hparams that hparams set {set_name} does not have: "
                         f"{', '.join(unknown)}; remove them (an edit by hand?) or retrain",
                         reason="unknown hparams")
    missing = sorted(set(reference.values()) - set(saved.values()))
    for name in missing:
        saved.define_like(reference, name)
    if missing:
        logging.warning("%s lacks %s; using hparams set %s's default%s: %s", path,
                        ", ".join(missing), set_name, "s" if len(missing) > 1 else "",
                        ", ".join(f"{name}={reference.get(name)!r}" for name in missing))


def load_flags(output_dir: str) -> dict[str, str]:
    """`{name: value}` from the run's `flags.txt` ({} when there is none).

    Raises:
        InputError: a line that is not `--name=value` (or `--[no]name`).
    """
    path = flags_path(output_dir)
    if not os.path.exists(path):
        return {}
    values = {}
    for line_number, line in read_lines(path):
        line = line.strip()
        if not line:
            continue
        if not line.startswith("--"):
            raise InputError(path, line_number, f"expected --name=value, got {line!r}")
        name, separator, value = line[2:].partition("=")
        values[name] = value if separator else "true"
    return values


def write_run_files(output_dir: str, hparams: HParams, flag_lines: Sequence[str]) -> None:
    """Writes `hparams.json` and `flags.txt` (atomically) into `output_dir`.

    Args:
        output_dir: the run's directory (created if missing).
        hparams: the run's `HParams`.
        flag_lines: the flags as `--name=value` strings.
    """
    os.makedirs(output_dir, exist_ok=True)
    atomic_write_text(hparams_path(output_dir), hparams.to_json() + "\n")
    atomic_write_text(flags_path(output_dir), "".join(f"{line}\n" for line in flag_lines))
    record_environment(output_dir)


def environment() -> dict:
    """The Python and package versions (None: not installed) and the code's git commit."""
    versions = {}
    for name in RECORDED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(), "platform": platform.platform(),
            "packages": versions, "git": _git_state()}


def _git_state():
    """`{"commit", "modified"}` of the checkout holding this code, or None outside one."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        modified = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "modified": modified}


def record_environment(output_dir: str) -> None:
    """Appends this start's `environment()` to the run's `environment.json`."""
    path = os.path.join(output_dir, ENVIRONMENT_FILE)
    starts = read_json_record(
        path, "environment record", "move it away to start a new one",
        lambda value: isinstance(value, list) and all(isinstance(start, dict) for start in value),
        "expected a list of starts, each an object", default=[])
    atomic_write_text(path, json.dumps(starts + [environment()], indent=2) + "\n")


def holds_checkpoint(output_dir: str) -> bool:
    """Whether the run has trained: a directory without a checkpoint holds back no new command."""
    return bool(checkpoints.latest_checkpoint(output_dir)
                or glob.glob(os.path.join(glob.escape(output_dir), "*.index")))


def _writes_the_run():
    """False for the tasks of a multi-worker cluster other than its chief (they save elsewhere)."""
    try:
        config = json.loads(os.environ.get("TF_CONFIG") or "{}")
        task = config.get("task") or {}
        cluster = config.get("cluster") or {}
    except (ValueError, AttributeError):
        return True  # distribution.py names a bad TF_CONFIG
    kind = task.get("type")
    if not kind or kind == "chief":
        return True
    return kind == "worker" and task.get("index", 0) == 0 and "chief" not in cluster


def _check_not_foreign(output_dir):
    """Refuses a directory of other files: training would mix its own among them (`best/`, events)."""
    if not os.path.isdir(output_dir):
        return
    names = sorted(set(os.listdir(output_dir)) - _NOT_A_RUN_YET)
    if not names or any(name in _RUN_MARKERS for name in names) or checkpoints.latest_checkpoint(
            output_dir) or glob.glob(os.path.join(glob.escape(output_dir), "*.index")):
        return
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    raise RunDirectoryError(
        f"--output_dir={output_dir} holds files that are not a training run's ({shown}); training "
        f"would write its checkpoints, best/ and event files among them. Give a new or empty "
        f"directory.")


def check_same_run(output_dir: str, identity: Mapping[str, Any]) -> None:
    """Refuses to continue a run of another model or problem.

    Args:
        output_dir: the run's directory.
        identity: `{flag name: value}` that must match the saved flags, e.g.
            `{"model": "dep_parse", "problem": "synthetic_syntax_reorder"}`.

    The directory is this process's from here on (`directory_lock`, until
    the program ends): a second trainer, averaging or grid is refused.

    Raises:
        RunDirectoryError: a saved value differs, the directory holds
            checkpoints without the run's `hparams.json`, or it holds files
            and none of a run (a directory of the user's, or `/`).
        DirectoryInUseError: another process works in the directory.
    """
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise RunDirectoryError(f"--output_dir={output_dir} is a file, not a directory")
    _check_not_foreign(output_dir)
    lock = directory_lock.acquire(output_dir) if _writes_the_run() else None
    try:
        _check_identity(output_dir, identity)
    except RunDirectoryError:
        if lock is not None:
            directory_lock.release(lock)  # refused: the directory is left as it was
        raise


def _check_identity(output_dir: str, identity: Mapping[str, Any]) -> None:
    """`check_same_run`'s checks of the directory's contents, under its lock."""
    saved_hparams = os.path.exists(hparams_path(output_dir))
    if not saved_hparams and checkpoints.latest_checkpoint(output_dir):
        raise RunDirectoryError(
            f"--output_dir={output_dir} holds checkpoints but no {HPARAMS_FILE}; "
            f"it is not a run of this program. Choose another --output_dir.")
    saved_flags = load_flags(output_dir)
    conflicts = [f"--{name}={saved_flags[name]} (this command: --{name}={value})"
                 for name, value in identity.items()
                 if name in saved_flags and saved_flags[name] != str(value)]
    if conflicts and not holds_checkpoint(output_dir):
        # Nothing was trained: the record of an attempt that failed early blocks nothing.
        logging.warning("--output_dir=%s records another run (%s) but holds no checkpoint; "
                        "starting this one there", output_dir, "; ".join(conflicts))
    elif conflicts:
        raise RunDirectoryError(
            f"--output_dir={output_dir} holds a different run: {'; '.join(conflicts)}. "
            f"Choose another --output_dir to start a new run.")


def reconcile_hparams(output_dir: str, saved: Optional[HParams],
                      requested: Optional[HParams]) -> HParams:
    """The hparams of a run: the saved ones, unless the command asks for others.

    Args:
        output_dir: the run's directory (for the message).
        saved: the run's saved `HParams`, or None for a new run.
        requested: the `HParams` the command line asks for, or None when the
            command gives no hparams set (resume with the saved ones).

    Returns:
        The `HParams` to train with.

    A run directory without a checkpoint never holds the command back:
    its saved hparams are those of an attempt that trained nothing.

    Raises:
        HParamsError: a requested value is out of its range.
        RunDirectoryError: neither is given, or `requested` differs from
            `saved` of a run that has a checkpoint; the message lists every
            difference.
    """
    if requested is not None:
        requested.validate()
    if saved is None:
        if requested is None:
            raise RunDirectoryError(
                f"--output_dir={output_dir} holds no {HPARAMS_FILE}: a new run needs --hparams_set")
        return requested
    if requested is None:
        return saved
    # A run saved before a parameter existed (or resumed once since, which
    # wrote the old value into its hparams.json) keeps the old value.
    added = {name: value for name, value in ADDED_PARAMETERS.items()
             if name in requested and (name not in saved or saved.get(name) == value[0])}
    if added:
        saved = saved.copy()
        requested = requested.copy()
        for name, (value, type_name) in added.items():
            if name not in saved:
                saved.define(name, value, type_name)
            if requested.get(name) != value:
                logging.warning("the run in --output_dir=%s was saved before hparam %s existed: "
                                "it keeps %s=%r, how it was trained (this command asks for %r)",
                                output_dir, name, name, value, requested.get(name))
                requested.set(name, value)
    differences = saved.differences(requested)
    if differences and not holds_checkpoint(output_dir):
        logging.warning("--output_dir=%s holds no checkpoint: replacing its saved hparams (%s)",
                        output_dir, ", ".join(sorted(differences)))
        return requested
    if differences:
        listed = "; ".join(f"{name}: saved {old!r}, requested {new!r}"
                           for name, (old, new) in sorted(differences.items()))
        raise RunDirectoryError(
            f"the run in --output_dir={output_dir} was trained with other hparams "
            f"than this command asks for ({listed}). Resume without --hparams_set/--hparams "
            f"or with matching values, or choose another --output_dir.")
    return saved
