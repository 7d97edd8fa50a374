"""bin/decode --parse_to_file and bin/train's word-position warning on subword problems.

Runs are made here with random weights (as in `test_decode_cli.py`), so the
decoding tests need no training: they check what is written (one head per
source *word*, scored by bin/evaluate against the gold trees) and what is
refused (`--parse_to_file` for a model without a parse head).
"""

import itertools
from unittest import mock

import pytest
import tensorflow as tf
from absl import flags
from absl.testing import flagsaver

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.cli import common, decode, train
from syntax_t2t.data.conllu_reader import format_conllu, read_conllu
from syntax_t2t.data.parse_file import read_parsed
from syntax_t2t.evaluation.attachment import score_parse_files
from syntax_t2t.training import run_directory
from syntax_t2t.training.checkpoints import model_weights

FLAGS = flags.FLAGS
SUBWORD = "synthetic_syntax_reorder_subword"
WORDS = "synthetic_syntax_reorder"
TINY = ("hidden_size=16,filter_size=32,num_heads=2,num_encoder_layers=1,num_decoder_layers=1,"
        "batch_size=96,max_length=40,learning_rate_warmup_steps=10,parse_layer=0")
RUNS = [  # (run name, problem, model, hparams)
    ("sisa_subword", SUBWORD, "sisa", "source_word_positions=true"),
    ("dep_parse_subword", SUBWORD, "dep_parse", ""),
    ("transformer", WORDS, "transformer", ""),
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["decode"])
    root = tmp_path_factory.mktemp("subword_cli")
    for name in (SUBWORD, WORDS):
        problem = registry.problems.get(name)(train_size=200, dev_size=10, test_size=8, max_length=8)
        problem.generate_data(str(root / name), str(root / "raw"))
        trees = [tree for tree, _ in itertools.islice(problem.generate_samples(None, "test", None), 8)]
        (root / f"{name}.conllu").write_text(format_conllu(trees), encoding="utf-8")
    for run_name, problem_name, model_name, overrides in RUNS:
        hparams = registry.hparams("transformer_tiny").parse(TINY)
        hparams.parse(overrides)
        data = root / problem_name
        model = registry.model(model_name)(hparams, registry.problem(problem_name).vocab_sizes(str(data)))
        step = tf.Variable(10, dtype=tf.int64)
        for weight in model.weights:
            weight.assign(tf.random.normal(weight.shape, stddev=0.1, seed=3))
        tf.train.CheckpointManager(
            tf.train.Checkpoint(model_weights=model_weights(model), step=step), str(root / run_name),
            max_to_keep=1, checkpoint_name="ckpt").save(checkpoint_number=10)
        run_directory.write_run_files(str(root / run_name), hparams, [
            f"--problem={problem_name}", f"--model={model_name}", f"--data_dir={data}"])
    return root


def run_decode(**flag_values):
    with flagsaver.flagsaver(**flag_values):
        decode.main(["decode"])


@pytest.mark.parametrize("run_name", ["sisa_subword", "dep_parse_subword"])
@pytest.mark.parametrize("parse_decoder", ["argmax", "mst"])
def test_parse_of_a_subword_model_is_over_words(workspace, run_name, parse_decoder):
    gold = workspace / f"{SUBWORD}.conllu"
    parse = workspace / f"{run_name}.{parse_decoder}.conllu"
    run_decode(output_dir=str(workspace / run_name), decode_from_file=str(gold),
               decode_to_file=str(workspace / f"{run_name}.txt"), parse_to_file=str(parse),
               parse_decoder=parse_decoder, decode_hparams="beam_size=1,extra_length=2")
    predicted = read_parsed(parse)
    gold_trees = list(read_conllu(gold))
    assert [p.tokens for p in predicted] == [tree.tokens for tree in gold_trees]
    # The subword problem really splits words, so subword heads would not fit.
    problem = registry.problem(SUBWORD)
    problem.load_vocabularies(str(workspace / SUBWORD))
    assert any(len(problem.encode_source(tree)["inputs"]) - 1 > len(tree) for tree in gold_trees)
    # bin/evaluate scores it on words against the gold trees.
    scores = score_parse_files(parse, gold)
    assert scores.words == sum(len(tree) for tree in gold_trees)
    assert 0.0 <= scores.uas <= 100.0


def test_transformer_refuses_parse_to_file(workspace):
    output = workspace / "refused.txt"
    message = (r"--parse_to_file: model transformer has no parse head, so it predicts no source "
               r"parse; only dep_parse, diagonal_parse and sisa parse")
    with pytest.raises(common.UsageError, match=message):
        run_decode(output_dir=str(workspace / "transformer"),
                   decode_from_file=str(workspace / f"{WORDS}.conllu"), decode_to_file=str(output),
                   parse_to_file=str(workspace / "refused.conllu"))
    assert not output.exists() and not (workspace / "refused.conllu").exists()


# ------------------------------------------------------------ bin/train


def test_train_warns_when_a_model_ignores_the_word_positions(workspace, tmp_path):
    values = dict(problem=SUBWORD, model="pascal", hparams_set="transformer_tiny", hparams=TINY,
                  data_dir=str(workspace / SUBWORD), output_dir=str(tmp_path / "run"), train_steps=1,
                  save_checkpoints_steps=1, eval_steps=1, eval_every=0, random_seed=1)
    with flagsaver.flagsaver(**values), mock.patch.object(train.logging, "warning") as warning:
        train.main(["train"])
    messages = [call.args[0] % call.args[1:] for call in warning.call_args_list]
    assert any("gives src_word_position" in m and "source_word_positions=false" in m
               and "model pascal" in m and "--hparams=source_word_positions=true" in m
               for m in messages), messages


@pytest.mark.parametrize("model_name,overrides,problem_keys,warns", [
    ("pascal", "", (SUBWORD,), True),
    ("sisa", "", (SUBWORD,), True),
    ("tree_distance", "", (SUBWORD,), True),
    ("tree_traversal", "", (SUBWORD,), True),
    ("sennrich_haddow", "sh_factors=[deprel,subword_tag],sh_factor_sizes=[2,1]", (SUBWORD,), True),
    ("pascal", "source_word_positions=true", (SUBWORD,), False),
    ("tree_distance", "source_word_positions=true", (SUBWORD,), False),
    ("sennrich_haddow", "sh_factors=[deprel],sh_factor_sizes=[2]", (SUBWORD,), False),
    ("transformer", "", (SUBWORD,), False),
    ("dep_parse", "", (SUBWORD,), False),
    ("pascal", "", (WORDS,), False),
])
def test_word_position_warning_cases(workspace, model_name, overrides, problem_keys, warns):
    problem_name = problem_keys[0]
    hparams = registry.hparams("transformer_tiny").parse(TINY)
    hparams.parse(overrides)
    model = registry.model(model_name)(
        hparams, registry.problem(problem_name).vocab_sizes(str(workspace / problem_name)))
    keys = registry.problem(problem_name).data_feature_keys(str(workspace / problem_name))
    with flagsaver.flagsaver(problem=problem_name, model=model_name), \
            mock.patch.object(train.logging, "warning") as warning:
        train._warn_unread_word_positions(keys, model, hparams)
    assert warning.called == warns
