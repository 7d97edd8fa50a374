"""Tests for bin/train_parser (syntax_t2t/cli/train_parser.py) and syntax_t2t.parsing.spacy_training."""

import dataclasses
import gzip
import io
import itertools
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import spacy
from absl import flags
from absl.testing import flagsaver

from parser_fixtures import CZECH_UD, TRAIN_SENTENCES, needs_czech_ud, tiny_czech_parser
from syntax_t2t.cli import common, train_parser
from syntax_t2t.data.conllu_reader import format_conllu, read_conllu
from syntax_t2t.errors import InputError
from syntax_t2t.parsing.parser import ParserError
from syntax_t2t.parsing.spacy_training import (ParserTrainingInterrupted, TrainingSettings,
                                                train_spacy_parser)

FLAGS = flags.FLAGS
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def run_main():
    """Runs `train_parser.main` in this process with the given flags; returns its stdout."""
    if not FLAGS.is_parsed():
        FLAGS(["train_parser"])

    def run(capsys, **flag_values):
        with flagsaver.flagsaver(**flag_values):
            train_parser.main(["train_parser"])
        return capsys.readouterr().out

    return run


def _conllu(path: Path, sentences: int) -> str:
    trees = list(itertools.islice(read_conllu(CZECH_UD), sentences))
    path.write_text(format_conllu(trees), encoding="utf-8")
    return str(path)


@pytest.mark.real_data
@needs_czech_ud
def test_trained_pipeline_directory_opens_with_spacy_load():
    summary = tiny_czech_parser()
    assert summary["components"] == ["tagger", "morphologizer", "parser"]
    assert summary["train_sentences"] == TRAIN_SENTENCES and summary["dev_sentences"] == 0
    nlp = spacy.load(summary["output_dir"])
    assert nlp.pipe_names == ["tok2vec", "tagger", "morphologizer", "parser"]
    assert nlp.lang == "cs"
    meta = nlp.meta["syntax_t2t"]
    assert meta["root_label"] == "root"
    assert meta["train_files"][0]["file"] == CZECH_UD.name
    assert meta["settings"]["max_steps"] == 100
    # Czech PDT tags (15 characters) and UD parts of speech were learned.
    assert any(len(tag) == 15 for tag in nlp.get_pipe("tagger").labels)
    assert "POS=NOUN" in nlp.get_pipe("morphologizer").labels
    # The scores are spaCy's evaluation on the training data: better than chance.
    assert 0.3 < summary["scores"]["dep_uas"] <= 1.0


def test_cli_errors_are_one_clear_line(tmp_path):
    result = subprocess.run(
        [sys.executable, str(REPO / "bin" / "train_parser"), "--lang=qq",
         f"--train_files={tmp_path / 'absent.conllu'}", f"--output_dir={tmp_path / 'model'}"],
        cwd=REPO, capture_output=True, text=True, timeout=180)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "spaCy has no language 'qq'" in errors[0]
    assert "Traceback" not in result.stderr


def test_required_flags(run_main, capsys, tmp_path):
    with pytest.raises(common.UsageError, match="--lang, --train_files"):
        run_main(capsys, output_dir=str(tmp_path / "model"))


def test_unknown_language_is_reported_before_reading_data(run_main, capsys, tmp_path):
    with pytest.raises(ParserError, match="spaCy has no language 'qq'.*use 'xx'"):
        run_main(capsys, lang="qq", train_files=[str(tmp_path / "absent.conllu")],
                 output_dir=str(tmp_path / "model"))


def test_bad_conllu_is_named_with_its_line(run_main, capsys, tmp_path):
    bad = tmp_path / "bad.conllu.gz"
    bad.write_bytes(gzip.compress("1\tPes\tpes\tNOUN\t_\t_\t0\troot\t_\n\n".encode()))
    with pytest.raises(InputError, match=r"bad.conllu.gz:1: expected 10 tab-separated columns"):
        run_main(capsys, lang="cs", train_files=[str(bad)], output_dir=str(tmp_path / "model"))
    assert not (tmp_path / "model").exists()
    assert os.listdir(tmp_path) == ["bad.conllu.gz"]  # no training directory left behind


def test_refuses_to_replace_a_directory_that_is_not_a_pipeline(run_main, capsys, tmp_path):
    precious = tmp_path / "results"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(ParserError, match="is not a spaCy pipeline directory"):
        run_main(capsys, lang="cs", train_files=[str(tmp_path / "unused.conllu")],
                 output_dir=str(precious))
    assert (precious / "notes.txt").read_text() == "keep me"


def test_no_sentences_is_an_error(tmp_path):
    empty = tmp_path / "empty.conllu"
    empty.write_text("")
    # The reader refuses an empty file, naming it, before spaCy sees anything.
    with pytest.raises(InputError, match="empty.conllu: file is empty"):
        train_spacy_parser([str(empty)], str(tmp_path / "model"), TrainingSettings(lang="cs"))


@pytest.mark.real_data
@needs_czech_ud
def test_cli_trains_with_dev_files_and_replaces_an_older_pipeline(run_main, capsys, tmp_path):
    train = _conllu(tmp_path / "train.conllu", 40)
    dev = _conllu(tmp_path / "dev.conllu", 10)
    output = tmp_path / "parser"
    common_flags = dict(lang="cs", train_files=[train], output_dir=str(output), max_steps=4,
                        eval_frequency=2, tok2vec_width=32, tok2vec_depth=1, parser_hidden_width=32)
    run_main(capsys, **common_flags)
    first = json.loads((output / "meta.json").read_text())["syntax_t2t"]
    assert first["dev_sentences"] == 0 and first["train_sentences"] == 40

    out = run_main(capsys, **common_flags, dev_files=[dev], max_train_sentences=30)
    assert "trained tagger+morphologizer+parser on 30 sentences; dev scores: UAS " in out
    assert f"parse with --parser=spacy:{output}" in out
    second = json.loads((output / "meta.json").read_text())["syntax_t2t"]
    assert (second["train_sentences"], second["dev_sentences"]) == (30, 10)
    assert second["settings"]["max_train_sentences"] == 30
    assert sorted(os.listdir(tmp_path)) == ["dev.conllu", "parser", "train.conllu"]
    assert spacy.load(output).pipe_names[-1] == "parser"


class StopAfter:
    """`should_stop` that asks to stop once it has been asked `calls` times (a signal mid-run)."""

    def __init__(self, calls):
        self.calls = calls

    def __call__(self):
        self.calls -= 1
        return self.calls <= 0


@pytest.mark.real_data
@needs_czech_ud
def test_an_interrupted_run_keeps_its_best_pipeline_and_resumes(tmp_path):
    train = _conllu(tmp_path / "train.conllu", 40)
    dev = _conllu(tmp_path / "dev.conllu", 10)
    output = tmp_path / "parser"
    settings = TrainingSettings(lang="cs", max_steps=12, eval_frequency=2, patience=0, width=32,
                                depth=1, parser_hidden_width=32)
    log = io.StringIO()
    with pytest.raises(ParserTrainingInterrupted) as stopped:
        train_spacy_parser([train], str(output), settings, dev_files=[dev], log=log,
                           should_stop=StopAfter(5))
    # Stopped after its 5th update: the best pipeline so far is where the user asked for it.
    assert stopped.value.step == 5
    assert spacy.load(output).pipe_names[-1] == "parser"
    message = str(stopped.value)
    assert f"{output}.training" in message and "run the same command again" in message
    # spaCy evaluates after updates 1, 3, 5, ...
    assert re.search(r"kept the best pipeline so far \(step [135] of 5\)", message)
    # An estimate of the run's length, once there was a pace to go by.
    assert "at most 12 updates" in log.getvalue() and "left at most" in log.getvalue()
    assert sorted(os.listdir(tmp_path)) == ["dev.conllu", "parser", "parser.training",
                                            "train.conllu"]

    log = io.StringIO()
    summary = train_spacy_parser([train], str(output), settings, dev_files=[dev], log=log)
    assert "resuming at update 5 of at most 12" in log.getvalue()
    assert summary["steps"] == 12
    assert sorted(os.listdir(tmp_path)) == ["dev.conllu", "parser", "train.conllu"]
    assert spacy.load(output).meta["syntax_t2t"]["dev_sentences"] == 10

    # Other settings than the interrupted run's: not resumed silently.
    with pytest.raises(ParserTrainingInterrupted):
        train_spacy_parser([train], str(output), settings, dev_files=[dev], log=io.StringIO(),
                           should_stop=StopAfter(1))
    with pytest.raises(ParserError, match=r"parser\.training holds an interrupted run of other "
                                          r"settings.*delete it"):
        train_spacy_parser([train], str(output), dataclasses.replace(settings, max_steps=20),
                           dev_files=[dev], log=io.StringIO())


def test_output_dir_help_describes_the_pipeline_it_writes(monkeypatch):
    monkeypatch.setattr(FLAGS["output_dir"], "help", FLAGS["output_dir"].help)  # undone after
    monkeypatch.setattr(sys, "argv", ["bin/train_parser-under-test"])
    train_parser.use_own_help()
    common.adopt_program_flags(train_parser)
    listed = FLAGS.main_module_help()
    assert "spaCy pipeline" in listed and "checkpoints, hparams.json" not in listed
    assert ".training" in listed  # where an interrupted run's state waits


@pytest.mark.slow
@pytest.mark.real_data
@needs_czech_ud
def test_sigterm_keeps_the_best_pipeline_and_says_how_to_go_on(tmp_path):
    train = _conllu(tmp_path / "train.conllu", 40)
    output = tmp_path / "parser"
    process = subprocess.Popen(
        [sys.executable, str(REPO / "bin" / "train_parser"), "--lang=cs", f"--train_files={train}",
         f"--output_dir={output}", "--max_steps=100000", "--eval_frequency=2",
         "--tok2vec_width=32", "--tok2vec_depth=1", "--parser_hidden_width=32"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stdout:
            if line.startswith("update 3 of at most 100000"):
                process.send_signal(signal.SIGTERM)
                break
        out, err = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, err[-2000:]
    # spaCy's lines once (not again through absl's handler), and no colour codes in a pipe.
    assert err.count("Set up nlp object from config") == 1
    assert "\x1b[" not in out + err
    assert "run the same command again to resume" in err and "Traceback" not in err
    assert spacy.load(output).pipe_names[-1] == "parser"
    assert (tmp_path / "parser.training" / "state.json").is_file()
