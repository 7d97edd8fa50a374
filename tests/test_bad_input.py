"""Bad input at the program boundary: one table row per case, each asserting what the user sees.

Every row runs a real program (`bin/datagen`, `bin/train`, `bin/decode`)
the way its executable does, `common.run` included, but in this process
(starting TensorFlow anew per row would take minutes): a bad input must end
the program with status 1 and one line `error: <file>:<line>: <problem>` on
stderr (no traceback), or, where the program skips bad examples (datagen's
`--skip_bad_examples`, decoding's unusable lines), finish and report the
skip. A few rows run the executables themselves, for what only they do
(absl's flag parsing). The readers' own behaviour is tested in their test
files; here the point is that each problem reaches the user intact.

Datagen reads CoNLL-U through `de2cs_syntax` (`<tmp_dir>/de2cs/`) and CzEng
export lines through a `--usr_dir` problem reading one file.
"""

import dataclasses
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Optional
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf
from absl import app, flags
from absl.testing import flagsaver

from syntax_t2t import registry
from syntax_t2t.cli import analyze, average_checkpoints, datagen, decode, evaluate, train
from syntax_t2t.data import pipeline
from syntax_t2t.training import run_directory
from syntax_t2t.training.checkpoints import model_weights

FLAGS = flags.FLAGS
REPO = Path(__file__).resolve().parents[1]
PROBLEM = "synthetic_syntax_reorder"
TINY = ("hidden_size=16,filter_size=32,num_heads=2,num_encoder_layers=1,num_decoder_layers=1,"
        "batch_size=96,max_length=12,learning_rate_warmup_steps=10")
PROGRAMS = {"datagen": datagen, "train": train, "decode": decode, "evaluate": evaluate,
            "analyze": analyze, "average_checkpoints": average_checkpoints}


# The harness -----------------------------------------------------------------

def run_program(name, capsys, **flag_values):
    """Runs `bin/<name>` in this process with the given flag values.

    As the executable does, `common.run` imports `--usr_dir` and the
    registry, calls the program's `main` and turns user errors into one
    `error:` line and status 1; only absl's command-line parsing is left
    out (the values are set directly).

    Returns:
        (exit status, stdout, stderr).
    """
    registry.import_all()
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
        registry.import_all()
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


# Inputs ------------------------------------------------------------------------

def conllu_sentence(words, heads=None, extra=()):
    """A CoNLL-U block: word i depends on `heads[i]` (default: the first word is the root)."""
    heads = heads or [0] + [1] * (len(words) - 1)
    rows = ["\t".join([str(i), word, word.lower(), "NOUN", "NN", "_", str(head),
                       "root" if head == 0 else "dep", "_", "_"])
            for i, (word, head) in enumerate(zip(words, heads), start=1)]
    return "\n".join(list(extra) + rows) + "\n\n"


GOOD_CONLLU = conllu_sentence(["Hunde", "bellen", "laut"])  # lines 1-3, blank line 4


def write_de2cs(tmp_dir, train_conllu, train_targets="psi štěkají nahlas\n"):
    """`<tmp_dir>/de2cs/` with the given train split and one good dev and test pair."""
    directory = Path(tmp_dir) / "de2cs"
    directory.mkdir(parents=True, exist_ok=True)
    files = {"train": (train_conllu, train_targets)}
    files.update({split: (GOOD_CONLLU, "psi štěkají nahlas\n") for split in ("dev", "test")})
    for split, (source, target) in files.items():
        source = source.encode("utf-8") if isinstance(source, str) else source
        (directory / f"{split}.de.conllu").write_bytes(source)
        (directory / f"{split}.cs").write_text(target, encoding="utf-8")
    return directory / "train.de.conllu", directory / "train.cs"


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


# Rows ----------------------------------------------------------------------------

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


def datagen_de2cs(train_conllu, train_targets="psi štěkají nahlas\n", skip=False):
    def run(ws, capsys):
        source, target = write_de2cs(ws.tmp / "raw", train_conllu, train_targets)
        ws.files.update(conllu=str(source), text=str(target))
        return run_program("datagen", capsys, problem="de2cs_syntax", tmp_dir=str(ws.tmp / "raw"),
                           data_dir=str(ws.tmp / "data"), skip_bad_examples=skip)
    return run


def datagen_czeng(lines, skip=False):
    def run(ws, capsys):
        raw = ws.tmp / "raw"
        raw.mkdir(exist_ok=True)
        path = raw / "czeng.txt"
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        ws.files["czeng"] = str(path)
        return run_program("datagen", capsys, problem="czeng_one_file_bad_input_test",
                           usr_dir=ws.shared.czeng_usr_dir, tmp_dir=str(raw),
                           data_dir=str(ws.tmp / "data"),
                           skip_bad_examples=skip)
    return run


def loc(kind, line=None):
    """A regex for `<file of kind>:<line>` (the file is known once the row ran)."""
    return f"{{{kind}}}" + ("" if line is None else f":{line}")


def no_data_written(ws):
    assert not (ws.tmp / "data").exists() or not any(
        name.endswith(".complete.json") for name in os.listdir(ws.tmp / "data"))


CYCLE = conllu_sentence(["a", "b", "c"], heads=[2, 3, 1])

CONLLU_CASES = [
    Case("conllu: wrong column count",
         datagen_de2cs(GOOD_CONLLU + "1\tzu\twenig\tSpalten\n\n"),
         loc("conllu", 5) + r": expected 10 tab-separated columns, found 4", check=no_data_written),
    Case("conllu: non-integer head",
         datagen_de2cs(GOOD_CONLLU + conllu_sentence(["x", "y"]).replace("\t1\tdep", "\tzwei\tdep")),
         loc("conllu", 6) + r": HEAD of word 2 must be an integer, found 'zwei'"),
    Case("conllu: head out of range",
         datagen_de2cs(GOOD_CONLLU + conllu_sentence(["x", "y"], heads=[0, 7])),
         loc("conllu", 6) + r": HEAD 7 of word 2 is out of range: the sentence has 2 words "
                             r"\(0 = ROOT\)"),
    Case("conllu: a cycle",
         datagen_de2cs(GOOD_CONLLU + CYCLE),
         loc("conllu", 5) + r": heads of the sentence starting here do not form a tree: .*cycle.*"),
    Case("conllu: a sentence with no tokens",
         datagen_de2cs(GOOD_CONLLU + "# sent_id = leer\n# text = \n\n"),
         loc("conllu", 5) + r": sentence has no words \(no token line with an integer ID\)"),
    Case("conllu: overlapping multiword ranges",
         datagen_de2cs(GOOD_CONLLU + conllu_sentence(["zu", "dem", "Haus"], heads=[3, 3, 0]).replace(
             "1\tzu", "1-2\tzum" + "\t_" * 8 + "\n2-3\tzumh" + "\t_" * 8 + "\n1\tzu")),
         loc("conllu", 6) + r": multiword token range 2-3 overlaps the range 1-2 on line 5"),
    Case("conllu: an empty node is skipped (enhanced graphs only)",
         datagen_de2cs(conllu_sentence(["Hunde", "bellen", "laut"]).replace(
             "3\tlaut", "2.1\tsind\tsein\tAUX\tVAFIN\t_\t_\t_\t2:aux\t_\n3\tlaut")),
         output=r"de2cs_syntax: wrote 1 train, 1 dev, 1 test examples",
         check=lambda ws: train_heads_are(ws, [[0, 1, 1]])),
    Case("conllu: invalid UTF-8",
         datagen_de2cs(GOOD_CONLLU.encode("utf-8") + conllu_sentence(["Stra_e"]).encode(
             "utf-8").replace(b"Stra_e", b"Stra\xdfe", 1)),
         loc("conllu", 5) + r": invalid UTF-8: byte\(s\) b'\\xdf' at byte offset 7 of the line .*"),
    Case("conllu: file ends mid-sentence",
         datagen_de2cs(GOOD_CONLLU + conllu_sentence(["x", "y"]).rstrip("\n")),
         loc("conllu", 6) + r": file ends in the middle of a sentence \(CoNLL-U needs a blank line "
                             r"after every sentence\)"),
    Case("conllu: --skip_bad_examples counts and reports the cycle",
         datagen_de2cs(GOOD_CONLLU + CYCLE + GOOD_CONLLU,
                       "psi štěkají nahlas\nrozbitá věta\npsi štěkají nahlas\n", skip=True),
         output=r"de2cs_syntax: wrote 2 train, 1 dev, 1 test examples to .*\n"
                r"de2cs_syntax: skipped 1 example: 1 cycle\n"),
]

CZENG_CASES = [
    Case("czeng: wrong number of blocks",
         datagen_czeng([czeng_line(), czeng_line(), czeng_line(blocks=14)]),
         loc("czeng", 3) + r": expected 15 tab-separated blocks, found 14"),
    Case("czeng: a token with the wrong number of factors",
         datagen_czeng([czeng_line(), czeng_line(), czeng_line(
             source="slovo|slovo|NNNS1-----A----|1|0 běží|běží|VB-S---3P-AA---|2|0|Pred")]),
         loc("czeng", 3) + r": block 3 \(source a-layer\): token 1 "
                            r"'slovo\|slovo\|NNNS1-----A----\|1\|0' has 5 factors, expected 6 \(form\|lemma\|tag\|index\|head\|afun\)"),
    Case("czeng: token index not matching its position",
         datagen_czeng([czeng_line(), czeng_line(), czeng_line(
             source=" ".join([czeng_token(1, 0, "běží", "Pred"), czeng_token(3, 1)]))]),
         loc("czeng", 3) + r": block 3 \(source a-layer\): token 2 'slovo' has index factor '3', "
                            r"expected 2"),
    Case("czeng: target block missing",
         datagen_czeng([czeng_line(), czeng_line(), czeng_line(target="")]),
         loc("czeng", 3) + r": block 7 \(target a-layer\) is empty"),
    Case("czeng: --skip_bad_examples counts and reports",
         datagen_czeng([czeng_line(), czeng_line(), czeng_line(blocks=14), czeng_line()], skip=True),
         output=r"wrote 1 train, 1 dev, 1 test examples.*\n.*skipped 1 example: 1 wrong block count"),
]


def train_heads_are(ws, expected):
    """The `src_heads` of every example in the train shards datagen wrote."""
    shards = sorted((ws.tmp / "data").glob("de2cs_syntax-train-*"))
    heads = [list(example["src_heads"].numpy())
             for example in tf.data.TFRecordDataset([str(p) for p in shards]).map(
                 lambda record: pipeline.parse_example(record, ["src_heads"]))]
    assert heads == expected


# Parallel files, empty files, long sentences -----------------------------------------

MULTI30K_PROBLEM = "multi30k_syntax_cs_en"


def datagen_multi30k(sources, targets, skip=False):
    """`bin/datagen` on Multi30k cs-en files in `<tmp_dir>/multi30k/`, parsed by an untrained
    spaCy pipeline."""
    def run(ws, capsys):
        from parser_fixtures import untrained_pipeline_dir  # noqa: PLC0415 (spaCy is slow to import)

        directory = ws.tmp / "raw" / "multi30k"
        directory.mkdir(parents=True)
        good = "Pes běží .\n", "A dog runs .\n"
        files = {"train": (sources, targets), "val": good, "test_2016_flickr": good}
        for name, (source, target) in files.items():
            (directory / f"{name}.cs").write_text(source, encoding="utf-8")
            (directory / f"{name}.en").write_text(target, encoding="utf-8")
        ws.files.update(cs=str(directory / "train.cs"), en=str(directory / "train.en"))
        pipeline_dir = untrained_pipeline_dir(ws.tmp / "spacy_cs")
        return run_program("datagen", capsys, problem=MULTI30K_PROBLEM, tmp_dir=str(ws.tmp / "raw"),
                           data_dir=str(ws.tmp / "data"), parser=f"spacy:{pipeline_dir}",
                           skip_bad_examples=skip)
    return run


def train_synthetic(max_length, steps=2):
    def run(ws, capsys):
        hparams = re.sub(r"max_length=\d+", f"max_length={max_length}", TINY)
        return run_program("train", capsys, problem=PROBLEM, model="transformer",
                           hparams_set="transformer_tiny", hparams=hparams,
                           data_dir=ws.shared.data_dir, output_dir=str(ws.tmp / "run"),
                           train_steps=steps, eval_steps=1, log_step_count_steps=1, random_seed=1)
    return run


def assert_nothing_written(directory):
    def check(ws):
        path = ws.tmp / directory
        assert not path.exists() or not any(path.iterdir()), sorted(os.listdir(path))
    return check


FILE_CASES = [
    Case("parallel: files of different line counts",
         datagen_multi30k("Pes běží .\nKočka spí .\n", "A dog runs .\n"),
         loc("en", 2) + r": file ends after 1 line, but the parallel file " + loc("cs")
         + r" has a line 2; parallel files must have the same number of lines",
         check=no_data_written),
    Case("parallel: CoNLL-U sentences and target lines of different counts",
         datagen_de2cs(GOOD_CONLLU + GOOD_CONLLU, "psi štěkají nahlas\n"),
         loc("text") + r": has 1 line, but " + loc("conllu") + r" has at least 2 sentences; "
         r"sentence k of the CoNLL-U file must translate line k"),
    Case("empty file: parallel text",
         datagen_multi30k("", ""),
         loc("cs") + r": file is empty \(and so is " + loc("en") + r"\)"),
    Case("empty file: CoNLL-U and its translations",
         datagen_de2cs("", ""),
         loc("conllu") + r": file is empty \(no CoNLL-U sentence\)", check=no_data_written),
    Case("empty file: CzEng export",
         datagen_czeng([]),
         loc("czeng") + r": file is empty \(no CzEng export line\)", check=no_data_written),
    Case("too long: training drops and counts sentences longer than max_length",
         train_synthetic(max_length=6),
         output=r"training input: read \d+ examples in this session \(the input reads ahead\), "
                r"dropped [1-9]\d* longer than max_length=6"),
    Case("too long: datagen keeps long sentences (training decides by its max_length)",
         datagen_de2cs(conllu_sentence([f"w{i}" for i in range(150)]), "dlouhá věta\n"),
         output=r"de2cs_syntax: wrote 1 train, 1 dev, 1 test examples",
         check=lambda ws: train_heads_are(ws, [[0] + [1] * 149])),
    Case("too long: no training sentence fits max_length",
         train_synthetic(max_length=1),
         r"no example of the train split of problem synthetic_syntax_reorder in .* fits "
         r"max_length=1: the shortest is 4 tokens long \(with <EOS>\); training drops longer "
         r"ones, so raise --hparams=max_length", check=assert_nothing_written("run")),
]


# Flags and hparams ----------------------------------------------------------------------

def train_with(**flag_values):
    def run(ws, capsys):
        values = dict(problem=PROBLEM, model="transformer", hparams_set="transformer_tiny",
                      hparams=TINY, data_dir=ws.shared.data_dir, output_dir=str(ws.tmp / "run"),
                      train_steps=1, eval_steps=1)
        values.update({name: value(ws) if callable(value) else value
                       for name, value in flag_values.items()})
        return run_program("train", capsys, **values)
    return run


def usr_dir_with(source):
    def make(ws):
        directory = ws.tmp / f"usr_{ws.index}"
        directory.mkdir()
        (directory / "broken_module.py").write_text(textwrap.dedent(source), encoding="utf-8")
        ws.files["module"] = str(directory / "broken_module.py")
        return str(directory)
    return make


def foreign_checkpoint(ws):
    """A run directory of this command's model and hparams whose checkpoint is of a wider model."""
    run = ws.tmp / "run"
    other = untrained_run(ws.tmp / "wider", ws.shared.data_dir,
                          hparams_text=TINY.replace("hidden_size=16", "hidden_size=32"))
    untrained_run(run, ws.shared.data_dir)
    for name in os.listdir(other):
        if name.startswith("ckpt-"):
            shutil.copy(os.path.join(other, name), run / name)
    ws.files["checkpoint"] = str(run / "ckpt-1")
    return str(run)


FLAG_CASES = [
    Case("flags: unknown problem", train_with(problem="synthetic_syntax_reoder"),
         r"unknown problem 'synthetic_syntax_reoder'\. Did you mean synthetic_syntax_reorder.*"),
    Case("flags: unknown model", train_with(model="transfomer"),
         r"unknown model 'transfomer'\. Did you mean transformer.*"),
    Case("flags: unknown hparams set", train_with(hparams_set="transformer_tinny"),
         r"unknown hparams set 'transformer_tinny'\. Did you mean transformer_tiny.*"),
    Case("flags: datagen of an unknown problem",
         lambda ws, capsys: run_program("datagen", capsys, problem="czeng_syntaks",
                                        data_dir=str(ws.tmp / "data")),
         r"unknown problem 'czeng_syntaks'\. Did you mean czeng_syntax.*"),
    Case("hparams: an override without a value", train_with(hparams="hidden_size"),
         r"malformed override 'hidden_size' in 'hidden_size': expected name=value"),
    Case("hparams: an override without a name", train_with(hparams="hidden_size=16,=4"),
         r"malformed hparam name '' in 'hidden_size=16,=4'"),
    Case("hparams: an unclosed list", train_with(hparams="hidden_size=[1,2"),
         r"unbalanced brackets or quotes in 'hidden_size=\[1,2'"),
    Case("hparams: a name given twice", train_with(hparams="hidden_size=16,hidden_size=8"),
         r"hparam 'hidden_size' given twice in 'hidden_size=16,hidden_size=8'"),
    Case("hparams: an unknown name", train_with(hparams="hiden_size=16"),
         r"unknown hparam 'hiden_size'; did you mean hidden_size.*"),
    Case("hparams: a word for an integer", train_with(hparams="hidden_size=wide"),
         r"hparam 'hidden_size' is int, got str 'wide'"),
    Case("hparams: a fraction for an integer", train_with(hparams="num_heads=2.5"),
         r"hparam 'num_heads' is int, got float 2\.5"),
    Case("hparams: a word for a boolean",
         train_with(hparams="shared_embedding_and_softmax_weights=maybe"),
         r"hparam 'shared_embedding_and_softmax_weights' is bool, got str 'maybe'"),
    Case("flags: --usr_dir that does not exist",
         train_with(usr_dir=lambda ws: str(ws.tmp / "nowhere")),
         r"--usr_dir=.*nowhere: no such directory"),
    Case("flags: --usr_dir whose module does not compile",
         train_with(usr_dir=usr_dir_with("def broken(:\n    pass\n")),
         r"--usr_dir=.*: importing " + loc("module")
         + r" failed: SyntaxError: invalid syntax \(broken_module\.py, line 1\)"),
    Case("flags: --usr_dir whose module fails on import",
         train_with(usr_dir=usr_dir_with("import no_such_package_anywhere\n")),
         r"--usr_dir=.*: importing " + loc("module")
         + r" failed: ModuleNotFoundError: No module named 'no_such_package_anywhere'"),
    Case("flags: a checkpoint from a different model", train_with(output_dir=foreign_checkpoint),
         loc("checkpoint") + r": the checkpoint does not match this model and optimizer: .*"),
    Case("flags: an output directory of a different model", train_with(
        output_dir=lambda ws: untrained_run(ws.tmp / "run", ws.shared.data_dir, "dep_parse",
                                            TINY + ",parse_layer=0")),
         r"--output_dir=.* holds a different run: --model=dep_parse "
         r"\(this command: --model=transformer\).*"),
]


# Decoding input -------------------------------------------------------------------------

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


def long_line():
    return " ".join(f"w{i % 7}" for i in range(300)) + "\n"


DECODE_CASES = [
    Case("decode: empty lines keep their place and are counted",
         decode_input("a b c\n\nb c\n   \n"),
         output=r"decoded 2 sentences to .* \(2 unusable input sentences left empty\)",
         check=output_lines(4, empty=[2, 4])),
    Case("decode: a very long line is decoded whole", decode_input("a b\n" + long_line()),
         output=r"decoded 2 sentences to ", check=output_lines(2)),
    Case("decode: unknown words", decode_input("zzz qqq xyzzy\na b\n"),
         output=r"decoded 2 sentences to ", check=output_lines(2)),
    Case("decode: invalid UTF-8 on a line", decode_input(b"a b\nc \xff d\n"),
         output=r"\(1 unusable input sentences left empty\)", check=output_lines(2, empty=[2])),
    Case("decode: a CoNLL-U input whose tree is broken",
         decode_input(GOOD_CONLLU + CYCLE + GOOD_CONLLU, name="input.conllu"),
         output=r"decoded 2 sentences to .* \(1 unusable input sentences left empty\)",
         check=output_lines(3, empty=[2])),
    Case("decode: an empty input file", decode_input(""),
         loc("input") + r": file is empty \(no sentence to decode\)",
         check=lambda ws: not (ws.tmp / "output.txt").exists()),
    Case("decode: an empty CoNLL-U input file", decode_input("\n\n", name="input.conllu"),
         loc("input") + r": file is empty \(no CoNLL-U sentence\)"),
    Case("decode: a checkpoint from a different model",
         lambda ws, capsys: decode_input("a b\n", output_dir=foreign_checkpoint(ws))(ws, capsys),
         loc("checkpoint") + r": the checkpoint does not fit model Transformer with these "
                                 r"hparams: .*"),
]

ALL_CASES = CONLLU_CASES + CZENG_CASES + FILE_CASES + FLAG_CASES + DECODE_CASES


# The suite ------------------------------------------------------------------------------

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


@pytest.mark.parametrize("case", ALL_CASES, ids=[case.id for case in ALL_CASES])
def test_bad_input(case, shared, tmp_path, capsys):
    check_case(case, Workspace(tmp=tmp_path, shared=shared, index=ALL_CASES.index(case)), capsys)


def test_every_row_is_distinct_and_every_area_of_the_issue_is_covered():
    ids = [case.id for case in ALL_CASES]
    assert len(ids) == len(set(ids))
    areas = {case_id.split(":")[0] for case_id in ids}
    assert areas == {"conllu", "czeng", "parallel", "empty file", "too long", "flags", "hparams",
                     "decode"}


# The executables themselves ----------------------------------------------------------------

@pytest.mark.parametrize("program, flag, message", [
    ("train", "--train_steps=many",
     "FATAL Flags parsing error: flag --train_steps=many: invalid literal for int() with base 10: "
     "'many'"),
    ("decode", "--decode_input_format=xml",
     "FATAL Flags parsing error: flag --decode_input_format=xml: value should be one of "
     "<auto|text|conllu|czeng>"),
])
def test_executables_reject_malformed_flags(program, flag, message):
    status, _, err = run_executable(program, flag)
    assert status == 1
    assert message in err
    assert "Traceback" not in err
