"""One side of the cross-backend checkpoint check: write a training checkpoint, or read another's.

Run as a program under the backend to check (KERAS_BACKEND picks it):

    python tests/checkpoint_sides.py --mode=write --dir=D     # D/<backend>/<case>/ckpt-7
    python tests/checkpoint_sides.py --mode=read --dir=D --source=<backend>
    python tests/checkpoint_sides.py --mode=legacy --dir=D    # TensorFlow only: D/legacy/<case>

`write` builds each case's model (`backend_parity.py`'s), moves its Adam
optimizer two steps and its dropout generators away from their initial
state, saves a training checkpoint (`TrainingCheckpoint.save`) at step 7 and
records every value and the model's logits on a fixed batch in
`D/<backend>/<case>.npz`. `legacy` does the same in TensorFlow's format, as
runs before the directory format saved it, then converts it
(`convert_tensorflow_checkpoints`). `read` builds the same models afresh,
restores `D/<source>/<case>` and records the same in
`D/<source>/<case>.read.<backend>.npz`; `tests/test_checkpoint_backends.py`
compares.
"""

import argparse
import os
import sys

import keras
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import backend_parity  # noqa: E402

from syntax_t2t.checkpointing import variables  # noqa: E402
from syntax_t2t.hparams import HParams  # noqa: E402
from syntax_t2t.training import checkpoints, optimizers  # noqa: E402

CASES = ("transformer", "tree_distance")
STEP = 7
HPARAMS = HParams(hidden_size=16, optimizer="adam", adam_beta1=0.9, adam_beta2=0.997,
                  adam_epsilon=1e-9, learning_rate=0.2, learning_rate_warmup_steps=10,
                  clip_grad_norm=0.0)
EXPECTED_PARTS = {"model_weights", "optimizer", "step", "random_state"}
# Dropout on, so that the dropout generators' state is part of the checkpoint
# (the logits compared are computed without it).
backend_parity.TINY.update(layer_prepostprocess_dropout=0.1, attention_dropout=0.1,
                           relu_dropout=0.1)


def model_and_optimizer(case, seed, steps):
    keras.utils.set_random_seed(seed)
    model, batch = backend_parity.build(case)
    optimizer = optimizers.make_optimizer(HPARAMS, "float32")
    optimizer.build(model.trainable_variables)
    for _ in range(steps):
        optimizer.apply([keras.ops.ones(v.shape) for v in model.trainable_variables],
                        model.trainable_variables)
    return model, batch, optimizer


def record(model, batch, optimizer, step, path):
    """Every checkpointed value, by its checkpoint name, and the model's logits."""
    arrays = {"logits": keras.ops.convert_to_numpy(model(batch, training=False)["logits"]),
              "step": np.asarray(int(variables.to_numpy(step)))}
    for part, named in (("model_weights", variables.model_weights(model)),
                        ("optimizer", variables.optimizer_variables(optimizer, model)),
                        ("random_state", variables.random_state(model))):
        arrays.update({f"{part}/{name}": value
                       for name, value in variables.values_of(named).items()})
    np.savez(path, **arrays)


def write(directory, case, legacy=False):
    model, batch, optimizer = model_and_optimizer(case, seed=1, steps=2)
    for index, state in enumerate(variables.random_state(model).values()):
        state.assign(np.array([11 + index, 3]).astype(str(state.dtype)))
    step = keras.Variable(STEP, dtype="int64" if legacy else "int32", trainable=False)
    run = os.path.join(directory, case)
    if legacy:
        import tensorflow as tf  # noqa: PLC0415  (the legacy side runs on TensorFlow only)

        saved = tf.train.Checkpoint(model_weights={weight.path: weight for weight in model.weights},
                                    optimizer=optimizer, step=step,
                                    random_state=variables.random_state(model))
        tf.train.CheckpointManager(saved, run, max_to_keep=None, checkpoint_name="ckpt").save(
            checkpoint_number=STEP)
        scratch, _, _ = model_and_optimizer(case, seed=2, steps=0)
        written = checkpoints.convert_tensorflow_checkpoints(run, scratch, HPARAMS)
        assert written == [os.path.join(run, f"ckpt-{STEP}")], written
    else:
        checkpoints.TrainingCheckpoint(run, model, optimizer, step, 2).save()
    record(model, batch, optimizer, step, os.path.join(directory, f"{case}.npz"))


def read(directory, case):
    model, batch, optimizer = model_and_optimizer(case, seed=2, steps=0)
    step = keras.Variable(0, dtype="int32", trainable=False)
    keeper = checkpoints.TrainingCheckpoint(os.path.join(directory, case), model, optimizer, step,
                                            keep_checkpoint_max=2)
    assert keeper.restore_latest() == STEP
    assert keeper.restored_parts == EXPECTED_PARTS, keeper.restored_parts
    record(model, batch, optimizer, step,
           os.path.join(directory, f"{case}.read.{keras.backend.backend()}.npz"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("write", "read", "legacy"), required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--source", help="the backend (or 'legacy') whose checkpoints to read")
    args = parser.parse_args(argv)
    if args.mode == "read":
        directory = os.path.join(args.dir, args.source)
    else:
        directory = os.path.join(args.dir, "legacy" if args.mode == "legacy"
                                 else keras.backend.backend())
    os.makedirs(directory, exist_ok=True)
    for case in CASES:
        if args.mode == "read":
            read(directory, case)
        else:
            write(directory, case, legacy=args.mode == "legacy")


if __name__ == "__main__":
    main()
