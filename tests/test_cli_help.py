"""Every tool's --help lists its own flags; TensorFlow's C++ start-up noise stays off the terminal."""

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from absl import flags

from syntax_t2t.cli import common, quiet_start

FLAGS = flags.FLAGS
REPO = Path(__file__).resolve().parents[1]
TOOLS = ("analyze", "average_checkpoints", "bench", "convert_checkpoints", "datagen", "datagen_beam",
         "decode", "evaluate", "parse", "train", "train_parser")


def own_flags(tool):
    """The flags a tool's modules define, read from their source (not from absl).

    A tool whose `--help` must not wait for Keras defines its flags in
    `<tool>_flags.py` (bin/train, bin/decode).
    """
    sources = [REPO / "syntax_t2t" / "cli" / f"{tool}{suffix}.py" for suffix in ("", "_flags")]
    source = "".join(path.read_text() for path in sources if path.is_file())
    return set(re.findall(r'DEFINE_\w+\(\s*"(\w+)"', source))


def listed_flags(help_text):
    return set(re.findall(r"^  --(?:\[no\])?(\w+):", help_text, flags=re.M))


def environment(**extra):
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.update(extra)
    return env


@pytest.mark.parametrize("tool", TOOLS)
def test_main_module_help_lists_the_tools_flags(tool, monkeypatch):
    module = importlib.import_module(f"syntax_t2t.cli.{tool}")
    monkeypatch.setattr(sys, "argv", [f"bin/{tool}-under-test"])
    common.adopt_program_flags(module)
    listed = listed_flags(FLAGS.main_module_help())
    assert own_flags(tool) and own_flags(tool) <= listed
    assert {"usr_dir", "registry_help"} <= listed
    # Another tool's own flags are not this one's.
    other = "decode" if tool != "decode" else "datagen"
    assert not (own_flags(other) - own_flags(tool)) & listed


def test_shared_flags_a_tool_reads_are_listed(monkeypatch):
    for tool, shared in (("train", {"problem", "model", "hparams_set", "output_dir"}),
                         ("datagen", {"problem", "data_dir"})):
        monkeypatch.setattr(sys, "argv", [f"bin/{tool}-shared"])
        common.adopt_program_flags(importlib.import_module(f"syntax_t2t.cli.{tool}"))
        assert shared <= listed_flags(FLAGS.main_module_help())
    monkeypatch.setattr(sys, "argv", ["bin/evaluate-shared"])
    common.adopt_program_flags(importlib.import_module("syntax_t2t.cli.evaluate"))
    assert "problem" not in listed_flags(FLAGS.main_module_help())


def run_help(command):
    result = subprocess.run(command + ["--help"], capture_output=True, text=True, cwd=REPO,
                            env=environment(), timeout=300)
    # absl exits with status 1 after --help.
    assert "Try --helpfull" in result.stdout, result.stderr
    return result.stdout


def test_bin_script_and_console_entry_point_show_the_same_flags():
    script = run_help([str(REPO / "bin" / "parse")])
    console = run_help([sys.executable, "-c", "from syntax_t2t.cli.parse import run; run()"])
    assert own_flags("parse") <= listed_flags(script)
    assert listed_flags(script) == listed_flags(console)


@pytest.mark.slow
@pytest.mark.parametrize("tool", TOOLS)
def test_every_bin_script_help(tool):
    assert own_flags(tool) <= listed_flags(run_help([str(REPO / "bin" / tool)]))


def test_noise_pattern_matches_tensorflow_lines_only():
    noise = ["WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
             "I0000 00:00:1795516573.739294    4631 port.cc:153] oneDNN custom operations are on.",
             "E0000 00:00:1795516648.192695    6115 cuda_platform.cc:52] failed call to cuInit",
             "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow"]
    kept = ["error: missing required flag(s): --model", "UserWarning: something of ours",
            "I0000 is not a log line"]
    assert all(quiet_start.NOISE.match(line) for line in noise)
    assert not any(quiet_start.NOISE.match(line) for line in kept)


@pytest.mark.parametrize("argv, environ, wanted", [
    (["bin/train"], {}, False),
    (["bin/train", "--verbosity=1"], {}, True),
    (["bin/train", "-v", "1"], {}, True),
    (["bin/train", "--verbosity_x"], {}, False),
    (["bin/train"], {"TF_CPP_MIN_LOG_LEVEL": "0"}, True),
])
def test_wants_tensorflow_logs(argv, environ, wanted):
    assert quiet_start.wants_tensorflow_logs(argv, environ) is wanted


def test_import_keeps_what_is_not_noise(tmp_path):
    """A stand-in `tensorflow` writing noise and a real line to fd 2: only the real line shows."""
    (tmp_path / "tensorflow.py").write_text(
        "import os\n"
        "os.write(2, b'WARNING: All log messages before absl::InitializeLog() is called\\n')\n"
        "os.write(2, b'I0000 00:00:1795516573.739294    4631 port.cc:153] oneDNN noise\\n')\n"
        "os.write(2, b'a line of the user\\n')\n"
        "VALUE = 42\n")
    code = "import syntax_t2t.cli, tensorflow; print(tensorflow.VALUE)"
    env = environment(PYTHONPATH=f"{tmp_path}{os.pathsep}{REPO}")
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert (quiet.stdout, quiet.stderr) == ("42\n", "a line of the user\n")
    loud = subprocess.run([sys.executable, "-c", code, "--verbosity=0"], capture_output=True,
                          text=True, env=env)
    assert "oneDNN noise" in loud.stderr and "a line of the user" in loud.stderr


def test_real_tensorflow_start_is_quiet_and_verbosity_shows_it():
    code = ("import syntax_t2t.cli, tensorflow as tf; import tensorflow_text; "
            "print(int(tf.constant(1) + 1))")
    env = environment(PYTHONPATH=str(REPO))
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           timeout=300)
    assert quiet.stdout == "2\n"
    assert not [line for line in quiet.stderr.splitlines() if quiet_start.NOISE.match(line)], \
        quiet.stderr
    loud = subprocess.run([sys.executable, "-c", code, "--verbosity=1"], capture_output=True,
                          text=True, env=env, timeout=300)
    # TensorFlow always logs something on start-up (oneDNN, CUDA drivers or devices).
    assert [line for line in loud.stderr.splitlines() if quiet_start.NOISE.match(line)]


def test_bin_scripts_run_under_the_checkouts_venv_from_another_python():
    """`python3 bin/X` with an interpreter lacking the packages re-runs under `.venv`."""
    venv_python = REPO / ".venv" / "bin" / "python"
    base_python = Path(sys.base_prefix) / "bin" / "python3"
    if not venv_python.exists() or not base_python.exists():
        pytest.skip("needs the checkout's .venv (make install) and a base interpreter")
    lacks_absl = subprocess.run([str(base_python), "-c", "import absl"], capture_output=True)
    if lacks_absl.returncode == 0:
        pytest.skip(f"{base_python} has absl: nothing to re-run")
    help_text = run_help([str(base_python), str(REPO / "bin" / "parse")])
    assert own_flags("parse") <= listed_flags(help_text)
