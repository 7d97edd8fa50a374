"""The rules of the JAX train step (`backend/jax_train_step.py`), on a stand-in model under JAX.

Refused steps (a non-finite loss stops every later update, or only that
batch with skipping), clipping to the bound, loss scaling that unscales
exactly and halves on non-finite gradients, the state kept apart from the
Keras variables until `write_back`. The step's agreement with the
TensorFlow trainer over 50 steps is `test_jax_train_step.py`'s.
"""

import importlib.util
import os

import keras
import numpy as np
import pytest

from syntax_t2t import criteria
from syntax_t2t.hparams import HParams

pytestmark = pytest.mark.backends

if keras.backend.backend() != "jax":
    pytest.skip("the JAX train step runs under KERAS_BACKEND=jax", allow_module_level=True)

from syntax_t2t.backend.jax_train_step import JaxTrainStep  # noqa: E402

STAND_IN_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stand_in_usr_dir",
                             "stand_in.py")
VOCAB_SIZES = {"inputs": 12, "targets": 12}


def load_stand_in():
    spec = importlib.util.spec_from_file_location("jax_step_stand_in", STAND_IN_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


stand_in = load_stand_in()


def make_batches(count=4, rows=6, length=5):
    """Copy-task batches; `poison` 1.0 keeps a step finite (see `poisoned_losses`)."""
    rng = np.random.default_rng(0)
    batches = []
    for _ in range(count):
        words = rng.integers(4, 12, size=(rows, length - 1)).astype(np.int32)
        inputs = np.concatenate([words, np.ones((rows, 1), np.int32)], axis=1)
        batches.append({"inputs": inputs, "targets": inputs, "poison": np.float32(1.0)})
    return batches


def poisoned_losses(model, where):
    """The model's losses, made non-finite when `batch["poison"]` is 0.

    `where="loss"`: the loss is NaN. `where="gradient"`: the loss stays finite
    and its gradient is NaN (the square root of 0, differentiated).
    """
    criterion = criteria.for_model(model)

    def losses(batch, outputs):
        values = dict(criterion(batch, outputs))
        poison = keras.ops.cast(batch["poison"], "float32")
        if where == "loss":
            values["total"] = values["total"] / poison * poison
        else:
            # 0 in value either way; d/dx sqrt(0 * x) is inf * 0 = NaN.
            values["total"] = values["total"] + keras.ops.sqrt(
                keras.ops.abs(keras.ops.sum(outputs["logits"])) * poison) * (1.0 - poison)
        return values

    return losses


def build(optimizer, batch, policy="float32", seed=1):
    keras.utils.set_random_seed(seed)
    hparams = HParams(hidden_size=8, layer_prepostprocess_dropout=0.0)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        model = stand_in.StandInTranslator(hparams, VOCAB_SIZES)
        model({key: batch[key] for key in ("inputs", "targets")})
    finally:
        keras.config.set_dtype_policy(previous)
    optimizer.build(model.trainable_variables)
    return model


def values(variables):
    return [keras.ops.convert_to_numpy(variable.value).copy() for variable in variables]


def state_values(state):
    return [np.asarray(value).copy() for value in state.trainable]


def run(step, batches):
    state = step.initial_state()
    reports = []
    for batch in batches:
        state, report = step(state, batch)
        reports.append({name: float(value) for name, value in report.items()})
    return state, reports


def test_a_non_finite_loss_blocks_that_update_and_every_later_one():
    batches = make_batches()
    batches[1]["poison"] = np.float32(0.0)
    optimizer = keras.optimizers.Adam(0.01)
    model = build(optimizer, batches[0])
    step = JaxTrainStep(model, optimizer, loss_fn=poisoned_losses(model, "loss"))
    state = step.initial_state()
    state, _ = step(state, batches[0])
    after_first = state_values(state)
    for batch in batches[1:]:
        state, report = step(state, batch)
    assert step.counters(state) == {"step": 4, "nonfinite_batches": 1, "nonfinite_step": 2}
    for kept, value in zip(after_first, state_values(state)):
        np.testing.assert_array_equal(value, kept)
    step.write_back(state)
    assert int(keras.ops.convert_to_numpy(optimizer.iterations.value)) == 1


def test_skipping_refuses_only_the_non_finite_batch():
    batches = make_batches()
    batches[1]["poison"] = np.float32(0.0)
    optimizer = keras.optimizers.Adam(0.01)
    model = build(optimizer, batches[0])
    step = JaxTrainStep(model, optimizer, loss_fn=poisoned_losses(model, "loss"),
                        skip_nonfinite_batches=True)
    state, reports = run(step, batches)
    assert [report["finite"] for report in reports] == [1.0, 0.0, 1.0, 1.0]
    assert step.counters(state) == {"step": 4, "nonfinite_batches": 1, "nonfinite_step": 2}
    # The same as never having seen the refused batch.
    reference, _ = run(step, [batches[0]] + batches[2:])
    for value, expected in zip(state_values(state), state_values(reference)):
        np.testing.assert_array_equal(value, expected)


def test_a_non_finite_gradient_is_refused_without_loss_scaling():
    batches = make_batches(count=2)
    batches[0]["poison"] = np.float32(0.0)
    optimizer = keras.optimizers.SGD(0.1)
    model = build(optimizer, batches[0])
    step = JaxTrainStep(model, optimizer, loss_fn=poisoned_losses(model, "gradient"),
                        skip_nonfinite_batches=True)
    initial = values(model.trainable_variables)
    state, reports = run(step, batches[:1])
    assert np.isfinite(reports[0]["total"]) and reports[0]["finite"] == 0.0
    for value, expected in zip(state_values(state), initial):
        np.testing.assert_array_equal(value, expected)


def test_clipping_bounds_the_update_by_the_global_norm():
    batch = make_batches(count=1)[0]
    optimizer = keras.optimizers.SGD(1.0)
    model = build(optimizer, batch)
    initial = values(model.trainable_variables)
    state, _ = run(JaxTrainStep(model, optimizer, clip_grad_norm=0.01), [batch])
    moved = np.sqrt(sum(np.sum((value - start) ** 2)
                        for value, start in zip(state_values(state), initial)))
    assert moved == pytest.approx(0.01, rel=1e-4)


@pytest.mark.parametrize("clip_grad_norm", [0.0, 0.01])
def test_loss_scaling_unscales_exactly_and_scales_the_clipping_bound(clip_grad_norm):
    batch = make_batches(count=1)[0]
    results = []
    for scaled in (False, True):
        optimizer = keras.optimizers.SGD(1.0)
        if scaled:
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        model = build(optimizer, batch)
        state, _ = run(JaxTrainStep(model, optimizer, clip_grad_norm=clip_grad_norm), [batch])
        results.append(state_values(state))
    for plain, scaled in zip(*results):
        np.testing.assert_allclose(scaled, plain, rtol=1e-5, atol=1e-7)


def test_a_non_finite_gradient_under_loss_scaling_halves_the_scale_and_skips_the_update():
    batches = make_batches(count=1)
    batches[0]["poison"] = np.float32(0.0)
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1))
    model = build(optimizer, batches[0], policy="mixed_float16")
    initial = values(model.trainable_variables)
    step = JaxTrainStep(model, optimizer, loss_fn=poisoned_losses(model, "gradient"))
    state, reports = run(step, batches)
    # As Keras's loss-scale optimizer does on TensorFlow: the step counts as
    # finite (its loss is), the optimizer skips the update and lowers the scale.
    assert reports[0]["finite"] == 1.0
    step.write_back(state)
    assert float(keras.ops.convert_to_numpy(optimizer.dynamic_scale.value)) == 2.0 ** 14
    for value, expected in zip(values(model.trainable_variables), initial):
        np.testing.assert_array_equal(value, expected)


def test_the_variables_change_only_when_written_back_and_stay_usable():
    batches = make_batches()
    optimizer = keras.optimizers.Adam(0.01)
    model = build(optimizer, batches[0])
    initial = values(model.trainable_variables)
    step = JaxTrainStep(model, optimizer)
    state, _ = run(step, batches[:2])
    for value, expected in zip(values(model.trainable_variables), initial):
        np.testing.assert_array_equal(value, expected)
    step.write_back(state)
    written = values(model.trainable_variables)
    for value, expected in zip(written, state_values(state)):
        np.testing.assert_array_equal(value, expected)
    assert int(keras.ops.convert_to_numpy(optimizer.iterations.value)) == 2
    # The state's buffers are donated to the next step; the variables hold copies.
    state, _ = step(state, batches[2])
    for value, expected in zip(values(model.trainable_variables), written):
        np.testing.assert_array_equal(value, expected)
    assert not all(np.array_equal(a, b) for a, b in zip(state_values(state), written))
