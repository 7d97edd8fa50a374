"""The JAX training loop (`training/jax_trainer.py`), in the environment without TensorFlow.

* `update_freq=2`: two accumulated batches update as one batch of their
  union (`tests/test_accumulation.py` states the rule on TensorFlow);
* a run stopped by SIGTERM and resumed ends with the weights, optimizer
  variables and dropout generator states of an uninterrupted run;
* the flags the JAX trainer cannot honour are refused with the reason (data
  parallelism: `test_jax_data_parallel.py`).

The shards are written with `data/tfrecord.py` (datagen needs TensorFlow).
The comparison with the TensorFlow trainer, and `bin/train` under JAX, are
in `test_jax_trainer_parity.py`.
"""

import os
import random
import signal

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.backends

if keras.backend.backend() != "jax":
    pytest.skip("the JAX trainer runs under KERAS_BACKEND=jax", allow_module_level=True)

from absl import flags  # noqa: E402
from absl.testing import flagsaver  # noqa: E402

from syntax_t2t import criteria, registry  # noqa: E402,F401  (criteria: registers the built-ins)
from syntax_t2t.backend.jax_accumulation import JaxAccumulatingStep  # noqa: E402
from syntax_t2t.backend.jax_train_step import JaxTrainStep  # noqa: E402
from syntax_t2t.checkpointing import directory_format  # noqa: E402
from syntax_t2t.cli import common, registration, train  # noqa: E402
from syntax_t2t.data import numpy_pipeline, tfrecord  # noqa: E402
from syntax_t2t.training import optimizers  # noqa: E402
from syntax_t2t.training.jax_trainer import JaxTrainer  # noqa: E402
from syntax_t2t.training.stop_signals import TrainingInterrupted  # noqa: E402

FLAGS = flags.FLAGS
VOCAB = 20
KEYS = ("inputs", "targets")
# One bucket (8): the step compiles once.
TINY = dict(hidden_size=16, filter_size=32, num_heads=2, num_encoder_layers=1,
            num_decoder_layers=1, max_length=8, min_length_bucket=8, batch_size=64,
            learning_rate_warmup_steps=10)


def hparams(**overrides):
    registration.import_all()
    return registry.hparams("transformer_tiny").override({**TINY, **overrides})


def build(params):
    return lambda: registry.model("transformer")(params, {"inputs": VOCAB, "targets": VOCAB})


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """A training shard of reversal examples (ids 3..19, lengths 3..8 with <EOS>)."""
    rng = random.Random(0)
    path = tmp_path_factory.mktemp("jax_trainer") / "train-00000-of-00001"

    def example():
        source = [rng.randint(3, VOCAB - 1) for _ in range(rng.randint(2, 7))]
        return {"inputs": source + [1], "targets": source[::-1] + [1]}

    tfrecord.write_records(path, (tfrecord.serialize_int64_features(example())
                                  for _ in range(300)))
    return [str(path)]


class _SignallingIterator(numpy_pipeline.BatchIterator):
    """Sends SIGTERM to this process when it hands out its `at`-th batch."""

    def __init__(self, dataset, at):
        super().__init__(dataset)
        self._left = at

    def __next__(self):
        batch = super().__next__()
        self._left -= 1
        if self._left == 0:
            os.kill(os.getpid(), signal.SIGTERM)
        return batch


class _SignallingDataset(numpy_pipeline.NumpyDataset):
    def __init__(self, *args, signal_at, **kwargs):
        super().__init__(*args, **kwargs)
        self.signal_at = signal_at

    def __iter__(self):
        return _SignallingIterator(self, self.signal_at)


def saved_arrays(output_dir, step):
    stored = directory_format.open_checkpoint(os.path.join(output_dir, f"ckpt-{step}"))
    return {f"{part}/{name}": value for part in ("model_weights", "optimizer", "random_state")
            for name, value in stored.arrays(part).items()}


@pytest.mark.slow
def test_a_run_stopped_by_sigterm_resumes_to_the_weights_of_an_uninterrupted_run(shards,
                                                                                  tmp_path):
    params = hparams()  # dropout on: its generators' state must be restored too

    def trainer(output_dir):
        keras.utils.set_random_seed(1)
        return JaxTrainer(build(params), params, str(output_dir), save_checkpoints_steps=100,
                          log_step_count_steps=2)

    def dataset(**kwargs):
        cls = _SignallingDataset if kwargs else numpy_pipeline.NumpyDataset
        return cls(shards, KEYS, "train", params, seed=1, **kwargs)

    trainer(tmp_path / "whole").train(dataset(), train_steps=6)
    with pytest.raises(TrainingInterrupted) as stopped:
        trainer(tmp_path / "parts").train(dataset(signal_at=3), train_steps=6)
    assert stopped.value.step == 3 and stopped.value.signal_number == signal.SIGTERM
    assert stopped.value.checkpoint.endswith("ckpt-3")
    resumed = trainer(tmp_path / "parts")
    resumed.train(dataset(), train_steps=6)
    assert int(resumed.global_step.numpy()) == 6
    whole, parts = saved_arrays(tmp_path / "whole", 6), saved_arrays(tmp_path / "parts", 6)
    assert sorted(whole) == sorted(parts)
    assert any(name.startswith("random_state/") for name in whole)
    for name, value in whole.items():
        np.testing.assert_array_equal(parts[name], value, err_msg=name)


def batch_of(rows, length):
    """Reversal rows of ids, zero-padded to `length`."""
    inputs = np.zeros((len(rows), length), np.int32)
    targets = np.zeros((len(rows), length), np.int32)
    for i, row in enumerate(rows):
        inputs[i, :len(row) + 1] = row + [1]
        targets[i, :len(row) + 1] = row[::-1] + [1]
    return {"inputs": inputs, "targets": targets}


@pytest.mark.slow
def test_two_accumulated_batches_update_as_one_batch_of_their_union():
    rng = np.random.default_rng(0)
    # Very different token counts: an unweighted mean would not be the union's gradient.
    small = [list(rng.integers(3, VOCAB, size=2))]
    large = [list(rng.integers(3, VOCAB, size=rng.integers(4, 7))) for _ in range(5)]
    parts = [batch_of(small, 8), batch_of(large, 8)]
    union = batch_of(small + large, 8)
    params = hparams(optimizer="sgd", learning_rate=0.5, layer_prepostprocess_dropout=0.0,
                     attention_dropout=0.0, relu_dropout=0.0, clip_grad_norm=0.0)
    keras.utils.set_random_seed(3)
    model = build(params)()
    model(union, training=False)
    initial = model.get_weights()

    def trained(step_class, batches, **kwargs):
        model.set_weights(initial)
        optimizer = optimizers.make_optimizer(params, "float32")
        optimizer.build(model.trainable_variables)
        step = step_class(model, optimizer, **kwargs)
        state = step.initial_state()
        for batch in batches:
            state, _ = step(state, batch)
        step.write_back(state)
        return step, state, model.get_weights()

    _, _, expected = trained(JaxTrainStep, [union])
    step, state, got = trained(JaxAccumulatingStep, parts, update_freq=2)
    assert step.counters(state)["step"] == 1
    moved = 0
    for want, have, start in zip(expected, got, initial):
        np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-6)
        moved += not np.allclose(want, start)
    assert moved > len(initial) // 2
    # The update emptied the sums.
    assert float(state.weight) == 0.0 and int(state.batches) == 0
    assert all(not np.any(np.asarray(total)) for total in state.sums)


@pytest.fixture
def parsed_flags():
    if not FLAGS.is_parsed():
        FLAGS(["train"])


@pytest.mark.parametrize("values, message", [
    (dict(xla="false"), r"--xla=false: under KERAS_BACKEND=jax every step is compiled with XLA"),
    (dict(distribution="multi_worker", random_seed=None),
     r"--distribution=multi_worker under KERAS_BACKEND=jax needs --random_seed"),
])
def test_flags_the_jax_trainer_cannot_honour_are_refused(parsed_flags, values, message):
    with flagsaver.flagsaver(**values):
        with pytest.raises(common.UsageError, match=message):
            train._check_jax_flags()


def test_flags_the_jax_trainer_honours_pass(parsed_flags, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    for values in (dict(xla="auto"), dict(xla="true", distribution="none"),
                   dict(distribution="mirrored"), dict(distribution="multi_worker", random_seed=1)):
        with flagsaver.flagsaver(**values):
            train._check_jax_flags()


def test_a_multi_host_run_is_not_resumed(parsed_flags, monkeypatch, tmp_path):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    (tmp_path / "ckpt-5").mkdir()
    (tmp_path / "ckpt-5" / "manifest.json").write_text("{}")
    with flagsaver.flagsaver(distribution="multi_worker", random_seed=1,
                             output_dir=str(tmp_path)):
        with pytest.raises(common.UsageError, match="starts runs but does not resume them"):
            train._check_jax_flags()
    with flagsaver.flagsaver(distribution="multi_worker", random_seed=1,
                             output_dir=str(tmp_path / "new")):
        train._check_jax_flags()


def test_a_multi_worker_cluster_is_refused(parsed_flags, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["a:1", "b:2"]}, '
                                    '"task": {"type": "worker", "index": 0}}')
    with pytest.raises(common.UsageError, match="TF_CONFIG names a cluster of several tasks: "
                                                "that configures tf.distribute.*"
                                                "--distribution=multi_worker"):
        train._check_jax_flags()


POISON = VOCAB - 1


class _PoisonedCriterion(criteria.Criterion):
    """The model's criterion, with a NaN total on a batch whose source holds `POISON`."""

    def __init__(self, model):
        super().__init__(model)
        self.inner = criteria.for_model(model)

    def __call__(self, features, outputs):
        losses = dict(self.inner(features, outputs))
        poisoned = keras.ops.any(keras.ops.equal(features["inputs"], POISON))
        losses["total"] = keras.ops.where(poisoned, float("nan"), losses["total"])
        return losses


@pytest.mark.slow
@pytest.mark.parametrize("skip", [False, True])
def test_a_nonfinite_step_stops_naming_it_or_is_skipped(tmp_path, skip):
    from syntax_t2t.training.nonfinite import NonFiniteLossError

    rows = [[3, 4, 5], [6, 7], [8, 9, 10, 11]]
    batches = [batch_of(rows, 8) for _ in range(6)]
    batches[2] = batch_of(rows[:2] + [[POISON, 4]], 8)  # step 3
    params = hparams()
    keras.utils.set_random_seed(1)
    trainer = JaxTrainer(build(params), params, str(tmp_path), save_checkpoints_steps=2,
                         log_step_count_steps=1, skip_nonfinite_batches=skip)
    trainer.criterion = _PoisonedCriterion(trainer.model)
    if skip:
        trainer.train(batches, train_steps=6)
        assert trainer.nonfinite_batches == 1
        assert {"ckpt-2", "ckpt-4", "ckpt-6"} <= set(os.listdir(tmp_path))
        assert np.all(np.isfinite(np.concatenate([w.ravel() for w in trainer.model.get_weights()])))
        return
    with pytest.raises(NonFiniteLossError, match="not finite .* at step 3") as stopped:
        trainer.train(batches, train_steps=6)
    assert stopped.value.step == 3 and stopped.value.last_checkpoint.endswith("ckpt-2")
    assert not [name for name in os.listdir(tmp_path) if name.startswith("ckpt-")
                and name != "ckpt-2"]
