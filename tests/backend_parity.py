"""One side of the cross-backend parity check: run every registered model on one backend.

Run as a program under the backend to measure (KERAS_BACKEND picks it):

    python tests/backend_parity.py --mode=save --dir=D     # fresh weights, saved to D
    python tests/backend_parity.py --mode=load --dir=D     # D's weights, from the other backend

Each case builds a model at test size, runs it on a fixed batch, and writes
`D/<case>.<backend>.npz`: the float32 outputs, each loss, the gradient of the
total loss for every trainable weight (by variable path), the largest gap
between cached decoding steps and the teacher-forced logits, and whether
forward and backward are finite under `mixed_bfloat16` and `mixed_float16`.
`tests/test_backend_parity.py` runs it once per backend and compares. The
weights travel as Keras `.weights.h5`, so the check also shows that one
weights file serves both backends.
"""

import argparse
import os
import sys

import keras
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import syntax_t2t.hparams_sets  # noqa: E402,F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: E402,F401  (registers the models)
from syntax_t2t import criteria, registry  # noqa: E402
from syntax_t2t.backend.gradients import value_and_gradients  # noqa: E402
from syntax_t2t.data.derived_features import with_derived_features  # noqa: E402

VOCAB_SIZES = {"inputs": 20, "targets": 18, "deprel": 8, "upos": 7, "xpos": 9}
TINY = dict(hidden_size=16, filter_size=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2,
            layer_prepostprocess_dropout=0.0, attention_dropout=0.0, relu_dropout=0.0,
            max_tree_distance=3, max_traversal_length=3)
TREE2SEQ_TINY = dict(embedding_size=8, hidden_size=6, blackout_samples=5)

#: case -> (model, hparams set, overrides). Every registered model appears at least once.
CASES = {
    "transformer": ("transformer", "transformer_tiny", {}),
    "transformer_relative": ("transformer", "transformer_tiny",
                             {"max_relative_position": 3, "position_encoding": "none"}),
    "tree_distance": ("tree_distance", "transformer_tiny", {}),
    "tree_traversal": ("tree_traversal", "transformer_tiny", {}),
    "spec_pos": ("spec_pos", "transformer_tiny", {}),
    "spec_dep": ("spec_dep", "transformer_tiny", {}),
    "dep_parse": ("dep_parse", "transformer_tiny", {}),
    "dep_parse_attention": ("dep_parse", "transformer_tiny", {"parse_loss": "attention"}),
    "diagonal_parse": ("diagonal_parse", "transformer_tiny", {}),
    "pascal": ("pascal", "transformer_tiny", {}),
    "sisa": ("sisa", "transformer_tiny", {}),
    "sennrich_haddow": ("sennrich_haddow", "transformer_tiny", {}),
    "mgsa": ("mgsa", "transformer_tiny", {}),
    "mgsa_ngram_on_lstm": ("mgsa", "transformer_tiny",
                           {"mgsa_partition": "ngram", "mgsa_interaction": "on_lstm"}),
    "nsd": ("nsd", "transformer_tiny", {"nsd_output": True}),
    "nsd_both": ("nsd", "transformer_tiny", {"nsd_side": "both", "nsd_output": True,
                                             "nsd_positional_encoding": True, "nsd_max_distance": 4}),
    "tree2seq": ("tree2seq", "tree2seq_tiny", TREE2SEQ_TINY),
    "anmt": ("anmt", "tree2seq_tiny", TREE2SEQ_TINY),
}

# Three source sentences of 3, 5 and 2 words (heads 1-based, 0 = ROOT), padded to 7 with <EOS>.
SOURCE_HEADS = [[2, 0, 2], [2, 0, 4, 2, 2], [0, 1]]
TARGET_HEADS = [[0, 1, 1], [2, 0, 2, 3], [2, 0, 2, 2, 4]]
SOURCE_LENGTH, TARGET_LENGTH = 7, 7


def make_batch():
    """A fixed numpy batch with every key some model reads."""
    rng = np.random.default_rng(1234)
    size = len(SOURCE_HEADS)
    batch = {key: np.zeros((size, SOURCE_LENGTH), np.int32)
             for key in ("inputs", "src_deprel", "src_upos", "src_xpos")}
    batch["src_heads"] = np.full((size, SOURCE_LENGTH), -1, np.int32)
    batch["targets"] = np.zeros((size, TARGET_LENGTH), np.int32)
    batch["tgt_heads"] = np.full((size, TARGET_LENGTH), -1, np.int32)
    for row, (source, target) in enumerate(zip(SOURCE_HEADS, TARGET_HEADS)):
        n, m = len(source), len(target)
        batch["inputs"][row, :n] = rng.integers(4, VOCAB_SIZES["inputs"], n)
        batch["inputs"][row, n] = 1
        batch["src_heads"][row, :n] = source
        for key, vocabulary in (("src_deprel", "deprel"), ("src_upos", "upos"), ("src_xpos", "xpos")):
            batch[key][row, :n] = rng.integers(4, VOCAB_SIZES[vocabulary], n)
        batch["targets"][row, :m] = rng.integers(4, VOCAB_SIZES["targets"], m)
        batch["targets"][row, m] = 1
        batch["tgt_heads"][row, :m] = target
    return batch


def build(case):
    """The case's model and its batch (train features plus host-derived ones), built."""
    name, hparams_set, overrides = CASES[case]
    hparams = registry.hparams(hparams_set)
    hparams.override(overrides if hparams_set == "tree2seq_tiny" else {**TINY, **overrides})
    model = registry.model(name)(hparams, VOCAB_SIZES)
    full = make_batch()
    batch = {key: full[key] for key in model.train_features}
    derived = model.derived_features
    if derived is not None:
        batch.update(derived.compute(dict(batch)))
    batch = {key: keras.ops.convert_to_tensor(value) for key, value in batch.items()}
    model(batch, training=False)
    return model, batch


def float_outputs(outputs):
    """The outputs that are single float tensors, as float32 numpy."""
    arrays = {}
    for key, value in outputs.items():
        if isinstance(value, (list, tuple, dict)) or value is None:
            continue
        array = keras.ops.convert_to_numpy(value)
        if np.issubdtype(array.dtype, np.floating):
            arrays[key] = array.astype(np.float32)
    return arrays


def decode_step_gap(model, batch, full_logits):
    """max |cached step logits - teacher-forced logits| over the target positions, or -1 without steps.

    A model that reads target trees in training (NSD's target side) feeds its
    own predicted distances to later steps where teacher forcing feeds gold
    ones, so its steps are not expected to reproduce the forward pass.
    """
    if not hasattr(model, "decode_step") or "tgt_heads" in model.train_features:
        return -1.0
    features = with_derived_features(model, {key: keras.ops.convert_to_numpy(batch[key])
                                              for key in model.decode_features if key in batch})
    features = {key: keras.ops.convert_to_tensor(value) for key, value in features.items()}
    memory = model.decoder_memory(model.encode(features))
    rows = int(keras.ops.shape(batch["targets"])[0])
    cache = model.initial_decoder_cache(rows, TARGET_LENGTH + 2)
    ids = keras.ops.full((rows,), model.decode_start_id, dtype="int32")
    targets = keras.ops.convert_to_numpy(batch["targets"])
    gap = 0.0
    for step in range(TARGET_LENGTH):
        logits, cache = model.decode_step(ids, keras.ops.convert_to_tensor(step, "int32"), cache, memory)
        gap = max(gap, float(np.max(np.abs(keras.ops.convert_to_numpy(logits) - full_logits[:, step]))))
        ids = keras.ops.convert_to_tensor(targets[:, step])
    return gap


def finite_under(case, policy):
    """Whether forward and backward of the case are finite under a mixed-precision policy."""
    keras.mixed_precision.set_dtype_policy(policy)
    try:
        model, batch = build(case)
        outputs, losses, gradients = value_and_gradients(model, criteria.for_model(model), batch)
        values = [keras.ops.convert_to_numpy(v) for v in float_outputs(outputs).values()]
        values += [keras.ops.convert_to_numpy(v) for v in losses.values()]
        values += [keras.ops.convert_to_numpy(g) for g in gradients if g is not None]
        return all(np.all(np.isfinite(np.asarray(v, np.float32))) for v in values)
    finally:
        keras.mixed_precision.set_dtype_policy("float32")


def perturb(model, seed=0):
    """Adds small noise to every weight, so that no output is constant by initialisation.

    (Tree2Seq's zero-initialised softmax would make every logit equal, and a
    parity check of equal logits shows little.)
    """
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        value = keras.ops.convert_to_numpy(variable)
        if np.issubdtype(value.dtype, np.floating):
            variable.assign(value + rng.normal(0.0, 0.05, value.shape).astype(value.dtype))


def run_case(case, mode, directory, mixed_precision):
    keras.utils.set_random_seed(0)
    model, batch = build(case)
    weights = os.path.join(directory, f"{case}.weights.h5")
    if mode == "save":
        perturb(model)
        model.save_weights(weights)
    else:
        model.load_weights(weights)
    outputs, losses, gradients = value_and_gradients(model, criteria.for_model(model), batch)
    arrays = {f"out/{key}": value for key, value in float_outputs(outputs).items()}
    arrays.update({f"loss/{key}": np.float32(keras.ops.convert_to_numpy(value))
                   for key, value in losses.items()})
    paths = [variable.path for variable in model.trainable_variables]
    if len(set(paths)) != len(paths):
        raise AssertionError(f"{case}: variable paths are not unique")
    for variable, gradient in zip(model.trainable_variables, gradients):
        arrays[f"grad/{variable.path}"] = (np.zeros(variable.shape, np.float32) if gradient is None
                                           else keras.ops.convert_to_numpy(gradient).astype(np.float32))
    arrays["decode_step_gap"] = np.float32(decode_step_gap(model, batch, arrays["out/logits"]))
    for policy in mixed_precision:
        arrays[f"finite/{policy}"] = np.bool_(finite_under(case, policy))
    np.savez(os.path.join(directory, f"{case}.{keras.backend.backend()}.npz"), **arrays)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("save", "load"), required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--mixed_precision", default="mixed_bfloat16,mixed_float16")
    args = parser.parse_args(argv)
    os.makedirs(args.dir, exist_ok=True)
    policies = [policy for policy in args.mixed_precision.split(",") if policy]
    for case in args.cases.split(","):
        run_case(case, args.mode, args.dir, policies)
        print(f"{case}: done", flush=True)


if __name__ == "__main__":
    main()
