"""Decoding under faults: an interrupted decode leaves no partial output; a re-run completes it.

`bin/decode` writes its output under a temporary name and renames it when
complete; an interruption at any moment therefore leaves the previous
output file (or none) as it was, and running the same command again gives
the complete output, identical to that of an uninterrupted run.
"""

import itertools
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.decoding.decoder import Decoder
from bad_input_harness import PROBLEM, error_line, generated_data, run_program, untrained_run

REPO = Path(__file__).resolve().parents[1]
PREVIOUS = "the output of an earlier decode\n"
SETTINGS = "beam_size=2,extra_length=4"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("decode_faults")
    data_dir = generated_data(root / "data")
    run_dir = untrained_run(root / "run", data_dir)
    registration.import_all()
    problem = registry.problems.get(PROBLEM)(max_length=8)
    trees = [tree for tree, _ in itertools.islice(problem.generate_samples(None, "test", None), 120)]
    (root / "input.txt").write_text("".join(" ".join(tree.tokens) + "\n" for tree in trees),
                                    encoding="utf-8")
    return root, run_dir


def decode_in_process(root, run_dir, output, capsys):
    return run_program("decode", capsys, output_dir=run_dir, decode_from_file=str(root / "input.txt"),
                       decode_to_file=str(output), decode_hparams=SETTINGS)


def other_files(directory, output):
    return sorted(name for name in os.listdir(directory) if name != output.name)


@pytest.mark.parametrize("where", ["while translating", "before the rename"])
def test_an_interrupted_decode_leaves_the_previous_output_and_a_rerun_completes_it(
        workspace, tmp_path, capsys, monkeypatch, where):
    root, run_dir = workspace
    expected_path = tmp_path / "expected" / "output.txt"
    expected_path.parent.mkdir()
    assert decode_in_process(root, run_dir, expected_path, capsys)[0] == 0
    expected = expected_path.read_text(encoding="utf-8")
    assert len(expected.split("\n")) == 121

    output = tmp_path / "output.txt"
    output.write_text(PREVIOUS, encoding="utf-8")
    with monkeypatch.context() as patched:
        if where == "while translating":
            translated = itertools.count(1)
            original = Decoder._translation

            def interrupted(self, *args):
                if next(translated) == 50:
                    raise KeyboardInterrupt
                return original(self, *args)
            patched.setattr(Decoder, "_translation", interrupted)
        else:
            def interrupted_replace(source, target):
                raise KeyboardInterrupt
            patched.setattr(os, "replace", interrupted_replace)
        # Ctrl-C unwinds through decode's clean-up first, then ends in one line (status 130).
        status, _, err = decode_in_process(root, run_dir, output, capsys)
    assert status == 130 and error_line(err).startswith("error: stopped by SIGINT"), err[-2000:]
    assert output.read_text(encoding="utf-8") == PREVIOUS
    assert other_files(tmp_path, output) == ["expected"]  # no temporary file is left

    status, out, _ = decode_in_process(root, run_dir, output, capsys)
    assert status == 0 and f"decoded 120 sentences to {output}" in out
    assert output.read_text(encoding="utf-8") == expected


@pytest.mark.slow
def test_decodes_killed_at_random_moments_never_leave_a_partial_output(workspace, tmp_path, capsys):
    root, run_dir = workspace
    expected_path = tmp_path / "expected.txt"
    assert decode_in_process(root, run_dir, expected_path, capsys)[0] == 0
    expected = expected_path.read_text(encoding="utf-8")

    output_dir = tmp_path / "out"
    output_dir.mkdir()
    output = output_dir / "output.txt"
    output.write_text(PREVIOUS, encoding="utf-8")
    command = [sys.executable, str(REPO / "bin" / "decode"), f"--output_dir={run_dir}",
               f"--decode_from_file={root / 'input.txt'}", f"--decode_to_file={output}",
               f"--decode_hparams={SETTINGS}"]

    started = time.monotonic()
    completed = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=600)
    duration = time.monotonic() - started
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert output.read_text(encoding="utf-8") == expected  # the executable agrees with main()
    output.write_text(PREVIOUS, encoding="utf-8")

    rng = random.Random(6)
    outcomes = []
    for _ in range(3):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   cwd=REPO)
        time.sleep(rng.uniform(0.3, 1.1) * duration)
        process.send_signal(signal.SIGKILL)
        process.wait()
        content = output.read_text(encoding="utf-8")
        # Either the old file or the complete new one, never a part of it.
        assert content in (PREVIOUS, expected)
        outcomes.append("previous" if content == PREVIOUS else "complete")
        # Only a hidden temporary file may be left by a kill during the write.
        assert all(name.startswith(".output.txt.") and name.endswith(".tmp")
                   for name in other_files(output_dir, output))
        output.write_text(PREVIOUS, encoding="utf-8")

    completed = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert completed.returncode == 0
    assert output.read_text(encoding="utf-8") == expected
    print(f"decode kills: {outcomes}")
