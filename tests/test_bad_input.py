"""Bad input at the program boundary: one table row per case, each asserting what the user sees.

The rows run real programs through `bad_input_harness.py` (in this process,
as the executables do): a bad input ends the program with status 1 and one
line `error: <file>:<line>: <problem>`, or, where the program skips bad
examples (datagen's `--skip_bad_examples`, decoding's unusable lines), it
finishes and reports the skip. A few rows run the executables themselves,
for what only they do (absl's flag parsing). The readers' own behaviour is tested in their test
files; here the point is that each problem reaches the user intact.

Datagen reads CoNLL-U through `de2cs_syntax` (`<tmp_dir>/de2cs/`) and CzEng
export lines through a `--usr_dir` problem reading one file.
"""

import os
import re
import shutil
import textwrap
from pathlib import Path

import pytest
import tensorflow as tf
from bad_input_harness import (GOOD_CONLLU, PROBLEM, TINY, Case, Workspace, check_case, conllu_sentence,
                               czeng_line, czeng_token, decode_input, loc, output_lines, run_executable,
                               run_program, shared, train_with, untrained_run)

from syntax_t2t.data import pipeline

# Inputs ------------------------------------------------------------------------


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


# Rows ----------------------------------------------------------------------------


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
         output=r"\(1 unusable input sentence left empty\)", check=output_lines(2, empty=[2])),
    Case("decode: a CoNLL-U input whose tree is broken",
         decode_input(GOOD_CONLLU + CYCLE + GOOD_CONLLU, name="input.conllu"),
         output=r"decoded 2 sentences to .* \(1 unusable input sentence left empty\)",
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

assert shared  # the harness's module fixture, imported for pytest to find


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
