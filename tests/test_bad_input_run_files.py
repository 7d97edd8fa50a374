"""Damaged run files (#35 item 10): one `error:` line naming the file, or a warning and the right result.

Same harness and promise as `test_bad_input.py`: an unknown name in
`hparams.json` is refused as on the command line, a missing one takes the
set's default with a warning, a `validation.json` or `environment.json`
that is valid JSON of the wrong shape is named, not a traceback, and a
`flags.txt` cut short is not reported as absent.
"""

import json
import os
import shutil

import pytest
from bad_input_harness import Case, Workspace, check_case, decode_input, loc, output_lines, shared, train_with

from syntax_t2t.training import run_directory

assert shared  # the harness's module fixture, imported for pytest to find


def run_with(edit):
    """A copy of the shared run that records its hparams set, edited by `edit(run_dir)`."""
    def make(ws):
        run = ws.tmp / "run"
        if not run.exists():
            shutil.copytree(ws.shared.run_dir, run)
            with open(run / run_directory.FLAGS_FILE, "a", encoding="utf-8") as stream:
                stream.write("--hparams_set=transformer_tiny\n")
            edit(ws, run)
        return str(run)
    return make


def edit_hparams(change):
    def edit(ws, run):
        path = run / run_directory.HPARAMS_FILE
        saved = json.loads(path.read_text(encoding="utf-8"))
        change(saved)
        path.write_text(json.dumps(saved), encoding="utf-8")
        ws.files["hparams"] = str(path)
    return edit


def add_unknown(saved):
    saved["values"]["bogus_key"], saved["types"]["bogus_key"] = 3, "int"


def drop_label_smoothing(saved):
    for table in (saved["values"], saved["types"], saved["element_types"]):
        table.pop("label_smoothing", None)


def write_file(name, text, kind):
    def edit(ws, run):
        (run / name).write_text(text, encoding="utf-8")
        ws.files[kind] = str(run / name)
    return edit


def cut_flags(ws, run):
    path = run / run_directory.FLAGS_FILE
    path.write_text(path.read_text(encoding="utf-8").split("\n")[0] + "\n", encoding="utf-8")


def decode_run(edit, **flag_values):
    def run(ws, capsys):
        return decode_input("a b\n", output_dir=run_with(edit)(ws), **flag_values)(ws, capsys)
    return run


def resume_run(edit):
    def run(ws, capsys):
        return train_with(output_dir=run_with(edit), train_steps=2)(ws, capsys)
    return run


CASES = [
    Case("hparams.json: a name its hparams set does not have",
         decode_run(edit_hparams(add_unknown)),
         loc("hparams") + ": holds hparams that hparams set transformer_tiny does not have: "
         r"bogus_key; remove them \(an edit by hand\?\) or retrain",
         check=lambda ws: not (ws.tmp / "output.txt").exists() or pytest.fail("decoded")),
    Case("hparams.json: a name missing takes the set's default, with a warning",
         decode_run(edit_hparams(drop_label_smoothing)),
         warning=r"hparams\.json lacks label_smoothing; using hparams set transformer_tiny's "
                 r"default: label_smoothing=0\.1", check=output_lines(1)),
    Case("validation.json: [] on resume",
         resume_run(write_file("validation.json", "[]\n", "validation")),
         loc("validation") + r': expected an object with a list of "evaluations", got list; '
         r"delete it to start the history again"),
    Case("environment.json: an object, not the list of starts",
         resume_run(write_file("environment.json", '{"python": "3.11"}\n', "environment")),
         loc("environment") + r": not the run's environment record \(expected a list of starts, "
         r"each an object\); move it away to start a new one"),
    Case("flags.txt: cut short, decoded without --model",
         decode_run(cut_flags, problem=None, model=None),
         r"missing --model: the run directory .*/run does not record it \(its flags\.txt lacks the "
         r"line \(cut short\?\)\)"),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_damaged_run_file(case, shared, tmp_path, capsys):
    check_case(case, Workspace(tmp=tmp_path, shared=shared, index=CASES.index(case)), capsys)
