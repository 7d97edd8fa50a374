"""A training checkpoint written on one backend restores exactly on the other.

`checkpoint_sides.py` writes checkpoints under TensorFlow (this interpreter)
and under JAX (the TensorFlow-free environment `make install-jax` creates),
and each side reads the other's; a checkpoint in TensorFlow's format,
converted by `convert_tensorflow_checkpoints`, is read under JAX as well.
Every model weight, optimizer variable, dropout generator state and the
step must come back bit for bit, and the logits of the restored model on a
fixed batch must match the writer's.
"""

import os
import sys

import keras
import numpy as np
import pytest

import backend_sides
from backend_sides import JAX_PYTHON, require_jax_environment

from checkpoint_sides import CASES

# Each runs its other backend in the JAX environment (minutes on 2 cores): CI's slow pass.
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "checkpoint_sides.py")
# float32 on both sides; the two backends order their reductions differently.
TOLERANCE = 1e-5


def run_side(python, backend, *args):
    backend_sides.run_side(python, backend, SCRIPT, *args, timeout=900)


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    require_jax_environment()
    directory = tmp_path_factory.mktemp("checkpoint_sides")
    run_side(sys.executable, "tensorflow", "--mode=write", f"--dir={directory}")
    run_side(sys.executable, "tensorflow", "--mode=legacy", f"--dir={directory}")
    run_side(JAX_PYTHON, "jax", "--mode=write", f"--dir={directory}")
    for source in ("tensorflow", "legacy"):
        run_side(JAX_PYTHON, "jax", "--mode=read", f"--dir={directory}", f"--source={source}")
    run_side(sys.executable, "tensorflow", "--mode=read", f"--dir={directory}", "--source=jax")
    return directory


def load(path):
    with np.load(path) as arrays:
        return dict(arrays)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("writer,reader", [("tensorflow", "jax"), ("jax", "tensorflow"),
                                           ("legacy", "jax")])
def test_a_checkpoint_restores_exactly_on_the_other_backend(sides, case, writer, reader):
    written = load(sides / writer / f"{case}.npz")
    read = load(sides / writer / f"{case}.read.{reader}.npz")
    assert written.keys() == read.keys()
    assert any(name.startswith("optimizer/") for name in written)
    assert any(name.startswith("random_state/") for name in written)
    for name in written:
        if name != "logits":
            np.testing.assert_array_equal(read[name], written[name].astype(read[name].dtype),
                                          err_msg=name)
    np.testing.assert_allclose(read["logits"], written["logits"], atol=TOLERANCE, rtol=TOLERANCE)
