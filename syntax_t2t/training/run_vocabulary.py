"""The vocabularies and problem options a run was trained with, kept with the run.

A model's embedding rows mean the words of the vocabularies it was trained
with. Data regenerated after training (another seed, or another
`train_size`, which reorders the words), a `--data_dir` pointing elsewhere,
a symbolic link repointed or `bin/datagen --overwrite` under a running
training give vocabularies of the same names and sizes, and the model would
decode (or go on training) with every row meaning another word. So a run
keeps, as fairseq's and Marian's model directories do, a copy of every
vocabulary file its data is encoded with (words or subwords, and the
derived ones: dependency labels, UPOS, XPOS, lemmas, constituent labels) in
`<run>/vocabularies/`, and `<run>/vocabularies.json` records their SHA-256
fingerprints and the problem's options. Every later use of the run (resuming
in bin/train, bin/decode, bin/average_checkpoints, bin/export, bin/analyze
and bin/grid's steps through them) refuses data whose vocabularies or options
differ, naming the file and both fingerprints.

Runs trained before the record existed still work: bin/decode and the
others warn that they cannot check, and the next resume records the data it
trains on (warning that the earlier steps could not be checked).

No TensorFlow here: it runs under every Keras backend.
"""

import json
import os
import shutil
import tempfile
from typing import Optional

from absl import logging

from syntax_t2t.errors import InputError
from syntax_t2t.io_utils import atomic_write_text, read_json_record, sha256_file
from syntax_t2t.training import run_directory

RECORD_FILE = "vocabularies.json"
COPY_DIR = "vocabularies"
#: What a run directory (and a `best/` or averaged model directory made from it) holds of this.
RUN_FILES = (RECORD_FILE, COPY_DIR)
# Options that decide only how the data is stored, not what an id means.
_STORAGE_OPTIONS = frozenset({"num_shards"})
_SHOWN_DIGITS = 16
_WORD_VOCABULARIES = frozenset({"inputs", "targets", "lemma"})


class RunVocabularyError(run_directory.RunDirectoryError):
    """Data whose vocabularies or problem options are not the ones a run was trained with."""


def fingerprint(path: str) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    return sha256_file(path)


def data_identity(problem, data_dir: str) -> dict:
    """What a model trained on `data_dir` depends on: the problem, its options, its vocabularies.

    Args:
        problem: the `Problem`, with the options of the data in `data_dir`.
        data_dir: the generated data.

    Returns:
        `{"problem", "options", "vocabularies": {name: {"file", "sha256"}}}`.
    """
    paths = problem.vocabulary_paths(data_dir)
    return {"problem": problem.name,
            "options": json.loads(json.dumps(problem.options(), default=str)),
            "vocabularies": {name: {"file": os.path.basename(path),
                                    "sha256": fingerprint(path) if os.path.isfile(path) else None}
                             for name, path in sorted(paths.items())}}


def record_path(run_dir: str) -> str:
    return os.path.join(run_dir, RECORD_FILE)


def load_record(run_dir: str) -> Optional[dict]:
    """The run's record, or None for a run made before runs kept one.

    Raises:
        InputError: the record is there but damaged.
    """
    return read_json_record(
        record_path(run_dir), "vocabulary record", "restore it, or train a new run",
        lambda record: isinstance(record, dict) and isinstance(record.get("vocabularies"), dict),
        'no "vocabularies"')


def _short(digest: Optional[str]) -> str:
    return "missing" if digest is None else f"sha256 {digest[:_SHOWN_DIGITS]}"


def _refusal(difference: str, run_dir: str) -> RunVocabularyError:
    """The error of `difference`, with the ways on."""
    copy = os.path.join(run_dir, COPY_DIR)
    kept = (f"The run keeps a copy of its vocabularies in {copy}/; give" if os.path.isdir(copy)
            else "Give")
    return RunVocabularyError(
        f"{difference}. {kept} the --data_dir the run was trained on (or data regenerated with "
        f"its options, recorded in {record_path(run_dir)}), or train a new run on this data")


def differences(record: dict, identity: dict, run_dir: str, data_dir: str) -> Optional[str]:
    """One sentence on the first way `identity` (of `data_dir`) is not `record`, or None."""
    if record.get("problem") not in (None, identity["problem"]):
        return (f"--data_dir={data_dir} is read as problem {identity['problem']}, but the run in "
                f"{run_dir} was trained on problem {record['problem']}")
    saved, found = record["vocabularies"], identity["vocabularies"]
    for name in sorted(set(saved) | set(found)):
        old, new = saved.get(name), found.get(name)
        if old is None:
            return (f"--data_dir={data_dir} has a {name} vocabulary ({new['file']}) that the run "
                    f"in {run_dir} was not trained with")
        path = os.path.join(data_dir, old["file"] if new is None else new["file"])
        new_digest = None if new is None else new["sha256"]
        if new_digest != old.get("sha256"):
            entry = "word" if name in _WORD_VOCABULARIES else "tag or label"
            return (f"vocabulary file {path} ({_short(new_digest)}) is not the one the run in "
                    f"{run_dir} was trained with ({_short(old.get('sha256'))}): every embedding "
                    f"row would mean another {entry}")
    old_options, new_options = record.get("options") or {}, identity["options"]
    changed = [f"{key}={json.dumps(new_options.get(key))} (the run: "
               f"{json.dumps(old_options.get(key))})"
               for key in sorted(set(old_options) | set(new_options))
               if key not in _STORAGE_OPTIONS and old_options.get(key) != new_options.get(key)]
    if changed:
        return (f"--data_dir={data_dir} holds {identity['problem']} data generated with other "
                f"options than the run in {run_dir} was trained on: {'; '.join(changed)}")
    return None


def check(run_dir: Optional[str], problem, data_dir: str) -> None:
    """Refuses to use the run in `run_dir` with data of other vocabularies or options.

    For bin/decode, bin/average_checkpoints, bin/export and bin/analyze
    (through `decoding/model_loading.py`). A run without a record (trained
    before runs kept one) is used with a warning that nothing could be
    checked.

    Raises:
        RunVocabularyError: a vocabulary file or an option differs (named).
        InputError: the record is damaged.
    """
    if not run_dir:
        return
    record = load_record(run_dir)
    if record is None:
        logging.warning("the run in %s records no vocabularies (it was trained before runs kept "
                        "them): cannot check that those of --data_dir=%s are the ones it was "
                        "trained with", run_dir, data_dir)
        return
    problem_of = differences(record, data_identity(problem, data_dir), run_dir, data_dir)
    if problem_of:
        raise _refusal(problem_of, run_dir)


def check_for_training(output_dir: str, problem, data_dir: str) -> None:
    """`check` for bin/train, before it takes the data: a resumed run trains on its own data.

    A run directory without a checkpoint is not held back (its record is of
    an attempt that trained nothing; `record` replaces it), and a run made
    before runs kept records is resumed with a warning.

    Raises:
        RunVocabularyError: the run has checkpoints and the data differs.
    """
    record = load_record(output_dir)
    holds_checkpoint = run_directory.holds_checkpoint(output_dir)
    if record is None:
        if holds_checkpoint:
            logging.warning("the run in %s records no vocabularies (it was trained before runs "
                            "kept them): cannot check that the steps trained so far used those "
                            "of --data_dir=%s; recording them now, so later uses are checked",
                            output_dir, data_dir)
        return
    problem_of = differences(record, data_identity(problem, data_dir), output_dir, data_dir)
    if problem_of and not holds_checkpoint:
        logging.warning("--output_dir=%s holds no checkpoint: replacing its record of the data "
                        "(%s)", output_dir, problem_of)
    elif problem_of:
        raise _refusal(problem_of, output_dir)


def record(output_dir: str, problem, data_dir: str) -> None:
    """Keeps the data's vocabularies (a copy and their fingerprints) and options in the run.

    The copy is built beside its place and swapped in, then the record is
    written: a kill leaves the old record (checked against the data at the
    next start) or the new one with its copy. Nothing is written when the
    record already says this.
    """
    identity = data_identity(problem, data_dir)
    copy = os.path.join(output_dir, COPY_DIR)
    existing = load_record(output_dir)
    if existing == identity and all(
            os.path.isfile(os.path.join(copy, entry["file"]))
            for entry in identity["vocabularies"].values()):
        return
    staging = tempfile.mkdtemp(prefix=f".{COPY_DIR}.", suffix=".tmp", dir=output_dir)
    try:
        for name, path in problem.vocabulary_paths(data_dir).items():
            shutil.copyfile(path, os.path.join(staging, identity["vocabularies"][name]["file"]))
        old = None
        if os.path.isdir(copy):
            old = tempfile.mkdtemp(prefix=f".{COPY_DIR}.", suffix=".old", dir=output_dir)
            os.rmdir(old)
            os.replace(copy, old)
        os.replace(staging, copy)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    atomic_write_text(record_path(output_dir), json.dumps(identity, indent=2, sort_keys=True) + "\n")


def copy_into(run_dir: str, directory: str) -> None:
    """Copies the run's record and vocabularies into a model directory made from it
    (`best/`, an averaging), which bin/decode then checks as it checks the run."""
    if os.path.isfile(record_path(run_dir)):
        shutil.copyfile(record_path(run_dir), record_path(directory))
    copy = os.path.join(run_dir, COPY_DIR)
    if os.path.isdir(copy):
        shutil.copytree(copy, os.path.join(directory, COPY_DIR))
