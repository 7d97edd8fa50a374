"""Pascal: parent weights, parent positions, parent-scaled heads and the `pascal` model."""

import math

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops

import syntax_t2t.hparams_sets.pascal  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import criteria, registry
from syntax_t2t.backend.gradients import value_and_gradients
from syntax_t2t.data import subword_syntax
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers import masks, parent_scaling
from syntax_t2t.layers.attention import MultiHeadAttention
from syntax_t2t.layers.attention_terms import ParentScaledHeads
from syntax_t2t.training.schedules import NoamSchedule

pytestmark = pytest.mark.backends

H, D_K = 4, 3
WIDTH = H * D_K
VOCAB_SIZES = {"inputs": 20, "targets": 18, "deprel": 8, "upos": 7, "xpos": 9}


def ints(values):
    """An int32 backend tensor."""
    return ops.convert_to_tensor(np.asarray(values, np.int32))


def to_numpy(tensor):
    return ops.convert_to_numpy(tensor)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def random_heads(rng, n):
    """A random tree: tokens attach, in random order, to ROOT or an attached token."""
    order = rng.permutation(n) + 1
    heads = np.zeros(n, np.int64)
    attached = [0]
    for token in order:
        heads[token - 1] = attached[rng.integers(len(attached))] if len(attached) > 1 else 0
        attached.append(int(token))
    return heads


def make_layer(rng, heads, **options):
    """A layer with `ParentScaledHeads(heads, **options)` and random weights."""
    layer = MultiHeadAttention(H, D_K, terms=[ParentScaledHeads(heads, **options)])
    layer.build((None, None, WIDTH))
    for weight in layer.weights:
        weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))
    return layer


def weights_of(layer):
    return {w.path.split("/")[-1]: np.asarray(w.numpy(), np.float64) for w in layer.weights}


def naive_probs(layer, x, length, parents, scaled_heads, variance):
    """softmax(S * D) per head for one unpadded sentence x [length, WIDTH] (seed eq. 4-6)."""
    w = weights_of(layer)
    probs = np.zeros((H, length, length))
    for h in range(H):
        q = x[:length] @ w["query_kernel"][:, h]
        k = x[:length] @ w["key_kernel"][:, h]
        scores = q @ k.T / math.sqrt(D_K)
        if h in scaled_heads:
            for t in range(length):
                for j in range(length):
                    density = math.exp(-(j - parents[t]) ** 2 / (2 * variance))
                    scores[t, j] *= density / math.sqrt(2 * math.pi * variance)
        e = np.exp(scores - scores.max(-1, keepdims=True))
        probs[h] = e / e.sum(-1, keepdims=True)
    return probs


# ---------------------------------------------------------------------------
# D and the parent positions.


@pytest.mark.parametrize("variance", [1.0, 4.0, 0.25])
def test_parent_weights_are_the_normal_density(variance):
    parents = np.array([[0.0, 2.5, 4.0], [3.0, 1.0, 0.0]], np.float32)
    got = to_numpy(parent_scaling.parent_weights(parents, 6, variance))
    assert got.shape == (2, 3, 6)
    for b, t, j in np.ndindex(*got.shape):
        mean = parents[b, t]
        expected = math.exp(-(j - mean) ** 2 / (2 * variance)) / math.sqrt(2 * math.pi * variance)
        assert got[b, t, j] == pytest.approx(expected, rel=1e-5)


def test_parent_positions_worked_example():
    # "The monkey eats a banana" with "monkey" split in 3 and "banana" in 2:
    # subwords The mon ##k ##ey eats a ban ##ana, then <EOS> and padding.
    heads = [2, 3, 0, 5, 3]
    word_index = [0, 1, 1, 1, 2, 3, 4, 4]
    subword_heads = subword_syntax.first_subword_heads(word_index, heads)
    assert subword_heads.tolist() == [2, 5, 5, 5, 0, 7, 5, 5]
    batch_heads = ints([list(subword_heads) + [-1, -1]])
    words = ints([[w + 1 for w in word_index] + [0, 0]])
    got = to_numpy(parent_scaling.parent_positions(batch_heads, words))[0]
    # The -> monkey (middle 2); monkey's pieces -> eats (4); eats is the root:
    # its own position; a, banana -> banana's middle 6.5 / eats; <EOS> and
    # padding are their own parents.
    assert got.tolist() == [2.0, 4.0, 4.0, 4.0, 4.0, 6.5, 4.0, 4.0, 8.0, 9.0]
    # At word level (no word positions) a parent is the head's own position.
    word_level = to_numpy(parent_scaling.parent_positions(ints([[2, 3, 0, 5, 3, -1]])))[0]
    assert word_level.tolist() == [1.0, 2.0, 2.0, 4.0, 2.0, 5.0]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.integers(1, 3), min_size=1, max_size=7), min_size=1, max_size=4),
       st.integers(0, 10_000))
def test_parent_positions_equal_the_numpy_rule(pieces_per_sentence, seed):
    rng = np.random.default_rng(seed)
    sentences = []
    for pieces in pieces_per_sentence:
        word_index = subword_syntax.word_index_from_counts(pieces)
        heads = random_heads(rng, len(pieces))
        sentences.append((word_index, heads))
    length = max(len(w) for w, _ in sentences) + 2
    batch_heads = np.full((len(sentences), length), -1)
    words = np.zeros((len(sentences), length), np.int64)
    for row, (word_index, heads) in enumerate(sentences):
        batch_heads[row, :len(word_index)] = subword_syntax.first_subword_heads(word_index, heads)
        words[row, :len(word_index)] = word_index + 1
    got = to_numpy(parent_scaling.parent_positions(batch_heads, words))
    for row, (word_index, heads) in enumerate(sentences):
        expected = subword_syntax.pascal_parent_positions(word_index, heads)
        np.testing.assert_allclose(got[row, :len(word_index)], expected)
        # <EOS> and padding rows centre on themselves.
        np.testing.assert_array_equal(got[row, len(word_index):],
                                      np.arange(len(word_index), length))


def test_ignore_parents_replaces_whole_rows():
    values = np.random.default_rng(1).uniform(0.01, 0.5, (3, 50, 7)).astype(np.float32)
    weights = ops.convert_to_tensor(values)
    ignored = to_numpy(parent_scaling.ignore_parents(weights, 0.5, keras.random.SeedGenerator(3)))
    rows_of_ones = np.all(ignored == 1.0, axis=-1)
    rows_kept = np.all(ignored == values, axis=-1)
    assert np.all(rows_of_ones ^ rows_kept)
    assert 0.3 < rows_of_ones.mean() < 0.7
    assert np.all(to_numpy(parent_scaling.ignore_parents(weights, 1.0, 5)) == 1.0)
    np.testing.assert_array_equal(parent_scaling.ignore_parents(weights, 0.0, 5), values)


# ---------------------------------------------------------------------------
# Parent-scaled heads in MultiHeadAttention.

LENGTHS = (6, 3, 4)  # tokens of each sentence (the last one is <EOS>)
SCALED = (1, 3)


def batch_of_different_lengths(rng):
    """x [3, 7, WIDTH], ids with <EOS> and right padding, and distinct parents per sentence."""
    max_length = max(LENGTHS) + 1
    x = rng.normal(size=(len(LENGTHS), max_length, WIDTH)).astype("float32")
    ids = np.zeros((len(LENGTHS), max_length), np.int32)
    parents = np.zeros((len(LENGTHS), max_length), np.float32)
    for row, length in enumerate(LENGTHS):
        ids[row, :length - 1] = 5
        ids[row, length - 1] = 1
        parents[row, :length] = rng.integers(0, length, length) + 0.5 * rng.integers(0, 2, length)
        parents[row, length:] = np.arange(length, max_length)
    return x, ids, parents


def test_scaled_heads_get_their_own_sentences_parents_under_padding(rng):
    layer = make_layer(rng, SCALED, variance=2.0)
    x, ids, parents = batch_of_different_lengths(rng)
    mask = masks.key_padding_mask(ids)
    _, details = layer(x, attention_mask=mask, term_inputs={"parents": parents},
                       return_probs=True)
    probs = to_numpy(details["probs"])
    for row, length in enumerate(LENGTHS):
        expected = naive_probs(layer, x[row], length, parents[row], SCALED, 2.0)
        np.testing.assert_allclose(probs[row, :, :length, :length], expected, rtol=1e-4, atol=1e-6)
        assert np.all(probs[row, :, :length, length:] < 1e-6)
        # The same sentence alone, without padding, attends the same way.
        _, alone = layer(x[row:row + 1, :length],
                         term_inputs={"parents": parents[row:row + 1, :length]},
                         return_probs=True)
        np.testing.assert_allclose(alone["probs"][0], expected, rtol=1e-4, atol=1e-6)


def test_only_the_chosen_heads_read_parents(rng):
    layer = make_layer(rng, SCALED)
    x, ids, parents = batch_of_different_lengths(rng)
    mask = masks.key_padding_mask(ids)
    _, first = layer(x, attention_mask=mask, term_inputs={"parents": parents}, return_probs=True)
    _, moved = layer(x, attention_mask=mask, term_inputs={"parents": parents + 2.0},
                     return_probs=True)
    for head in range(H):
        same = np.allclose(first["probs"][:, head], moved["probs"][:, head])
        assert same == (head not in SCALED)


def test_ignoring_every_parent_gives_plain_heads(rng):
    scaled = make_layer(rng, SCALED, ignoring=1.0)
    plain = MultiHeadAttention(H, D_K)
    plain.build((None, None, WIDTH))
    plain.set_weights(scaled.get_weights())
    x, ids, parents = batch_of_different_lengths(rng)
    mask = masks.key_padding_mask(ids)
    trained, _ = scaled(x, attention_mask=mask, term_inputs={"parents": parents}, training=True)
    expected, _ = plain(x, attention_mask=mask, training=True)
    np.testing.assert_allclose(trained, expected, rtol=1e-5, atol=1e-6)
    # Outside training nothing is ignored.
    inferred, _ = scaled(x, attention_mask=mask, term_inputs={"parents": parents})
    assert not np.allclose(inferred, expected, atol=1e-4)


def test_partial_ignoring_switches_whole_rows_in_training_only(rng):
    layer = make_layer(rng, SCALED, ignoring=0.5, seed=11)
    plain = MultiHeadAttention(H, D_K)
    plain.build((None, None, WIDTH))
    plain.set_weights(layer.get_weights())
    x, ids, parents = batch_of_different_lengths(rng)
    mask = masks.key_padding_mask(ids)
    inputs = {"parents": parents}
    _, scaled = layer(x, attention_mask=mask, term_inputs=inputs, return_probs=True)
    _, unscaled = plain(x, attention_mask=mask, return_probs=True)
    _, trained = layer(x, attention_mask=mask, term_inputs=inputs, return_probs=True,
                       training=True)
    got = to_numpy(trained["probs"])[:, list(SCALED)]
    as_scaled = np.all(np.isclose(got, to_numpy(scaled["probs"])[:, list(SCALED)], atol=1e-6), -1)
    as_plain = np.all(np.isclose(got, to_numpy(unscaled["probs"])[:, list(SCALED)], atol=1e-6), -1)
    assert np.all(as_scaled | as_plain)
    assert as_plain.sum() > 0 and (as_scaled & ~as_plain).sum() > 0
    # One row of D per sentence and token: the scaled heads ignore the same rows.
    np.testing.assert_array_equal(as_plain[:, 0], as_plain[:, 1])


def test_parent_scaling_errors(rng):
    with pytest.raises(ValueError, match="head 4 does not exist"):
        MultiHeadAttention(H, D_K, terms=[ParentScaledHeads([4])])
    with pytest.raises(ValueError, match="parent_variance must be positive"):
        MultiHeadAttention(H, D_K, terms=[ParentScaledHeads([0], variance=0.0)])
    with pytest.raises(ValueError, match="parent_ignoring is a probability"):
        MultiHeadAttention(H, D_K, terms=[ParentScaledHeads([0], ignoring=1.5)])
    layer = make_layer(rng, [0])
    x = np.zeros((1, 3, WIDTH), np.float32)
    with pytest.raises(ValueError, match="got no parents"):
        layer(x)
    with pytest.raises(ValueError, match="without a memory or a cache"):
        layer(x, x, term_inputs={"parents": np.zeros((1, 3), np.float32)})
    config = layer.get_config()
    assert MultiHeadAttention.from_config(config).term(ParentScaledHeads).heads == (0,)


# ---------------------------------------------------------------------------
# The pascal model.


def tiny_hparams(overrides=""):
    hp = registry.hparams("transformer_tiny")
    hp.parse("hidden_size=16,filter_size=32,num_heads=4,num_encoder_layers=2,num_decoder_layers=1,"
             "layer_prepostprocess_dropout=0,attention_dropout=0,relu_dropout=0")
    return hp.parse(overrides)


def model_batch():
    inputs = np.array([[5, 6, 7, 8, 1, 0], [9, 10, 1, 0, 0, 0]], np.int32)
    heads = np.array([[2, 0, 4, 2, -1, -1], [0, 1, -1, -1, -1, -1]], np.int32)
    targets = np.array([[4, 5, 6, 1], [7, 1, 0, 0]], np.int32)
    return {"inputs": ints(inputs), "src_heads": ints(heads), "targets": ints(targets)}


def test_pascal_adds_no_weights():
    pascal = registry.model("pascal")(tiny_hparams("pascal_heads=3,parent_ignoring=0.3"),
                                      VOCAB_SIZES)
    transformer = registry.model("transformer")(tiny_hparams(), VOCAB_SIZES)
    shapes = sorted((v.path, tuple(v.shape)) for v in pascal.trainable_variables)
    assert shapes == sorted((v.path, tuple(v.shape)) for v in transformer.trainable_variables)
    assert pascal.count_params() == transformer.count_params()


def test_pascal_scales_the_chosen_heads_of_the_chosen_layer():
    model = registry.model("pascal")(tiny_hparams("pascal_layer=1,pascal_heads=3"), VOCAB_SIZES)
    assert model.encoder_layers[0].self_attention.term(ParentScaledHeads) is None
    assert model.encoder_layers[1].self_attention.term(ParentScaledHeads).heads == (0, 1, 2)
    features = model_batch()
    first = model(features, return_attention=True)["attention"]
    moved = dict(features, src_heads=ints([[0, 1, 2, 3, -1, -1], [2, 0, -1, -1, -1, -1]]))
    second = model(moved, return_attention=True)["attention"]
    np.testing.assert_allclose(first[0], second[0])
    for head in range(4):
        same = np.allclose(first[1][:, head], second[1][:, head])
        assert same == (head == 3)


def test_pascal_reads_word_positions_on_subword_problems():
    model = registry.model("pascal")(tiny_hparams("source_word_positions=true"), VOCAB_SIZES)
    assert model.train_features == {"inputs", "targets", "src_heads", "src_word_position"}
    assert model.decode_features == {"inputs", "src_heads", "src_word_position"}
    features = dict(model_batch(), src_word_position=ints(
        [[1, 2, 2, 3, 0, 0], [1, 1, 0, 0, 0, 0]]))
    # Sentence 1: word 2 = subwords 1, 2 (middle 1.5); heads are SISA heads.
    features["src_heads"] = ints([[2, 0, 0, 2, -1, -1], [0, 0, -1, -1, -1, -1]])
    parents = to_numpy(model.source_parents(features, model.source_ids(features)))
    np.testing.assert_allclose(parents, [[1.5, 1.5, 1.5, 1.5, 4, 5], [0.5, 0.5, 2, 3, 4, 5]])
    with pytest.raises(KeyError, match="src_word_position"):
        model({key: features[key] for key in ("inputs", "targets", "src_heads")})


@pytest.mark.parametrize("overrides,message", [
    ("pascal_heads=0", "pascal_heads=0"),
    ("pascal_heads=5", "pascal_heads=5"),
    ("pascal_layer=2", "pascal_layer=2"),
    ("pascal_variance=0", "pascal_variance=0"),
    ("parent_ignoring=1.5", "parent_ignoring=1.5"),
])
def test_bad_pascal_hparams_are_named(overrides, message):
    with pytest.raises(HParamsError, match=message):
        registry.model("pascal")(tiny_hparams(overrides), VOCAB_SIZES)


def test_pascal_trains_and_decodes_incrementally():
    keras.utils.set_random_seed(2)
    model = registry.model("pascal")(tiny_hparams("parent_ignoring=0.3"), VOCAB_SIZES)
    features = model_batch()
    optimizer = keras.optimizers.Adam(0.02)
    losses = []
    for _ in range(8):
        _, step_losses, gradients = value_and_gradients(model, criteria.for_model(model), features,
                                                        training=True)
        optimizer.apply(gradients, model.trainable_variables)
        losses.append(float(step_losses["total"]))
    assert losses[-1] < 0.75 * losses[0]
    full = to_numpy(model(features)["logits"])
    memory = model.decoder_memory(model.encode({k: features[k] for k in model.decode_features}))
    cache = model.initial_decoder_cache(2, 4)
    previous = ops.zeros([2], "int32")
    for step in range(4):
        logits, cache = model.decode_step(previous, step, cache, memory)
        np.testing.assert_allclose(logits, full[:, step], rtol=1e-4, atol=1e-4)
        previous = features["targets"][:, step]


@pytest.mark.parametrize("name,beta2,heads,q,dropout", [
    ("pascal_nc11_en_de", 0.997, 2, 0.4, 0.3),
    ("pascal_nc11_de_en", 0.997, 8, 0.0, 0.3),
    ("pascal_wmt18_en_tr", 0.98, 7, 0.3, 0.3),
    ("pascal_wmt16_en_de", 0.98, 5, 0.0, 0.1),
    ("pascal_wmt17_en_de", 0.997, 7, 0.3, 0.1),
    ("pascal_wat_en_ja", 0.997, 7, 0.0, 0.1),
])
def test_table_2_settings(name, beta2, heads, q, dropout):
    hp = registry.hparams(name)
    assert (hp.adam_beta1, hp.adam_beta2) == (0.9, beta2)
    assert (hp.pascal_layer, hp.pascal_heads, hp.pascal_variance, hp.parent_ignoring) == (
        0, heads, 1.0, q)
    assert hp.layer_prepostprocess_dropout == dropout and hp.label_smoothing == 0.1
    assert hp.source_word_positions and hp.learning_rate_warmup_steps == 8000
    schedule = NoamSchedule(hp.learning_rate, hp.hidden_size, hp.learning_rate_warmup_steps)
    rates = [float(schedule(step)) for step in (3999, 7999, 15999)]
    assert rates[1] == pytest.approx(0.0007, rel=1e-6)
    assert rates[0] == pytest.approx(0.00035, rel=1e-5) and rates[2] < rates[1]


# ---------------------------------------------------------------------------
# Table 7b's "parent-only" weighting: D is 1 on the parent word's subwords.


def test_parent_spans_worked_example():
    # The sentence of test_parent_positions_worked_example: subwords
    # The mon ##k ##ey eats a ban ##ana, then <EOS> and padding.
    word_index = [0, 1, 1, 1, 2, 3, 4, 4]
    subword_heads = subword_syntax.first_subword_heads(word_index, [2, 3, 0, 5, 3])
    batch_heads = ints([list(subword_heads) + [-1, -1]])
    words = ints([[w + 1 for w in word_index] + [0, 0]])
    spans = to_numpy(parent_scaling.parent_spans(batch_heads, words))[0]
    # The -> monkey (1-3); monkey's pieces and banana's -> eats (4); eats is
    # the root: its own word; a -> banana (6-7); <EOS>, padding: themselves.
    assert spans.tolist() == [[1, 3], [4, 4], [4, 4], [4, 4], [4, 4], [6, 7], [4, 4], [4, 4],
                              [8, 8], [9, 9]]
    weights = to_numpy(parent_scaling.parent_only_weights(spans[None], 10))[0]
    assert weights[0].tolist() == [0, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    assert weights[5].tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 0, 0]
    assert weights[8].tolist() == [0] * 8 + [1, 0]


def naive_parent_only_probs(layer, x, length, spans, scaled_heads):
    """softmax(S * D) per head with D[t, j] = 1 inside the parent word's span, for one sentence."""
    w = weights_of(layer)
    probs = np.zeros((H, length, length))
    for h in range(H):
        scores = (x[:length] @ w["query_kernel"][:, h]) @ (x[:length] @ w["key_kernel"][:, h]).T
        scores /= math.sqrt(D_K)
        if h in scaled_heads:
            for t in range(length):
                for j in range(length):
                    scores[t, j] *= 1.0 if spans[t][0] <= j <= spans[t][1] else 0.0
        e = np.exp(scores - scores.max(-1, keepdims=True))
        probs[h] = e / e.sum(-1, keepdims=True)
    return probs


def test_parent_only_heads_equal_the_naive_computation(rng):
    layer = make_layer(rng, SCALED, weighting="parent_only")
    x, ids, _ = batch_of_different_lengths(rng)
    spans = np.zeros(ids.shape + (2,), np.float32)
    for row, length in enumerate(LENGTHS):
        first = rng.integers(0, length - 1, length)
        spans[row, :length] = np.stack([first, np.minimum(first + rng.integers(0, 2, length),
                                                          length - 1)], -1)
        spans[row, length:] = np.arange(length, ids.shape[1])[:, None]
    _, details = layer(x, attention_mask=masks.key_padding_mask(ids),
                       term_inputs={"parents": spans}, return_probs=True)
    for row, length in enumerate(LENGTHS):
        expected = naive_parent_only_probs(layer, x[row], length, spans[row], SCALED)
        np.testing.assert_allclose(details["probs"][row, :, :length, :length], expected,
                                   rtol=1e-4, atol=1e-6)
    # The Gaussian on the same weights differs: the option is not ignored.
    gaussian = make_layer(rng, SCALED)
    gaussian.set_weights(layer.get_weights())
    _, other = gaussian(x, attention_mask=masks.key_padding_mask(ids),
                        term_inputs={"parents": spans}, return_probs=True)
    assert not np.allclose(other["probs"][:, SCALED[0]], details["probs"][:, SCALED[0]], atol=1e-4)
    config = layer.get_config()
    assert MultiHeadAttention.from_config(config).term(ParentScaledHeads).weighting == "parent_only"


def test_parent_only_needs_spans_and_a_known_weighting(rng):
    layer = make_layer(rng, [0], weighting="parent_only")
    with pytest.raises(ValueError, match="parent_only weighting needs the spans"):
        layer(np.zeros((1, 3, WIDTH), np.float32),
              term_inputs={"parents": np.zeros((1, 3), np.float32)})
    with pytest.raises(ValueError, match="parent_weighting must be one of gaussian, parent_only"):
        MultiHeadAttention(H, D_K, terms=[ParentScaledHeads([0], weighting="uniform")])
    with pytest.raises(HParamsError, match="pascal_weighting='uniform'"):
        registry.model("pascal")(tiny_hparams("pascal_weighting=uniform"), VOCAB_SIZES)


@pytest.mark.parametrize("name,base", [("pascal_nc11_en_de_parent_only", "pascal_nc11_en_de"),
                                       ("pascal_nc11_de_en_parent_only", "pascal_nc11_de_en")])
def test_parent_only_sets_change_only_the_weighting(name, base):
    parent_only, gaussian = registry.hparams(name), registry.hparams(base)
    assert (parent_only.pascal_weighting, gaussian.pascal_weighting) == ("parent_only", "gaussian")
    parent_only.set("pascal_weighting", "gaussian")
    assert parent_only.to_json() == gaussian.to_json()


def test_the_parent_only_model_scales_by_parent_words_and_decodes():
    model = registry.model("pascal")(
        tiny_hparams("pascal_weighting=parent_only,source_word_positions=true,pascal_heads=1"),
        VOCAB_SIZES)
    assert model.encoder_layers[0].self_attention.term(ParentScaledHeads).weighting == "parent_only"
    features = dict(model_batch(), src_word_position=ints(
        [[1, 2, 2, 3, 0, 0], [1, 1, 0, 0, 0, 0]]))
    features["src_heads"] = ints([[2, 0, 0, 2, -1, -1], [0, 0, -1, -1, -1, -1]])
    spans = to_numpy(model.source_parents(features, model.source_ids(features)))
    np.testing.assert_array_equal(spans[0, :, 0], [1, 1, 1, 1, 4, 5])
    np.testing.assert_array_equal(spans[0, :, 1], [2, 2, 2, 2, 4, 5])
    # A head whose parent is word 2 (subwords 1-2) moved to word 3: only head 0 changes.
    first = model(features, return_attention=True)["attention"][0]
    moved = dict(features, src_heads=ints([[4, 0, 0, 2, -1, -1], [0, 0, -1, -1, -1, -1]]))
    second = model(moved, return_attention=True)["attention"][0]
    assert not np.allclose(first[:, 0], second[:, 0])
    np.testing.assert_allclose(first[:, 1:], second[:, 1:], rtol=1e-5, atol=1e-6)
    full = to_numpy(model(features)["logits"])
    memory = model.decoder_memory(model.encode({k: features[k] for k in model.decode_features}))
    cache, previous = model.initial_decoder_cache(2, 4), ops.zeros([2], "int32")
    for step in range(4):
        logits, cache = model.decode_step(previous, step, cache, memory)
        np.testing.assert_allclose(logits, full[:, step], rtol=1e-4, atol=1e-4)
        previous = features["targets"][:, step]
