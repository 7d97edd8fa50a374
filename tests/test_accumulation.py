"""Gradient accumulation: K accumulated batches make the update of one batch of their union."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from syntax_t2t import criteria, registry
from syntax_t2t.cli import registration
from syntax_t2t.training import accumulation
from syntax_t2t.training.trainer import Trainer

VOCAB = 20
TINY = dict(hidden_size=16, filter_size=32, num_heads=2, num_encoder_layers=1,
            num_decoder_layers=1, layer_prepostprocess_dropout=0.0, attention_dropout=0.0,
            relu_dropout=0.0, max_length=16)


def hparams(**overrides):
    registration.import_all()
    values = registry.hparams("transformer_tiny")
    return values.override({**TINY, **overrides})


def batch_of(rows, length):
    """Rows of token ids, zero-padded to `length` (as the pipeline pads)."""
    inputs = np.zeros((len(rows), length), np.int32)
    for i, row in enumerate(rows):
        inputs[i, :len(row)] = row
    targets = inputs[:, ::-1].copy()
    # Targets: the reversed words then EOS, padding after.
    for i, row in enumerate(rows):
        targets[i] = 0
        targets[i, :len(row)] = list(reversed(row[:-1])) + [1]
    return {"inputs": inputs, "targets": targets}


def random_rows(rng, count, lengths):
    return [list(rng.integers(2, VOCAB, size=rng.integers(*lengths) - 1)) + [1]
            for _ in range(count)]


def dataset_of(batches):
    dataset = tf.data.Dataset.from_tensors(batches[0])
    for batch in batches[1:]:
        dataset = dataset.concatenate(tf.data.Dataset.from_tensors(batch))
    return dataset


def trained(batches, params, output_dir, initial, train_steps=1):
    trainer = Trainer(lambda: registry.model("transformer")(params, {"inputs": VOCAB,
                                                                       "targets": VOCAB}),
                      params, str(output_dir), log_step_count_steps=1000)
    trainer.build(batches[0])
    trainer.model.set_weights(initial)
    trainer.train(dataset_of(batches), train_steps=train_steps)
    return trainer


@pytest.fixture(scope="module")
def parts_and_union():
    rng = np.random.default_rng(0)
    # Batches of very different token counts: an unweighted mean of their
    # gradients is not the union's gradient.
    part_rows = [random_rows(rng, 1, (3, 4)), random_rows(rng, 5, (6, 9)), random_rows(rng, 2, (2, 5))]
    parts = [batch_of(rows, max(map(len, rows)) + 1) for rows in part_rows]
    every_row = [row for rows in part_rows for row in rows]
    union = batch_of(every_row, max(map(len, every_row)) + 2)
    return parts, union


def initial_weights(params, batch):
    keras.utils.set_random_seed(3)
    model = registry.model("transformer")(params, {"inputs": VOCAB, "targets": VOCAB})
    model(batch, training=False)
    return model.get_weights()


def test_k_accumulated_batches_update_as_one_batch_of_their_union(parts_and_union, tmp_path):
    parts, union = parts_and_union
    plain = hparams(optimizer="sgd", learning_rate=0.5)
    initial = initial_weights(plain, union)
    one = trained([union], plain, tmp_path / "union", initial)
    accumulated = trained(parts, hparams(optimizer="sgd", learning_rate=0.5, update_freq=3),
                          tmp_path / "parts", initial)
    assert int(accumulated.global_step.numpy()) == 1
    assert int(accumulated.optimizer.iterations.numpy()) == 1
    moved = 0
    for expected, got, start in zip(one.model.get_weights(), accumulated.model.get_weights(),
                                    initial):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
        moved += not np.allclose(expected, start)
    assert moved > len(initial) // 2
    # The accumulated sums were emptied by the update.
    assert all(not np.any(value.numpy()) for value in accumulated._accumulator._sums)


def test_unweighted_mean_of_the_batches_would_differ(parts_and_union, tmp_path):
    """The equivalence above is not automatic: the parts' plain mean gradient moves differently."""
    parts, union = parts_and_union
    params = hparams(optimizer="sgd", learning_rate=0.5)
    initial = initial_weights(params, union)
    model = registry.model("transformer")(params, {"inputs": VOCAB, "targets": VOCAB})
    model(union, training=False)

    def gradients(batch):
        model.set_weights(initial)
        with tf.GradientTape() as tape:
            loss = criteria.for_model(model)(batch, model(batch, training=True))["total"]
        return [tf.convert_to_tensor(g).numpy() for g in tape.gradient(loss, model.trainable_variables)]

    union_gradients = gradients(union)
    mean = [np.mean(parts_gradients, axis=0) for parts_gradients in
            zip(*(gradients(part) for part in parts))]
    assert not all(np.allclose(u, m, rtol=1e-3, atol=1e-6) for u, m in zip(union_gradients, mean))


def test_the_schedule_counts_optimizer_steps(parts_and_union, tmp_path):
    parts, union = parts_and_union
    params = hparams(update_freq=3)  # Adam with the warm-up schedule
    initial = initial_weights(params, union)
    trainer = trained(parts * 2, params, tmp_path / "adam", initial, train_steps=2)
    assert int(trainer.global_step.numpy()) == 2
    assert int(trainer.optimizer.iterations.numpy()) == 2


def test_batches_of_one_update_take_k_batches():
    iterator = iter(range(1, 10))
    assert list(accumulation.batches_of_one_update(0, iterator, 3)) == [0, 1, 2]
    assert next(iterator) == 3


def test_update_freq_one_is_no_accumulator():
    assert accumulation.make_accumulator(hparams(update_freq=1), []) is None
    with pytest.raises(ValueError, match="update_freq"):
        accumulation.GradientAccumulator([], 1)
