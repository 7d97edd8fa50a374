"""Issue 35's cases: runs and data that could be mixed, overwritten, or read with the wrong inputs.

Same harness and promise as `test_bad_input.py` (status 1 and one `error:`
line naming what is wrong, or success with the reported warning), for the
families the hostile run of issue 35 found: directories two programs worked
in at once (item 1), outputs that are inputs (6), special directories (7),
full and read-only disks (8), numbers (11) and text (12). Each row failed
before its fix, except the ones that say what must keep working.
"""

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import unicodedata
from unittest import mock

import pytest
from bad_input_harness import (PROBLEM, REPO, Case, Workspace, check_case, decode_input,
                               output_lines, run_program, shared, train_with)
from test_bad_input_runs import (copy_data, copy_run, digest, evaluate_files,
                                 recorded_but_untrained, remember, tiny_with, unchanged)

from syntax_t2t import directory_lock, io_utils
from syntax_t2t.cli import evaluate
from syntax_t2t.decoding import inputs
from syntax_t2t.training import checkpoint_averaging

assert shared  # the harness's module fixture, imported for pytest to find


# One process per run or data directory (item 1) ---------------------------------------------
# Before, a second bin/train, averaging or datagen worked in a directory another process was
# working in (interleaved checkpoints; a run taken over; live temporaries deleted).

HOLDER = textwrap.dedent("""
    import sys
    from syntax_t2t import directory_lock
    directory_lock.acquire(sys.argv[1])
    print("held", flush=True)
    sys.stdin.read()
""")

IN_USE = (r"{flag}={held} is in use by another process \(pid {pid} on [^ ]+ since [0-9T:+-]+: "
          r".*-c {held}\); wait until it has finished, or choose another directory")


@contextlib.contextmanager
def held_by_another_process(ws, directory):
    """Another process holds `directory`'s lock (as a running bin/train would) meanwhile."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, directory], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert holder.stdout.readline() == "held\n"
        ws.files.update(held=directory, pid=str(holder.pid))
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
        holder.stdout.close()


def while_held(make_directory, program):
    """Runs `program(ws, capsys, directory)` while another process holds the directory."""
    def run(ws, capsys):
        directory = make_directory(ws)
        ws.notes["before"] = digest(ws.tmp / os.path.basename(directory))
        with held_by_another_process(ws, directory):
            return program(ws, capsys, directory)
    return run


def untouched(ws):
    name = os.path.basename(ws.files["held"])
    after = digest(ws.tmp / name)
    after.pop(directory_lock.LOCK_FILE, None)
    ws.notes["before"].pop(directory_lock.LOCK_FILE, None)
    assert after == ws.notes["before"]


def train_in(ws, capsys, directory, **flag_values):
    return train_with(output_dir=directory, **flag_values)(ws, capsys)


def live_temporary(ws):
    data = copy_data(ws)
    ws.files["temporary"] = os.path.join(data, f".{PROBLEM}-train-00000-of-00001.0123456789ab.tmp")
    open(ws.files["temporary"], "wb").close()
    return data


def temporary_kept(ws):
    untouched(ws)
    assert os.path.exists(ws.files["temporary"]), "the other process's temporary was deleted"


def killed_holder(ws, capsys):
    run = copy_run(ws)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, run], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert holder.stdout.readline() == "held\n"
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    holder.stdin.close()
    holder.stdout.close()
    return run_program("average_checkpoints", capsys, output_dir=run, num_last_checkpoints=1)


LOCK_CASES = [
    Case("lock: a second bin/train on a run directory in use",
         while_held(copy_run, train_in),
         IN_USE.format(flag="--output_dir", held="{held}", pid="{pid}"), check=untouched),
    Case("lock: bin/train of another model on a run in use that has no checkpoint yet",
         while_held(recorded_but_untrained, lambda ws, capsys, directory: train_in(
             ws, capsys, directory, model="transformer")),
         IN_USE.format(flag="--output_dir", held="{held}", pid="{pid}"), check=untouched),
    Case("lock: bin/datagen into a data directory in use",
         while_held(live_temporary, lambda ws, capsys, directory: run_program(
             "datagen", capsys, problem=PROBLEM, data_dir=directory, overwrite=True)),
         IN_USE.format(flag="--data_dir", held="{held}", pid="{pid}"), check=temporary_kept),
    Case("lock: bin/average_checkpoints of a run in use",
         while_held(copy_run, lambda ws, capsys, directory: run_program(
             "average_checkpoints", capsys, output_dir=directory, num_last_checkpoints=1)),
         IN_USE.format(flag="--output_dir", held="{held}", pid="{pid}"), check=untouched),
    Case("lock: bin/export into a run in use",
         while_held(copy_run, lambda ws, capsys, directory: run_program(
             "export", capsys, output_dir=directory, format="saved_model")),
         IN_USE.format(flag="--output_dir", held="{held}", pid="{pid}"), check=untouched),
    Case("lock: the lock of a killed process is no lock", killed_holder,
         output=r"averaged 1 checkpoints \(ckpt-1\) into .*/run/averaged/ckpt-1"),
]


# Outputs that are inputs (item 6) ----------------------------------------------------------
# Before, each replaced the user's file and exited 0.

def same_file(flag, kind):
    return (rf"--{flag}={{{kind}}}: cannot write the output: is the same file as "
            rf"--[a-z_]+=.*; it would be overwritten: give another file")


def unchanged_text(kind, text):
    def check(ws):
        with open(ws.files[kind], encoding="utf-8") as stream:
            assert stream.read() == text
    return check


def parse_onto_its_input(ws, capsys):
    path = ws.tmp / "sentences.txt"
    path.write_text("Psi štěkají.\n", encoding="utf-8")
    os.symlink(path, ws.tmp / "link.txt")
    ws.files.update(input=str(path), output=str(ws.tmp / "link.txt"))
    return run_program("parse", capsys, parser="spacy:no_such_model", input_file=str(path),
                       output_file=str(ws.tmp / "link.txt"))


OUTPUT_CASES = [
    Case("outputs: bin/decode --decode_to_file is --decode_from_file",
         lambda ws, capsys: decode_input("a b\nb c\n", decode_to_file=str(ws.tmp / "input.txt"))(
             ws, capsys), same_file("decode_to_file", "input"),
         check=unchanged_text("input", "a b\nb c\n")),
    Case("outputs: bin/decode --parse_to_file is --decode_to_file",
         lambda ws, capsys: decode_input("a b\n", parse_to_file=str(ws.tmp / "output.txt"))(
             ws, capsys), same_file("(?:decode|parse)_to_file", "output"),
         check=lambda ws: not (ws.tmp / "output.txt").exists() or pytest.fail("written")),
    Case("outputs: bin/evaluate --json_output is the hypotheses",
         evaluate_files("a b\n", "a c\n", json_output=lambda ws: ws.files["hyp"]),
         same_file("json_output", "hyp"), check=unchanged_text("hyp", "a c\n")),
    Case("outputs: bin/evaluate --json_output is the references",
         evaluate_files("a b\n", "a c\n", json_output=lambda ws: ws.files["ref"]),
         same_file("json_output", "ref"), check=unchanged_text("ref", "a b\n")),
    Case("outputs: bin/parse --output_file is its input through a symbolic link",
         parse_onto_its_input, same_file("output_file", "output"),
         check=unchanged_text("input", "Psi štěkají.\n")),
]


# Special directories (item 7) -----------------------------------------------------------------
# Before: averaging replaced the run's dev-best weights; training wrote its best/, checkpoints and
# events among a user's files, or into the root directory.

def run_with_best(ws):
    """A copy of the shared run with a best/ as training writes it (marked as the run's own)."""
    run = copy_run(ws)
    best = os.path.join(run, "best")
    os.mkdir(best)
    for name in os.listdir(run):
        if os.path.isfile(os.path.join(run, name)) and name != directory_lock.LOCK_FILE:
            shutil.copy(os.path.join(run, name), best)
    with open(os.path.join(best, checkpoint_averaging.AVERAGED_MARKER), "w",
              encoding="utf-8") as stream:
        json.dump({"run": os.path.realpath(run), "step": 1}, stream)
    ws.notes["best"] = digest(ws.tmp / "run" / "best")
    return best


def average_into_best(ws, capsys):
    best = run_with_best(ws)
    return run_program("average_checkpoints", capsys, output_dir=os.path.dirname(best),
                       averaged_dir=best, num_last_checkpoints=1)


def users_directory(ws):
    mine = ws.tmp / "mine"
    (mine / "best").mkdir(parents=True)
    (mine / "notes.txt").write_text("my notes\n", encoding="utf-8")
    return str(mine)


SPECIAL_CASES = [
    Case("special directories: --averaged_dir the run's best/", average_into_best,
         r"--averaged_dir=.*/run/best is the run's best/ \(paths resolved\), the weights of its "
         r"best evaluation, which training alone replaces; give a directory of its own",
         check=lambda ws: digest(ws.tmp / "run" / "best") == ws.notes["best"]
         or pytest.fail("best/ replaced")),
    Case("special directories: bin/train --output_dir a directory of the user's",
         train_with(output_dir=users_directory),
         r"--output_dir=.*/mine holds files that are not a training run's \(best, notes\.txt\); "
         r"training would write its checkpoints, best/ and event files among them\. Give a new or "
         r"empty directory\.",
         check=lambda ws: sorted(os.listdir(ws.tmp / "mine")) == ["best", "notes.txt"]
         and not os.listdir(ws.tmp / "mine" / "best") or pytest.fail("written into")),
    Case("special directories: bin/train --output_dir=/", train_with(output_dir="/"),
         r"--output_dir=/ holds files that are not a training run's \(.*\); training would write "
         r"its checkpoints, best/ and event files among them\. Give a new or empty directory\.",
         check=lambda ws: not os.path.exists("/hparams.json") or pytest.fail("wrote into /")),
]


# Full and read-only disks (item 8) -------------------------------------------------------------
# Before: Python's OSError 28 or 30 with a traceback.

def evaluate_on_a_disk_that(code, message):
    def run(ws, capsys):
        def failing_write(path, report):
            raise OSError(code, message, path)
        with mock.patch.object(evaluate, "write_json", failing_write):
            return evaluate_files("a b\n", "a b\n",
                                  json_output=lambda ws: str(ws.tmp / "scores.json"))(ws, capsys)
    return run


def datagen_overwrite_on_a_full_disk(ws, capsys):
    # TensorFlow's TFRecord writer, pointed at /dev/full: its real ResourceExhaustedError.
    from syntax_t2t.datagen import writer
    data = copy_data(ws)
    remember(ws, "data", ws.tmp / "data")
    real = writer.tf.io.TFRecordWriter
    with mock.patch.object(writer.tf.io, "TFRecordWriter", lambda path: real("/dev/full")):
        return run_program("datagen", capsys, problem=PROBLEM, data_dir=data, overwrite=True,
                           problem_options="train_size=150,dev_size=20,test_size=5,max_length=8")


def decode_on_a_full_disk(ws, capsys):
    def failing_write(path, text, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", path)
    with mock.patch.object(io_utils, "atomic_write_text", failing_write):
        return decode_input("a b\n")(ws, capsys)


def train_checkpoint_on_a_full_disk(ws, capsys):
    from syntax_t2t.checkpointing import directory_format

    def failing_savez(stream, **arrays):
        raise OSError(errno.ENOSPC, "No space left on device", stream.name)
    with mock.patch.object(directory_format.np, "savez", failing_savez):
        return train_with(train_steps=1)(ws, capsys)


DISK_CASES = [
    Case("disks: bin/decode --decode_to_file on a full disk", decode_on_a_full_disk,
         r"cannot write .*/output\.txt: No space left on device; the disk is full: free some "
         r"space, or write elsewhere"),
    Case("disks: bin/train's checkpoint on a full disk leaves no partial checkpoint",
         train_checkpoint_on_a_full_disk,
         r"cannot write .*/run/\.ckpt-1.*/arrays\.npz: No space left on device; the disk is full: "
         r"free some space, or write elsewhere",
         check=lambda ws: [pytest.fail(f"left: {name}") for name in os.listdir(ws.tmp / "run")
                           if name.startswith((".ckpt", "ckpt"))]),
    Case("disks: bin/datagen --overwrite on a full disk keeps the old data",
         datagen_overwrite_on_a_full_disk,
         r"cannot write /dev/full: No space left on device; the disk is full: free some space, or "
         r"write elsewhere",
         check=lambda ws: (unchanged("data")(ws), [
             pytest.fail(f"staging left: {name}") for name in os.listdir(ws.tmp)
             if name.endswith(".overwrite")])),
    Case("disks: bin/evaluate --json_output on a full disk",
         evaluate_on_a_disk_that(errno.ENOSPC, "No space left on device"),
         r"cannot write .*/scores\.json: No space left on device; the disk is full: free some "
         r"space, or write elsewhere"),
    Case("disks: bin/evaluate --json_output on a read-only file system",
         evaluate_on_a_disk_that(errno.EROFS, "Read-only file system"),
         r"cannot write .*/scores\.json: Read-only file system; the file system is read-only: "
         r"write elsewhere"),
]


# Numbers (item 11) -----------------------------------------------------------------------------

def datagen_with(options):
    def run(ws, capsys):
        return run_program("datagen", capsys, problem=PROBLEM, data_dir=str(ws.tmp / "data"),
                           problem_options=options)
    return run


NUMBER_CASES = [
    Case("numbers: min_length above max_length", datagen_with("min_length=9,max_length=4"),
         rf"problem options min_length=9, max_length=4 of {PROBLEM}: need 1 <= min_length <= "
         r"max_length", check=lambda ws: not (ws.tmp / "data").exists() or pytest.fail("written")),
    Case("numbers: vocab_size=1", datagen_with("vocab_size=1"),
         rf"{PROBLEM}: option vocab_size=1 leaves no room for a word: it must be above the 4 "
         r"reserved tokens \(<pad>, <EOS>, <UNK>, <ROOT>\)",
         check=lambda ws: not (ws.tmp / "data").exists() or pytest.fail("written")),
    Case("numbers: train_size=0", datagen_with("train_size=0"),
         rf"problem option train_size=0 of {PROBLEM}: need at least 1 training sentence",
         check=lambda ws: not (ws.tmp / "data").exists() or pytest.fail("written")),
    Case("numbers: --max_examples=0",
         lambda ws, capsys: run_program("datagen", capsys, problem=PROBLEM,
                                        data_dir=str(ws.tmp / "data"), max_examples=0),
         r"--max_examples=0 keeps no example; give at least 1, or leave it out to keep every "
         r"example", check=lambda ws: not (ws.tmp / "data").exists() or pytest.fail("written")),
    Case("numbers: learning_rate_warmup_steps=0 with Adam",
         train_with(hparams=tiny_with("learning_rate_warmup_steps", 0)),
         r"hparam learning_rate_warmup_steps=0 must be at least 1 with optimizer=adam \(its "
         r"schedule warms up over that many steps\)",
         check=lambda ws: not (ws.tmp / "run" / "ckpt-1").exists() or pytest.fail("trained")),
]


# Text (item 12) ------------------------------------------------------------------------------
# Before: a Windows-1250 file decoded to empty lines with exit 0; NUL bytes went into tokens; NFD
# text and zero-width spaces made known words unknown.

CZECH = "Příliš žluťoučký kůň\núpěl ďábelské ódy\nčeské slovo\n"

TEXT_CASES = [
    Case("text: a decode input wholly in Windows-1250", decode_input(CZECH.encode("cp1250")),
         r"{input}: 3 of its 3 lines cannot be read \(the first: {input}:1: invalid UTF-8: .*\); "
         r"is it in another encoding than UTF-8\? Convert it, e.g\. with iconv -f cp1250 -t utf-8",
         check=lambda ws: not (ws.tmp / "output.txt").exists() or pytest.fail("decoded")),
    Case("text: a NUL byte in a decode input line", decode_input(b"a b\nc \x00 d\nb c\n"),
         output=r"\(1 unusable input sentence left empty\)", check=output_lines(3, empty=[2])),
]


RELIABILITY_CASES = (LOCK_CASES + OUTPUT_CASES + SPECIAL_CASES + DISK_CASES + NUMBER_CASES
                     + TEXT_CASES)


@pytest.mark.parametrize("case", RELIABILITY_CASES, ids=[case.id for case in RELIABILITY_CASES])
def test_reliability(case, shared, tmp_path, capsys):
    check_case(case, Workspace(tmp=tmp_path, shared=shared,
                               index=RELIABILITY_CASES.index(case)), capsys)


def test_every_row_is_distinct():
    ids = [case.id for case in RELIABILITY_CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("variant", [
    unicodedata.normalize("NFD", "Dva psi štěkají"),  # decomposed: s + combining caron
    "Dva\u200b psi štěkají\u2060",  # zero width space, word joiner
    "\ufeffDva psi štěkají",  # a byte order mark inside the text (line 2)
])
def test_text_is_read_in_nfc_without_invisible_characters(variant, tmp_path):
    """Item 12: the same Czech words in NFD found 98 of 217 vocabulary words against 172 of 224.
    Every reader of text goes through `io_utils.decode_line` (datagen's corpora, decoding)."""
    path = tmp_path / "input.txt"
    path.write_bytes(("a\n" + variant + "\n").encode("utf-8"))
    assert [text for _, text in io_utils.read_lines(path)] == ["a", "Dva psi štěkají"]
    assert inputs.text_sentence(path, 2, variant.encode("utf-8")).source == [
        "Dva", "psi", "štěkají"]
