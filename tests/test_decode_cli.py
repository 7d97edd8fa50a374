"""bin/decode and bin/average_checkpoints on a small run of synthetic_syntax_reorder.

The run is made here (random weights, saved in TensorFlow's checkpoint
format, `model_weights/<path>`, as runs before the directory format were), so
the tests need no training; they also read that format, average it into the
directory format and convert it.
"""

import itertools
import os
import shutil

import numpy as np
import pytest
from absl import flags
from absl.testing import flagsaver
from decode_runs import PROBLEM, save_random_run, small_hparams

from syntax_t2t import registry
from syntax_t2t.checkpointing.weights import read_model_weights
from syntax_t2t.cli import average_checkpoints, common, convert_checkpoints, decode, registration
from syntax_t2t.data.conllu_reader import format_conllu, read_conllu
from syntax_t2t.decoding.decoder import MissingFeaturesError
from syntax_t2t.data.parse_file import read_parsed
from syntax_t2t.training.checkpoint_averaging import last_checkpoints
from syntax_t2t.training.checkpoints import CheckpointError, latest_checkpoint

FLAGS = flags.FLAGS


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """Generated data, test sentences and two runs (dep_parse, tree_distance) with 2 checkpoints each."""
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["decode"])
    root = tmp_path_factory.mktemp("decode")
    problem = registry.problem(PROBLEM)
    problem.generate_data(str(root / "data"), str(root / "raw"), max_examples=200)
    trees = [tree for tree, _ in itertools.islice(problem.generate_samples(None, "test", None), 12)]
    (root / "test.conllu").write_text(format_conllu(trees), encoding="utf-8")
    # Text: line 3 is empty, line 6 is not UTF-8; 13 lines in all.
    lines = [" ".join(tree.tokens).encode("utf-8") for tree in trees]
    lines[2] = b""
    lines.insert(5, b"bad \xff byte")
    (root / "test.txt").write_bytes(b"\n".join(lines) + b"\n")
    hparams = small_hparams()
    # Unending (`eos_scale=0`): every translation fills its maximum length, so
    # none is empty and every beam holds a different hypothesis.
    for model_name in ("dep_parse", "tree_distance"):
        save_random_run(root / model_name, model_name, hparams, root / "data", steps=(10, 20),
                        eos_scale=0.0)
    return root


def run_decode(**flag_values):
    with flagsaver.flagsaver(**flag_values):
        decode.main(["decode"])


def test_text_input_gives_one_line_per_input_line_and_a_parse(workspace, capsys):
    output, parse = workspace / "out.txt", workspace / "out.conllu"
    run_decode(output_dir=str(workspace / "dep_parse"), decode_from_file=str(workspace / "test.txt"),
               decode_to_file=str(output), parse_to_file=str(parse), parse_decoder="mst",
               decode_hparams="beam_size=2,extra_length=3")
    lines = output.read_text(encoding="utf-8").split("\n")
    inputs = (workspace / "test.txt").read_bytes().split(b"\n")
    assert len(lines) == len(inputs) == 14  # 13 lines and the final newline
    assert lines[2] == "" and lines[5] == ""  # the empty and the undecodable line
    assert all(lines[i] for i in range(13) if i not in (2, 5))
    assert "decoded 11 sentences" in capsys.readouterr().out
    parsed = list(read_conllu(parse))  # MST: every parse is a tree
    assert len(parsed) == 11
    source_lines = [line.decode("utf-8", "replace") for line in inputs]
    assert [" ".join(tree.tokens) for tree in parsed] == [
        source_lines[i] for i in range(13) if i not in (2, 5)]
    assert parsed[2].comments["sent_id"] == "4"


def test_conllu_input_argmax_parse_and_all_beams(workspace):
    output, parse = workspace / "beams.txt", workspace / "beams.conllu"
    run_decode(output_dir=str(workspace / "dep_parse"), decode_from_file=str(workspace / "test.conllu"),
               decode_to_file=str(output), parse_to_file=str(parse),
               decode_hparams="beam_size=3,extra_length=2,return_beams=true")
    lines = output.read_text(encoding="utf-8").rstrip("\n").split("\n")
    assert len(lines) == 12
    # Every hypothesis the search found, at most one per beam, all different.
    beams = [line.split("\t") for line in lines]
    assert all(1 <= len(b) <= 3 and len(set(b)) == len(b) for b in beams)
    assert any(len(b) == 3 for b in beams)
    gold = list(read_conllu(workspace / "test.conllu"))
    predicted = read_parsed(parse)
    assert [p.tokens for p in predicted] == [g.tokens for g in gold]
    assert [p.upos for p in predicted] == [g.upos for g in gold]  # input tags kept
    assert all(set(p.labels) == {"_"} for p in predicted)  # no labels are predicted


def test_a_model_needing_trees_refuses_text_and_leaves_the_output_alone(workspace):
    output = workspace / "keep.txt"
    output.write_text("earlier results\n", encoding="utf-8")
    message = r"needs source trees \(src_heads\).*test\.txt is plain text"
    with pytest.raises(MissingFeaturesError, match=message):
        run_decode(output_dir=str(workspace / "tree_distance"), decode_from_file=str(workspace / "test.txt"),
                   decode_to_file=str(output))
    assert output.read_text(encoding="utf-8") == "earlier results\n"


def test_tree_model_decodes_conllu(workspace):
    output = workspace / "tree.txt"
    run_decode(output_dir=str(workspace / "tree_distance"), decode_from_file=str(workspace / "test.conllu"),
               decode_to_file=str(output), decode_hparams="beam_size=1,extra_length=2")
    assert len(output.read_text(encoding="utf-8").rstrip("\n").split("\n")) == 12


def test_parse_output_needs_a_parse_head(workspace):
    with pytest.raises(common.UsageError, match=r"--parse_to_file: model tree_distance has no parse head"):
        run_decode(output_dir=str(workspace / "tree_distance"),
                   decode_from_file=str(workspace / "test.conllu"),
                   decode_to_file=str(workspace / "x.txt"), parse_to_file=str(workspace / "x.conllu"))


def test_averaged_checkpoint_is_the_mean_and_decodes(workspace):
    run = workspace / "dep_parse"
    prefixes = last_checkpoints(str(run), 2)
    values = [read_model_weights(prefix) for prefix in prefixes]
    with flagsaver.flagsaver(output_dir=str(run), num_last_checkpoints=2):
        average_checkpoints.main(["average_checkpoints"])
    averaged = read_model_weights(str(run / "averaged" / "ckpt-20"))
    assert averaged.keys() == values[0].keys()
    for key in values[0]:
        np.testing.assert_allclose(averaged[key], (values[0][key] + values[1][key]) / 2,
                                   rtol=1e-6, atol=1e-7)
    output = workspace / "averaged.txt"
    run_decode(output_dir=str(run / "averaged"), decode_from_file=str(workspace / "test.conllu"),
               decode_to_file=str(output), decode_hparams="beam_size=1,extra_length=1")
    assert len(output.read_text(encoding="utf-8").rstrip("\n").split("\n")) == 12
    with pytest.raises(CheckpointError, match=r"holds 2 checkpoint\(s\) but 3 were asked"):
        last_checkpoints(str(run), 3)


def test_a_run_in_tensorflows_format_converted_decodes_the_same(workspace, capsys):
    run = workspace / "converted"
    shutil.copytree(workspace / "tree_distance", run)
    settings = dict(output_dir=str(run), decode_from_file=str(workspace / "test.conllu"),
                    decode_hparams="beam_size=2,extra_length=1")
    run_decode(decode_to_file=str(workspace / "before.txt"), **settings)
    with flagsaver.flagsaver(output_dir=str(run)):
        convert_checkpoints.main(["convert_checkpoints"])
    assert f"{run}: converted 2 checkpoint(s) (ckpt-10, ckpt-20)" in capsys.readouterr().out
    assert {"ckpt-10", "ckpt-20", "ckpt-20.index"} <= set(os.listdir(run))
    assert latest_checkpoint(str(run)) == str(run / "ckpt-20")
    run_decode(decode_to_file=str(workspace / "after.txt"), **settings)
    assert (workspace / "after.txt").read_text() == (workspace / "before.txt").read_text()


def test_a_checkpoint_of_other_hparams_is_refused(workspace):
    # A bare checkpoint (no run files beside it) restored into a wider model.
    bare = workspace / "bare"
    bare.mkdir()
    for path in (workspace / "dep_parse").glob("ckpt-20.*"):
        shutil.copy(path, bare / path.name)
    with pytest.raises(CheckpointError, match=r"ckpt-20: the checkpoint does not fit model DepParse"):
        run_decode(checkpoint_path=str(bare / "ckpt-20"), model="dep_parse", problem=PROBLEM,
                   data_dir=str(workspace / "data"), hparams_set="transformer_tiny", output_dir=None,
                   decode_from_file=str(workspace / "test.conllu"), decode_to_file=str(workspace / "y.txt"))
    assert not (workspace / "y.txt").exists()


def test_detokenize_writes_the_problems_text(workspace, monkeypatch):
    plain, joined = workspace / "plain.txt", workspace / "detokenized.txt"
    settings = dict(output_dir=str(workspace / "dep_parse"),
                    decode_from_file=str(workspace / "test.conllu"),
                    decode_hparams="beam_size=2,extra_length=2")
    run_decode(decode_to_file=str(plain), **settings)
    problem_class = type(registry.problem(PROBLEM))
    monkeypatch.setattr(problem_class, "detokenize_target",
                        lambda self, tokens: "|".join(tokens), raising=False)
    run_decode(decode_to_file=str(joined), detokenize=True, **settings)
    plain_lines = plain.read_text(encoding="utf-8").splitlines()
    assert joined.read_text(encoding="utf-8").splitlines() == [
        line.replace(" ", "|") for line in plain_lines]
    assert any(" " in line for line in plain_lines)
