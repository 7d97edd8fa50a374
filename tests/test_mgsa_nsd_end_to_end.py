"""MG-SA and NSD through bin/train and bin/decode.

Each configuration trains two steps and translates a few test sentences on
`synthetic_syntax_reorder` and, where the real data is present, on
`pud_syntax_de_cs` (whose gold Czech target trees feed the target side).
"""

import itertools
import shutil
from pathlib import Path

import pytest
from absl import flags
from end_to_end import train_then_decode  # also defines bin/train's and bin/decode's flags

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.data.conllu_reader import format_conllu

FLAGS = flags.FLAGS
PUD = Path(__file__).resolve().parents[2] / "shared" / "data" / "pud"
TINY = ("hidden_size=16,filter_size=32,num_heads=4,num_encoder_layers=1,num_decoder_layers=1,"
        "batch_size=256,max_length=40,learning_rate_warmup_steps=10")
SYNTHETIC = {"train_size": 60, "dev_size": 6, "test_size": 4, "max_length": 8}
PUD_SIZES = {"train_size": 60, "dev_size": 6, "test_size": 4}

RUNS = [
    # (model, extra hparams)
    ("mgsa", ""),  # syntactic phrases, attention composition, tag supervision
    ("mgsa", "mgsa_partition=ngram,mgsa_composition=max"),
    ("mgsa", "mgsa_composition=lstm,mgsa_interaction=on_lstm,mgsa_chunk_size=4"),
    ("nsd", "nsd_input=concat,nsd_positional_encoding=true,nsd_output=true"),
    ("nsd", "nsd_distance=relative,nsd_input=linear,nsd_output=true"),
    # Target side: the decoder reads the distances it predicts (carried in the beam state).
    ("nsd", "nsd_side=target,nsd_input=linear,nsd_output=true"),
    ("nsd", "nsd_side=both,nsd_distance=relative,nsd_positional_encoding=true,nsd_output=true"),
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["train"])
    return tmp_path_factory.mktemp("mgsa_nsd_end_to_end")


def problem_with_data(workspace, name):
    """The problem, its data generated once per module, and its test sources as CoNLL-U."""
    is_pud = name.startswith("pud")
    problem = registry.problems.get(name)(**(PUD_SIZES if is_pud else SYNTHETIC))
    raw = workspace / "raw"
    if is_pud and not raw.exists():
        raw.mkdir()
        for language in ("de", "cs"):
            shutil.copy(PUD / f"{language}_pud-ud-test.conllu.gz", raw)
    data = workspace / f"data-{name}"
    if not data.exists():
        problem.generate_data(str(data), str(raw))
    sources = [source for source, _ in
               itertools.islice(problem.generate_samples(str(raw), "test", None), 4)]
    path = workspace / f"{name}.test.conllu"
    path.write_text(format_conllu(sources), encoding="utf-8")
    return data, path, sources


def train_and_decode(workspace, problem_name, model, extra, index):
    data, test_file, sources = problem_with_data(workspace, problem_name)
    hparams = TINY + (f",{extra}" if extra else "")
    train_then_decode(problem_name, model, hparams, data, workspace / f"{problem_name}-{model}-{index}",
                      test_file, workspace / f"{problem_name}-{model}-{index}.txt", len(sources))


@pytest.mark.slow
@pytest.mark.parametrize("index,model,extra", [(i, *run) for i, run in enumerate(RUNS)])
def test_trains_and_decodes_on_synthetic(workspace, index, model, extra):
    train_and_decode(workspace, "synthetic_syntax_reorder", model, extra, index)


@pytest.mark.slow
@pytest.mark.real_data
@pytest.mark.skipif(not PUD.is_dir(), reason=f"real data folder {PUD} is absent")
@pytest.mark.parametrize("index,model,extra", [(i, *run) for i, run in enumerate(RUNS[::3])])
def test_trains_and_decodes_on_pud(workspace, index, model, extra):
    train_and_decode(workspace, "pud_syntax_de_cs", model, extra, index)
