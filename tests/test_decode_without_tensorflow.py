"""`bin/decode` under `KERAS_BACKEND=jax` where `import tensorflow` fails.

No training: the test builds small `transformer` and `dep_parse` models,
saves their (random) weights in the checkpoint directory format both
backends read, with the run files, and writes the problem's vocabularies
from a few hundred synthetic samples (no shards: decoding reads only the
vocabularies). `bin/decode` then runs in the JAX environment, which has no
TensorFlow (`.venv-jax`; this interpreter when the test runs there): n-best
lists with scores and a dependency parse (MST) from CoNLL-U input, greedy
translations of standard input, and forced scoring. The outputs are checked
for their layout; `tests/test_decode_backends.py` compares trained models'
outputs with TensorFlow's.
"""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import syntax_t2t.hparams_sets  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
import syntax_t2t.problems  # noqa: F401  (registers the problems)
from backend_sides import JAX_PYTHON, require_jax_environment
from syntax_t2t import registry
from syntax_t2t.checkpointing.weights import save_model_weights
from syntax_t2t.data.conllu_reader import format_conllu
from syntax_t2t.problem import TEST, TRAIN
from syntax_t2t.training import run_directory

pytestmark = pytest.mark.backends

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBLEM = "synthetic_syntax_reorder"
SENTENCES = 6
BEAM = 3


def jax_python() -> str:
    """The interpreter of the JAX side: this one under JAX, else the JAX environment's."""
    if keras.backend.backend() == "jax":
        return sys.executable
    require_jax_environment()
    return JAX_PYTHON


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """`(JAX interpreter, {model: run_dir}, test CoNLL-U, test text lines)`, written here."""
    python = jax_python()
    root = tmp_path_factory.mktemp("decode_without_tensorflow")
    data_dir = root / "data"
    data_dir.mkdir()
    problem = registry.problems.get(PROBLEM)(train_size=300, test_size=SENTENCES)
    vocabularies = problem.build_vocabularies(problem.generate_samples(None, TRAIN, None))
    for name, vocabulary in vocabularies.items():
        vocabulary.save(problem.vocabulary_path(str(data_dir), name))
    sources = [source for source, _ in problem.generate_samples(None, TEST, None)]
    conllu = root / "test.conllu"
    conllu.write_text(format_conllu(sources), encoding="utf-8")
    lines = [" ".join(tree.tokens) for tree in sources]

    run_dirs = {}
    for number, model_name in enumerate(("transformer", "dep_parse")):
        hparams = registry.hparams("transformer_tiny")
        hparams.override(dict(hidden_size=32, filter_size=64))
        keras.utils.set_random_seed(number)
        model = registry.model(model_name)(hparams, {name: len(vocabulary) for name, vocabulary
                                                     in vocabularies.items()})
        run_dir = root / model_name
        save_model_weights(model, str(run_dir), step=1)
        run_directory.write_run_files(str(run_dir), hparams, [
            f"--problem={PROBLEM}", f"--model={model_name}", f"--data_dir={data_dir}"])
        run_dirs[model_name] = run_dir
    return python, run_dirs, conllu, lines


def decode(python, run_dir, *flags, stdin=None):
    env = dict(os.environ, KERAS_BACKEND="jax")
    done = subprocess.run([python, os.path.join(ROOT, "bin", "decode"), f"--output_dir={run_dir}",
                           *flags], input=stdin, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def test_n_best_lists_and_mst_parses(runs, tmp_path):
    python, run_dirs, conllu, lines = runs
    nbest, parses = tmp_path / "nbest.txt", tmp_path / "parses.conllu"
    decode(python, run_dirs["dep_parse"], f"--decode_from_file={conllu}",
           f"--decode_to_file={nbest}", f"--nbest={BEAM}", f"--parse_to_file={parses}",
           "--parse_decoder=mst", f"--decode_hparams=beam_size={BEAM},extra_length=4")
    blocks = nbest.read_text(encoding="utf-8").split("\n\n")
    assert blocks[-1] == "" and len(blocks) == SENTENCES + 1
    for block in blocks[:-1]:
        scores = [float(line.split("\t")[1]) for line in block.split("\n")]
        assert len(scores) == BEAM and scores == sorted(scores, reverse=True)
    trees = parses.read_text(encoding="utf-8").strip().split("\n\n")
    assert len(trees) == SENTENCES
    for tree, line in zip(trees, lines):
        rows = [row.split("\t") for row in tree.split("\n") if not row.startswith("#")]
        assert [row[1] for row in rows] == line.split()
        heads = [int(row[6]) for row in rows]
        assert heads.count(0) == 1  # MST: a tree with one root


@pytest.mark.slow  # two more programs to start and compile: about 30 s
def test_standard_input_and_forced_scoring(runs, tmp_path):
    python, run_dirs, _, lines = runs
    stdin = "".join(line + "\n" for line in lines)
    translations = decode(python, run_dirs["transformer"], "--decode_from_file=-",
                          "--decode_hparams=beam_size=1,extra_length=4,batch_size=4", stdin=stdin)
    translations = translations.split("\n")[:-1]
    assert len(translations) == SENTENCES and all(translations)
    score_file, scores = tmp_path / "pairs.tsv", tmp_path / "scores.txt"
    score_file.write_text("".join(f"{line}\t{translation}\n" for line, translation
                                  in zip(lines, translations)), encoding="utf-8")
    decode(python, run_dirs["transformer"], f"--score_file={score_file}",
           f"--decode_to_file={scores}")
    totals = np.array([[float(value) for value in row.split("\t")]
                       for row in scores.read_text(encoding="utf-8").splitlines()])
    assert totals.shape == (SENTENCES, 2)
    assert np.all(totals < 0) and np.all(totals[:, 0] <= totals[:, 1])
