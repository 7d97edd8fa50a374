"""The JSON records datagen writes, and how they are read back.

* `<name>.datagen.json`, the completion record, written last by a run (or
  by the last of its tasks): data counts as generated only when it is there
  and every file it lists is present (`read_completion_record`);
* `<name>.datagen-vocab.json`, written by the vocabulary pass: tasks check
  that their vocabularies were built with their options;
* `<name>.datagen-task-TTTTT-of-KKKKK.json`, one per finished task.

Each holds the `request` it was generated for (problem options and
`max_examples`); see `syntax_t2t.datagen.writer`.
"""

import contextlib
import json
import os
from typing import Optional


def read_json(path) -> Optional[dict]:
    """The JSON object in `path`, or None when it is missing or not JSON."""
    with contextlib.suppress(FileNotFoundError, json.JSONDecodeError):
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    return None


def request(record: dict) -> dict:
    """What a record was generated for: `options` and `max_examples`."""
    return {"options": record.get("options"), "max_examples": record.get("max_examples")}


class DataOptionsError(ValueError):
    """Complete data in `--data_dir` was generated with other options than asked for now."""


def check_same_request(problem_name: str, data_dir: str, recorded: dict, requested: dict) -> None:
    """Raises `DataOptionsError` naming the keys in which `requested` differs from `recorded`.

    Keeping the old data would let a user train on what they did not ask for
    (e.g. word-level data after asking for subwords), so a difference is an
    error with the two ways on, not a note.

    Args:
        problem_name: for the message.
        data_dir: for the message.
        recorded, requested: `request` dicts (options and `max_examples`).
    """
    def flat(entry: dict) -> dict:
        return dict(entry.get("options") or {}, max_examples=entry.get("max_examples"))

    old, new = flat(recorded), flat(requested)
    differing = [f"{key}={_shown(new.get(key))} (the data has {_shown(old.get(key))})"
                 for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
    if differing:
        raise DataOptionsError(
            f"{data_dir} holds complete {problem_name} data generated with other options: "
            f"{'; '.join(differing)}. Pass --overwrite to regenerate it there, or give another "
            f"--data_dir")


def _shown(value) -> str:
    # As the user types options (--problem_options, --max_examples); unset is `none`.
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def read_completion_record(path: str) -> tuple[Optional[dict], str]:
    """The completion record in `path` if complete, else None and why not.

    A record whose files (listed by name, in its directory) are not all
    present counts as incomplete.
    """
    if not os.path.isfile(path):
        return None, f"{path} does not exist"
    with open(path, encoding="utf-8") as stream:
        try:
            record = json.load(stream)
        except json.JSONDecodeError as error:
            return None, f"{path} is not JSON ({error})"
    files = list(record.get("vocabularies", {}).values())
    for shard_names in record.get("shards", {}).values():
        files.extend(shard_names)
    if not files:
        return None, f"{path} lists no files"
    directory = os.path.dirname(path)
    missing = [name for name in files if not os.path.isfile(os.path.join(directory, name))]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        return None, f"{len(missing)} of the {len(files)} files it generated are missing: {shown}"
    return record, ""
