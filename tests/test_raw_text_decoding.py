"""bin/decode reads raw text as training read its sources: the recorded parser's words.

A problem that parsed raw source text at datagen (`translate_syntax` with
`source_format=text`) tokenised it with its parser: spaCy splits `spí.` into
`spí` and `.`. Raw input to `bin/decode`, from a file or standard input, must
become the same words for every model, whether it reads trees or not; so
decoding raw text must give what decoding its parsed CoNLL-U gives.
"""

import io
import sys

import pytest
from absl import flags
from absl.testing import flagsaver
from decode_runs import save_random_run, small_hparams
from parser_fixtures import untrained_pipeline_dir

from syntax_t2t import problem_options, registry
from syntax_t2t.cli import decode, registration
from syntax_t2t.data.conllu_reader import write_conllu
from syntax_t2t.decoding import inputs as decode_inputs

PROBLEM = "translate_syntax"
WORDS = ["pes", "kočka", "běží", "spí", "rychle", "doma", "velký", "malá"]
ENGLISH = {"pes": "dog", "kočka": "cat", "běží": "runs", "spí": "sleeps", "rychle": "fast",
           "doma": "home", "velký": "big", "malá": "small"}
# The tree-reading model's file input was parsed before #34 too: it runs with the slow tests.
MODELS = ("transformer", pytest.param("tree_distance", marks=pytest.mark.slow))
# Random weights rarely end a hypothesis: a short maximum length keeps the test fast.
SETTINGS = "beam_size=2,extra_length=4"


def write_raw_files(directory):
    """Raw `<split>.cs`/`<split>.en`: capitalised, the full stop glued to the last word."""
    directory.mkdir(parents=True)
    for split, size in (("train", 40), ("dev", 6), ("test", 6)):
        lines = [[WORDS[(7 * index + 3 * position + len(split)) % len(WORDS)]
                  for position in range(2 + index % 4)] for index in range(size)]
        (directory / f"{split}.cs").write_text(
            "".join(" ".join(line).capitalize() + ".\n" for line in lines), encoding="utf-8")
        (directory / f"{split}.en").write_text(
            "".join(" ".join(ENGLISH[w] for w in line).capitalize() + ".\n" for line in lines),
            encoding="utf-8")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """translate_syntax data parsed by an untrained spaCy pipeline, and the test text parsed."""
    root = tmp_path_factory.mktemp("raw_text_decoding")
    registration.import_all()
    if not flags.FLAGS.is_parsed():
        flags.FLAGS(["decode"])
    (root / "parser").mkdir()
    parser_dir = untrained_pipeline_dir(root / "parser" / "cs")
    write_raw_files(root / "raw")
    given = problem_options.parse(
        registry.problems.get(PROBLEM),
        f"source_language=cs,target_language=en,parser=spacy:{parser_dir}")
    registry.problems.get(PROBLEM)(**given).generate_data(str(root / "data"), str(root / "raw"))
    problem = problem_options.problem_for_data(PROBLEM, str(root / "data"))
    raw_lines = (root / "raw" / "test.cs").read_text(encoding="utf-8").splitlines()
    write_conllu(problem.parse_source_texts(raw_lines), root / "test.conllu")
    return root


def run_dir(workspace, model_name):
    """An untrained run of `model_name` on the workspace's data, saved once."""
    directory = workspace / model_name
    if not directory.is_dir():
        # Seed 1: random weights under which neither model ends every hypothesis at once.
        save_random_run(directory, model_name, small_hparams(), workspace / "data",
                        steps=(1,), problem_name=PROBLEM)
    return directory


def decoded(workspace, model_name, source, suffix):
    target = workspace / f"{model_name}.{suffix}.hyp"
    run_dir(workspace, model_name)
    with flagsaver.flagsaver(output_dir=str(workspace / model_name), decode_from_file=str(source),
                             decode_to_file=str(target), decode_hparams=SETTINGS):
        decode.main(["decode"])
    return target.read_text(encoding="utf-8").splitlines()


def test_the_inputs_differ_in_their_words(workspace):
    """Whitespace splitting and the parser disagree on the test text, so the test can fail."""
    raw = decode_inputs.read_sources(workspace / "raw" / "test.cs")
    parsed = decode_inputs.read_sources(workspace / "test.conllu")
    assert len(raw) == len(parsed) == 6
    assert raw[0].tokens[-1].endswith(".") and len(raw[0].tokens[-1]) > 1
    assert parsed[0].tokens[-2:] == (raw[0].tokens[-1][:-1], ".")


@pytest.mark.parametrize("model_name", MODELS)
def test_raw_text_decodes_as_its_parsed_conllu(workspace, model_name):
    from_conllu = decoded(workspace, model_name, workspace / "test.conllu", "conllu")
    assert len(from_conllu) == 6 and all(from_conllu)
    assert decoded(workspace, model_name, workspace / "raw" / "test.cs", "raw") == from_conllu


@pytest.mark.slow
@pytest.mark.parametrize("model_name", MODELS)
def test_standard_input_decodes_as_its_parsed_conllu(workspace, model_name, monkeypatch, capsys):
    from_conllu = decoded(workspace, model_name, workspace / "test.conllu", "conllu")
    raw = (workspace / "raw" / "test.cs").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    capsys.readouterr()
    with flagsaver.flagsaver(output_dir=str(run_dir(workspace, model_name)),
                             decode_interactive=True, decode_hparams=SETTINGS):
        decode.main(["decode"])
    assert capsys.readouterr().out.splitlines() == from_conllu


def test_the_summary_counts_one_sentence_in_the_singular():
    assert decode._sentences(1) == "1 sentence"
    assert decode._sentences(2) == "2 sentences"
    assert decode._sentences(1, "unusable input") == "1 unusable input sentence"
