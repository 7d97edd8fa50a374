"""Data parallelism under KERAS_BACKEND=jax (`backend/jax_distribution.py`, issue 33 item 4).

* the NumPy pipeline pads each training batch with all-padding rows to a
  multiple of the devices, leaving the real rows as they were;
* `--distribution`/`--worker_gpu` map to a `keras.distribution.DataParallel`,
  with clear errors for too many devices and for a multi-host environment
  that lacks the coordinator;
* on two host devices (`XLA_FLAGS=--xla_force_host_platform_device_count=2`,
  which JAX reads only when it starts, hence a subprocess), `JaxTrainer`'s
  weights after three steps equal one device's on the same global batches,
  and on odd batches padded to two devices (`jax_data_parallel_side.py`);
* `bin/train --worker_gpu=2` under JAX, in the environment without
  TensorFlow, trains and writes a checkpoint.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import shard_fixtures as fixtures
from backend_sides import JAX_PYTHON, ROOT, require_jax_environment
from syntax_t2t.data import numpy_pipeline
from syntax_t2t.data.derived_features import DerivedFeatures
from syntax_t2t.data.schema import HEADS_KEYS

pytestmark = pytest.mark.backends

TWO_DEVICES = "--xla_force_host_platform_device_count=2"
SIDE = os.path.join(ROOT, "tests", "jax_data_parallel_side.py")
#: Three Adam steps on one device and on two differ by the order of float
#: sums; training moves the weights by about 0.4.
WEIGHT_TOLERANCE = 5e-5


def _jax_distribution():
    pytest.importorskip("jax")
    if keras.backend.backend() != "jax":
        pytest.skip("keras.distribution is used under KERAS_BACKEND=jax here")
    from syntax_t2t.backend import jax_distribution

    return jax_distribution


def test_training_batches_are_padded_to_a_multiple_of_the_devices(tmp_path):
    examples = fixtures.random_examples(seed=3, count=120)
    paths = fixtures.write_shards(tmp_path, examples, 1)
    # A derived feature sees the padding rows as the pipeline made them.
    derived = DerivedFeatures(("inputs",), ("input_lengths",),
                              lambda inputs: (np.broadcast_to(
                                  np.sum(inputs != 0, axis=1, keepdims=True), inputs.shape),))

    def batches(multiple):
        dataset = numpy_pipeline.NumpyDataset(paths, fixtures.KEYS, "train", fixtures.hparams(),
                                              seed=5, derived=derived, row_multiple=multiple)
        iterator = iter(dataset)
        return [next(iterator) for _ in range(12)]

    odd = 0
    for plain, padded in zip(batches(1), batches(3)):
        rows = len(plain["inputs"])
        odd += rows % 3 != 0
        assert len(padded["inputs"]) == -(-rows // 3) * 3
        for key, value in plain.items():
            np.testing.assert_array_equal(padded[key][:rows], value)
            fill = -1 if key in HEADS_KEYS else 0
            assert (padded[key][rows:] == fill).all(), key
    assert odd, "no batch needed padding: the test shows nothing"
    with pytest.raises(ValueError, match="row_multiple must be >= 1"):
        numpy_pipeline.NumpyDataset(paths, fixtures.KEYS, "train", fixtures.hparams(),
                                    row_multiple=0)


class _Device:
    def __init__(self, platform, index):
        self.platform, self.id = platform, index

    def __str__(self):
        return f"{self.platform}:{self.id}"


def test_more_devices_than_the_host_has_are_refused_naming_how_many():
    jax_distribution = _jax_distribution()
    host = [_Device("cpu", 0)]
    with pytest.raises(jax_distribution.JaxDistributionError,
                       match=r"3 devices asked for .* this host has 1 cpu device\(s\)"):
        jax_distribution.make_distribution("mirrored", num_devices=3, devices=host)
    # One device is no distribution; auto splits only over several accelerators.
    assert jax_distribution.make_distribution("mirrored", num_devices=1, devices=host) is None
    assert jax_distribution.make_distribution("none") is None
    two_cpus = [_Device("cpu", 0), _Device("cpu", 1)]
    assert jax_distribution.make_distribution("auto", devices=two_cpus) is None
    with pytest.raises(ValueError, match="expected one of"):
        jax_distribution.make_distribution("parameter_server")


@pytest.mark.parametrize("environ, message", [
    ({}, "needs KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES, "
         "KERAS_DISTRIBUTION_PROCESS_ID"),
    ({"KERAS_DISTRIBUTION_NUM_PROCESSES": "2", "KERAS_DISTRIBUTION_PROCESS_ID": "1"},
     r"needs KERAS_DISTRIBUTION_JOB_ADDRESSES \(keras.distribution.initialize: the "
     r"coordinator's host:port"),
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234", "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
      "KERAS_DISTRIBUTION_PROCESS_ID": "2"}, r"PROCESS_ID=2 must be in \[0, .*=2\)"),
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234", "KERAS_DISTRIBUTION_NUM_PROCESSES": "two",
      "KERAS_DISTRIBUTION_PROCESS_ID": "0"}, "must be integers"),
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234,10.0.0.2:1234,10.0.0.3:1234",
      "KERAS_DISTRIBUTION_NUM_PROCESSES": "2", "KERAS_DISTRIBUTION_PROCESS_ID": "0"},
     "lists 3 addresses for 2 processes"),
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1", "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
      "KERAS_DISTRIBUTION_PROCESS_ID": "0"}, "each address is host:port"),
])
def test_a_multi_host_environment_without_its_settings_is_refused(environ, message):
    jax_distribution = _jax_distribution()
    joined = []
    with pytest.raises(jax_distribution.JaxDistributionError, match=message):
        jax_distribution.make_distribution("multi_worker", environ=environ,
                                           initialize=lambda *args: joined.append(args))
    assert not joined


def test_multi_host_settings_are_handed_to_keras_initialize():
    jax_distribution = _jax_distribution()
    joined = []
    environ = {"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234,10.0.0.2:2345",
               "KERAS_DISTRIBUTION_NUM_PROCESSES": "2", "KERAS_DISTRIBUTION_PROCESS_ID": "1"}
    # Joining is faked: this process stays alone, so the distribution spans its own devices.
    made = jax_distribution.make_distribution("multi_worker", environ=environ,
                                              initialize=lambda *args: joined.append(args))
    assert joined == [("10.0.0.1:1234,10.0.0.2:2345", 2, 1)]
    assert isinstance(made, keras.distribution.DataParallel)


def _python():
    """The interpreter of the JAX environment (this one when it is)."""
    if keras.backend.backend() == "jax":
        return sys.executable
    require_jax_environment()
    return JAX_PYTHON


def _jax_env():
    return dict(os.environ, KERAS_BACKEND="jax", XLA_FLAGS=TWO_DEVICES, TF_CPP_MIN_LOG_LEVEL="2")


@pytest.mark.slow
def test_two_devices_update_as_one_device_on_the_global_batch(tmp_path):
    done = subprocess.run([_python(), SIDE, f"--dir={tmp_path}"], env=_jax_env(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-6000:]}"
    with open(tmp_path / "result.json", encoding="utf-8") as stream:
        result = json.load(stream)
    assert result["devices"] == 2 and result["rows_per_device"] == [2, 2]
    assert result["moved"] > 0.1 and result["moved_odd"] > 0.1
    assert result["even"] < WEIGHT_TOLERANCE, result
    assert result["padded"] < WEIGHT_TOLERANCE, result


@pytest.mark.slow
def test_bin_train_worker_gpu_2_under_jax_trains_and_saves(tmp_path):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the data is generated by datagen, on the TensorFlow backend")
    python = _python()
    from syntax_t2t import registry
    from syntax_t2t.cli import registration

    registration.import_all()
    problem = registry.problems.get("synthetic_syntax_reorder")(
        train_size=200, dev_size=8, test_size=4, max_length=7)
    problem.generate_data(str(tmp_path / "data"), str(tmp_path / "raw"))
    run = tmp_path / "run"
    done = subprocess.run(
        [python, os.path.join(ROOT, "bin", "train"), "--problem=synthetic_syntax_reorder",
         "--model=transformer", "--hparams_set=transformer_tiny",
         "--hparams=num_encoder_layers=1,num_decoder_layers=1,batch_size=64,max_length=8,"
         "min_length_bucket=8", f"--data_dir={tmp_path / 'data'}", f"--output_dir={run}",
         "--train_steps=3", "--worker_gpu=2", "--schedule=train", "--random_seed=1",
         "--log_step_count_steps=1"],
        env=_jax_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-6000:]}"
    assert "data parallel over 2 devices" in done.stderr
    assert os.path.isdir(run / "ckpt-3")
    too_many = subprocess.run(
        [python, os.path.join(ROOT, "bin", "train"), "--problem=synthetic_syntax_reorder",
         "--model=transformer", "--hparams_set=transformer_tiny", f"--data_dir={tmp_path / 'data'}",
         f"--output_dir={tmp_path / 'other'}", "--train_steps=1", "--worker_gpu=3"],
        env=_jax_env(), capture_output=True, text=True, timeout=900)
    assert too_many.returncode != 0
    assert "3 devices asked for" in too_many.stderr and "this host has 2 cpu" in too_many.stderr
