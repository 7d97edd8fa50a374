"""The parse-loss formulations (`parse_loss=logits|attention`) against hand computation.

The references below are written out per row with NumPy, as the thesis code's
T2T `padded_cross_entropy` would compute them: the head's scores (or its
attention probabilities) are the "logits" over the S columns, label smoothing
puts `1 - eps` on the gold column and `eps / (n - 1)` on each of the other n - 1
candidate columns, and the soft targets' entropy is subtracted.
"""

import keras
import numpy as np
import pytest

import syntax_t2t.hparams_sets.transformer  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import criteria, registry
from syntax_t2t.backend.gradients import value_and_gradients
from syntax_t2t.hparams import HParamsError
from syntax_t2t.criteria import head_gold, head_supervision

pytestmark = pytest.mark.backends

MASK = -1e9


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _smoothed_row(scores, gold, eps, candidates):
    """T2T's smoothing_cross_entropy of one row, over the `candidates` columns."""
    log_probs = _log_softmax(scores)
    n = len(candidates)
    total = 0.0
    for column in candidates:
        target = 1.0 - eps if column == gold else eps / (n - 1)
        total -= target * log_probs[column]
    if eps:
        low = eps / (n - 1)
        total += (1 - eps) * np.log(1 - eps) + (n - 1) * low * np.log(low)
    return total


@pytest.fixture
def batch():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(2, 5, 5)).astype("float32") * 3
    # The second sentence is one token shorter: its last key is padding.
    logits[1, :, 4] = MASK
    gold = np.array([[-1, 0, 1, 1, -1], [-1, 2, 0, -1, -1]])
    return logits, gold


def _reference(logits, gold, form, eps):
    rows = []
    for b, i in np.ndindex(gold.shape):
        if gold[b, i] < 0:
            continue
        scores = logits[b, i].astype(np.float64)
        if form == "attention":
            # Probabilities of the head (0 at padding), then their softmax over
            # every column, padding included, as T2T saw them.
            scores = np.exp(_log_softmax(scores))
            candidates = range(len(scores))
        else:
            candidates = [c for c in range(len(scores)) if scores[c] > MASK / 2]
        rows.append(_smoothed_row(scores, gold[b, i], eps, list(candidates)))
    return np.mean(rows)


@pytest.mark.parametrize("form,eps", [("logits", 0.0), ("logits", 0.1),
                                      ("attention", 0.0), ("attention", 0.1)])
def test_parse_loss_by_hand(batch, form, eps):
    logits, gold = batch
    got = float(head_supervision.parse_loss(logits, gold, form, eps))
    assert got == pytest.approx(_reference(logits, gold, form, eps), rel=1e-5)


def test_default_smoothing_is_the_forms(batch):
    logits, gold = batch
    assert float(head_supervision.parse_loss(logits, gold, "attention")) == pytest.approx(
        _reference(logits, gold, "attention", 0.1), rel=1e-5)
    assert float(head_supervision.parse_loss(logits, gold, "logits")) == pytest.approx(
        _reference(logits, gold, "logits", 0.0), rel=1e-5)


class Scores(keras.Model):
    """Parse-head logits held as a weight, to differentiate a loss with respect to them."""

    def __init__(self, shape):
        super().__init__()
        self.scores = self.add_weight(shape=shape, initializer="zeros", name="scores")

    def call(self, batch):
        return {"logits": self.scores.value}


def test_attention_form_has_a_much_weaker_gradient_at_uniform_attention():
    """The issue's claim: at uniform attention the thesis code's gradient is ~1/10 of ours."""
    length = 10
    model = Scores((1, length, length))
    batch = {"gold": keras.ops.convert_to_tensor(np.full((1, length), 3, np.int32))}
    norms = {}
    for form in head_supervision.PARSE_LOSSES:
        def loss(batch, outputs, form=form):
            return {"total": head_supervision.parse_loss(outputs["logits"], batch["gold"], form,
                                                         0.0)}

        _, _, (gradient,) = value_and_gradients(model, loss, batch)
        norms[form] = float(np.linalg.norm(keras.ops.convert_to_numpy(gradient)))
    # d softmax(p) / d logits passes through the softmax Jacobian, whose
    # entries at uniform attention are about 1 / S.
    assert norms["attention"] < norms["logits"] / 5


def test_attention_entropy_by_hand(batch):
    logits, gold = batch
    expected = []
    for b, i in np.ndindex(gold.shape):
        if gold[b, i] >= 0:
            p = np.exp(_log_softmax(logits[b, i].astype(np.float64)))
            expected.append(-(p[p > 0] * np.log(p[p > 0])).sum())
    entropy = float(head_supervision.attention_entropy(logits, gold))
    assert entropy == pytest.approx(np.mean(expected), rel=1e-4)


def test_unknown_form_is_refused(batch):
    logits, gold = batch
    with pytest.raises(ValueError, match="parse_loss='probs'"):
        head_supervision.parse_loss(logits, gold, "probs")


VOCAB = {"inputs": 20, "targets": 20, "deprel": 8, "upos": 8, "xpos": 8}


def _hparams(**overrides):
    hparams = registry.hparams("transformer_tiny")
    hparams.override(dict(parse_layer=0, **overrides))
    return hparams


@pytest.mark.parametrize("model_name", ["dep_parse", "diagonal_parse", "sisa"])
def test_models_use_the_selected_form_and_report_diagnostics(model_name):
    model_class = registry.model(model_name)
    features = {"inputs": np.array([[5, 6, 7, 1], [8, 9, 1, 0]], np.int32),
                "targets": np.array([[5, 6, 1], [7, 1, 0]], np.int32),
                "src_heads": np.array([[2, 0, 2], [0, 1, -1]], np.int32)}
    results, weights = {}, None
    for form in head_supervision.PARSE_LOSSES:
        model = model_class(_hparams(parse_loss=form, parse_loss_weight=0.5,
                                     sisa_loss_weight=0.5), VOCAB)
        if weights is None:
            weights = model.get_weights()
        model.set_weights(weights)
        outputs = model(features, training=False)
        criterion = criteria.for_model(model)
        got = criterion(features, outputs)
        gold = head_gold.gold_head_positions(model, features)
        expected = head_supervision.parse_loss(outputs[model.head_logits_key], gold, form)
        assert float(got["parse"]) == pytest.approx(float(expected), rel=1e-6)
        assert float(got["total"]) == pytest.approx(float(got["nmt"]) + 0.5 * float(got["parse"]),
                                                    rel=1e-6)
        diagnostics = criterion.diagnostics(features, outputs, got)
        assert float(diagnostics["parse_share"]) == pytest.approx(
            0.5 * float(got["parse"]) / float(got["total"]), rel=1e-5)
        assert 0.0 < float(diagnostics["parse_entropy"]) <= np.log(5) + 1e-5
        results[form] = float(got["parse"])
    # Same weights, other form: another value.
    assert results["logits"] != pytest.approx(results["attention"])


@pytest.mark.parametrize("overrides,match", [
    (dict(parse_loss="probs"), "parse_loss='probs'"),
    (dict(parse_label_smoothing=1.0), "parse_label_smoothing=1.0"),
])
def test_bad_parse_loss_hparams_are_refused(overrides, match):
    with pytest.raises(HParamsError, match=match):
        registry.model("dep_parse")(_hparams(**overrides), VOCAB)
