"""One side of the cross-backend decoding check: the n-best lists of three models on one backend.

Run as a program under the backend to measure (KERAS_BACKEND picks it):

    python tests/decode_parity.py --mode=save --dir=D   # fresh weights, saved to D, then decoded
    python tests/decode_parity.py --mode=load --dir=D   # D's weights, from the other backend

Each case builds its model at test size (`backend_parity.build`), decodes
that module's fixed batch with the library's compiled decoding function
(`fast_decode.make_decode_function`: a `tf.function` graph with in-place
caches on TensorFlow, `jax.jit` on JAX) at beam 1 and beam 4, and writes
`D/<case>.<backend>.npz`: every hypothesis' ids, length and score, and the
parse head's logits where the model has one. `tests/test_decode_parity.py`
runs it once per backend and compares.
"""

import argparse
import os

import keras
import numpy as np

from backend_parity import build  # the script's directory is on sys.path
from syntax_t2t.data.derived_features import with_derived_features
from syntax_t2t.decoding.fast_decode import make_decode_function

CASES = ("transformer", "tree_distance", "dep_parse")
BEAMS = (1, 4)
ALPHA, EXTRA_LENGTH = 0.6, 12


def run_case(case: str, mode: str, directory: str) -> None:
    keras.utils.set_random_seed(0)
    model, batch = build(case)
    weights = os.path.join(directory, f"{case}.weights.h5")
    if mode == "save":
        model.save_weights(weights)
    else:
        model.load_weights(weights)
    features = with_derived_features(model, {key: keras.ops.convert_to_numpy(batch[key])
                                             for key in model.decode_features})
    arrays = {}
    for beam in BEAMS:
        decode = make_decode_function(model, sorted(features), beam, ALPHA, EXTRA_LENGTH)
        for key, value in decode(features).items():
            arrays[f"beam{beam}/{key}"] = keras.ops.convert_to_numpy(value)
    np.savez(os.path.join(directory, f"{case}.{keras.backend.backend()}.npz"), **arrays)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("save", "load"), required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args(argv)
    os.makedirs(args.dir, exist_ok=True)
    for case in args.cases.split(","):
        run_case(case, args.mode, args.dir)
        print(f"{case}: done", flush=True)


if __name__ == "__main__":
    main()
