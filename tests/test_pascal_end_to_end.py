"""Pascal and its baselines through bin/train and bin/decode, on word and subword problems.

Each model trains two steps and translates a few test sentences, on
`synthetic_syntax_reorder` (words and subwords) and, where the real data is
present, on `pud_syntax_de_cs` (words and subwords).
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
SUBWORD_SYNTAX = "source_word_positions=true"
SYNTHETIC = {"train_size": 60, "dev_size": 6, "test_size": 4, "max_length": 8}
PUD_SIZES = {"train_size": 60, "dev_size": 6, "test_size": 4}

RUNS = [
    # (problem, model, extra hparams)
    ("synthetic_syntax_reorder", "pascal", "pascal_heads=3,parent_ignoring=0.3"),
    ("synthetic_syntax_reorder", "sisa", ""),
    ("synthetic_syntax_reorder", "sennrich_haddow", "sh_factor_sizes=[4]"),
    ("synthetic_syntax_reorder_currey_heafield", "transformer", ""),
    ("synthetic_syntax_reorder_subword", "pascal", f"{SUBWORD_SYNTAX},pascal_heads=2"),
    ("synthetic_syntax_reorder_subword", "sisa", SUBWORD_SYNTAX),
    ("synthetic_syntax_reorder_subword", "sennrich_haddow",
     f"{SUBWORD_SYNTAX},sh_factors=[lemma,upos,deprel,subword_tag],sh_factor_sizes=[3,2,2,1]"),
    ("synthetic_syntax_reorder_subword_currey_heafield", "transformer", ""),
]
PUD_RUNS = [
    ("pud_syntax_de_cs", "pascal", "parent_ignoring=0.3"),
    ("pud_syntax_de_cs", "sisa", ""),
    ("pud_syntax_de_cs", "sennrich_haddow", "sh_factor_sizes=[4]"),
    ("pud_syntax_de_cs_currey_heafield", "transformer", ""),
    ("pud_syntax_de_cs_subword", "pascal", SUBWORD_SYNTAX),
    ("pud_syntax_de_cs_subword", "sisa", SUBWORD_SYNTAX),
    ("pud_syntax_de_cs_subword", "sennrich_haddow",
     f"{SUBWORD_SYNTAX},sh_factors=[lemma,deprel,subword_tag],sh_factor_sizes=[3,2,1]"),
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["train"])
    return tmp_path_factory.mktemp("pascal_end_to_end")


def problem_with_data(workspace, name):
    """The problem, its data generated once per module, and its test sources as a file."""
    problem_class = registry.problems.get(name)
    is_pud = name.startswith("pud")
    sizes = PUD_SIZES if is_pud else SYNTHETIC
    options = ({"base_options": sizes, "mix_buffer_size": 50} if name.endswith("currey_heafield")
               else sizes)
    problem = problem_class(**options)
    raw = workspace / "raw"
    if is_pud and not raw.exists():
        raw.mkdir()
        for language in ("de", "cs"):
            shutil.copy(PUD / f"{language}_pud-ud-test.conllu.gz", raw)
    data = workspace / "data"
    problem.generate_data(str(data), str(raw))
    samples = itertools.islice(problem.generate_samples(str(raw), "test", None), 4)
    sources = [source for source, _ in samples]
    if problem.has_source_trees:
        path = workspace / f"{name}.test.conllu"
        path.write_text(format_conllu(sources), encoding="utf-8")
    else:
        path = workspace / f"{name}.test.txt"
        path.write_text("".join(" ".join(words) + "\n" for words in sources), encoding="utf-8")
    return problem, data, path, sources


def train_and_decode(workspace, problem_name, model, extra):
    # bin/train and bin/decode build the registered problem with its default
    # options; they only read the (smaller) generated data's files.
    _, data, test_file, sources = problem_with_data(workspace, problem_name)
    hparams = TINY + (f",{extra}" if extra else "")
    train_then_decode(problem_name, model, hparams, data, workspace / f"{problem_name}-{model}",
                      test_file, workspace / f"{problem_name}-{model}.txt", len(sources))


@pytest.mark.slow
@pytest.mark.parametrize("problem_name,model,extra", RUNS)
def test_trains_and_decodes_on_synthetic(workspace, problem_name, model, extra):
    train_and_decode(workspace, problem_name, model, extra)


@pytest.mark.slow
@pytest.mark.real_data
@pytest.mark.skipif(not PUD.is_dir(), reason=f"real data folder {PUD} is absent")
@pytest.mark.parametrize("problem_name,model,extra", PUD_RUNS)
def test_trains_and_decodes_on_pud(workspace, problem_name, model, extra):
    train_and_decode(workspace, problem_name, model, extra)
