"""The JAX side of `tests/test_jax_trainer_parity.py`: `JaxTrainer` on saved batches.

Run under `KERAS_BACKEND=jax`, in an environment that may lack TensorFlow:

    python tests/jax_trainer_side.py --dir=D

`D/config.json` names the model, its hparams set and overrides, the
vocabulary sizes, the `.weights.h5` the TensorFlow trainer started from and
the steps; `D/batches.npz` holds the batches (`<index>.<feature>`), read in
order. The run goes to `D/jax_run` (checkpoints in the shared format,
TensorBoard event files written without TensorFlow, one scalar set per step).
"""

import json
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import syntax_t2t.hparams_sets  # noqa: E402,F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: E402,F401  (registers the models)
from jax_train_step_side import load_batches  # noqa: E402
from backend_sides import jax_side_arguments  # noqa: E402
from syntax_t2t import criteria, registry  # noqa: E402,F401  (criteria: registers the built-ins)
from syntax_t2t.training.jax_trainer import JaxTrainer  # noqa: E402


def main(argv=None):
    args = jax_side_arguments(__doc__, argv)
    with open(os.path.join(args.dir, "config.json"), encoding="utf-8") as stream:
        config = json.load(stream)
    hparams = registry.hparams(config["hparams_set"]).parse(config["hparams"])
    trainer = JaxTrainer(
        lambda: registry.model(config["model"])(hparams, config["vocab_sizes"]), hparams,
        os.path.join(args.dir, "jax_run"), log_step_count_steps=1,
        save_checkpoints_steps=10_000, keep_checkpoint_max=1)
    batches = load_batches(os.path.join(args.dir, "batches.npz"))
    trainer.build(batches[0])
    trainer.model.load_weights(config["initial_weights"])
    trainer.train(batches, train_steps=config["steps"])
    print("done", flush=True)


if __name__ == "__main__":
    main()
