"""Every registered model: the contract of docs/design.md, its syntax input, training."""

import keras
import numpy as np
import pytest
from keras import ops

import syntax_t2t.hparams_sets.transformer  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import criteria, registry
from syntax_t2t.backend.gradients import value_and_gradients
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers import tree_labels
from syntax_t2t.layers.attention_terms import LabelBias, ParseHead, SpecializedHeads
from syntax_t2t.models.dep_parse import DepParse
from syntax_t2t.models.spec_dep import SpecDep
from syntax_t2t.models.transformer import shift_right
from syntax_t2t.models.tree_traversal import TreeTraversal

pytestmark = pytest.mark.backends

MODELS = ("transformer", "tree_distance", "tree_traversal", "spec_pos", "spec_dep",
          "dep_parse", "diagonal_parse")
VOCAB_SIZES = {"inputs": 20, "targets": 18, "deprel": 8, "upos": 7, "xpos": 9}
# Three sentences of 3, 5 and 2 words, then <EOS> (1) and padding (0).
HEADS = [[2, 0, 2], [2, 0, 4, 2, 2], [0, 1]]


def tiny_hparams(overrides="", set_name="transformer_tiny"):
    hp = registry.hparams(set_name)
    hp.parse("hidden_size=16,filter_size=32,num_heads=2,layer_prepostprocess_dropout=0,"
             "attention_dropout=0,relu_dropout=0,max_tree_distance=3,max_traversal_length=3")
    return hp.parse(overrides)


def make_batch(seed=0, source_length=7, target_length=6):
    rng = np.random.default_rng(seed)
    size = len(HEADS)
    inputs = np.zeros((size, source_length), np.int32)
    heads = np.full((size, source_length), -1, np.int32)
    tags = {key: np.zeros((size, source_length), np.int32)
            for key in ("src_deprel", "src_upos", "src_xpos")}
    for row, sentence_heads in enumerate(HEADS):
        n = len(sentence_heads)
        inputs[row, :n] = rng.integers(4, VOCAB_SIZES["inputs"], n)
        inputs[row, n] = 1
        heads[row, :n] = sentence_heads
        for key, vocabulary in zip(tags, ("deprel", "upos", "xpos")):
            tags[key][row, :n] = rng.integers(4, VOCAB_SIZES[vocabulary], n)
    targets = rng.integers(2, VOCAB_SIZES["targets"], (size, target_length)).astype(np.int32)
    targets[0, 3:] = [1, 0, 0]
    targets[2, 4:] = [1, 0]
    features = {"inputs": inputs, "targets": targets, "src_heads": heads, **tags}
    return {key: ops.convert_to_tensor(value) for key, value in features.items()}


def only(features, keys):
    return {key: features[key] for key in keys}


def dtype(tensor):
    return keras.backend.standardize_dtype(tensor.dtype)


def build(name, overrides="", set_name="transformer_tiny"):
    return registry.model(name)(tiny_hparams(overrides, set_name), VOCAB_SIZES)


def test_every_thesis_model_is_registered():
    assert set(MODELS) <= set(registry.models.names())


@pytest.mark.parametrize("name", MODELS)
def test_forward_with_exactly_the_declared_features(name):
    model = build(name, "max_relative_position=2")
    features = make_batch()
    outputs = model(only(features, model.train_features))
    assert outputs["logits"].shape == (3, 6, VOCAB_SIZES["targets"])
    assert dtype(outputs["logits"]) == "float32"
    result = criteria.for_model(model)(only(features, model.train_features), outputs)
    is_parser = name.endswith("_parse")
    assert set(result) == ({"nmt", "parse", "total"} if is_parser else {"nmt", "total"})
    for value in result.values():
        assert value.shape == () and dtype(value) == "float32" and np.isfinite(value)
    if is_parser:
        assert outputs["parse_logits"].shape == (3, 8, 8)  # <ROOT>-prefixed source
        assert float(result["total"]) == pytest.approx(
            float(result["nmt"]) + model.hparams.parse_loss_weight * float(result["parse"]))
    else:
        assert float(result["total"]) == float(result["nmt"])
    # Decoding reads the decode features only.
    encoded = model.encode(only(features, model.decode_features))
    assert encoded["outputs"].shape[:2] == ((3, 8) if is_parser else (3, 7))
    assert ("parse_logits" in encoded) == is_parser


def test_declared_features():
    expected = {
        "transformer": ({"inputs", "targets"}, {"inputs"}),
        "tree_distance": ({"inputs", "targets", "src_heads"}, {"inputs", "src_heads"}),
        "tree_traversal": ({"inputs", "targets", "src_heads"}, {"inputs", "src_heads"}),
        "spec_pos": ({"inputs", "targets", "src_xpos"}, {"inputs", "src_xpos"}),
        "spec_dep": ({"inputs", "targets", "src_deprel"}, {"inputs", "src_deprel"}),
        "dep_parse": ({"inputs", "targets", "src_heads"}, {"inputs"}),
        "diagonal_parse": ({"inputs", "targets"}, {"inputs"}),
    }
    for name, (train, decode) in expected.items():
        model = build(name)
        assert model.train_features == train, name
        assert model.decode_features == decode, name
    upos = build("spec_pos", "pos=upos")
    assert upos.train_features == {"inputs", "targets", "src_upos"}


def changes_logits(model, features, key, new_value):
    before = ops.convert_to_numpy(model(features)["logits"])
    after = model(dict(features, **{key: ops.convert_to_tensor(new_value, "int32")}))["logits"]
    return float(np.max(np.abs(ops.convert_to_numpy(after) - before))) > 1e-5


@pytest.mark.parametrize("name,key,uses", [
    ("transformer", "src_heads", False),
    ("tree_distance", "src_heads", True),
    ("tree_traversal", "src_heads", True),
    ("spec_dep", "src_deprel", True),
    ("spec_dep", "src_xpos", False),
    ("spec_pos", "src_xpos", True),
    ("spec_pos", "src_deprel", False),
    ("dep_parse", "src_heads", False),  # trees only reach the parse loss
])
def test_which_syntax_features_change_the_translation(name, key, uses):
    model = build(name)
    features = make_batch()
    new_value = ops.convert_to_numpy(features[key]).copy()
    if key == "src_heads":
        new_value[1, :5] = [0, 1, 2, 3, 4]  # a chain instead of the gold tree
    else:
        new_value[1, :5] = (new_value[1, :5] + 1) % 3 + 4
    assert changes_logits(model, features, key, new_value) == uses


def test_spec_pos_reads_the_chosen_tag_set():
    model = build("spec_pos", "pos=upos")
    features = make_batch()
    upos = ops.convert_to_numpy(features["src_upos"]).copy()
    upos[0, :3] = [5, 5, 6]
    assert changes_logits(model, features, "src_upos", upos)
    assert not changes_logits(model, features, "src_xpos", np.zeros((3, 7)))


def test_tree_model_with_relative_positions_has_both_biases():
    """--model=tree_distance --hparams_set=transformer_relative: '(relative) + TreeDistance'."""
    hp = tiny_hparams(set_name="transformer_relative")
    model = registry.model("tree_distance")(hp, VOCAB_SIZES)
    attention = label_bias(model.encoder_layers[0])
    assert attention.label_vocab_sizes == {
        "relative": 41, "tree_distance": tree_labels.tree_distance_label_count(3)}
    assert label_bias(model.decoder_layers[0]).label_vocab_sizes == {"relative": 41}
    assert model.position_encoding is None
    # T2T 1.5.6's relative attention (the thesis's baseline) embeds values too; the
    # tree labels only with tree_value_bias.
    assert attention.value_bias_labels == ("relative",)
    assert label_bias(model.decoder_layers[0]).value_bias_labels == ("relative",)
    hp = tiny_hparams("tree_value_bias=true", set_name="transformer_relative")
    model = registry.model("tree_distance")(hp, VOCAB_SIZES)
    assert label_bias(model.encoder_layers[1]).value_bias_labels == ("relative",
                                                                     "tree_distance")
    assert label_bias(model.decoder_layers[0]).value_bias_labels == ("relative",)
    values = label_bias(build("tree_traversal", "tree_value_bias=true").encoder_layers[0])
    assert values.value_bias_labels == ("tree_traversal",)


def label_bias(block):
    """The `LabelBias` term of a block's self-attention."""
    return block.self_attention.term(LabelBias)


def heads_of(block, kind):
    """The heads of the block's self-attention term of class `kind`, () without one."""
    term = block.self_attention.term(kind)
    return () if term is None else term.heads


def test_spec_heads_sit_in_the_chosen_layer():
    model = build("spec_dep", "spec_layer=1,spec_heads=[1]")
    assert [heads_of(layer, SpecializedHeads) for layer in model.encoder_layers] == [(), (1,)]


@pytest.mark.parametrize("name", ["dep_parse", "diagonal_parse"])
def test_parse_loss_is_cross_entropy_of_the_attention_rows(name):
    model = build(name, "parse_layer=1,parse_head=1")
    features = make_batch()
    outputs = model(features, return_attention=True)
    probs = ops.convert_to_numpy(outputs["attention"][1][:, 1])  # layer 1, head 1: [B, S+1, S+1]
    np.testing.assert_allclose(ops.softmax(outputs["parse_logits"]), probs, atol=1e-6)
    terms = []
    for row, heads in enumerate(HEADS):
        gold = heads if name == "dep_parse" else list(range(len(heads)))
        for token, head in enumerate(gold, start=1):  # position = token id
            terms.append(-np.log(probs[row, token, head]))
    assert len(terms) == 10
    parse = criteria.for_model(model)(features, outputs)["parse"]
    assert float(parse) == pytest.approx(np.mean(terms), rel=1e-5)


def test_dep_parse_needs_trees_for_its_loss_only():
    model = build("dep_parse")
    features = only(make_batch(), {"inputs", "targets"})
    outputs = model(features)
    assert "parse_logits" in outputs
    with pytest.raises(KeyError, match="'src_heads'"):
        criteria.for_model(model)(features, outputs)


def test_missing_syntax_feature_is_named():
    with pytest.raises(KeyError, match="'src_deprel'"):
        build("spec_dep")(only(make_batch(), {"inputs", "targets"}))


@pytest.mark.parametrize("name,overrides,message", [
    ("dep_parse", "parse_layer=2", "parse_layer=2: the encoder has layers 0 .. 1"),
    ("diagonal_parse", "parse_head=2", "parse_head=2"),
    ("spec_pos", "spec_heads=[0,5]", "spec_heads=5"),
    ("spec_pos", "pos=lemma", "pos='lemma'"),
    ("spec_dep", "spec_heads=[]", "names no head"),
    ("tree_distance", "max_tree_distance=0", "max_tree_distance=0"),
    ("dep_parse", "parse_loss_weight=-1.0", "parse_loss_weight"),
])
def test_bad_syntax_hparams_are_named(name, overrides, message):
    with pytest.raises(HParamsError, match=message):
        build(name, overrides)


@pytest.mark.parametrize("name,overrides", [
    ("tree_traversal", "max_relative_position=2,relative_value_bias=true"),
    ("dep_parse", "max_relative_position=2"),
    ("spec_pos", ""),
    ("everything", ""),
])
def test_cached_decoding_equals_full_recompute(name, overrides):
    model = build_everything() if name == "everything" else build(name, overrides)
    features = make_batch()
    full = ops.convert_to_numpy(model(features)["logits"])
    memory = model.decoder_memory(model.encode(only(features, model.decode_features)))
    cache = model.initial_decoder_cache(3, 6)
    decoder_inputs = shift_right(features["targets"])
    assert model.decode_start_id == 0
    for position in range(6):
        logits, cache = model.decode_step(decoder_inputs[:, position], position, cache, memory)
        np.testing.assert_allclose(logits, full[:, position], rtol=1e-4, atol=1e-4)


def train_step(model, features, optimizer=None):
    """One step of the trainer's recipe: forward, losses, gradients, update."""
    _, losses, gradients = value_and_gradients(model, criteria.for_model(model), features,
                                               training=True)
    if optimizer is not None:
        optimizer.apply(gradients, model.trainable_variables)
    return losses, gradients


@pytest.mark.parametrize("name", MODELS)
def test_a_few_steps_reduce_the_loss(name):
    keras.utils.set_random_seed(1)
    overrides = "num_encoder_layers=1,num_decoder_layers=1,parse_layer=0"
    if name.startswith("tree"):
        overrides += ",max_relative_position=2"
    model = build(name, overrides)
    features = only(make_batch(), model.train_features)
    optimizer = keras.optimizers.Adam(0.02)
    first, _ = train_step(model, features, optimizer)
    for _ in range(7):
        last, _ = train_step(model, features, optimizer)
    assert float(last["total"]) < 0.75 * float(first["total"])
    if "parse" in last:
        assert float(last["parse"]) < float(first["parse"])


class Everything(TreeTraversal, SpecDep, DepParse):
    """Every syntax option at once: the hooks compose through super()."""

    train_features = frozenset({"inputs", "targets", "src_heads", "src_deprel"})
    decode_features = frozenset({"inputs", "src_heads", "src_deprel"})


EVERYTHING = ("num_encoder_layers=1,num_decoder_layers=1,parse_layer=0,spec_heads=[1],"
              "max_relative_position=2,relative_value_bias=true")


def build_everything(policy="float32"):
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        return Everything(tiny_hparams(EVERYTHING), VOCAB_SIZES)
    finally:
        keras.config.set_dtype_policy(previous)


def test_syntax_options_combine():
    model = build_everything()
    assert label_bias(model.encoder_layers[0]).label_vocab_sizes == {
        "relative": 5, "tree_traversal": tree_labels.tree_traversal_label_count(3)}
    assert heads_of(model.encoder_layers[0], SpecializedHeads) == (1,)
    assert heads_of(model.encoder_layers[0], ParseHead) == (0,)
    assert model.train_features == {"inputs", "targets", "src_heads", "src_deprel"}
    features = make_batch()
    outputs = model(features)
    assert outputs["parse_logits"].shape == (3, 8, 8)
    assert set(criteria.for_model(model)(features, outputs)) == {"nmt", "parse", "total"}


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_forward_and_backward(policy):
    model = build_everything(policy)
    compute_dtype = policy.split("_")[1]
    assert model.encoder_layers[0].self_attention.compute_dtype == compute_dtype
    assert all(variable.dtype == "float32" for variable in model.trainable_variables)
    features = make_batch()
    outputs = model(features, return_attention=True)
    assert dtype(model.encode(features)["outputs"]) == compute_dtype
    for key in ("logits", "parse_logits"):
        assert dtype(outputs[key]) == "float32"
    assert dtype(outputs["attention"][0]) == "float32"
    losses, gradients = train_step(model, features)
    for value in losses.values():
        assert dtype(value) == "float32" and np.isfinite(value)
    assert all(g is not None and np.isfinite(ops.convert_to_numpy(g)).all() for g in gradients)


def compiled_train_step(model):
    """`train_step` without an update, compiled with XLA the way the backend compiles a step.

    TensorFlow: `tf.function(jit_compile=True)` around the taped step.
    JAX: `jax.jit` of a pure function of the variables' values
    (`stateless_call`), as a JAX trainer runs it; shapes are static there, so
    this also shows that the model needs no data-dependent shape.
    """
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.function(lambda batch: train_step(model, batch), jit_compile=True)
    import jax

    def step(trainable, non_trainable, batch):
        def total(values):
            outputs, _ = model.stateless_call(values, non_trainable, batch, training=True)
            losses = criteria.for_model(model)(batch, outputs)
            return losses["total"], losses

        (_, losses), gradients = jax.value_and_grad(total, has_aux=True)(trainable)
        return losses, gradients

    jitted = jax.jit(step)
    trainable = [variable.value for variable in model.trainable_variables]
    non_trainable = [variable.value for variable in model.non_trainable_variables]
    return lambda batch: jitted(trainable, non_trainable, batch)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_train_step_under_xla(policy):
    model = build_everything(policy)
    features = make_batch()
    eager_losses, _ = train_step(model, features)
    losses, gradients = compiled_train_step(model)(features)
    tolerance = 1e-4 if policy == "float32" else 5e-2
    for key, value in losses.items():
        assert dtype(value) == "float32"
        assert float(value) == pytest.approx(float(eager_losses[key]), rel=tolerance)
    assert all(np.isfinite(ops.convert_to_numpy(g)).all() for g in gradients)
