"""The same weights give the same n-best lists on TensorFlow and on JAX.

`decode_parity.py` decodes under one backend; this test runs it under
TensorFlow (this interpreter: fresh weights, saved as `.weights.h5`) and
under JAX in the TensorFlow-free environment `make install-jax` creates (the
same weights loaded), then compares `transformer`, `tree_distance` and
`dep_parse` at beam 1 (greedy) and beam 4: the same hypotheses in the same
order, their scores within 1e-5. The two sides differ in everything
decoding compiles: a TensorFlow graph with in-place caches against a
`jax.jit` program with its rows padded.
"""

import os
import sys

import keras
import numpy as np
import pytest

import backend_sides
from backend_sides import JAX_PYTHON, require_jax_environment

from decode_parity import BEAMS, CASES

# Each runs its other backend in the JAX environment (minutes on 2 cores): CI's slow pass.
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "decode_parity.py")
# float32 on both sides; the two backends order their reductions differently.
TOLERANCE = 1e-5


def run_side(python, backend, mode, directory):
    backend_sides.run_side(python, backend, SCRIPT, f"--mode={mode}", f"--dir={directory}")


@pytest.fixture(scope="module")
def parity_dir(tmp_path_factory):
    require_jax_environment()
    directory = tmp_path_factory.mktemp("decode_parity")
    run_side(sys.executable, "tensorflow", "save", directory)
    run_side(JAX_PYTHON, "jax", "load", directory)
    return directory


def load(directory, case, backend):
    with np.load(os.path.join(directory, f"{case}.{backend}.npz")) as arrays:
        return dict(arrays)


@pytest.mark.parametrize("beam", BEAMS)
@pytest.mark.parametrize("case", CASES)
def test_the_n_best_lists_agree(parity_dir, case, beam):
    tf_side, jax_side = load(parity_dir, case, "tensorflow"), load(parity_dir, case, "jax")
    assert sorted(tf_side) == sorted(jax_side)
    prefix = f"beam{beam}/"
    lengths = tf_side[prefix + "lengths"]
    assert lengths.shape[1] == beam and lengths.max() > 0, "nothing was decoded"
    for key in ("lengths", "ids"):
        np.testing.assert_array_equal(jax_side[prefix + key], tf_side[prefix + key],
                                      err_msg=f"{case} beam {beam}: {key}")
    for key in tf_side:
        if key.startswith(prefix) and key not in (prefix + "ids", prefix + "lengths"):
            np.testing.assert_allclose(jax_side[key], tf_side[key], atol=TOLERANCE, rtol=TOLERANCE,
                                       err_msg=f"{case} beam {beam}: {key}")
