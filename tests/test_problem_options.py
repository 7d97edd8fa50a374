"""--problem_options: typed like --hparams, unknown keys refused, recorded by datagen and checked later."""

import subprocess
import sys
from pathlib import Path

import pytest
from absl import flags
from absl.testing import flagsaver

from syntax_t2t import problem_options, registry
from syntax_t2t.cli import registration
from syntax_t2t.cli import datagen, train  # noqa: F401  (their flags)
from syntax_t2t.decoding.model_loading import load_trained_model
from syntax_t2t.data.schema import INPUTS, WORD_POSITION_FEATURE

FLAGS = flags.FLAGS
PROBLEM = "synthetic_syntax_reorder"


@pytest.fixture(scope="module", autouse=True)
def registered():
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["test"])


def synthetic():
    return registry.problems.get(PROBLEM)


def test_values_are_typed_by_the_class_defaults():
    assert problem_options.parse(synthetic(), "train_size=40,root_punct_probability=0,"
                                              "subwords=joint,tag_vocab_size=30") == {
        "train_size": 40, "root_punct_probability": 0.0, "subwords": "joint",
        "tag_vocab_size": 30}
    assert isinstance(problem_options.parse(synthetic(), "root_punct_probability=0")[
        "root_punct_probability"], float)
    assert problem_options.parse(synthetic(), "") == {}


@pytest.mark.parametrize("text, message", [
    ("train_sise=4", r"unknown problem option 'train_sise'; did you mean train_size"),
    ("train_size=0.5", r"problem option 'train_size' is int, got float 0.5"),
    ("source_lemmas=yes", r"problem option 'source_lemmas' is bool, got str 'yes'"),
    ("num_shards=3", r"'num_shards' .* is set per split"),
    ("train_size", r"malformed override"),
])
def test_bad_options_are_refused(text, message):
    with pytest.raises(problem_options.ProblemOptionsError, match=message):
        problem_options.parse(synthetic(), text)


def test_an_unknown_option_lists_every_option_with_type_default_and_meaning():
    with pytest.raises(problem_options.ProblemOptionsError) as raised:
        problem_options.parse(registry.problems.get("translate_syntax"), "foo=1")
    message = str(raised.value)
    assert "unknown problem option 'foo'" in message
    assert "source_format (str, default text): text (raw sentences" in message
    assert "subword_vocab_size (int, default 16000): Largest subword vocabulary" in message
    assert "tag_vocab_size (any, default none): Largest tag" in message
    # Per-split dicts are not settable here, so not listed.
    assert "num_shards" not in message


def test_problem_options_help_lists_the_options_and_stops(capsys):
    with pytest.raises(problem_options.ProblemOptionsHelp) as raised:
        problem_options.parse(registry.problems.get("translate_syntax"), "help")
    text = str(raised.value)
    assert text.startswith("options of translate_syntax (--problem_options='key=value,...'):")
    assert "parser (str, default ''): spacy:MODEL or stanza:LANG[:MODEL_DIR]" in text
    for name in problem_options.settable_names(registry.problems.get("translate_syntax")):
        assert f"\n  {name} (" in text
    # Every built-in problem describes every option it has.
    for name in registry.problems.names():
        assert "(not described)" not in problem_options.describe(registry.problems.get(name)), name


@pytest.mark.slow
def test_bin_datagen_prints_the_list_and_exits_zero(tmp_path):
    result = subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parents[1] / "bin" / "datagen"),
         "--problem=translate_syntax", f"--data_dir={tmp_path}", "--problem_options=help"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "  source_format (str, default text): " in result.stdout
    assert not list(tmp_path.iterdir())


def run_datagen(data_dir, tmp_dir, options):
    with flagsaver.as_parsed(problem=PROBLEM, data_dir=str(data_dir), tmp_dir=str(tmp_dir),
                             problem_options=options):
        datagen.main(["datagen"])


def test_datagen_records_them_and_later_tools_use_and_check_them(tmp_path):
    data = tmp_path / "data"
    run_datagen(data, tmp_path / "raw", "train_size=60,dev_size=8,test_size=3,max_length=6,"
                                        "subwords=joint,subword_vocab_size=60")
    problem = problem_options.problem_for_data(PROBLEM, str(data))
    assert (problem.train_size, problem.subwords, problem.subword_vocab_size) == (60, "joint", 60)
    # The recorded subwords make the problem give word positions, as its data does.
    assert "src_word_position" in problem.feature_keys
    assert problem_options.problem_for_data(PROBLEM, str(data), "subwords=joint").subwords == "joint"
    with pytest.raises(problem_options.ProblemOptionsError,
                       match=r"differ from the options the data in .* was generated with "
                             r"\(subwords: data joint, given separate\)"):
        problem_options.problem_for_data(PROBLEM, str(data), "subwords=separate")
    # Without data, only the given options apply.
    assert problem_options.problem_for_data(PROBLEM, str(tmp_path / "none"), "train_size=7"
                                            ).train_size == 7


def test_bin_train_and_decode_refuse_options_the_data_was_not_made_with(tmp_path):
    data = tmp_path / "data"
    run_datagen(data, tmp_path / "raw", "train_size=40,dev_size=6,test_size=3,max_length=6")
    with flagsaver.as_parsed(problem=PROBLEM, model="transformer", hparams_set="transformer_tiny",
                             data_dir=str(data), output_dir=str(tmp_path / "run"),
                             problem_options="train_size=41"):
        with pytest.raises(problem_options.ProblemOptionsError, match="train_size: data 40"):
            train.main(["train"])
    assert not (tmp_path / "run").exists()
    # The options are checked before any weight is read: an empty checkpoint stand-in will do.
    (tmp_path / "run2").mkdir()
    (tmp_path / "run2" / "ckpt-1.index").write_bytes(b"")
    with pytest.raises(problem_options.ProblemOptionsError, match="max_length: data 6, given 7"):
        load_trained_model(checkpoint_path=str(tmp_path / "run2" / "ckpt-1"),
                           model_name="transformer", problem_name=PROBLEM, data_dir=str(data),
                           hparams_set="transformer_tiny", problem_options_text="max_length=7")


def test_datagen_parser_and_problem_options_must_agree(tmp_path):
    from syntax_t2t.cli import common
    with flagsaver.as_parsed(problem=PROBLEM, data_dir=str(tmp_path), problem_options="random_seed=3",
                             random_seed="4"):
        with pytest.raises(common.UsageError, match="--random_seed=4 and --problem_options "
                                                    "random_seed=3 differ"):
            datagen.main(["datagen"])


def test_translate_syntax_defaults_to_joint_subwords_and_none_means_words(tmp_path):
    # Own data gets subwords unless asked otherwise (#34 item 5), as Marian's and OpenNMT's quick starts.
    registration.import_all()
    cls = registry.problems.get("translate_syntax")
    assert cls(source_language="cs", target_language="en").subwords == "joint"
    words = cls(**problem_options.parse(cls, "source_language=cs,target_language=en,subwords=none"))
    assert words.subwords is None and words.options()["subwords"] is None
    assert INPUTS in words.vocabulary_names and WORD_POSITION_FEATURE not in words.feature_keys
    assert WORD_POSITION_FEATURE in cls(source_language="cs", target_language="en").feature_keys
    with pytest.raises(ValueError, match="option subwords='words'"):
        cls(**problem_options.parse(cls, "subwords=words"))
