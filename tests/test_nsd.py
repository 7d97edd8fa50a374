"""Tests for NSD: distances of a batch, the syntactic positional encoding, the losses, the model."""

import math

import numpy as np
import pytest
from keras import ops

import syntax_t2t.hparams_sets  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import criteria, registry
from syntax_t2t.criteria import nsd_distances
from syntax_t2t.data import syntactic_distance
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers.syntactic_position import syntactic_position_signal
from syntax_t2t.models import nsd

pytestmark = pytest.mark.backends

VOCABS = {"inputs": 30, "targets": 30, "upos": 20, "deprel": 10, "xpos": 10}
HEADS = [[2, 0, 4, 2, 2, -1, -1], [0, 1, -1, -1, -1, -1, -1]]
INPUTS = [[5, 6, 7, 8, 9, 1, 0], [10, 11, 1, 0, 0, 0, 0]]


def numpy(value):
    return ops.convert_to_numpy(value)


def log_of(probabilities):
    return np.log(np.array(probabilities, np.float32))


def test_dependency_distances_of_a_batch():
    distances = numpy(nsd.dependency_distances(np.array(HEADS)))
    assert distances.tolist() == [[-1, 2, -1, 2, 3, 0, 0], [1, 1, 0, 0, 0, 0, 0]]
    reference = syntactic_distance.dependency_distances(HEADS[0][:5])
    assert distances[0, :5].tolist() == reference.tolist()


@pytest.mark.parametrize("kind", sorted(nsd.DISTANCES))
def test_constituency_distances_of_a_batch(kind):
    distances = nsd.constituency_distances(np.array(HEADS), kind)
    for row, n in ((0, 5), (1, 2)):
        tree = DependencyTree.from_heads(["_"] * n, HEADS[row][:n])
        tree = phrase_structure_from_dependencies(tree)
        assert distances[row, :n].tolist() == nsd.DISTANCES[kind](tree).tolist()
        assert not distances[row, n:].any()


def test_distance_losses_against_hand_computation():
    # k = 1: classes are the distances -1, 0, 1 (ids 1, 2, 3); the third position is padding.
    logits = log_of([[[0.25, 0.25, 0.5], [0.5, 0.25, 0.25], [1.0, 1.0, 1.0]]])
    gold_ids = np.array([[3, 1, 0]])  # gold distances 1 and -1
    entropy, distance = nsd_distances.distance_losses(logits, gold_ids, 1)
    # Cross-entropy: both gold classes have probability 1/2.
    np.testing.assert_allclose(entropy, math.log(2), rtol=1e-6)
    # Expected distances 0.25 and -0.25: squared errors 0.75^2 twice (mean 0.5625); the one
    # pair has sign(1 - (-1)) = 1 and hinge 1 - (0.25 - (-0.25)) = 0.5.
    np.testing.assert_allclose(distance, 0.5625 + 0.5, rtol=1e-6)


def test_summed_distance_losses_per_target_token_against_hand_computation():
    # The example above with the seed's sums (eq. 19-20), over 4 target tokens.
    logits = log_of([[[0.25, 0.25, 0.5], [0.5, 0.25, 0.25], [1.0, 1.0, 1.0]]])
    gold_ids = np.array([[3, 1, 0]])
    entropy, distance = nsd_distances.distance_losses(logits, gold_ids, 1, "sum", "sum", 4.0)
    np.testing.assert_allclose(entropy, 2 * math.log(2) / 4, rtol=1e-6)
    np.testing.assert_allclose(distance, (2 * 0.5625 + 0.5) / 4, rtol=1e-6)
    entropy, distance = nsd_distances.distance_losses(logits, gold_ids, 1, "mean", "sum", 4.0)
    np.testing.assert_allclose(entropy, math.log(2), rtol=1e-6)
    # Three words: the squared errors over 3 words, the hinge over their 3 pairs.
    logits = log_of([[[0.25, 0.25, 0.5], [0.5, 0.25, 0.25], [0.25, 0.5, 0.25]]])
    gold_ids = np.array([[3, 1, 2]])  # gold 1, -1, 0; predicted 0.25, -0.25, 0
    squares = 0.75 ** 2 + 0.75 ** 2 + 0.0
    hinges = (1 - 0.5) + (1 - 0.25) + (1 - 0.25)  # pairs (1,2), (1,3), (2,3): all signs agree
    _, summed = nsd_distances.distance_losses(logits, gold_ids, 1, distance_reduction="sum",
                                              num_target_tokens=5.0)
    _, mean = nsd_distances.distance_losses(logits, gold_ids, 1)
    np.testing.assert_allclose(summed, (squares + hinges) / 5, rtol=1e-6)
    np.testing.assert_allclose(mean, squares / 3 + hinges / 3, rtol=1e-6)


def test_ranking_hinge_is_zero_for_well_separated_predictions():
    logits = np.array([[[0.0, 0.0, 50.0], [50.0, 0.0, 0.0]]], np.float32)  # predicts 1 then -1
    _, distance = nsd_distances.distance_losses(logits, np.array([[3, 1]]), 1)
    np.testing.assert_allclose(distance, 0.0, atol=1e-6)  # exact values, margin 2 > 1


def test_syntactic_position_signal_follows_eq_15_16():
    signal = numpy(syntactic_position_signal(np.array([[-2, 0, 3]]), 4, max_distance=3,
                                             sigma=40.0))
    for i, d in enumerate([-2, 0, 3]):
        v = d + 6  # d + max(d) - min(d)
        expected = [math.sin(v), math.cos(v), math.sin(v / 40 ** 0.5), math.cos(v / 40 ** 0.5)]
        np.testing.assert_allclose(signal[0, i], expected, rtol=1e-5, atol=1e-6)
    assert syntactic_position_signal(np.zeros([1, 2], np.int32), 5, 1).shape == (1, 2, 5)


def tiny_model(**overrides):
    hparams = registry.hparams("transformer_tiny")
    hparams.override(dict(hidden_size=16, filter_size=32, **overrides))
    return registry.model("nsd")(hparams, VOCABS)


def batch():
    return {"inputs": np.array(INPUTS), "targets": np.array(INPUTS), "src_heads": np.array(HEADS)}


def test_distance_ids_are_clipped_and_padding_is_zero():
    model = tiny_model(nsd_input="sum", nsd_max_distance=2)
    ids = numpy(model.source_distance_ids(batch(), 7))
    assert ids.tolist() == [[2, 5, 2, 5, 5, 0, 0], [4, 4, 0, 0, 0, 0, 0]]


@pytest.mark.parametrize("combination,width", [("concat", 14), ("sum", 16), ("linear", 16)])
def test_input_combinations(combination, width):
    model = tiny_model(nsd_input=combination)
    assert model.source_embedding.hidden_size == width
    features = batch()
    outputs = model(features)
    assert outputs["logits"].shape == (2, 7, 30)
    # The distances change the encoder input.
    moved = dict(features, src_heads=np.array([[0, 1, 2, 3, 4, -1, -1], HEADS[1]]))
    changed = numpy(model.embed_source(moved, features["inputs"], False))
    base = numpy(model.embed_source(features, features["inputs"], False))
    assert np.abs((changed - base)[0, :5]).max() > 0
    np.testing.assert_allclose(changed[1], base[1])


def test_output_strategy_adds_the_distance_losses():
    model = tiny_model(nsd_distance="relative", nsd_output=True, nsd_loss_weight=0.5)
    features = batch()
    # d_R is derived on the host, as the trainer adds it; a batch without it is refused.
    with pytest.raises(KeyError, match="nsd_distances.*derived_features.*src_heads"):
        model(features)
    features.update(model.derived_features.compute(features))
    outputs = model(features)
    assert outputs["nsd_logits"].shape == (2, 7, 41)
    losses = criteria.for_model(model)(features, outputs)
    expected = losses["nmt"] + 0.5 * (losses["nsd_entropy"] + losses["nsd_distance"])
    np.testing.assert_allclose(losses["total"], expected, rtol=1e-6)
    gold = model.source_distance_ids(features, 7)
    # The default "sum" reductions: sums over the batch per target token (6 + 3 here).
    entropy, distance = nsd_distances.distance_losses(outputs["nsd_logits"], gold, 20, "sum",
                                                      "sum", 9.0)
    np.testing.assert_allclose(losses["nsd_entropy"], entropy, rtol=1e-6)
    np.testing.assert_allclose(losses["nsd_distance"], distance, rtol=1e-6)


def test_positional_encoding_only_touches_words():
    model = tiny_model(nsd_positional_encoding=True)
    features = batch()
    moved = dict(features, src_heads=np.array([HEADS[0], [2, 0, -1, -1, -1, -1, -1]]))
    difference = (numpy(model.embed_source(moved, features["inputs"], False))
                  - numpy(model.embed_source(features, features["inputs"], False)))
    assert np.abs(difference[1, :2]).max() > 0
    assert not difference[0].any() and not difference[1, 2:].any()


def test_bad_hparams_are_named():
    with pytest.raises(HParamsError, match="no strategy"):
        tiny_model(nsd_input="none")
    with pytest.raises(HParamsError, match="nsd_distance"):
        tiny_model(nsd_input="sum", nsd_distance="height")
    with pytest.raises(HParamsError, match="nsd_input"):
        tiny_model(nsd_input="product")
    with pytest.raises(HParamsError, match="nsd_embedding_size"):
        tiny_model(nsd_input="concat", nsd_embedding_size=16)
    with pytest.raises(HParamsError, match="nsd_distance_loss_reduction='total'"):
        tiny_model(nsd_output=True, nsd_distance_loss_reduction="total")
