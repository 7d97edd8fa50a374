"""Tests for bin/datagen (syntax_t2t/cli/datagen.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from absl import flags
from absl.testing import flagsaver

from syntax_t2t.cli import common, datagen, registration
from syntax_t2t.datagen.records import DataOptionsError

REPO = Path(__file__).resolve().parents[1]
FLAGS = flags.FLAGS


def _start(*args):
    return subprocess.Popen([sys.executable, str(REPO / "bin" / "datagen"), *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_cli_errors_are_one_clear_line(tmp_path):
    # Both programs start at once: most of their time is importing TensorFlow.
    unknown = _start("--problem=synthetic_syntax_reorde", f"--data_dir={tmp_path / 'a'}")
    czeng = _start("--problem=czeng_syntax", f"--data_dir={tmp_path / 'b'}", f"--tmp_dir={tmp_path}")
    out, err = unknown.communicate(timeout=120)
    assert unknown.returncode == 1
    assert ("error: unknown problem 'synthetic_syntax_reorde'. Did you mean synthetic_syntax_reorder"
            in err)
    assert err.count("unknown problem 'synthetic_syntax_reorde'") == 1  # printed once, not logged too
    assert "Traceback" not in err
    out, err = czeng.communicate(timeout=120)
    assert czeng.returncode == 1
    error_line = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(error_line) == 1
    assert f"in {tmp_path / 'czeng'}/" in error_line[0]
    assert "register at https://ufal.mff.cuni.cz/czeng" in error_line[0]
    assert "Traceback" not in err
    assert not (tmp_path / "b" / "czeng_syntax.datagen.json").exists()


def test_help_and_flag_errors_need_no_tensorflow():
    """`bin/datagen --help` came back after the 10-20 s of importing TensorFlow."""
    code = "import sys, syntax_t2t.cli.datagen; sys.exit('tensorflow' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO, timeout=120).returncode == 0


@pytest.fixture
def run_datagen():
    """Runs `datagen.main` in this process with the given flags; returns its stdout."""
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["datagen"])

    def run(capsys, **flag_values):
        with flagsaver.flagsaver(**flag_values):
            datagen.main(["datagen"])
        return capsys.readouterr().out

    return run


def _mtimes(directory):
    return {name: os.stat(os.path.join(directory, name)).st_mtime_ns for name in os.listdir(directory)}


def test_idempotent_unless_overwrite(tmp_path, capsys, caplog, run_datagen):
    data_dir = tmp_path / "data"
    common = dict(problem="synthetic_syntax_reorder", data_dir=str(data_dir), tmp_dir=str(tmp_path),
                  max_examples=40)
    with caplog.at_level("INFO"):
        out = run_datagen(capsys, **common)
    assert "synthetic_syntax_reorder: wrote 40 train, 40 dev, 40 test examples" in out
    assert any("examples/s" in message for message in caplog.messages)
    before = _mtimes(data_dir)
    # 5 vocabularies and their record, 4 shards, 4 dev/test text files, the completion record
    assert len(before) == 15

    out = run_datagen(capsys, **common)
    assert "kept it (pass --overwrite to regenerate)" in out
    assert "other options" not in out
    assert _mtimes(data_dir) == before
    # Other options into complete data: an error naming only what differs, not kept data.
    with pytest.raises(DataOptionsError) as raised:
        run_datagen(capsys, **dict(common, max_examples=30, problem_options="max_length=12"))
    message = str(raised.value)
    assert "max_examples=30 (the data has 40)" in message
    assert "max_length=12 (the data has 20)" in message
    assert "min_length" not in message and "lexicon_seed" not in message
    assert "--overwrite" in message and "another --data_dir" in message
    assert _mtimes(data_dir) == before

    for name in before:
        os.utime(data_dir / name, ns=(1, 1))
    out = run_datagen(capsys, overwrite=True, **common)
    assert "wrote 40 train" in out
    assert all(mtime > 1 for mtime in _mtimes(data_dir).values())


@pytest.mark.slow
def test_other_options_into_complete_data_exit_non_zero(tmp_path):
    data_dir = tmp_path / "data"
    common_args = ["--problem=synthetic_syntax_reorder", f"--data_dir={data_dir}",
                   f"--tmp_dir={tmp_path}", "--max_examples=10"]
    first = _start(*common_args)
    assert first.communicate(timeout=300)[0] and first.returncode == 0
    again = _start(*common_args, "--problem_options=max_length=12")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 1, out
    assert "max_length=12 (the data has 20)" in err and "--overwrite" in err
    assert "Traceback" not in err and "kept it" not in out


def test_random_seed_changes_the_synthetic_data(tmp_path, capsys, run_datagen):
    for seed in (1, 2):
        run_datagen(capsys, problem="synthetic_syntax_reorder", data_dir=str(tmp_path / str(seed)),
                    tmp_dir=str(tmp_path), max_examples=10, random_seed=seed)
    name = "synthetic_syntax_reorder-dev-00000-of-00001"
    assert (tmp_path / "1" / name).read_bytes() != (tmp_path / "2" / name).read_bytes()


def test_skip_bad_examples_reports_what_was_skipped(tmp_path, capsys, run_datagen):
    directory = tmp_path / "de2cs"
    directory.mkdir()
    row = "{i}\t{w}\t{w}\tX\t_\t_\t{h}\tdep\t_\t_"
    good = row.format(i=1, w="gut", h=0) + "\n\n"
    cycle = row.format(i=1, w="a", h=2) + "\n" + row.format(i=2, w="b", h=1) + "\n\n"
    for split in ("train", "dev", "test"):
        (directory / f"{split}.de.conllu").write_text(good + cycle + good, encoding="utf-8")
        (directory / f"{split}.cs").write_text("dobře\nšpatně\n\n", encoding="utf-8")
    out = run_datagen(capsys, problem="de2cs_syntax", data_dir=str(tmp_path / "data"),
                      tmp_dir=str(tmp_path), skip_bad_examples=True)
    assert "wrote 1 train, 1 dev, 1 test examples" in out
    assert "de2cs_syntax: skipped 6 examples: 3 cycle, 3 empty sentence" in out
    out = run_datagen(capsys, problem="de2cs_syntax", data_dir=str(tmp_path / "data"),
                      tmp_dir=str(tmp_path), skip_bad_examples=True)
    assert "the kept data was generated skipping 6 examples: 3 cycle, 3 empty sentence" in out


def test_unexpected_arguments_are_a_usage_error(run_datagen):
    with pytest.raises(common.UsageError, match="unexpected arguments: extra"):
        datagen.main(["datagen", "extra"])
