"""The JAX side of `tests/test_jax_train_step.py`: train on saved batches with `JaxTrainStep`.

Run under `KERAS_BACKEND=jax`, in an environment that may lack TensorFlow:

    python tests/jax_train_step_side.py --dir=D --cases=float32,clipped

For each case `D/<case>/config.json` names the model, its hparams, the
clipping bound, the dtype policy, the vocabulary sizes and the `.weights.h5`
the TensorFlow trainer started from; `D/<case>/batches.npz` holds the
batches (`<step>.<feature>`). The case is trained one step per batch and
`D/<case>/jax.npz` written: `losses` (the total loss of every step), `finite`
(per step), `initial/<path>` and `final/<path>` (the weights before and
after) and `loss_scale` (the final dynamic scale; 1 without loss scaling).
Cases with the same model, hparams and policy share one built model.
"""

import json
import os
import sys

import keras
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import syntax_t2t.hparams_sets  # noqa: E402,F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: E402,F401  (registers the models)
from backend_sides import jax_side_arguments  # noqa: E402
from syntax_t2t import criteria, registry  # noqa: E402
from syntax_t2t.backend.jax_train_step import JaxTrainStep  # noqa: E402
from syntax_t2t.training import optimizers, precision  # noqa: E402


def load_batches(path):
    """`[{feature: array}]` in step order from `<step>.<feature>` keys."""
    batches = {}
    with np.load(path) as arrays:
        for key in arrays.files:
            step, feature = key.split(".", 1)
            batches.setdefault(int(step), {})[feature] = arrays[key]
    return [batches[step] for step in sorted(batches)]


def model_batch(model, features):
    """The model's train features, with those it derives on the host added."""
    batch = {key: features[key] for key in model.train_features}
    derived = model.derived_features
    if derived is not None:
        batch.update(derived.compute(dict(batch)))
    return batch


def build_model(config, built):
    """The config's model, built on its first batch; reused from `built` for an equal config."""
    key = (config["model"], config["hparams_set"], config["hparams"], config["policy"])
    if key not in built:
        hparams = registry.hparams(config["hparams_set"]).parse(config["hparams"])
        with precision.dtype_policy(config["policy"]):
            model = registry.model(config["model"])(hparams, config["vocab_sizes"])
            model(model_batch(model, config["first_batch"]), training=False)
        built[key] = model
    return built[key]


def run_case(directory, built):
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as stream:
        config = json.load(stream)
    batches = load_batches(os.path.join(directory, "batches.npz"))
    model = build_model(dict(config, first_batch=batches[0]), built)
    model.load_weights(config["initial_weights"])
    arrays = {f"initial/{variable.path}": keras.ops.convert_to_numpy(variable.value)
              for variable in model.trainable_variables}
    hparams = registry.hparams(config["hparams_set"]).parse(config["hparams"])
    optimizer = optimizers.make_optimizer(hparams, config["policy"])
    optimizer.build(model.trainable_variables)
    step = JaxTrainStep(model, optimizer, clip_grad_norm=config["clip_grad_norm"],
                        loss_fn=criteria.for_model(model))
    state = step.initial_state()
    losses, finite = [], []
    for features in batches:
        state, report = step(state, model_batch(model, features))
        losses.append(report["total"])
        finite.append(report["finite"])
    step.write_back(state)
    arrays["losses"] = np.asarray(losses, np.float32)
    arrays["finite"] = np.asarray(finite, np.float32)
    arrays.update({f"final/{variable.path}": keras.ops.convert_to_numpy(variable.value)
                   for variable in model.trainable_variables})
    scale = getattr(optimizer, "dynamic_scale", None)
    arrays["loss_scale"] = np.float32(1.0 if scale is None
                                      else keras.ops.convert_to_numpy(scale.value))
    np.savez(os.path.join(directory, "jax.npz"), **arrays)


def main(argv=None):
    args = jax_side_arguments(__doc__, argv, extra=("cases",))
    built = {}
    for case in args.cases.split(","):
        run_case(os.path.join(args.dir, case), built)
        print(f"{case}: done", flush=True)


if __name__ == "__main__":
    main()
