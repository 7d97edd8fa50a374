"""Target-side NSD: gold distances of the targets, the decoder-side losses, and decoding
that feeds each hypothesis its own predicted distances through the beam state."""

import math

import keras
import numpy as np
import pytest
from keras import ops

import syntax_t2t.hparams_sets  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import criteria, registry
from syntax_t2t.criteria import nsd_distances
from syntax_t2t.hparams import HParamsError
from syntax_t2t.models import nsd

pytestmark = pytest.mark.backends

VOCABS = {"inputs": 30, "targets": 30, "upos": 20, "deprel": 10, "xpos": 10}
K = 3  # distance ids 1 .. 7, so that different hypotheses predict different ones
EOS = 1


def numpy(value):
    return ops.convert_to_numpy(value)


def tensorflow():
    """TensorFlow, for the tests of decoding (fast_decode, beam search), which runs on it."""
    return pytest.importorskip("tensorflow", reason="decoding runs on TensorFlow")


def tiny_model(**overrides):
    hparams = registry.hparams("transformer_tiny")
    hparams.override(dict(hidden_size=16, filter_size=32, layer_prepostprocess_dropout=0.0,
                          attention_dropout=0.0, relu_dropout=0.0, nsd_max_distance=K))
    hparams.override(overrides)
    return registry.model("nsd")(hparams, VOCABS)


def test_target_distance_ids_are_per_target_word():
    model = tiny_model(nsd_side="target", nsd_output=True, nsd_input="sum")
    # Target words 1..3 with heads 2, 0, 2 (d_D = -1, 2, 1), then <EOS> and padding.
    features = {"targets": np.array([[7, 8, 9, 1, 0]]), "tgt_heads": np.array([[2, 0, 2]])}
    ids = numpy(model.target_distance_ids(features, 5))
    assert ids.tolist() == [[-1 + K + 1, 2 + K + 1, 1 + K + 1, 0, 0]]


def test_target_loss_terms_against_hand_computation():
    model = tiny_model(nsd_side="target", nsd_output=True, nsd_input="none",
                       nsd_max_distance=1, nsd_loss_weight=0.5)
    # k = 1: classes are the distances -1, 0, 1. Targets: two words and <EOS>; heads 2, 0
    # give d_D = -1 and 2 (clipped to 1), ids 1 and 3; the <EOS> position has no distance.
    features = {"inputs": np.array([[5, 6, 1]]), "targets": np.array([[7, 8, 1]]),
                "tgt_heads": np.array([[2, 0, -1]])}
    outputs = dict(model(features))
    outputs["nsd_target_logits"] = np.log(np.array(
        [[[0.5, 0.25, 0.25], [0.25, 0.25, 0.5], [1.0, 1.0, 1.0]]], np.float32))
    # Both gold classes have probability 1/2. Expected distances -0.25 and 0.25 against
    # gold -1 and 1: squared errors 0.75^2 each; the pair has sign(-1 - 1) = -1, hinge
    # 1 - (-1)(-0.25 - 0.25) = 0.5. "sum" (the default): the seed's sums over 3 target
    # tokens; "mean": over the 2 words and the 1 pair.
    losses = criteria.for_model(model)(features, outputs)
    entropy, distance = 2 * math.log(2) / 3, (2 * 0.5625 + 0.5) / 3
    np.testing.assert_allclose(losses["nsd_target_entropy"], entropy, rtol=1e-6)
    np.testing.assert_allclose(losses["nsd_target_distance"], distance, rtol=1e-6)
    np.testing.assert_allclose(losses["total"], losses["nmt"] + 0.5 * (entropy + distance),
                               rtol=1e-6)
    assert "nsd_entropy" not in losses  # no source-side terms
    model.hparams.override(dict(nsd_entropy_loss_reduction="mean",
                                nsd_distance_loss_reduction="mean"))
    losses = criteria.for_model(model)(features, outputs)
    np.testing.assert_allclose(losses["nsd_target_entropy"], math.log(2), rtol=1e-6)
    np.testing.assert_allclose(losses["nsd_target_distance"], 0.5625 + 0.5, rtol=1e-6)


def test_both_sides_add_both_sides_terms():
    model = tiny_model(nsd_side="both", nsd_output=True, nsd_input="linear",
                       nsd_distance="relative")
    features = {"inputs": np.array([[5, 6, 7, 1]]), "src_heads": np.array([[2, 0, 2, -1]]),
                "targets": np.array([[7, 8, 1, 0]]), "tgt_heads": np.array([[0, 1, -1, -1]])}
    assert model.train_features == {"inputs", "targets", "src_heads", "tgt_heads"}
    assert model.decode_features == {"inputs", "src_heads"}
    derived = model.derived_features
    assert derived.source_keys == ("src_heads", "tgt_heads")
    assert model.decode_derived_features.source_keys == ("src_heads",)
    batch = {**features, **derived.compute(features)}
    # Without the targets' derived distances the model says how to add them.
    with pytest.raises(KeyError, match="nsd_target_distances.*derived_features.*tgt_heads"):
        model({key: value for key, value in batch.items() if key != nsd.TARGET_DISTANCE_KEY})
    outputs = model(batch)
    losses = criteria.for_model(model)(batch, outputs)
    terms = [losses[key] for key in ("nsd_entropy", "nsd_distance", "nsd_target_entropy",
                                     "nsd_target_distance")]
    np.testing.assert_allclose(losses["total"], losses["nmt"] + sum(terms), rtol=1e-6)
    gold = model.target_distance_ids(batch, 4)
    # "sum" reductions: per target token (3: two words and <EOS>).
    entropy, distance = nsd_distances.distance_losses(outputs["nsd_target_logits"], gold, K,
                                                      "sum", "sum", 3.0)
    np.testing.assert_allclose(losses["nsd_target_entropy"], entropy, rtol=1e-6)
    np.testing.assert_allclose(losses["nsd_target_distance"], distance, rtol=1e-6)


def test_gold_target_distances_change_only_later_positions():
    # The decoder reads d(y_{t-1}) at position t: changing the tree of word 2 moves the
    # logits from position 2 on, not before.
    model = tiny_model(nsd_side="target", nsd_output=True, nsd_input="sum")
    features = {"inputs": np.array([[5, 6, 1]]), "targets": np.array([[7, 8, 9, 1]]),
                "tgt_heads": np.array([[2, 0, 2, -1]])}
    moved = dict(features, tgt_heads=np.array([[2, 0, 0, -1]]))
    base = numpy(model(features)["logits"])
    changed = numpy(model(moved)["logits"])
    np.testing.assert_allclose(changed[0, :3], base[0, :3], rtol=1e-6)
    assert np.abs(changed[0, 3] - base[0, 3]).max() > 1e-4


@pytest.mark.parametrize("overrides", [
    dict(nsd_input="sum"),
    dict(nsd_input="linear", nsd_positional_encoding=True),
    dict(nsd_input="concat", shared_embedding_and_softmax_weights=False),
])
def test_cached_steps_fed_gold_distances_equal_teacher_forcing(overrides):
    keras.utils.set_random_seed(3)
    model = tiny_model(nsd_side="target", nsd_output=True, nsd_distance="relative", **overrides)
    targets = np.array([[7, 8, 9, 10, 1], [11, 12, 1, 0, 0]], np.int32)
    distances = np.array([[2, -1, 0, 3, 0], [-2, 1, 0, 0, 0]], np.int32)
    features = {"inputs": np.array([[5, 6, 1], [7, 1, 0]]), "targets": targets,
                "tgt_heads": np.array([[0, 0, 0, 0, -1], [0, 0, -1, -1, -1]]),
                nsd.TARGET_DISTANCE_KEY: distances}
    full = {key: numpy(value) for key, value in model(features).items()}
    gold_ids = numpy(model.target_distance_ids(features, 5))  # 0 at <EOS> and padding
    memory = model.decoder_memory(model.encode(features))
    cache = model.initial_decoder_cache(2, 6)
    ids = np.zeros([2], np.int32)
    for step in range(5):
        logits, cache = model.decode_step(ids, ops.convert_to_tensor(step, "int32"), cache, memory)
        np.testing.assert_allclose(numpy(logits), full["logits"][:, step], atol=2e-5, rtol=1e-4)
        predicted = np.argmax(full["nsd_target_logits"][:, step], axis=-1) + 1
        np.testing.assert_array_equal(numpy(cache[nsd.PREVIOUS_KEY]), predicted)
        # Feed the gold word and distance, as teacher forcing does.
        ids = targets[:, step]
        cache[nsd.PREVIOUS_KEY] = ops.convert_to_tensor(gold_ids[:, step])


_FORWARD = {}


def recomputed_log_probability(model, inputs, tokens):
    """log p(tokens | inputs) by full teacher-forced passes, no cache: each step feeds the
    distances the model predicted at the earlier steps as the targets' distances."""
    tf = tensorflow()
    if model not in _FORWARD:
        _FORWARD.clear()
        _FORWARD[model] = tf.function(lambda features: model(features), reduce_retracing=True)
    predicted = []  # distances (not ids) predicted for tokens[0], tokens[1], ...
    total = 0.0
    for t in range(len(tokens)):
        prefix = np.array([list(tokens[:t + 1])], np.int32)
        features = {"inputs": tf.constant([inputs]), "targets": tf.constant(prefix),
                    "tgt_heads": tf.zeros_like(prefix),
                    nsd.TARGET_DISTANCE_KEY: tf.constant([predicted + [0]], tf.int32)}
        outputs = _FORWARD[model](features)
        total += float(tf.nn.log_softmax(outputs["logits"][0, t])[tokens[t]])
        predicted.append(int(np.argmax(outputs["nsd_target_logits"][0, t])) + 1 - K - 1)
    return total


def hypotheses(outputs):
    """(row, tokens, score) of every hypothesis: tokens with <EOS> where it finished."""
    for row in range(outputs["ids"].shape[0]):
        for k in range(outputs["ids"].shape[1]):
            score = float(outputs["scores"][row, k])
            if not np.isfinite(score):
                continue
            ids = outputs["ids"][row, k].numpy()
            length = int(outputs["lengths"][row, k])
            finished = length < ids.shape[0] and ids[length] == EOS
            yield row, ids[:length + int(finished)].tolist(), score


INPUTS = [[5, 9, 13, 1, 0], [22, 7, 1, 0, 0]]


def decode(model, beam_size, jit_compile=False):
    tf = tensorflow()
    from syntax_t2t.decoding.fast_decode import decode_batch

    return tf.function(lambda features: decode_batch(model, features, beam_size=beam_size,
                                                     alpha=0.0, extra_length=2),
                       jit_compile=jit_compile)({"inputs": tf.constant(INPUTS)})


def target_model():
    keras.utils.set_random_seed(11)
    return tiny_model(nsd_side="target", nsd_output=True, nsd_input="linear",
                      nsd_distance="relative", nsd_positional_encoding=True)


@pytest.mark.parametrize("beam_size", [1, 4])
def test_search_scores_equal_a_recomputation_with_the_predicted_distances(beam_size):
    # With alpha = 0 a hypothesis' score is its log-probability; the cached search, whose
    # beam state carries each hypothesis' predicted distance, must match a recomputation
    # that feeds every hypothesis its own predictions.
    model = target_model()
    outputs = decode(model, beam_size)
    checked = 0
    for row, tokens, score in hypotheses(outputs):
        expected = recomputed_log_probability(model, [t for t in INPUTS[row]], tokens)
        np.testing.assert_allclose(score, expected, atol=1e-4, rtol=1e-4)
        checked += 1
    assert checked == 2 * beam_size


def test_beam_state_that_does_not_follow_the_hypotheses_is_detected(monkeypatch):
    # The check above can fail: with the predicted distances left in their beam slots
    # (not reordered with the hypotheses) some scores no longer match.
    tensorflow()
    from syntax_t2t.decoding import beam_search as beam_search_module

    model = target_model()
    gather = beam_search_module._gather_cache

    def gather_all_but_distances(cache, beam_indices, beam_size):
        gathered = gather(cache, beam_indices, beam_size)
        return dict(gathered, **{nsd.PREVIOUS_KEY: cache[nsd.PREVIOUS_KEY]})

    monkeypatch.setattr(beam_search_module, "_gather_cache", gather_all_but_distances)
    outputs = decode(model, 4)
    errors = [abs(score - recomputed_log_probability(model, INPUTS[row], tokens))
              for row, tokens, score in hypotheses(outputs)]
    assert max(errors) > 1e-3


@pytest.mark.slow
def test_target_side_decodes_under_xla():
    model = target_model()
    plain = decode(model, 3)
    compiled = decode(model, 3, jit_compile=True)
    np.testing.assert_array_equal(compiled["ids"], plain["ids"])
    np.testing.assert_allclose(compiled["scores"], plain["scores"], atol=1e-4)


def test_target_side_hparams_are_checked():
    with pytest.raises(HParamsError, match="needs nsd_output=true"):
        tiny_model(nsd_side="target", nsd_input="sum")
    with pytest.raises(HParamsError, match="shared_embedding_and_softmax_weights"):
        tiny_model(nsd_side="both", nsd_input="concat", nsd_output=True)
    with pytest.raises(HParamsError, match="nsd_side"):
        tiny_model(nsd_side="decoder", nsd_output=True)
    # Output only needs no distances at inference: the decoder's input is plain.
    model = tiny_model(nsd_side="target", nsd_input="none", nsd_output=True)
    assert not model.reads_target_distances and model.target_distance_embedding is None
    assert nsd.PREVIOUS_KEY not in model.initial_decoder_cache(2, 3)
    assert model.decode_features == {"inputs"}


def test_missing_target_trees_are_named():
    model = tiny_model(nsd_side="target", nsd_output=True)
    with pytest.raises(KeyError, match="tgt_heads"):
        model({"inputs": np.array([[5, 1]]), "targets": np.array([[7, 1]])})
