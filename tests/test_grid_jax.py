"""`bin/grid` under `KERAS_BACKEND=jax` where `import tensorflow` fails, with a time budget.

Driven from the TensorFlow environment, which generates the data (bin/datagen
needs TensorFlow); the grid then runs in the JAX environment (`.venv-jax`,
no TensorFlow) on a tiny registered experiment (`--usr_dir`): it trains,
decodes, parses and scores one run, records that JAX trained it, and with a
budget too small for the next run leaves it for the next invocation and
exits 0 naming the command that continues. Without the data, it names the
directory and says where bin/datagen runs.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from backend_sides import JAX_PYTHON, ROOT, require_jax_environment

pytestmark = pytest.mark.slow

EXPERIMENT = textwrap.dedent("""
    from syntax_t2t import registry
    from syntax_t2t.grid.experiment import Experiment, ParseTest, System, TranslationTest


    @registry.register_experiment
    def grid_jax_tiny():
        return Experiment(
            problem="synthetic_syntax_reorder", hparams_set="transformer_tiny",
            systems=[System("dep_parse", "dep_parse",
                            "hidden_size=32,filter_size=64,parse_layer=0")],
            baseline="dep_parse", seeds=(1, 2), train_steps=4, eval_every=4,
            early_stopping_patience=0, best_checkpoint_metric="loss",
            decode_hparams="beam_size=2,alpha=0.6,extra_length=5",
            translation_tests=[TranslationTest(
                "test", source="{data_dir}/{problem}-test.src.conllu",
                reference="{data_dir}/{problem}-test.ref.txt")],
            parse_tests=[ParseTest("test_trees", gold="{data_dir}/{problem}-test.src.conllu")])
""")


def _jax_grid(usr_dir, data_dir, output_dir, *extra):
    command = [JAX_PYTHON, os.path.join(ROOT, "bin", "grid"), "--experiment=grid_jax_tiny",
               f"--usr_dir={usr_dir}", f"--data_dir={data_dir}", f"--output_dir={output_dir}",
               *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=3000,
                          env=dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2"))


def test_grid_trains_decodes_and_scores_under_jax_and_keeps_to_its_budget(tmp_path):
    require_jax_environment()
    assert subprocess.run([JAX_PYTHON, "-c", "import tensorflow"],
                          capture_output=True).returncode != 0, "the JAX side has TensorFlow"
    usr_dir = tmp_path / "usr"
    usr_dir.mkdir()
    (usr_dir / "grid_jax_tiny.py").write_text(EXPERIMENT)
    grid_dir = tmp_path / "grid"

    missing = _jax_grid(usr_dir, tmp_path / "no_data", grid_dir)
    assert missing.returncode != 0
    assert f"no complete data of problem synthetic_syntax_reorder in {tmp_path / 'no_data'}" \
        in missing.stderr
    assert "bin/datagen needs TensorFlow" in missing.stderr

    data_dir = tmp_path / "data"
    subprocess.run([sys.executable, os.path.join(ROOT, "bin", "datagen"),
                    "--problem=synthetic_syntax_reorder", f"--data_dir={data_dir}",
                    f"--tmp_dir={tmp_path / 'tmp'}", "--max_examples=60"],
                   check=True, capture_output=True, timeout=600)

    first = _jax_grid(usr_dir, data_dir, grid_dir, "--seeds=1", "--time_budget=40m")
    assert first.returncode == 0, first.stderr[-4000:]
    assert "1 of 2 runs finished" in first.stdout
    run = grid_dir / "runs" / "dep_parse" / "seed1"
    state = json.loads((run / "grid.json").read_text())
    assert state["backends"] == ["jax"]
    assert set(state["stage_seconds"]) == {"train", "decode:test", "parse:test_trees", "score"}
    scores = json.loads((run / "scores.json").read_text())
    assert scores["backends"] == ["jax"] and scores["steps"] == 4
    assert 0 <= scores["translation"]["test"]["BLEU"] <= 100
    assert 0 <= scores["parse"]["test_trees"]["UAS"] <= 100
    assert len((run / "tests" / "test.hyp").read_text().splitlines()) == 60
    results = (grid_dir / "results.md").read_text()
    assert "Trained on the jax backend." in results and "| jax |" in results

    # Seed 2 would take about as long as seed 1 did: not started under a 5 s budget.
    second = _jax_grid(usr_dir, data_dir, grid_dir, "--time_budget=5s")
    assert second.returncode == 0, second.stderr[-4000:]
    assert "1 of 2 runs finished" in second.stdout
    assert ("time budget 5s: left for the next invocation: dep_parse/seed2; continue with: "
            "bin/grid --experiment=grid_jax_tiny") in second.stdout
    assert not (grid_dir / "runs" / "dep_parse" / "seed2" / "train.log").exists()
