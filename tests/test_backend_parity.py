"""Every registered model gives the same outputs, losses and gradients on TensorFlow and on JAX.

`backend_parity.py` runs each case under one backend; this test runs it under
TensorFlow (this interpreter, fresh weights saved as `.weights.h5`) and under
JAX in the TensorFlow-free environment `make install-jax` creates (the same
weights loaded), then compares. A second, smaller round goes the other way
(JAX's weights read by TensorFlow). Each backend also checks on its own that
cached decoding steps reproduce the teacher-forced logits and that forward and
backward stay finite under `mixed_bfloat16` and `mixed_float16`.
"""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from backend_sides import JAX_PYTHON, require_jax_environment

from backend_parity import CASES

# Each runs its other backend in the JAX environment (minutes on 2 cores): CI's slow pass.
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "backend_parity.py")
# float32 on both sides; the two backends order their reductions differently.
TOLERANCE = 1e-5
STEP_TOLERANCE = 2e-5


def run_side(python, backend, mode, directory, cases=None, mixed_precision=None):
    command = [python, SCRIPT, f"--mode={mode}", f"--dir={directory}"]
    if cases is not None:
        command.append(f"--cases={cases}")
    if mixed_precision is not None:
        command.append(f"--mixed_precision={mixed_precision}")
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"{backend} side failed:\n{done.stdout}\n{done.stderr[-6000:]}"


@pytest.fixture(scope="module")
def parity_dir(tmp_path_factory):
    require_jax_environment()
    directory = tmp_path_factory.mktemp("parity")
    run_side(sys.executable, "tensorflow", "save", directory)
    run_side(JAX_PYTHON, "jax", "load", directory)
    reverse = directory / "jax_weights"
    run_side(JAX_PYTHON, "jax", "save", reverse, cases="transformer,tree_distance", mixed_precision="")
    run_side(sys.executable, "tensorflow", "load", reverse, cases="transformer,tree_distance",
             mixed_precision="")
    return directory


def load(directory, case, backend):
    with np.load(os.path.join(directory, f"{case}.{backend}.npz")) as arrays:
        return dict(arrays)


def assert_same(tf_side, jax_side, what):
    assert sorted(tf_side) == sorted(jax_side), f"{what}: the backends report different keys"
    for key in tf_side:
        if key.startswith(("out/", "loss/", "grad/")):
            np.testing.assert_allclose(jax_side[key], tf_side[key], atol=TOLERANCE, rtol=TOLERANCE,
                                       err_msg=f"{what}: {key}")
    gradients = [key for key in tf_side if key.startswith("grad/")]
    assert gradients and any(np.any(tf_side[key]) for key in gradients), f"{what}: no gradient at all"


@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_losses_and_gradients_agree(parity_dir, case):
    tf_side, jax_side = load(parity_dir, case, "tensorflow"), load(parity_dir, case, "jax")
    assert_same(tf_side, jax_side, case)
    for side, arrays in (("tensorflow", tf_side), ("jax", jax_side)):
        assert arrays["decode_step_gap"] <= STEP_TOLERANCE, (
            f"{case} on {side}: cached decoding steps differ from the teacher-forced logits by "
            f"{arrays['decode_step_gap']}")
        for key in arrays:
            if key.startswith("finite/"):
                assert arrays[key], f"{case} on {side}: not finite under {key[len('finite/'):]}"


@pytest.mark.parametrize("case", ["transformer", "tree_distance"])
def test_weights_saved_on_jax_load_on_tensorflow(parity_dir, case):
    reverse = parity_dir / "jax_weights"
    assert_same(load(reverse, case, "tensorflow"), load(reverse, case, "jax"), f"{case} (JAX weights)")
