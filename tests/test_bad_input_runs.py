"""Bad runs, checkpoints, data and paths: the second table of `test_bad_input.py`'s cases.

Same harness and promise (status 1 and one `error:` line, or success with
the reported warning), for the families of damage and late errors:
averaging into a run's directory, truncated checkpoints and shards, hparam
values out of range, output paths that cannot be written (refused before the
work), silent partial work, `--usr_dir` names and checkpoints of another
run.
"""

import hashlib
import os
import re
import shutil
import textwrap

import pytest
from bad_input_harness import (GOOD_CONLLU, PROBLEM, TINY, Case, Workspace, check_case, decode_input,
                            loc, output_lines, run_executable, run_program, shared, train_with,
                            untrained_run)

from syntax_t2t import registry
from syntax_t2t.training import run_directory

assert shared  # the harness's module fixture, imported for pytest to find


#: The options the harness's shared data was generated with: bin/datagen refuses complete data of
#: other options (issue 34).
SHARED_DATA_OPTIONS = "train_size=200,dev_size=20,test_size=5,max_length=8"


def copy_run(ws):
    """A copy of the shared untrained run, for rows that may damage it."""
    run = ws.tmp / "run"
    if not run.exists():
        shutil.copytree(ws.shared.run_dir, run)
    return str(run)


def copy_data(ws):
    data = ws.tmp / "data"
    if not data.exists():
        shutil.copytree(ws.shared.data_dir, data)
    return str(data)


def digest(directory):
    """SHA-256 of every file of a directory, by name."""
    return {name: hashlib.sha256((directory / name).read_bytes()).hexdigest()
            for name in sorted(os.listdir(directory)) if (directory / name).is_file()}


def unchanged(kind):
    def check(ws):
        assert digest(ws.notes[kind]) == ws.notes[f"{kind} digest"]
    return check


def remember(ws, kind, directory):
    ws.notes[kind], ws.notes[f"{kind} digest"] = directory, digest(directory)


# Averaging --------------------------------------------------------------------------------

def average_into(make_averaged_dir, times=1):
    def run(ws, capsys):
        run_dir = copy_run(ws)
        remember(ws, "run", ws.tmp / "run")
        averaged_dir = make_averaged_dir(ws)
        for _ in range(times):
            result = run_program("average_checkpoints", capsys, output_dir=run_dir,
                                 averaged_dir=averaged_dir, num_last_checkpoints=1)
        return result
    return run


def symlink_to_run(ws):
    os.symlink(ws.tmp / "run", ws.tmp / "link")
    return str(ws.tmp / "link")


def other_run(ws):
    other = untrained_run(ws.tmp / "other", ws.shared.data_dir)
    remember(ws, "other", ws.tmp / "other")
    return other


AVERAGING_CASES = [
    Case("averaging: --averaged_dir a symbolic link to the run itself",
         average_into(symlink_to_run),
         r"--averaged_dir=.*/link is the run's own directory .*/run \(paths resolved\): its "
         r"checkpoints would be replaced; give a directory of its own", check=unchanged("run")),
    Case("averaging: --averaged_dir another run's directory", average_into(other_run),
         r"--averaged_dir=.*/other holds checkpoint, hparams\.json, flags\.txt of a training run "
         r"\(it is no averaged directory written by bin/average_checkpoints\); writing there would "
         r"replace them: give a new or empty directory", check=unchanged("other")),
    Case("averaging: --averaged_dir containing the run", average_into(lambda ws: str(ws.tmp)),
         r"--averaged_dir=.* contains the run .*/run; give a directory of its own",
         check=unchanged("run")),
    Case("averaging: averaging twice into the same directory replaces the first",
         average_into(lambda ws: str(ws.tmp / "run" / "averaged"), times=2),
         output=r"averaged 1 checkpoints \(ckpt-1\) into .*/averaged/ckpt-1",
         check=lambda ws: sorted(os.listdir(ws.tmp / "run" / "averaged")) == [
             "averaged_from.json", "ckpt-1", "flags.txt", "hparams.json"]
         or pytest.fail(os.listdir(ws.tmp / "run" / "averaged"))),
]


# Damaged checkpoints and shards -----------------------------------------------------------

def truncate(path):
    with open(path, "r+b") as stream:
        stream.truncate(os.path.getsize(path) // 2)


def decode_truncated_checkpoint(ws, capsys):
    run = copy_run(ws)
    ws.files["data"] = os.path.join(run, "ckpt-1.data-00000-of-00001")
    truncate(ws.files["data"])
    return decode_input("a b\n", output_dir=run)(ws, capsys)


def train_past_a_truncated_checkpoint(ws, capsys):
    train = train_with(train_steps=2, save_checkpoints_steps=1)
    status, _, err = train(ws, capsys)
    assert status == 0, err[-3000:]
    ws.files["data"] = str(ws.tmp / "run" / "ckpt-2" / "arrays.npz")
    truncate(ws.files["data"])
    return train_with(train_steps=3, save_checkpoints_steps=1)(ws, capsys)


def train_on_truncated_shard(ws, capsys):
    data = copy_data(ws)
    shards = sorted(name for name in os.listdir(data) if name.startswith(f"{PROBLEM}-train-"))
    ws.files["shard"] = os.path.join(data, shards[0])
    truncate(ws.files["shard"])
    return train_with(data_dir=data, train_steps=3)(ws, capsys)


DAMAGE_CASES = [
    Case("damaged: decode from a truncated checkpoint", decode_truncated_checkpoint,
         "{data}: the checkpoint file is truncated or corrupt \\(.*\\)"),
    Case("damaged: training resumes from the newest checkpoint that loads",
         train_past_a_truncated_checkpoint,
         warning=r"skipping checkpoint .*ckpt-2: {data}: the checkpoint file is truncated or corrupt",
         check=lambda ws: (ws.tmp / "run" / "ckpt-3" / "manifest.json").exists()
         or pytest.fail("no ckpt-3")),
    Case("damaged: a truncated training shard", train_on_truncated_shard,
         "{shard}: damaged TFRecord shard: truncated record at byte offset \\d+; regenerate the data "
         f"with bin/datagen --problem={PROBLEM} --data_dir=.* --tmp_dir=<raw data dir> --overwrite"),
]


# TensorFlow's index of a run's checkpoints, damaged (issue 35, item 2) ----------------------
# The shared run's checkpoint is in TensorFlow's format, with its `checkpoint` index file. Before
# checkpoints were found from their files, each of these decoded nothing ("holds no checkpoint;
# train first"), and training deleted ckpt-1 as a killed save's leftover, or trained over it,
# from step 0.

MISSING_999 = 'model_checkpoint_path: "ckpt-999"\nall_model_checkpoint_paths: "ckpt-999"\n'
INDEXES = {"deleted": None, "naming a missing ckpt-999": MISSING_999, "garbage": "\x00{garbage"}


def with_index(kind):
    def make(ws):
        run = copy_run(ws)
        os.remove(os.path.join(run, "checkpoint"))
        if INDEXES[kind] is not None:
            with open(os.path.join(run, "checkpoint"), "w", encoding="utf-8") as stream:
                stream.write(INDEXES[kind])
        ws.files["checkpoint"] = os.path.join(run, "ckpt-1")
        return run
    return make


def checkpoint_kept(ws):
    names = os.listdir(ws.tmp / "run")
    assert {"ckpt-1.index", "ckpt-1.data-00000-of-00001"} <= set(names), names


def decode_with_index(kind):
    def run(ws, capsys):
        return decode_input("a b\nb c\n", output_dir=with_index(kind)(ws))(ws, capsys)
    return run


INDEX_CASES = [
    Case(f"checkpoint index {kind}: decoding uses the complete checkpoint", decode_with_index(kind),
         output=r"decoded 2 sentences to ", check=lambda ws: (checkpoint_kept(ws),
                                                              output_lines(2)(ws)))
    for kind in INDEXES
] + [
    # The shared run holds its model's weights alone: resuming it is refused, naming it, as with
    # an intact index, instead of training from step 0 over it.
    Case(f"checkpoint index {kind}: training does not start again from step 0",
         train_with(output_dir=with_index(kind)),
         loc("checkpoint") + r": the checkpoint does not match this model and optimizer: .*",
         check=checkpoint_kept)
    for kind in INDEXES
]


# Checkpoint values another architecture would leave unused (issue 35, item 3) ----------------
# Before, each of these decoded (or averaged) with exit 0 and half of the encoder ignored.

TWO_ENCODER_LAYERS = TINY.replace("num_encoder_layers=1", "num_encoder_layers=2")
UNUSED = (r": the checkpoint does not fit model Transformer with these hparams: \d+ saved model "
          r"weights match nothing here and would be left unused \(encoder_layer_1/.*\)")


def two_layer_run_edited_to_one(ws):
    run = untrained_run(ws.tmp / "run", ws.shared.data_dir, hparams_text=TWO_ENCODER_LAYERS)
    hparams = run_directory.load_hparams(run)
    hparams.set("num_encoder_layers", 1)
    with open(os.path.join(run, run_directory.HPARAMS_FILE), "w", encoding="utf-8") as stream:
        stream.write(hparams.to_json())
    ws.files["checkpoint"] = os.path.join(run, "ckpt-1")
    return run


def decode_edited_run(ws, capsys):
    return decode_input("a b\n", output_dir=two_layer_run_edited_to_one(ws))(ws, capsys)


def average_edited_run(ws, capsys):
    return run_program("average_checkpoints", capsys, output_dir=two_layer_run_edited_to_one(ws),
                       num_last_checkpoints=1)


def decode_bare_checkpoint_with_fewer_layers(ws, capsys):
    run = untrained_run(ws.tmp / "run", ws.shared.data_dir, hparams_text=TWO_ENCODER_LAYERS)
    bare = ws.tmp / "bare"
    bare.mkdir()
    for name in os.listdir(run):
        if name.startswith("ckpt-1."):
            shutil.copy(os.path.join(run, name), bare / name)
    ws.files["checkpoint"] = str(bare / "ckpt-1")
    return decode_input("a b\n", output_dir=None, checkpoint_path=str(bare / "ckpt-1"),
                        model="transformer", problem=PROBLEM, data_dir=ws.shared.data_dir,
                        hparams_set="transformer_tiny", hparams=TINY)(ws, capsys)


UNUSED_CASES = [
    Case("unused weights: hparams.json edited from 2 encoder layers to 1, decoded",
         decode_edited_run, loc("checkpoint") + UNUSED,
         check=lambda ws: not (ws.tmp / "output.txt").exists() or pytest.fail("decoded")),
    Case("unused weights: hparams.json edited from 2 encoder layers to 1, averaged",
         average_edited_run, loc("checkpoint") + UNUSED,
         check=lambda ws: not (ws.tmp / "run" / "averaged").exists() or pytest.fail("averaged")),
    Case("unused weights: --hparams=num_encoder_layers=1 with a bare --checkpoint_path",
         decode_bare_checkpoint_with_fewer_layers, loc("checkpoint") + UNUSED),
]


# Hparam values, run directories ----------------------------------------------------------

def tiny_with(name, value):
    text = re.sub(rf"{name}=[^,]*", f"{name}={value}", TINY)
    return text if text != TINY else f"{TINY},{name}={value}"


def out_of_range(name, value, allowed):
    return Case(f"hparams: {name}={value}", train_with(hparams=tiny_with(name, value)),
                rf"hparam values out of range: {name}={re.escape(str(value))} \(must be {allowed}\)",
                check=lambda ws: not (ws.tmp / "run").exists() or pytest.fail("run dir written"))


def recorded_but_untrained(ws):
    run = ws.tmp / "run"
    hparams = registry.hparams("transformer_tiny").parse(tiny_with("hidden_size", 32))
    run_directory.write_run_files(str(run), hparams, ["--model=dep_parse", f"--problem={PROBLEM}"])
    return str(run)


def a_file(ws):
    (ws.tmp / "f").write_text("")
    return str(ws.tmp / "f")


def data_without_dev_shard(ws):
    data = copy_data(ws)
    for path in (ws.tmp / "data").glob(f"{PROBLEM}-dev-*"):
        os.remove(path)
    return data


HPARAMS_CASES = [
    out_of_range("label_smoothing", 2.5, r"in \[0, 1\)"),
    out_of_range("num_heads", -4, "at least 1"),
    out_of_range("hidden_size", 0, "at least 1"),
    out_of_range("layer_prepostprocess_dropout", 1.5, r"in \[0, 1\)"),
    Case("hparams: a run directory without checkpoint takes a new configuration",
         train_with(output_dir=recorded_but_untrained),
         warning=r"holds no checkpoint: replacing its saved hparams \(hidden_size\)",
         check=lambda ws: run_directory.load_hparams(str(ws.tmp / "run")).hidden_size == 16
         or pytest.fail("hparams not replaced")),
    Case("flags: --output_dir that is a file", train_with(output_dir=a_file),
         r"--output_dir=.*/f is a file, not a directory"),
    Case("data: a missing dev shard", train_with(data_dir=data_without_dev_shard),
         rf"no complete data of problem {PROBLEM} in .*/data \(1 of the \d+ files it generated are "
         rf"missing: {PROBLEM}-dev-\d+-of-\d+\); generate it with bin/datagen .*"),
]


# Paths, checked before the work ---------------------------------------------------------------

def evaluate_files(references, hypotheses, **flag_values):
    def run(ws, capsys):
        for kind, text in (("ref", references), ("hyp", hypotheses)):
            ws.files[kind] = str(ws.tmp / f"{kind}.txt")
            (ws.tmp / f"{kind}.txt").write_text(text, encoding="utf-8")
        return run_program("evaluate", capsys, references=ws.files["ref"],
                           hypotheses=[ws.files["hyp"]], bootstrap_samples=0,
                           **{name: value(ws) for name, value in flag_values.items()})
    return run


PATH_CASES = [
    Case("output path: --decode_to_file in a missing directory",
         lambda ws, capsys: decode_input("a b\n", decode_to_file=str(ws.tmp / "no" / "out.txt"))(
             ws, capsys),
         r"--decode_to_file=.*/no/out\.txt: cannot write the output: directory .*/no does not exist"),
    Case("output path: --decode_to_file a directory",
         lambda ws, capsys: decode_input("a b\n", decode_to_file=str(ws.tmp))(ws, capsys),
         r"--decode_to_file=.*: cannot write the output: is a directory; give a file name"),
    Case("output path: --json_output in a missing directory",
         evaluate_files("a b\n", "a b\n", json_output=lambda ws: str(ws.tmp / "no" / "s.json")),
         r"--json_output=.*/no/s\.json: cannot write the output: directory .*/no does not exist"),
    Case("input path: a directory as --decode_from_file",
         lambda ws, capsys: run_program("decode", capsys, output_dir=ws.shared.run_dir,
                                        decode_from_file=str(ws.tmp),
                                        decode_to_file=str(ws.tmp / "out.txt")),
         r".*: is a directory, not a file"),
    Case("empty files: bin/evaluate on empty references and hypotheses", evaluate_files("", ""),
         r"{ref}: file is empty \(no reference segment to score against\)"),
]


# Silent partial work --------------------------------------------------------------------------

def analyze_three_lines(ws, capsys):
    path = ws.tmp / "input.txt"
    path.write_text("a b\n\nb c\n", encoding="utf-8")
    ws.files["input"] = str(path)
    return run_program("analyze", capsys, output_dir=ws.shared.run_dir, analyze_from_file=str(path),
                       analysis_dir=str(ws.tmp / "analysis"), num_sentences=5)


def orphaned_temporary(ws, capsys):
    data = copy_data(ws)
    orphan = os.path.join(data, f".{PROBLEM}-train-00000-of-00001.0123456789ab.tmp")
    open(orphan, "wb").close()
    ws.files["orphan"] = orphan
    return run_program("datagen", capsys, problem=PROBLEM, data_dir=data,
                       problem_options=SHARED_DATA_OPTIONS)


PARTIAL_CASES = [
    Case("partial: CoNLL-U sentences separated by a whitespace-only line",
         decode_input(GOOD_CONLLU.rstrip("\n") + "\n \t\n" + GOOD_CONLLU, name="input.conllu"),
         output=r"decoded 2 sentences to ", check=output_lines(2),
         warning=r"{input}:4: 1 line\(s\) holding only whitespace taken for the empty line"),
    Case("partial: bin/analyze analysing fewer sentences than asked", analyze_three_lines,
         warning=r"warning: analysing 2 of the 5 sentences asked for \(--num_sentences\): {input} "
                 r"has 3 sentences; 1 unusable, the first at {input}:2: .*empty line"),
    Case("partial: datagen removes the temporary files of a killed run", orphaned_temporary,
         warning=r"removing {orphan}, left by an earlier run that did not finish",
         check=lambda ws: not os.path.exists(ws.files["orphan"]) or pytest.fail("orphan kept")),
]


# usr_dir and checkpoints of other runs ---------------------------------------------------------

def usr_package_named(name, source):
    def run(ws, capsys):
        directory = ws.tmp / "usr" / name
        directory.mkdir(parents=True)
        (directory / "user_sets.py").write_text(textwrap.dedent(source), encoding="utf-8")
        return run_program("datagen", capsys, usr_dir=str(directory), problem=PROBLEM,
                           problem_options=SHARED_DATA_OPTIONS,
                           data_dir=copy_data(ws))
    return run


def registered(*names):
    def check(ws):
        missing = [name for name in names if name not in registry.hparams_sets]
        assert not missing, missing
    return check


USER_SET = '''
from syntax_t2t import registry
from syntax_t2t.hparams_sets.transformer import transformer_tiny


@registry.register_hparams
def {name}():
    return transformer_tiny()
'''


def user_model_under_builtin_name(ws, capsys):
    directory = ws.tmp / "usr_clash"
    directory.mkdir()
    module = directory / "my_models.py"
    module.write_text("from syntax_t2t import registry\n\n\n@registry.register_model('transformer')\n"
                      "class MyTransformer:\n    pass\n", encoding="utf-8")
    ws.files["module"] = str(module)
    status, out, err = run_executable("datagen", f"--usr_dir={directory}", f"--problem={PROBLEM}",
                                      f"--data_dir={ws.shared.data_dir}")
    return status, out, err


def checkpoint_of_another_model(ws, capsys):
    other = untrained_run(ws.tmp / "dep", ws.shared.data_dir, "dep_parse", TINY + ",parse_layer=0")
    return decode_input("a b\n", checkpoint_path=os.path.join(other, "ckpt-1"))(ws, capsys)


USR_CASES = [
    Case("usr_dir: a folder named hparams hides no built-in set",
         usr_package_named("hparams", USER_SET.format(name="set_of_a_folder_named_hparams")),
         output=r"complete data already in",
         check=registered("set_of_a_folder_named_hparams", "transformer_tiny", "transformer_base")),
    Case("usr_dir: a folder named problems hides no built-in problem",
         usr_package_named("problems", USER_SET.format(name="set_of_a_folder_named_problems")),
         output=r"complete data already in",
         check=lambda ws: (registered("set_of_a_folder_named_problems")(ws),
                           registry.problem(PROBLEM))),
    Case("usr_dir: a user model under a built-in name is blamed on the user's module",
         user_model_under_builtin_name,
         r"--usr_dir=.*: importing {module} failed: RegistryError: model 'transformer' is already "
         r"registered by syntax_t2t\.models\.transformer\.Transformer; choose another name for "
         r".*my_models\.MyTransformer"),
    Case("flags: --checkpoint_path of another model than --output_dir's",
         checkpoint_of_another_model,
         r"--checkpoint_path=.*/dep/ckpt-1 is a checkpoint of another run than --output_dir=.*: "
         r".*/dep records --model=dep_parse \(--output_dir: transformer\), other hparams; give only "
         r"--checkpoint_path, or a checkpoint of --output_dir's run"),
]

RUN_CASES = (AVERAGING_CASES + DAMAGE_CASES + INDEX_CASES + UNUSED_CASES + HPARAMS_CASES
             + PATH_CASES + PARTIAL_CASES + USR_CASES)


@pytest.mark.parametrize("case", RUN_CASES, ids=[case.id for case in RUN_CASES])
def test_bad_run(case, shared, tmp_path, capsys):
    check_case(case, Workspace(tmp=tmp_path, shared=shared, index=RUN_CASES.index(case)), capsys)


def test_every_row_is_distinct():
    ids = [case.id for case in RUN_CASES]
    assert len(ids) == len(set(ids))
