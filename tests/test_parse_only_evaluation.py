"""The thesis's Table 6.5 as commands: a parse head and a reference parser scored on a gold treebank.

`bin/decode --parse_to_file` writes the parse head's trees of a gold UD
file's words, `bin/parse --input_format=conllu` the reference parser's,
and `bin/evaluate --gold_parse` scores both on the same file, side by side
(docs/experiments.md). Here on the first sentences of Czech CAC test and
German GSD test (with its multiword tokens), with a dep_parse run of random
weights and an untrained spaCy parser: what is checked is that every
syntactic word of the gold file is scored once, and that the UAS is the
share of gold heads, recounted from the raw files.
"""

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
import tensorflow as tf
from absl import flags
from absl.testing import flagsaver
from parser_fixtures import DATA, untrained_pipeline_dir

from syntax_t2t import registry
from syntax_t2t.cli import decode, evaluate, registration
from syntax_t2t.training import run_directory
from syntax_t2t.training.checkpoints import model_weights

pytestmark = [pytest.mark.real_data, pytest.mark.slow]
FLAGS = flags.FLAGS
REPO = Path(__file__).resolve().parents[1]
PROBLEM = "synthetic_syntax_reorder"
SENTENCES = 30
TREEBANKS = {"cs": DATA / "ud" / "cs_cac-ud-test.conllu.gz", "de": DATA / "ud" / "de_gsd-ud-test.conllu.gz"}


def first_sentences(path, count, output):
    """The first `count` sentence blocks of a CoNLL-U file, copied unchanged."""
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        blocks = stream.read().split("\n\n")[:count]
    output.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return output


def word_heads(path):
    """The HEAD column of every syntactic word (no multiword ranges, no empty nodes)."""
    heads = []
    for line in path.read_text(encoding="utf-8").splitlines():
        columns = line.split("\t")
        if len(columns) == 10 and columns[0].isdigit():
            heads.append(columns[6])
    return heads


@pytest.fixture(scope="module")
def dep_parse_run(tmp_path_factory):
    """A dep_parse run on synthetic_syntax_reorder with one checkpoint of random weights."""
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["decode"])
    root = tmp_path_factory.mktemp("table_6_5")
    problem = registry.problem(PROBLEM)
    problem.generate_data(str(root / "data"), str(root / "raw"), max_examples=100)
    hparams = registry.hparams("transformer_tiny")
    hparams.override(dict(hidden_size=16, filter_size=32, parse_layer=1))
    model = registry.model("dep_parse")(hparams, problem.vocab_sizes(str(root / "data")))
    tf.train.Checkpoint(model_weights=model_weights(model), step=tf.Variable(1, dtype=tf.int64)).save(
        str(root / "run" / "ckpt"))
    run_directory.write_run_files(str(root / "run"), hparams, [
        f"--problem={PROBLEM}", "--model=dep_parse", f"--data_dir={root / 'data'}"])
    return root


@pytest.mark.parametrize("language", sorted(TREEBANKS))
def test_parse_head_and_reference_parser_on_the_same_gold_file(dep_parse_run, tmp_path, language):
    if not TREEBANKS[language].is_file():
        pytest.skip(f"real data file {TREEBANKS[language]} is absent")
    gold = first_sentences(TREEBANKS[language], SENTENCES, tmp_path / "gold.conllu")
    head_parse, reference_parse = tmp_path / "dep_parse.conllu", tmp_path / "reference.conllu"
    with flagsaver.flagsaver(output_dir=str(dep_parse_run / "run"), decode_from_file=str(gold),
                             decode_to_file=str(tmp_path / "translations.txt"),
                             parse_to_file=str(head_parse), decode_hparams="beam_size=1,extra_length=2"):
        decode.main(["decode"])
    parser = untrained_pipeline_dir(tmp_path / "parser", lang=language)
    done = subprocess.run([sys.executable, str(REPO / "bin" / "parse"), f"--parser=spacy:{parser}",
                           f"--input_file={gold}", "--input_format=conllu",
                           f"--output_file={reference_parse}"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with flagsaver.flagsaver(gold_parse=str(gold), parses=[str(head_parse), str(reference_parse)],
                             hypotheses=[], json_output=str(tmp_path / "uas.json")):
        evaluate.main(["evaluate"])
    systems = json.loads((tmp_path / "uas.json").read_text(encoding="utf-8"))["parsing"]["systems"]
    gold_heads = word_heads(gold)
    if language == "de":
        assert any("-" in line.split("\t")[0] for line in gold.read_text(encoding="utf-8").splitlines()
                   if "\t" in line), "the German excerpt should hold multiword tokens"
    for system, path in zip(systems, (head_parse, reference_parse)):
        predicted = word_heads(path)
        assert (system["sentences"], system["words"]) == (SENTENCES, len(gold_heads))
        assert len(predicted) == len(gold_heads)
        correct = sum(p == g for p, g in zip(predicted, gold_heads))
        assert system["uas"] == pytest.approx(100 * correct / len(gold_heads))

