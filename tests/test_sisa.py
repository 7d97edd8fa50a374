"""SISA: the bi-affine scorer, the bi-affine attention head and the `sisa` model."""

import math

import keras
import numpy as np
import pytest
from keras import ops

import syntax_t2t.hparams_sets.transformer  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import criteria, registry
from syntax_t2t.backend.gradients import value_and_gradients
from syntax_t2t.criteria import head_gold
from syntax_t2t.data import subword_syntax
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers import masks
from syntax_t2t.layers.attention import MultiHeadAttention
from syntax_t2t.layers.attention_terms import BiaffineHead, ParseHead, SpecializedHeads
from syntax_t2t.layers.biaffine import BiaffineScorer
from syntax_t2t.models.sisa import parent_targets

pytestmark = pytest.mark.backends

H, D_K = 3, 4
WIDTH = H * D_K
VOCAB_SIZES = {"inputs": 20, "targets": 18, "deprel": 8, "upos": 7, "xpos": 9}


def ints(values):
    """An int32 backend tensor."""
    return ops.convert_to_tensor(np.asarray(values, np.int32))


def to_numpy(tensor):
    return ops.convert_to_numpy(tensor)


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def randomize(layer, rng):
    for weight in layer.weights:
        weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))


def leaky_relu(x, slope=0.1):
    return np.where(x > 0, x, slope * x)


def naive_biaffine(weights, x):
    """[dep_t; 1]^T U head_j for one sentence x [S, D], from named weights."""
    dependents = leaky_relu(x @ weights["dependent_kernel"] + weights["dependent_bias"])
    heads = leaky_relu(x @ weights["head_kernel"] + weights["head_bias"])
    scores = np.zeros((x.shape[0], x.shape[0]))
    for t in range(x.shape[0]):
        for j in range(x.shape[0]):
            scores[t, j] = np.append(dependents[t], 1.0) @ weights["bilinear"] @ heads[j]
    return scores


def named(layer):
    return {w.path.split("/")[-1]: np.asarray(w.numpy(), np.float64) for w in layer.weights}


def test_biaffine_scorer_equals_the_formula(rng):
    scorer = BiaffineScorer(5)
    scorer.build((None, None, WIDTH))
    randomize(scorer, rng)
    x = rng.normal(size=(2, 4, WIDTH)).astype("float32")
    got = to_numpy(scorer(x))
    assert got.shape == (2, 4, 4) and got.dtype == np.float32
    for b in range(2):
        expected = naive_biaffine(named(scorer), x[b])
        np.testing.assert_allclose(got[b], expected, rtol=1e-4, atol=1e-4)


def test_biaffine_head_scores_with_the_scorer_and_keeps_other_heads_plain(rng):
    layer = MultiHeadAttention(H, D_K, terms=[ParseHead(1), BiaffineHead(1, size=6)])
    layer.build((None, None, WIDTH))
    randomize(layer, rng)
    weights = named(layer)
    # Only the other two heads have query and key projections.
    assert weights["query_kernel"].shape == (WIDTH, 2, D_K)
    x = rng.normal(size=(2, 5, WIDTH)).astype("float32")
    ids = np.array([[5, 6, 7, 1, 0], [5, 6, 7, 8, 1]])
    mask = masks.key_padding_mask(ids)
    outputs, details = layer(x, attention_mask=mask, return_probs=True)
    probs = to_numpy(details["probs"])
    for b in range(2):
        length = int((ids[b] > 0).sum())
        for h, regular in ((0, 0), (2, 1)):
            q = x[b] @ weights["query_kernel"][:, regular]
            k = x[b] @ weights["key_kernel"][:, regular]
            logits = q @ k.T / math.sqrt(D_K)
            logits[:, length:] = -1e9
            expected = np.exp(logits - logits.max(-1, keepdims=True))
            np.testing.assert_allclose(probs[b, h], expected / expected.sum(-1, keepdims=True),
                                       rtol=1e-4, atol=1e-6)
        scores = naive_biaffine({k: v for k, v in weights.items()}, x[b].astype(np.float64))
        np.testing.assert_allclose(details["head_logits"][b, :, :length], scores[:, :length],
                                   rtol=1e-4, atol=1e-4)
        assert np.all(details["head_logits"][b, :, length:] < -1e8)
        expected = np.exp(scores[:, :length] - scores[:, :length].max(-1, keepdims=True))
        np.testing.assert_allclose(probs[b, 1, :, :length],
                                   expected / expected.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="both a specialised head and a bi-affine head"):
        MultiHeadAttention(H, D_K, terms=[SpecializedHeads([1]), BiaffineHead(1)])
    config = layer.get_config()
    clone = MultiHeadAttention.from_config(config).term(BiaffineHead)
    assert (clone.head, clone.size) == (1, 6)


def test_parent_targets_point_rows_at_first_subwords_of_parents():
    # Words: The monkey eats a banana; heads [2, 3, 0, 5, 3]; monkey and
    # banana are split in three and two.
    word_index = [0, 1, 1, 1, 2, 3, 4, 4]
    heads = subword_syntax.first_subword_heads(word_index, [2, 3, 0, 5, 3])
    batch_heads = ints([list(heads) + [-1, -1]])
    words = ints([[w + 1 for w in word_index] + [0, 0]])
    got = to_numpy(parent_targets(batch_heads, words))[0]
    # eats (position 4) is the root: it points at itself; <EOS>, padding: none.
    assert got.tolist() == [1, 4, 4, 4, 4, 6, 4, 4, -1, -1]
    # A root word split in two: both pieces point at its first piece.
    split_root = parent_targets(ints([[0, 0, 1, -1]]), ints([[1, 1, 2, 0]]))
    assert to_numpy(split_root).tolist() == [[0, 0, 0, -1]]
    # Word level: the root points at itself.
    assert to_numpy(parent_targets(ints([[2, 0, -1]]))).tolist() == [[1, 1, -1]]


def tiny_hparams(overrides=""):
    hp = registry.hparams("transformer_tiny")
    hp.parse("hidden_size=16,filter_size=32,num_heads=2,num_encoder_layers=2,num_decoder_layers=1,"
             "layer_prepostprocess_dropout=0,attention_dropout=0,relu_dropout=0")
    return hp.parse(overrides)


def model_batch():
    inputs = np.array([[5, 6, 7, 8, 1, 0], [9, 10, 1, 0, 0, 0]], np.int32)
    heads = np.array([[2, 0, 4, 2, -1, -1], [0, 1, -1, -1, -1, -1]], np.int32)
    targets = np.array([[4, 5, 6, 1], [7, 1, 0, 0]], np.int32)
    return {"inputs": ints(inputs), "src_heads": ints(heads), "targets": ints(targets)}


def test_sisa_loss_is_the_row_cross_entropy_against_parents():
    keras.utils.set_random_seed(4)
    model = registry.model("sisa")(tiny_hparams("sisa_layer=1,sisa_head=1,sisa_loss_weight=0.5"),
                                   VOCAB_SIZES)
    attention = model.encoder_layers[1].self_attention
    assert attention.term(BiaffineHead).head == 1 and attention.term(ParseHead).head == 1
    assert model.encoder_layers[0].self_attention.term(BiaffineHead) is None
    features = model_batch()
    outputs = model(features)
    assert "parse_logits" not in outputs and outputs["sisa_logits"].shape == (2, 6, 6)
    losses = criteria.for_model(model)(features, outputs)
    logits = to_numpy(outputs["sisa_logits"]).astype(np.float64)
    # Gold parents, rows = dependents: sentence 0 heads [2, 0, 4, 2]; the
    # root (token 1) points at itself. Padded keys carry no probability.
    gold = {(0, 0): 1, (0, 1): 1, (0, 2): 3, (0, 3): 1, (1, 0): 0, (1, 1): 0}
    total = 0.0
    for (b, t), parent in gold.items():
        length = 5 if b == 0 else 3
        row = logits[b, t, :length]
        total -= row[parent] - row.max() - math.log(np.exp(row - row.max()).sum())
        assert np.all(logits[b, t, length:] < -1e8)
    assert float(losses["parse"]) == pytest.approx(total / len(gold), rel=1e-5)
    assert float(losses["total"]) == pytest.approx(
        float(losses["nmt"]) + 0.5 * float(losses["parse"]), rel=1e-6)


def test_sisa_learns_parents_and_decodes_without_trees():
    keras.utils.set_random_seed(5)
    model = registry.model("sisa")(tiny_hparams(), VOCAB_SIZES)
    assert model.decode_features == {"inputs"}
    features = model_batch()
    optimizer = keras.optimizers.Adam(0.03)
    history = []
    for _ in range(15):
        _, losses, gradients = value_and_gradients(model, criteria.for_model(model), features,
                                                   training=True)
        optimizer.apply(gradients, model.trainable_variables)
        history.append({k: float(v) for k, v in losses.items()})
    assert history[-1]["parse"] < 0.5 * history[0]["parse"]
    assert history[-1]["nmt"] < history[0]["nmt"]
    encoded = model.encode({"inputs": features["inputs"]})
    predicted = to_numpy(encoded["sisa_logits"]).argmax(-1)
    assert predicted[0, :4].tolist() == [1, 1, 3, 1]


def test_sisa_reads_word_positions_for_training_only():
    model = registry.model("sisa")(tiny_hparams("source_word_positions=true"), VOCAB_SIZES)
    assert model.train_features == {"inputs", "targets", "src_heads", "src_word_position"}
    assert model.decode_features == {"inputs"}
    features = dict(model_batch(), src_word_position=ints(
        [[1, 1, 2, 3, 0, 0], [1, 1, 0, 0, 0, 0]]),
        src_heads=ints([[0, 0, 1, 1, -1, -1], [0, 0, -1, -1, -1, -1]]))
    gold = to_numpy(head_gold.gold_head_positions(model, features))
    assert gold.tolist() == [[0, 0, 0, 0, -1, -1], [0, 0, -1, -1, -1, -1]]


@pytest.mark.parametrize("overrides,message", [
    ("sisa_layer=2", "sisa_layer=2"),
    ("sisa_head=2", "sisa_head=2"),
    ("sisa_size=-1", "sisa_size=-1"),
    ("sisa_loss_weight=-1", "sisa_loss_weight=-1"),
])
def test_bad_sisa_hparams_are_named(overrides, message):
    with pytest.raises(HParamsError, match=message):
        registry.model("sisa")(tiny_hparams(overrides), VOCAB_SIZES)
