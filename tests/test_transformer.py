"""The Transformer's building blocks and the base model (T2T transformer_base semantics)."""

import math

import keras
import numpy as np
import pytest
from keras import ops

import syntax_t2t.hparams_sets.transformer  # noqa: F401  (registers the hparams sets)
from syntax_t2t import registry
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers import masks
from syntax_t2t.layers.embedding import TokenEmbedding
from syntax_t2t.layers.encoder_layer import TransformerEncoderLayer
from syntax_t2t.layers.feed_forward import FeedForward
from syntax_t2t.layers.position_encoding import SinusoidalPositionEncoding, sinusoidal_signal
from syntax_t2t.criteria import head_supervision, translation
from syntax_t2t.models.transformer import Transformer, shift_right

pytestmark = pytest.mark.backends

VOCAB_SIZES = {"inputs": 23, "targets": 19, "deprel": 9, "upos": 9, "xpos": 9}


def tiny_hparams(overrides=""):
    hp = registry.hparams("transformer_tiny")
    hp.parse("hidden_size=16,filter_size=32,num_heads=2,layer_prepostprocess_dropout=0,"
             "attention_dropout=0,relu_dropout=0")
    return hp.parse(overrides)


def batch(rng, batch_size=3, source_length=6, target_length=5):
    inputs = rng.integers(4, VOCAB_SIZES["inputs"], (batch_size, source_length))
    targets = rng.integers(2, VOCAB_SIZES["targets"], (batch_size, target_length))
    inputs[0, 3:] = [1, 0, 0]
    targets[0, 2:] = [1, 0, 0]
    inputs[1, -1] = 1
    targets[1, -1] = 1
    return {"inputs": ops.convert_to_tensor(inputs, "int32"),
            "targets": ops.convert_to_tensor(targets, "int32")}


def to_numpy(tensor):
    return ops.convert_to_numpy(tensor)


def compiled(function):
    """`function` compiled the way the backend compiles a decoding step: a TF graph, a JAX jit."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.function(function)
    import jax

    return jax.jit(function)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# ---------------------------------------------------------------------------
# Layers.


def test_sinusoidal_signal_matches_t2t_formula():
    signal = to_numpy(sinusoidal_signal(5, 8, start=2))
    increment = math.log(1.0e4) / 3
    for row, position in enumerate(range(2, 7)):
        for i in range(4):
            angle = position * math.exp(-i * increment)
            assert signal[row, i] == pytest.approx(math.sin(angle), abs=1e-5)
            assert signal[row, 4 + i] == pytest.approx(math.cos(angle), abs=1e-5)
    # Position 0: sines 0, cosines 1; odd widths get a zero last channel.
    np.testing.assert_allclose(sinusoidal_signal(1, 7)[0], [0, 0, 0, 1, 1, 1, 0], atol=1e-7)
    layer = SinusoidalPositionEncoding()
    zeros = np.zeros([2, 5, 8], np.float32)
    np.testing.assert_allclose(layer(zeros, start=2)[1], signal, atol=1e-6)


def test_token_embedding_scales_zeroes_padding_and_ties_the_softmax():
    layer = TokenEmbedding(10, 4)
    layer.build()
    table = layer.embeddings.numpy()
    vectors = to_numpy(layer(np.array([[3, 0, 7]], np.int32)))
    np.testing.assert_allclose(vectors[0, 0], table[3] * 2.0, rtol=1e-6)
    np.testing.assert_array_equal(vectors[0, 1], np.zeros(4))
    hidden = np.arange(8, dtype="float32").reshape(2, 4)
    np.testing.assert_allclose(layer.logits(hidden), hidden @ table.T, rtol=1e-5)
    assert TokenEmbedding.from_config(layer.get_config()).get_config() == layer.get_config()


def test_feed_forward_is_relu_sandwich(rng):
    layer = FeedForward(4, 6)
    layer.build((None, None, 4))
    w1, b1, w2, b2 = [w.numpy() for w in layer.weights]
    b1 += rng.normal(size=b1.shape).astype("float32")
    layer.filter_layer.bias.assign(b1)
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    np.testing.assert_allclose(layer(x), np.maximum(x @ w1 + b1, 0) @ w2 + b2, rtol=1e-5, atol=1e-6)


def test_encoder_layer_is_pre_norm_with_residuals(rng):
    layer = TransformerEncoderLayer(8, 12, 2)
    layer.build((None, None, 8))
    for norm in (layer.attention_norm, layer.feed_forward_norm):
        norm.gamma.assign(rng.normal(size=8).astype("float32"))
    x = rng.normal(size=(2, 4, 8)).astype("float32")
    mask = masks.key_padding_mask(np.array([[5, 5, 1, 0], [5, 5, 5, 1]], np.int32))
    attended, _ = layer.self_attention(layer.attention_norm(x), attention_mask=mask)
    middle = x + attended
    expected = middle + layer.feed_forward(layer.feed_forward_norm(middle))
    got, _ = layer(x, attention_mask=mask)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    clone = TransformerEncoderLayer.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


# ---------------------------------------------------------------------------
# Losses.


def test_label_smoothed_cross_entropy_equals_explicit_soft_targets(rng):
    logits = rng.normal(size=(2, 3, 5)).astype("float32")
    targets = np.array([[1, 4, 0], [2, 2, 3]])
    eps = 0.1
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    soft = np.full((2, 3, 5), eps / 4)
    for b, t in np.ndindex(2, 3):
        soft[b, t, targets[b, t]] = 1 - eps
    minimum = -((1 - eps) * math.log(1 - eps) + eps * math.log(eps / 4))
    per_token = -(soft * log_probs).sum(-1) - minimum
    weights = targets != 0
    expected = (per_token * weights).sum() / weights.sum()
    got = translation.label_smoothed_cross_entropy(logits, targets, eps)
    assert float(got) == pytest.approx(expected, rel=1e-5)
    nll = -(np.take_along_axis(log_probs, targets[..., None], -1)[..., 0] * weights).sum() / 5
    unsmoothed = translation.label_smoothed_cross_entropy(logits, targets, 0.0)
    assert float(unsmoothed) == pytest.approx(nll, rel=1e-5)


def test_head_selection_cross_entropy_by_hand(rng):
    logits = rng.normal(size=(2, 4, 4)).astype("float32")
    gold = np.array([[-1, 0, 1, -1], [-1, 3, 0, 2]])
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    terms = [-log_probs[b, i, gold[b, i]] for b, i in np.ndindex(2, 4) if gold[b, i] >= 0]
    got = head_supervision.head_selection_cross_entropy(logits, gold)
    assert float(got) == pytest.approx(np.mean(terms), rel=1e-5)
    assert float(head_supervision.head_selection_cross_entropy(logits, np.full((2, 4), -1))) == 0.0


# ---------------------------------------------------------------------------
# The model.


def test_registered_as_transformer():
    assert registry.model("transformer") is Transformer


def test_logits_shape_dtype_and_parameter_count(rng):
    hp = tiny_hparams()
    model = Transformer(hp, VOCAB_SIZES)
    features = batch(rng)
    outputs = model(features)
    assert outputs["logits"].shape == (3, 5, VOCAB_SIZES["targets"])
    assert keras.backend.standardize_dtype(outputs["logits"].dtype) == "float32"
    d, f, layers = hp.hidden_size, hp.filter_size, hp.num_encoder_layers
    attention = 4 * d * d
    ffn = d * f + f + f * d + d
    norm = 2 * d
    expected = ((VOCAB_SIZES["inputs"] + VOCAB_SIZES["targets"]) * d  # shared softmax
                + layers * (attention + ffn + 2 * norm)
                + hp.num_decoder_layers * (2 * attention + ffn + 3 * norm)
                + 2 * norm)
    assert model.count_params() == expected


def test_decoder_is_causal_and_shifted(rng):
    model = Transformer(tiny_hparams(), VOCAB_SIZES)
    features = batch(rng)
    logits = to_numpy(model(features)["logits"])
    targets = to_numpy(features["targets"]).copy()
    targets[:, 3:] = 7
    changed = dict(features, targets=ops.convert_to_tensor(targets))
    new_logits = to_numpy(model(changed)["logits"])
    # Logits at position t see targets < t only (teacher forcing with a shift).
    np.testing.assert_allclose(new_logits[:, :4], logits[:, :4], rtol=1e-5, atol=1e-5)
    assert np.abs(new_logits[:, 4] - logits[:, 4]).max() > 1e-4
    np.testing.assert_array_equal(shift_right(np.array([[5, 6, 1]], np.int32)), [[0, 5, 6]])


def test_source_padding_does_not_change_logits(rng):
    model = Transformer(tiny_hparams("max_relative_position=3"), VOCAB_SIZES)
    features = batch(rng)
    padded = dict(features, inputs=ops.pad(features["inputs"], [[0, 0], [0, 3]]))
    np.testing.assert_allclose(model(padded)["logits"], model(features)["logits"],
                               rtol=1e-5, atol=1e-5)


def test_without_positions_the_encoder_ignores_word_order(rng):
    """position_encoding=none and no relative positions: a bag of words (why T2T adds them)."""
    inputs = np.array([[5, 6, 7, 8, 1]], np.int32)
    permutation = [2, 0, 3, 1, 4]
    features = {"inputs": ops.convert_to_tensor(inputs)}
    permuted = {"inputs": ops.convert_to_tensor(inputs[:, permutation])}
    bag = Transformer(tiny_hparams("position_encoding=none"), VOCAB_SIZES)
    np.testing.assert_allclose(to_numpy(bag.encode(features)["outputs"])[:, permutation],
                               bag.encode(permuted)["outputs"], rtol=1e-5, atol=1e-5)
    for overrides in ("position_encoding=sinusoid",
                      "position_encoding=none,max_relative_position=2"):
        ordered = Transformer(tiny_hparams(overrides), VOCAB_SIZES)
        difference = (to_numpy(ordered.encode(features)["outputs"])[:, permutation]
                      - to_numpy(ordered.encode(permuted)["outputs"]))
        assert np.abs(difference).max() > 1e-3


@pytest.mark.parametrize("overrides", [
    "",
    "max_relative_position=2,relative_value_bias=true,position_encoding=none",
    "shared_embedding_and_softmax_weights=false",
])
def test_cached_decoding_equals_full_recompute(rng, overrides):
    model = Transformer(tiny_hparams(overrides), VOCAB_SIZES)
    features = batch(rng)
    full = to_numpy(model(features)["logits"])
    encoded = model.encode(features)
    memory = model.decoder_memory(encoded)
    cache = model.initial_decoder_cache(3, 5)
    decoder_inputs = shift_right(features["targets"])

    # One compiled step for every position: the position is a tensor, not a constant.
    @compiled
    def step(ids, position, cache):
        return model.decode_step(ids, position, cache, memory)

    for position in range(5):
        logits, cache = step(decoder_inputs[:, position],
                             ops.convert_to_tensor(position, "int32"), cache)
        np.testing.assert_allclose(logits, full[:, position], rtol=1e-4, atol=1e-4)


def test_dropout_in_training_only(rng):
    model = Transformer(tiny_hparams("layer_prepostprocess_dropout=0.3"), VOCAB_SIZES)
    features = batch(rng)
    np.testing.assert_array_equal(model(features)["logits"], model(features)["logits"])
    assert np.abs(model(features, training=True)["logits"]
                  - model(features)["logits"]).max() > 1e-3


def test_config_round_trip(rng):
    model = Transformer(tiny_hparams("max_relative_position=3"), VOCAB_SIZES)
    clone = Transformer.from_config(model.get_config())
    assert clone.hparams == model.hparams and clone.vocab_sizes == model.vocab_sizes
    clone.set_weights(model.get_weights())
    features = batch(rng)
    np.testing.assert_array_equal(clone(features)["logits"], model(features)["logits"])


def test_return_attention(rng):
    model = Transformer(tiny_hparams(), VOCAB_SIZES)
    attention = model(batch(rng), return_attention=True)["attention"]
    assert len(attention) == 2
    assert attention[0].shape == (3, 2, 6, 6)
    assert keras.backend.standardize_dtype(attention[0].dtype) == "float32"
    np.testing.assert_allclose(to_numpy(attention[1]).sum(-1), np.ones((3, 2, 6)), rtol=1e-5)
    # Padded keys of sentence 0 (positions 4, 5) get no attention.
    assert float(to_numpy(attention[0])[0, :, :, 4:].max()) < 1e-6


@pytest.mark.parametrize("overrides,message", [
    ("num_heads=3", "not divisible"),
    ("position_encoding=learned", "position_encoding='learned'"),
    ("max_relative_position=-1", "max_relative_position=-1"),
])
def test_bad_hparams_are_named(overrides, message):
    with pytest.raises(HParamsError, match=message):
        Transformer(tiny_hparams(overrides), VOCAB_SIZES)


def test_missing_vocabulary_is_named():
    with pytest.raises(KeyError, match="vocab_sizes\\['targets'\\]"):
        Transformer(tiny_hparams(), {"inputs": 10})


def test_relative_set_embeds_relative_positions_in_keys_and_values(rng):
    # T2T 1.5.6's dot_product_attention_relative (the thesis's relative baseline), per head
    # and pair: e_ij = q_i . (k_j + E[r_ij]) / sqrt(d), o_i = sum_j a_ij (v_j + F[r_ij]),
    # r_ij = clip(j - i, -k, k) + k.
    hp = registry.hparams("transformer_relative")
    hp.parse("hidden_size=16,filter_size=32,num_heads=2,num_encoder_layers=1,"
             "num_decoder_layers=1,max_relative_position=2,attention_dropout=0")
    model = Transformer(hp, VOCAB_SIZES)
    layer = model.encoder_layers[0].self_attention
    w = {v.path.split("/")[-1]: v.numpy().astype(np.float64) for v in layer.weights}
    for name in ("relative_key_embeddings", "relative_value_embeddings"):
        w[name] = rng.normal(size=w[name].shape)  # the tables are checked, not their start
        layer.weights[[v.path.split("/")[-1] for v in layer.weights].index(name)].assign(w[name])
    length, k, depth = 6, 2, 8
    x = rng.normal(size=(1, length, 16)).astype("float32")
    labels = np.clip(np.arange(length)[None, :] - np.arange(length)[:, None], -k, k) + k
    got, _ = layer(x, term_inputs={"labels": {"relative": labels}})
    expected = np.zeros((length, 16))
    for h in range(2):
        q = x[0] @ w["query_kernel"][:, h]
        keys, values = x[0] @ w["key_kernel"][:, h], x[0] @ w["value_kernel"][:, h]
        for i in range(length):
            logits = np.array([q[i] @ (keys[j] + w["relative_key_embeddings"][labels[i, j]])
                               for j in range(length)]) / math.sqrt(depth)
            a = np.exp(logits - logits.max())
            a /= a.sum()
            context = sum(a[j] * (values[j] + w["relative_value_embeddings"][labels[i, j]])
                          for j in range(length))
            expected[i] += context @ w["output_kernel"][h]
    np.testing.assert_allclose(got[0], expected, rtol=1e-4, atol=1e-4)
