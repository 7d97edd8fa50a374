"""The two-device side of `tests/test_jax_data_parallel.py`: one device against two.

Run under `KERAS_BACKEND=jax` with two host devices (the flag must be set
before JAX starts its backends, hence a process of its own):

    XLA_FLAGS=--xla_force_host_platform_device_count=2 python tests/jax_data_parallel_side.py --dir=D

Trains the same tiny transformer from the same weights with `JaxTrainer`
three times, for three steps each (dropout off: its masks are drawn per row,
and a padded batch has more rows): on one device on batches of 4 rows; on
two devices (`keras.distribution.DataParallel`) on the same batches; and on
two devices on the same batches less their last row (3 rows, odd) padded
back to 4 with an all-padding row, against one device on the 3-row batches.
Writes `D/result.json`: the largest |difference| of each pair's weights,
how far training moved them, and whether the batch really was split.
"""

import json
import os
import sys

import keras
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from backend_sides import jax_side_arguments  # noqa: E402
from syntax_t2t import criteria, registry  # noqa: E402,F401  (criteria: registers the built-ins)
from syntax_t2t.backend import jax_distribution  # noqa: E402
from syntax_t2t.cli import registration  # noqa: E402
from syntax_t2t.training.jax_trainer import JaxTrainer  # noqa: E402

VOCAB = 20
STEPS = 3
TINY = dict(hidden_size=16, filter_size=32, num_heads=2, num_encoder_layers=1,
            num_decoder_layers=1, max_length=8, min_length_bucket=8, batch_size=64,
            learning_rate_warmup_steps=2, layer_prepostprocess_dropout=0.0,
            attention_dropout=0.0, relu_dropout=0.0)


def batches(rows):
    """`STEPS` reversal batches of `rows` examples, padded to length 8 with id 0."""
    rng = np.random.default_rng(0)
    made = []
    for _ in range(STEPS):
        inputs = np.zeros((rows, 8), np.int32)
        targets = np.zeros((rows, 8), np.int32)
        for row in range(rows):
            length = int(rng.integers(2, 7))
            source = rng.integers(3, VOCAB, size=length)
            inputs[row, :length + 1] = list(source) + [1]
            targets[row, :length + 1] = list(source[::-1]) + [1]
        made.append({"inputs": inputs, "targets": targets})
    return made


def pad_rows(batch, rows):
    """`batch` with all-padding rows (id 0) up to `rows` rows, as the input pipeline pads it."""
    return {name: np.concatenate([value, np.zeros((rows - len(value),) + value.shape[1:],
                                                  value.dtype)]) for name, value in batch.items()}


def train(directory, data, initial, distribution):
    hparams = registry.hparams("transformer_tiny").override(TINY)
    trainer = JaxTrainer(
        lambda: registry.model("transformer")(hparams, {"inputs": VOCAB, "targets": VOCAB}),
        hparams, directory, save_checkpoints_steps=STEPS, log_step_count_steps=STEPS,
        distribution=distribution)
    trainer.build(data[0])
    if initial is not None:
        trainer.model.set_weights(initial)
    start = [np.array(weight) for weight in trainer.model.get_weights()]
    trainer.train(data, STEPS)
    return start, [np.array(weight) for weight in trainer.model.get_weights()]


def largest_difference(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def main(argv=None):
    args = jax_side_arguments(__doc__, argv)
    registration.import_all()
    keras.utils.set_random_seed(1)
    two = jax_distribution.make_distribution("mirrored", num_devices=2)
    even, odd = batches(4), batches(3)
    split = jax_distribution.shard_batch(even[0], two)["targets"]
    start, one_device = train(os.path.join(args.dir, "one"), even, None, None)
    _, two_devices = train(os.path.join(args.dir, "two"), even, start, two)
    _, one_device_odd = train(os.path.join(args.dir, "one_odd"), odd, start, None)
    _, two_devices_padded = train(os.path.join(args.dir, "two_padded"),
                                  [pad_rows(batch, 4) for batch in odd], start, two)
    result = {
        "devices": jax_distribution.device_count(two),
        "rows_per_device": sorted(shard.data.shape[0] for shard in split.addressable_shards),
        "moved": largest_difference(start, one_device),
        "moved_odd": largest_difference(start, one_device_odd),
        "even": largest_difference(one_device, two_devices),
        "padded": largest_difference(one_device_odd, two_devices_padded),
    }
    with open(os.path.join(args.dir, "result.json"), "w", encoding="utf-8") as stream:
        json.dump(result, stream)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
