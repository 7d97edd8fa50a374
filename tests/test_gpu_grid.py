"""A grid's GPU session as it will run: `bin/grid --bundle_dir` here, `docs/gpu_grid.sh` there.

The lent GPU machine has JAX but no TensorFlow, spaCy or network, and keeps
nothing after the session but a few files. Here the JAX environment
(`.venv-jax`, where `import tensorflow` fails) stands in for it on the CPU:
a tiny registered experiment (`--usr_dir`) with an open test, a sealed test
and a parse test is bundled from the TensorFlow side (bin/datagen needs
TensorFlow) and run by the session script, two grid tasks side by side
under a time budget. Each run trains, decodes, parses and scores under JAX
and records that JAX trained it; what comes back (the archive of the
finished runs, sealed translations included, and the opened seal) is
restored into a fresh grid, which reports both runs and reads the seal
instead of opening it again. Without the data, the JAX grid names the
directory and says where bin/datagen runs.
"""

import json
import os
import subprocess
import sys
import tarfile
import textwrap

import pytest

from backend_sides import JAX_PYTHON, ROOT, require_jax_environment

pytestmark = pytest.mark.slow

PROBLEM = "synthetic_syntax_reorder"
EXPERIMENT = textwrap.dedent("""
    from syntax_t2t import registry
    from syntax_t2t.grid.experiment import Experiment, ParseTest, System, TranslationTest


    @registry.register_experiment
    def gpu_grid_tiny():
        test = "{data_dir}/{problem}-test"
        return Experiment(
            problem="synthetic_syntax_reorder", hparams_set="transformer_tiny",
            systems=[System("dep_parse", "dep_parse",
                            "hidden_size=32,filter_size=64,parse_layer=0")],
            baseline="dep_parse", seeds=(1, 2), train_steps=4, eval_every=4,
            early_stopping_patience=0, best_checkpoint_metric="loss",
            decode_hparams="beam_size=2,alpha=0.6,extra_length=5",
            translation_tests=[
                TranslationTest("test", source=test + ".src.conllu", reference=test + ".ref.txt"),
                TranslationTest("held_out", source="{tmp_dir}/held_out.src.conllu",
                                reference="{tmp_dir}/held_out.ref.txt", sealed=True)],
            parse_tests=[ParseTest("test_trees", gold=test + ".src.conllu")])
""")


def _grid(python, *flags, env=None):
    return subprocess.run([python, os.path.join(ROOT, "bin", "grid"),
                           "--experiment=gpu_grid_tiny", *flags],
                          capture_output=True, text=True, timeout=1200, env=env)


def test_a_bundled_grid_runs_in_a_gpu_session_and_its_archive_reports_here(tmp_path):
    require_jax_environment()
    assert subprocess.run([JAX_PYTHON, "-c", "import tensorflow"],
                          capture_output=True).returncode != 0, "the JAX side has TensorFlow"
    usr_dir = tmp_path / "usr"
    usr_dir.mkdir()
    (usr_dir / "gpu_grid_tiny.py").write_text(EXPERIMENT)
    data_dir, raw_dir = tmp_path / "data", tmp_path / "raw"
    jax_env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2")
    missing = _grid(JAX_PYTHON, f"--usr_dir={usr_dir}", f"--data_dir={data_dir}",
                    f"--output_dir={tmp_path / 'unused'}", env=jax_env)
    assert missing.returncode != 0
    assert f"no complete data of problem {PROBLEM} in {data_dir}" in missing.stderr
    assert "bin/datagen needs TensorFlow" in missing.stderr

    subprocess.run([sys.executable, os.path.join(ROOT, "bin", "datagen"), f"--problem={PROBLEM}",
                    f"--data_dir={data_dir}", f"--tmp_dir={tmp_path / 'datagen_tmp'}",
                    "--max_examples=60"], check=True, capture_output=True, timeout=600)
    raw_dir.mkdir()
    for suffix in ("src.conllu", "ref.txt"):
        (raw_dir / f"held_out.{suffix}").write_bytes(
            (data_dir / f"{PROBLEM}-test.{suffix}").read_bytes())

    # Here: the bundle (TensorFlow side).
    bundle = tmp_path / "bundle"
    made = _grid(sys.executable, f"--usr_dir={usr_dir}", f"--data_dir={data_dir}",
                 f"--tmp_dir={raw_dir}", f"--bundle_dir={bundle}")
    assert made.returncode == 0, made.stderr[-3000:]
    record = json.loads((bundle / "bundle.json").read_text())
    assert record["places"] == {"data_dir": "data", "tmp_dir": "tmp"}
    assert set(record["copied"]) == {"data", "tmp/held_out.src.conllu", "tmp/held_out.ref.txt"}
    assert (bundle / "data" / f"{PROBLEM}.datagen.json").exists()

    # There: the session script under JAX without TensorFlow, two tasks side by side.
    archive = tmp_path / "archive"
    out = tmp_path / "out"
    env = dict(os.environ, PYTHON=JAX_PYTHON, TASKS="2", BUDGET="900", RESERVE="40",
               EXPERIMENT="gpu_grid_tiny", ARCHIVE=str(archive), GRID_FLAGS=f"--usr_dir={usr_dir}")
    session = subprocess.run(["bash", os.path.join(ROOT, "docs", "gpu_grid.sh"), str(out),
                              str(bundle), str(tmp_path / "no_wheels")],
                             capture_output=True, text=True, timeout=1200, env=env)
    assert session.returncode == 0, session.stdout[-4000:] + session.stderr[-2000:]
    summary = (out / "summary.txt").read_text()
    assert "grid: exit 0 0" in summary, (out / "grid_tasks.log").read_text()[-4000:]
    assert "archive: 2 finished runs in archive.tar.gz" in summary
    assert sorted(path.name for path in out.iterdir()) == [
        "archive.tar.gz", "grid_tasks.log", "results.md", "session.log", "summary.txt",
        "versions.txt"]
    assert "backend jax" in (out / "versions.txt").read_text()
    tasks_log = (out / "grid_tasks.log").read_text()
    for seed in (1, 2):  # the training speed of each run, which a budget-stopped run keeps too
        progress = tasks_log.split(f"=== dep_parse/seed{seed}/train.log\n")[1]
        assert "step 4/4" in progress.split("===")[0]
    with tarfile.open(out / "archive.tar.gz") as packed:
        names = set(packed.getnames())
        unpacked = tmp_path / "unpacked"
        packed.extractall(unpacked, filter="data")
    for seed in (1, 2):
        assert f"./runs/dep_parse/seed{seed}/tests/sealed/held_out.hyp.gz" in names
        assert f"./runs/dep_parse/seed{seed}/tests/test.hyp" in names
    for seed in (1, 2):
        run = unpacked / "runs" / "dep_parse" / f"seed{seed}"
        state = json.loads((run / "grid.json").read_text())
        assert state["backends"] == ["jax"]
        assert set(state["stage_seconds"]) == {"train", "decode:test", "sealed:held_out",
                                               "parse:test_trees", "score"}
        scores = json.loads((run / "scores.json").read_text())
        assert scores["backends"] == ["jax"] and scores["steps"] == 4
        assert set(scores["translation"]) == {"test"}  # the sealed test is not the run's
        assert 0 <= scores["parse"]["test_trees"]["UAS"] <= 100
        assert len((run / "tests" / "test.hyp").read_text().splitlines()) == 60
    results = (out / "results.md").read_text()
    assert "Trained on the jax backend." in results and "| jax |" in results
    # Every run finished in this session, so the seal was opened there, once.
    opened = json.loads((unpacked / "sealed" / "held_out.json").read_text())
    assert set(opened["scores"]) == {"dep_parse/seed1", "dep_parse/seed2"}

    # Here again: the archive restores into a fresh grid, which reports both runs.
    again = _grid(sys.executable, f"--usr_dir={usr_dir}", f"--data_dir={data_dir}",
                  f"--tmp_dir={raw_dir}", f"--output_dir={tmp_path / 'here'}",
                  f"--archive_dir={unpacked}", "--report_only")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "2 of 2 runs finished" in again.stdout
    # The seal opened in the session is read, not opened again here.
    assert json.loads((tmp_path / "here" / "sealed" / "held_out.json").read_text()) == opened
    assert "## held_out: translation (sealed test set)" in (
        tmp_path / "here" / "results.md").read_text()
