"""The weight paths of representative models, pinned: checkpoints are keyed by them.

`checkpointing/variables.py` saves and restores every weight by its Keras
path (`encoder_layer_0/self_attention/query_kernel`), so a refactor that
moves a weight (a new sub-layer, an attention term that makes its own
scope) would silently stop old runs from loading. The lists below are the
paths the models had when attention became a core with terms; they must
not change.
"""

import pytest

import syntax_t2t.hparams_sets  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import registry

pytestmark = pytest.mark.backends

VOCAB_SIZES = {"inputs": 20, "targets": 18, "deprel": 8, "upos": 7, "xpos": 9}
ONE_LAYER_EACH = dict(hidden_size=16, filter_size=32, num_heads=4, num_encoder_layers=1,
                      num_decoder_layers=1)


def _block(prefix, parts):
    return {f"{prefix}/{part}" for part in parts}


_ATTENTION = ("query_kernel", "key_kernel", "value_kernel", "output_kernel")
_FEED_FORWARD = ("feed_forward/filter/bias", "feed_forward/filter/kernel",
                 "feed_forward/output/bias", "feed_forward/output/kernel",
                 "feed_forward_norm/beta", "feed_forward_norm/gamma")

TRANSFORMER = (
    {"source_embedding/embeddings", "target_embedding/embeddings", "encoder_norm/beta",
     "encoder_norm/gamma", "decoder_norm/beta", "decoder_norm/gamma"}
    | _block("encoder_layer_0", _FEED_FORWARD + ("attention_norm/beta", "attention_norm/gamma"))
    | _block("encoder_layer_0/self_attention", _ATTENTION)
    | _block("decoder_layer_0", _FEED_FORWARD + (
        "self_attention_norm/beta", "self_attention_norm/gamma", "cross_attention_norm/beta",
        "cross_attention_norm/gamma"))
    | _block("decoder_layer_0/self_attention", _ATTENTION)
    | _block("decoder_layer_0/cross_attention", _ATTENTION))

#: case -> (model, hparams overrides, paths besides TRANSFORMER's).
CASES = {
    "transformer": ("transformer", {}, set()),
    "tree_distance": ("tree_distance", {}, {
        "encoder_layer_0/self_attention/tree_distance_key_embeddings"}),
    "tree_distance_relative_values": (
        "tree_distance", dict(max_relative_position=2, relative_value_bias=True,
                              tree_value_bias=True),
        _block("encoder_layer_0/self_attention", (
            "relative_key_embeddings", "relative_value_embeddings",
            "tree_distance_key_embeddings", "tree_distance_value_embeddings"))
        | _block("decoder_layer_0/self_attention", (
            "relative_key_embeddings", "relative_value_embeddings"))),
    "spec_pos": ("spec_pos", {}, {
        "tag_embedding/embeddings", "encoder_layer_0/self_attention/spec_key_kernel",
        "encoder_layer_0/self_attention/spec_query_kernel"}),
    "dep_parse": ("dep_parse", dict(parse_layer=0), set()),
    "pascal": ("pascal", {}, set()),
    "sisa": ("sisa", {}, _block("encoder_layer_0/self_attention/biaffine", (
        "bilinear", "dependent_bias", "dependent_kernel", "head_bias", "head_kernel"))),
    "mgsa": ("mgsa", {}, {
        "encoder_layer_0/phrase_memory/composition_key/kernel",
        "encoder_layer_0/phrase_memory/composition_query/kernel",
        "encoder_layer_0/phrase_memory/composition_value/kernel",
        "phrase_tag_classifier/bias", "phrase_tag_classifier/kernel"}),
}

#: Shapes of the encoder self-attention's weights that depend on its terms:
#: heads that a term projects (specialised, bi-affine) leave the core's kernels.
ATTENTION_SHAPES = {
    "transformer": {"query_kernel": (16, 4, 4), "key_kernel": (16, 4, 4)},
    "tree_distance": {"tree_distance_key_embeddings": (23, 4)},
    "spec_pos": {"query_kernel": (16, 3, 4), "key_kernel": (16, 3, 4),
                 "spec_query_kernel": (16, 1, 4), "spec_key_kernel": (16, 1, 4)},
    "sisa": {"query_kernel": (16, 3, 4), "key_kernel": (16, 3, 4), "value_kernel": (16, 4, 4)},
    "mgsa": {"query_kernel": (16, 4, 4), "value_kernel": (16, 4, 4)},
}


def build(case):
    name, overrides, _ = CASES[case]
    hparams = registry.hparams("transformer_tiny")
    hparams.override({**ONE_LAYER_EACH, **overrides})
    return registry.model(name)(hparams, VOCAB_SIZES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_weight_paths_are_pinned(case):
    model = build(case)
    paths = [weight.path for weight in model.weights]
    assert len(paths) == len(set(paths))
    expected = TRANSFORMER | CASES[case][2]
    assert set(paths) == expected, (sorted(set(paths) - expected), sorted(expected - set(paths)))
    shapes = {weight.path.split("/")[-1]: tuple(weight.shape) for weight in model.weights
              if weight.path.startswith("encoder_layer_0/self_attention/")}
    for name, shape in ATTENTION_SHAPES.get(case, {}).items():
        assert shapes[name] == shape, name
