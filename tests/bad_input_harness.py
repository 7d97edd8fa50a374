"""The harness of the bad-input tables (tests/test_bad_input*.py and their neighbours).

Every row runs a real program (`bin/datagen`, `bin/train`, `bin/decode`)
the way its executable does, `common.run` included, but in this process
(starting TensorFlow anew per row would take minutes): a bad input must end
the program with status 1 and one line `error: <file>:<line>: <problem>` on
stderr (no traceback), or, where the program skips bad examples, finish and
report the skip. `check_case` asserts what a `Case` row promises; the
`shared` fixture holds what rows share (a small data directory, an untrained
run, a CzEng `--usr_dir`).
"""

import dataclasses
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf
from absl import app, flags
from absl.testing import flagsaver

from syntax_t2t import registry
from syntax_t2t.cli import (analyze, average_checkpoints, datagen, decode, evaluate, export,
                            parse, registration, train)
from syntax_t2t.training import run_directory
from syntax_t2t.training.checkpoints import model_weights


FLAGS = flags.FLAGS


REPO = Path(__file__).resolve().parents[1]


PROBLEM = "synthetic_syntax_reorder"


TINY = ("hidden_size=16,filter_size=32,num_heads=2,num_encoder_layers=1,num_decoder_layers=1,"
        "batch_size=96,max_length=12,learning_rate_warmup_steps=10")


PROGRAMS = {"datagen": datagen, "train": train, "decode": decode, "evaluate": evaluate,
            "analyze": analyze, "average_checkpoints": average_checkpoints, "export": export,
            "parse": parse}


def run_program(name, capsys, **flag_values):
    """Runs `bin/<name>` in this process with the given flag values.

    As the executable does, `common.run` imports `--usr_dir` and the
    registry, calls the program's `main` and turns user errors into one
    `error:` line and status 1; only absl's command-line parsing is left
    out (the values are set directly).

    Returns:
        (exit status, stdout, stderr).
    """
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["bad_input"])
    status = 0
    with flagsaver.flagsaver(**flag_values), \
            mock.patch.object(app, "run", lambda main: main([f"bin/{name}"])):
        try:
            PROGRAMS[name].run()
        except SystemExit as exit_:
            status = 0 if exit_.code is None else exit_.code
    out, err = capsys.readouterr()
    return status, out, err


def run_executable(name, *args, timeout=300):
    """Runs `bin/<name>` as a process; returns (status, stdout, stderr)."""
    completed = subprocess.run([sys.executable, str(REPO / "bin" / name), *args],
                               capture_output=True, text=True, timeout=timeout, cwd=REPO)
    return completed.returncode, completed.stdout, completed.stderr


def error_line(err):
    """The `error:` line of a program's stderr (absl's log lines go there too)."""
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err[-3000:]
    return lines[0]


def generated_data(data_dir):
    """A small generated `synthetic_syntax_reorder` data directory (made once per path)."""
    data_dir = str(data_dir)
    if not os.path.exists(os.path.join(data_dir, f"{PROBLEM}.complete.json")):
        registration.import_all()
        problem = registry.problems.get(PROBLEM)(train_size=200, dev_size=20, test_size=5,
                                                 max_length=8)
        problem.generate_data(data_dir, os.path.join(os.path.dirname(data_dir), "raw"))
    return data_dir


def untrained_run(run_dir, data_dir, model_name="transformer", hparams_text=TINY):
    """A run directory whose checkpoint holds a model's initial weights, saved as training does."""
    problem = registry.problem(PROBLEM)
    hparams = registry.hparams("transformer_tiny").parse(hparams_text)
    model = registry.model(model_name)(hparams, problem.vocab_sizes(data_dir))
    tf.random.set_seed(0)
    model({"inputs": np.ones([1, 3], np.int32), "targets": np.ones([1, 3], np.int32),
           "src_heads": np.zeros([1, 3], np.int32)})
    step = tf.Variable(1, dtype=tf.int64)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model_weights=model_weights(model), step=step), str(run_dir),
        max_to_keep=1, checkpoint_name="ckpt")
    manager.save(checkpoint_number=1)
    run_directory.write_run_files(str(run_dir), hparams, [
        f"--problem={PROBLEM}", f"--model={model_name}", f"--data_dir={data_dir}"])
    return str(run_dir)


def conllu_sentence(words, heads=None, extra=()):
    """A CoNLL-U block: word i depends on `heads[i]` (default: the first word is the root)."""
    heads = heads or [0] + [1] * (len(words) - 1)
    rows = ["\t".join([str(i), word, word.lower(), "NOUN", "NN", "_", str(head),
                       "root" if head == 0 else "dep", "_", "_"])
            for i, (word, head) in enumerate(zip(words, heads), start=1)]
    return "\n".join(list(extra) + rows) + "\n\n"


GOOD_CONLLU = conllu_sentence(["Hunde", "bellen", "laut"])  # lines 1-3, blank line 4


CZENG_USR_DIR = '''
from syntax_t2t.problems.czeng import CzengSyntax
from syntax_t2t import registry


@registry.register_problem
class CzengOneFileBadInputTest(CzengSyntax):
    """CzEng 1.7 export lines from <tmp_dir>/czeng.txt: dev line 1, test line 2, train the rest."""

    single_file = "czeng.txt"
    dev_size = 1
    test_size = 1
'''


def czeng_token(position, head, form="slovo", afun="Sb"):
    return f"{form}|{form}|NNNS1-----A----|{position}|{head}|{afun}"


def czeng_line(source=None, target=None, blocks=15):
    """An export line: blocks 3 and 7 (0-based 2 and 6) hold the Czech and English a-layers."""
    values = [f"pair-{blocks}"] + ["-"] * (blocks - 1)
    values[2] = source if source is not None else " ".join(
        [czeng_token(1, 2), czeng_token(2, 0, "běží", "Pred")])
    values[6] = target if target is not None else " ".join(
        [czeng_token(1, 2, "dog"), czeng_token(2, 0, "runs", "Pred")])
    return "\t".join(values)


@dataclasses.dataclass(frozen=True)
class Case:
    """One bad input.

    Attributes:
        id: the row's name.
        run: `(workspace, capsys) -> (status, out, err)`.
        error: a regex the `error:` line must match in full (None: the
            program must succeed).
        output: a regex stdout must contain (a reported skip).
        check: further assertions on the workspace after the run.
        warning: a regex stderr must contain (a warning, with `{kind}` paths).
    """

    id: str
    run: Callable
    error: Optional[str] = None
    output: Optional[str] = None
    check: Optional[Callable] = None
    warning: Optional[str] = None


def loc(kind, line=None):
    """A regex for `<file of kind>:<line>` (the file is known once the row ran)."""
    return f"{{{kind}}}" + ("" if line is None else f":{line}")


def train_with(**flag_values):
    def run(ws, capsys):
        values = dict(problem=PROBLEM, model="transformer", hparams_set="transformer_tiny",
                      hparams=TINY, data_dir=ws.shared.data_dir, output_dir=str(ws.tmp / "run"),
                      train_steps=1, eval_steps=1)
        values.update({name: value(ws) if callable(value) else value
                       for name, value in flag_values.items()})
        return run_program("train", capsys, **values)
    return run


def decode_input(text, name="input.txt", **flag_values):
    def run(ws, capsys):
        path = ws.tmp / name
        path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        ws.files.update(input=str(path), output=str(ws.tmp / "output.txt"))
        values = dict(output_dir=ws.shared.run_dir, decode_from_file=str(path),
                      decode_to_file=str(ws.tmp / "output.txt"),
                      decode_hparams="beam_size=2,extra_length=3")
        values.update(flag_values)
        return run_program("decode", capsys, **values)
    return run


def output_lines(count, empty=()):
    def check(ws):
        lines = (ws.tmp / "output.txt").read_text(encoding="utf-8").split("\n")
        assert lines[-1] == "" and len(lines) - 1 == count, lines
        assert [i for i, line in enumerate(lines[:-1], start=1) if not line] == list(empty)
    return check


@dataclasses.dataclass
class Shared:
    data_dir: str
    run_dir: str
    czeng_usr_dir: str


@dataclasses.dataclass
class Workspace:
    tmp: Path
    shared: Shared
    index: int
    files: dict = dataclasses.field(default_factory=dict)
    notes: dict = dataclasses.field(default_factory=dict)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_input_shared")
    data_dir = generated_data(root / "data")
    # One directory for every CzEng row: a problem name registers once per process.
    usr_dir = root / "usr_czeng_bad_input"
    usr_dir.mkdir()
    (usr_dir / "__init__.py").write_text(CZENG_USR_DIR, encoding="utf-8")
    return Shared(data_dir=data_dir, run_dir=untrained_run(root / "run", data_dir),
                  czeng_usr_dir=str(usr_dir))


def with_paths(pattern, ws):
    """`pattern` with each `{kind}` replaced by the escaped path of that kind."""
    for kind, path in ws.files.items():
        pattern = pattern.replace(f"{{{kind}}}", re.escape(path))
    return pattern


def expected_pattern(case, ws):
    return "error: " + with_paths(case.error, ws)


def check_case(case, ws, capsys):
    """Runs a row and asserts what it promises (shared by the tables of the other modules).

    Warnings are looked for in stderr and in the log records (absl's log
    lines reach the terminal, not pytest's capture).
    """
    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: records.append(record.getMessage())
    logging.getLogger().addHandler(handler)
    try:
        status, out, err = case.run(ws, capsys)
    finally:
        logging.getLogger().removeHandler(handler)
    assert "Traceback" not in err, err[-3000:]
    if case.error is not None:
        assert status == 1, (out, err[-3000:])
        line = error_line(err)
        assert re.fullmatch(expected_pattern(case, ws), line), line
    else:
        assert status == 0, err[-3000:]
    if case.output is not None:
        assert re.search(case.output, out), out
    if case.warning is not None:
        warnings = err + "\n".join(records)
        assert re.search(with_paths(case.warning, ws), warnings), warnings[-3000:]
    if case.check is not None:
        case.check(ws)

