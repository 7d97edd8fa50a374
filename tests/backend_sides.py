"""Running one side of a cross-backend test: the JAX environment and its subprocesses.

The comparisons are driven from the TensorFlow environment; the JAX side runs
in `.venv-jax` (`make install-jax`), where TensorFlow is not installed.
"""

import argparse
import os
import subprocess

import keras
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JAX_PYTHON = os.environ.get("SYNTAX_T2T_JAX_PYTHON", os.path.join(ROOT, ".venv-jax", "bin", "python"))


def require_jax_environment():
    """Skips (fails under CI) unless this is TensorFlow and the JAX environment exists."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the comparison is driven from the TensorFlow environment")
    if not os.path.exists(JAX_PYTHON):
        message = f"no JAX environment at {JAX_PYTHON} (`make install-jax` creates it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def jax_side_arguments(doc, argv=None, extra=()):
    """The arguments of a JAX side script (`--dir`, and `--name` for each of `extra`), refused off JAX."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--dir", required=True)
    for name in extra:
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args(argv)
    if keras.backend.backend() != "jax":
        parser.error(f"run under KERAS_BACKEND=jax, not {keras.backend.backend()}")
    return args


def run_side(python, backend, script, *args, timeout=1200):
    """Runs `script` with `args` under `backend`; fails the test with its output if it fails."""
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([python, script, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{backend} side failed:\n{done.stdout}\n{done.stderr[-6000:]}"
    return done
