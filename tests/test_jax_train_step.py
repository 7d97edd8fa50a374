"""The JAX train step follows the TensorFlow trainer's loss curve step by step.

`transformer` at `transformer_tiny` width (one encoder and one decoder layer,
dropout off so that both sides are deterministic) trains on
`synthetic_syntax_reorder` batches made once by the problem's `tf.data`
pipeline: here with the project's `Trainer` (its compiled step, the losses
read back from the TensorBoard scalars it writes every step), and in the
TensorFlow-free JAX environment (`make install-jax`) with
`syntax_t2t/backend/jax_train_step.py`, from the same initial `.weights.h5`
(`tests/jax_train_step_side.py`). Three cases: float32, gradient clipping by
global norm that binds at every step, and `mixed_float16` with dynamic loss
scaling.

Two float32 programs drift apart the way two runs of one program on
different hardware do: each step's rounding differences can be amplified by
the next steps (at a learning rate ten times higher the curves part by 1e-3
within 50 steps). At `transformer_tiny`'s own warm-up the amplification
depends on the initial weights: over eight initializations (2026-11-27),
five kept the 50 float32 losses within 5e-7 of each other and the weights
within 1.2e-6 of their movement, but three met a bifurcation late in the run
(a rounding difference that decides a branch, e.g. a ReLU input at zero) and
parted to 2.8e-6, 1.4e-5 and 7.9e-6 (weights 5.3e-4, 1.5e-3, 7.2e-4), and a
CI run whose initialization depended on the tests run before it drew one at
5.2e-5 (6.3e-3). So the initial weights are seeded (`INIT_SEED`; 4.5e-7 and
4.0e-7 in float32, 4.2e-7 and 4.5e-7 clipped): both sides are then
deterministic, and the tolerances allow for rounding and nothing more: a
wrong learning rate, moment, clipping bound or loss scale moves the curve by
far more from the first updates on.
"""

import glob
import json
import os
import subprocess

import keras
import numpy as np
import pytest

from backend_sides import JAX_PYTHON, require_jax_environment
import tensorflow as tf

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.training.trainer import Trainer

registration.import_all()

# One worker runs the whole module (`--dist loadgroup`), so that its module fixture, the
# expensive part, runs once rather than once in each worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("jax_train_step")]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "jax_train_step_side.py")
PROBLEM = "synthetic_syntax_reorder"
MODEL = "transformer"
HPARAMS_SET = "transformer_tiny"
# Dropout off: the backends draw different random numbers. One bucket length
# (8), so that each side compiles its step once per case.
HPARAMS = ("layer_prepostprocess_dropout=0.0,attention_dropout=0.0,relu_dropout=0.0,"
           "num_encoder_layers=1,num_decoder_layers=1,batch_size=256,max_length=8,"
           "min_length_bucket=8")
STEPS = 50
#: The initial weights' seed: one of the five typical initializations of the study above.
INIT_SEED = 1
#: case -> (dtype policy, clip_grad_norm, steps, relative tolerance of the losses).
CASES = {
    "float32": ("float32", 0.0, STEPS, 2e-5),
    # Far below the gradient's norm (about 5 at the start): every step is clipped.
    "clipped": ("float32", 0.1, STEPS, 2e-5),
    # float16 products round differently in the two backends' CPU kernels.
    "mixed_float16": ("mixed_float16", 0.0, 20, 1e-3),
}
#: The weights' distance between the backends, all trainable weights taken as one vector, as a
#: share of how far training moved that vector. Measured at `INIT_SEED` on 2026-11-27: 4.0e-7 in
#: float32, 4.5e-7 clipped, 3.5e-3 under mixed_float16 (its losses 1.3e-5 apart). The whole vector
#: is steadier than the furthest kernel, which a bifurcation moves first.
WEIGHT_TOLERANCE = {"float32": 1e-3, "clipped": 1e-3, "mixed_float16": 1e-1}


def make_batches(root):
    """The first STEPS training batches of the problem's pipeline (numpy) and the vocab sizes."""
    problem = registry.problems.get(PROBLEM)(train_size=600, dev_size=5, test_size=5, max_length=7)
    problem.generate_data(str(root / "data"), str(root / "raw"))
    hparams = registry.hparams(HPARAMS_SET).parse(HPARAMS)
    # The same batches in every process, whatever seed an earlier test left and however loaded
    # the machine: the shuffles' global seed is fixed, the parallel parses keep their order.
    tf.random.set_seed(1)
    dataset = problem.dataset("train", str(root / "data"), hparams, seed=1,
                              deterministic=True).take(STEPS)
    arrays = [{key: value.numpy() for key, value in batch.items()} for batch in dataset]
    assert len(arrays) == STEPS
    return arrays, problem.vocab_sizes(str(root / "data"))


def events_losses(run_dir):
    """`{step: loss/total}` from the trainer's TensorBoard scalars."""
    losses = {}
    for path in glob.glob(os.path.join(run_dir, "train", "events.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "loss/total":
                    losses[event.step] = float(tf.make_ndarray(value.tensor))
    return losses


def train_on_tensorflow(directory, batches, vocab_sizes, policy, clip_grad_norm, steps,
                        initial_weights):
    """Trains with the project's Trainer from `initial_weights` (written first if missing).

    Returns:
        `(losses per step, {path: final weight}, final loss scale)`.
    """
    hparams = registry.hparams(HPARAMS_SET).parse(HPARAMS)
    hparams.clip_grad_norm = clip_grad_norm
    trainer = Trainer(lambda: registry.model(MODEL)(hparams, vocab_sizes), hparams,
                      str(directory / "tf_run"), policy_name=policy, log_step_count_steps=1,
                      save_checkpoints_steps=10_000, keep_checkpoint_max=1)
    keys = sorted(trainer.model.train_features)
    batches = [{key: batch[key] for key in keys} for batch in batches[:steps]]
    trainer.build({key: tf.constant(value) for key, value in batches[0].items()})
    if os.path.exists(initial_weights):
        trainer.model.load_weights(initial_weights)
    else:
        trainer.model.save_weights(initial_weights)
    np.savez(directory / "batches.npz",
             **{f"{step}.{key}": value for step, batch in enumerate(batches)
                for key, value in batch.items()})
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(batches),
        output_signature={key: tf.TensorSpec([None, None], tf.int32) for key in keys})
    trainer.train(dataset, train_steps=steps)
    by_step = events_losses(str(directory / "tf_run"))
    assert sorted(by_step) == list(range(1, steps + 1)), "the trainer did not log every step"
    weights = {variable.path: variable.numpy() for variable in trainer.model.trainable_variables}
    scale = getattr(trainer.optimizer, "dynamic_scale", None)
    return (np.array([by_step[step] for step in range(1, steps + 1)]), weights,
            1.0 if scale is None else float(scale.numpy()))


def run_both(root):
    """`{case: (tensorflow side, jax.npz arrays)}`; the JAX side runs once for all cases."""
    arrays, vocab_sizes = make_batches(root)
    # Keras draws each initializer's seed from Python's `random`, whatever tests ran before.
    keras.utils.set_random_seed(INIT_SEED)
    initial_weights = str(root / "initial.weights.h5")
    tensorflow_side = {}
    for case, (policy, clip_grad_norm, steps, _) in CASES.items():
        directory = root / case
        directory.mkdir()
        with open(directory / "config.json", "w", encoding="utf-8") as stream:
            json.dump({"model": MODEL, "hparams_set": HPARAMS_SET, "hparams": HPARAMS,
                       "clip_grad_norm": clip_grad_norm, "policy": policy,
                       "vocab_sizes": vocab_sizes, "initial_weights": initial_weights}, stream)
        tensorflow_side[case] = train_on_tensorflow(directory, arrays, vocab_sizes, policy,
                                                    clip_grad_norm, steps, initial_weights)
    env = dict(os.environ, KERAS_BACKEND="jax")
    done = subprocess.run([JAX_PYTHON, SCRIPT, f"--dir={root}", f"--cases={','.join(CASES)}"],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"JAX side failed:\n{done.stdout}\n{done.stderr[-6000:]}"
    results = {}
    for case in CASES:
        with np.load(root / case / "jax.npz") as jax_arrays:
            results[case] = (tensorflow_side[case], dict(jax_arrays))
    return results


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    require_jax_environment()
    return run_both(tmp_path_factory.mktemp("jax_train_step"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_jax_step_follows_the_tensorflow_trainer(runs, case):
    (tf_losses, _, tf_scale), jax_side = runs[case]
    _, _, steps, rtol = CASES[case]
    assert len(tf_losses) == steps and jax_side["losses"].shape == (steps,)
    assert np.all(jax_side["finite"] == 1.0), f"{case}: a JAX step was not finite"
    assert np.all(np.isfinite(tf_losses))
    # It learns: the curve compared is not a flat line.
    assert tf_losses[-3:].mean() < tf_losses[:3].mean() - 0.5
    np.testing.assert_allclose(jax_side["losses"], tf_losses, rtol=rtol, err_msg=case)
    assert jax_side["loss_scale"] == tf_scale


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_final_weights_agree(runs, case):
    (_, tf_weights, _), jax_side = runs[case]
    jax_weights = {key[len("final/"):]: value for key, value in jax_side.items()
                   if key.startswith("final/")}
    initial = {key[len("initial/"):]: value for key, value in jax_side.items()
               if key.startswith("initial/")}
    assert sorted(jax_weights) == sorted(tf_weights) == sorted(initial)
    moved_squares, apart_squares, ratios = 0.0, 0.0, {}
    for path, value in tf_weights.items():
        moved = float(np.sum(np.square(value - initial[path], dtype=np.float64)))
        apart = float(np.sum(np.square(jax_weights[path] - value, dtype=np.float64)))
        assert moved > 0, f"{case}: {path} did not train"
        moved_squares += moved
        apart_squares += apart
        ratios[path] = np.sqrt(apart / moved)
    worst = max(ratios, key=ratios.get)
    share = np.sqrt(apart_squares / moved_squares)
    assert share <= WEIGHT_TOLERANCE[case], (
        f"{case}: the weights are {share:.3g} of their movement apart on the two backends "
        f"(the furthest kernel, {worst}: {ratios[worst]:.3g})")


def test_clipping_binds(runs):
    """The clipped curve is not the unclipped one, on either backend: the bound is active."""
    for side in ("tensorflow", "jax"):
        plain, clipped = ((runs[case][0][0] if side == "tensorflow" else runs[case][1]["losses"])
                          for case in ("float32", "clipped"))
        assert np.max(np.abs(plain[1:] - clipped[1:])) > 1e-2, side
