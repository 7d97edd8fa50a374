"""Every criterion (`syntax_t2t/criteria/`) against a naive NumPy reference.

The criteria read only what the models contract offers (hparams, the
supervised head, the source frame, the gold derivations), so small stand-in
models give them that here and no network is built. Runs on every backend.
"""

import math

import numpy as np
import pytest
from keras import ops

from syntax_t2t import criteria, registry
from syntax_t2t.criteria import head_gold, nsd_distances, phrase_tags, reduction, translation
from syntax_t2t.criteria.head_supervision import HeadSupervision
from syntax_t2t.criteria.nsd_distances import SyntacticDistances
from syntax_t2t.criteria.phrase_tags import PhraseTags
from syntax_t2t.criteria.translation import Translation
from syntax_t2t.criteria.tree2seq import Tree2SeqLoss
from syntax_t2t.hparams import HParams
from syntax_t2t.models import contract
from syntax_t2t.models.contract import ModelContract, SupervisedHead
from syntax_t2t.models.mgsa import PROJECTION, WORD
from syntax_t2t.models.transformer import Transformer

pytestmark = pytest.mark.backends

TARGETS = np.array([[5, 6, 1, 0], [7, 1, 0, 0]], np.int32)
# Words 1..3 with heads 2 0 2 (0 = ROOT), then <EOS>; the second sentence has two words.
INPUTS = np.array([[5, 6, 7, 1], [8, 9, 1, 0]], np.int32)
SRC_HEADS = np.array([[2, 0, 2, -1], [0, 1, -1, -1]], np.int32)


def value(tensor):
    return float(ops.convert_to_numpy(tensor))


def log_softmax(x):
    x = np.asarray(x, np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def naive_smoothed_cross_entropy(logits, targets, eps):
    """The mean over real tokens of sum_v q(v) (log q(v) - log p(v)), q the soft targets."""
    total, count = 0.0, 0
    vocab = logits.shape[-1]
    for b, t in np.ndindex(targets.shape):
        if targets[b, t] == 0:
            continue
        q = np.full(vocab, eps / (vocab - 1))
        q[targets[b, t]] = 1.0 - eps
        log_p = log_softmax(logits[b, t])
        total += sum(q[v] * (math.log(q[v]) - log_p[v]) for v in range(vocab) if q[v] > 0)
        count += 1
    return total / count


class StandIn(ModelContract):
    """Only the contract's members, and the hparams a criterion reads."""

    def __init__(self, **hparams):
        self.hparams = HParams(**{"label_smoothing": 0.1, **hparams})


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# --------------------------------------------------------------- translation


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_translation_is_the_smoothed_cross_entropy_minus_its_minimum(rng, eps):
    logits = rng.normal(size=(2, 4, 9)).astype(np.float32)
    losses = Translation(StandIn(label_smoothing=eps))({"targets": TARGETS}, {"logits": logits})
    assert set(losses) == {"nmt", "total"}
    assert value(losses["nmt"]) == pytest.approx(
        naive_smoothed_cross_entropy(logits, TARGETS, eps), rel=1e-5, abs=1e-6)
    assert value(losses["total"]) == value(losses["nmt"])


def test_translation_reads_the_smoothing_when_the_loss_is_taken(rng):
    model = StandIn(label_smoothing=0.0)
    criterion = Translation(model)
    logits = rng.normal(size=(2, 4, 9)).astype(np.float32)
    model.hparams.label_smoothing = 0.2
    assert value(criterion({"targets": TARGETS}, {"logits": logits})["nmt"]) == pytest.approx(
        naive_smoothed_cross_entropy(logits, TARGETS, 0.2), rel=1e-5)


def test_parse_logits_over_the_prefixed_source_are_counted_against_src_heads():
    # Rows/columns: ROOT, w1, w2, w3, EOS. Word 1 -> 2 (right), word 2 -> 3
    # (wrong), word 3 -> 2 (right); the ROOT and EOS rows never count.
    predicted = np.array([[0, 2, 3, 2, 4], [0, 0, 0, 0, 0]])
    logits = np.eye(5, dtype=np.float32)[predicted]
    counts = Translation(StandIn()).eval_counts({"src_heads": SRC_HEADS}, {"parse_logits": logits})
    # Second sentence: word 1 -> ROOT (right), word 2 -> ROOT (wrong: its head is 1).
    assert {k: value(v) for k, v in counts.items()} == {"correct_heads": 3.0, "words": 5.0}
    assert Translation(StandIn()).eval_counts({"targets": TARGETS}, {"parse_logits": logits}) == {}


@pytest.mark.parametrize("seed", range(5))
def test_attachment_counts_match_a_naive_loop(seed):
    rng = np.random.default_rng(seed)
    batch, length = 3, 6
    words = rng.integers(0, length + 1, size=batch)
    heads = np.full((batch, length), -1, np.int32)
    for b in range(batch):
        heads[b, :words[b]] = rng.integers(0, words[b] + 1, size=words[b])
    logits = rng.normal(size=(batch, length + 1, length + 1)).astype(np.float32)
    correct = sum(int(np.argmax(logits[b, i + 1]) == heads[b, i])
                  for b in range(batch) for i in range(words[b]))
    gold = head_gold.gold_positions_from_heads(heads, length + 1)
    counts = head_gold.attachment_counts(logits, gold)
    assert (value(counts["correct_heads"]), value(counts["words"])) == (correct, words.sum())


def test_gold_positions_from_heads_shift_words_behind_root():
    heads = np.array([[2, 0, -1], [0, -1, -1]], np.int32)
    def gold(length):
        return ops.convert_to_numpy(head_gold.gold_positions_from_heads(heads, length))

    np.testing.assert_array_equal(gold(5), [[-1, 2, 0, -1, -1], [-1, 0, -1, -1, -1]])
    np.testing.assert_array_equal(gold(3), [[-1, 2, 0], [-1, 0, -1]])


# ---------------------------------------------------------- head supervision


class Parser(StandIn):
    """A model whose head `key` is supervised against `gold` (the contract's gold kinds)."""

    criterion = contract.HEAD_SUPERVISION
    source_heads = Transformer.source_heads

    def __init__(self, gold, form="logits", smoothing=None, weight=0.5, key="parse_logits"):
        super().__init__(source_word_positions=gold == contract.PARENTS)
        self.prefix_root = gold != contract.PARENTS
        self.head = SupervisedHead(key, gold, weight, form, smoothing)

    def supervised_head(self):
        return self.head


def naive_gold(gold):
    """Each row's gold head position by hand, -1 where the row is not scored."""
    if gold == contract.DEPENDENCY_HEADS:  # ROOT-prefixed: word i at position i
        return np.array([[-1, 2, 0, 2, -1], [-1, 0, 1, -1, -1]])
    if gold == contract.PREVIOUS_TOKEN:
        return np.array([[-1, 0, 1, 2, -1], [-1, 0, 1, -1, -1]])
    # SISA: sentence 1 is split into subwords [w1 w1 w2 w3 EOS]; a token's
    # gold is its parent word's first subword, a token of a ROOT-attached
    # word points at its own word's first subword.
    return np.array([[2, 2, 2, 2, -1], [0, 0, -1, -1, -1]])


PARENT_BATCH = {"inputs": np.array([[5, 6, 7, 8, 1], [8, 9, 1, 0, 0]], np.int32),
                "src_heads": np.array([[3, 3, 0, 3, -1], [0, 1, -1, -1, -1]], np.int32),
                "src_word_position": np.array([[1, 1, 2, 3, 0], [1, 2, 0, 0, 0]], np.int32)}


def naive_head_loss(logits, gold, form, eps):
    """Mean over scored rows of the cross-entropy against the (smoothed) gold column."""
    rows = []
    for b, i in np.ndindex(gold.shape):
        if gold[b, i] < 0:
            continue
        scores = logits[b, i].astype(np.float64)
        candidates = scores > -1e9 / 2
        if form == "attention":
            scores = np.exp(log_softmax(scores))
            candidates = np.ones_like(candidates)
        log_p = log_softmax(scores)
        n = candidates.sum()
        q = np.where(candidates, eps / max(n - 1, 1), 0.0)
        q[gold[b, i]] = 1.0 - eps
        rows.append(sum(q[v] * (math.log(q[v]) - log_p[v]) for v in range(len(q)) if q[v] > 0))
    return np.mean(rows)


def naive_entropy(logits, gold):
    rows = [-(np.exp(log_softmax(logits[b, i])) * log_softmax(logits[b, i])).sum()
            for b, i in np.ndindex(gold.shape) if gold[b, i] >= 0]
    return np.mean(rows)


@pytest.mark.parametrize("gold_kind", contract.GOLD_KINDS)
@pytest.mark.parametrize("form,smoothing", [("logits", None), ("logits", 0.2),
                                            ("attention", None), ("attention", 0.0)])
def test_head_supervision_against_the_gold_it_names(rng, gold_kind, form, smoothing):
    model = Parser(gold_kind, form, smoothing,
                   key="sisa_logits" if gold_kind == contract.PARENTS else "parse_logits")
    features = dict(PARENT_BATCH) if gold_kind == contract.PARENTS else {
        "inputs": INPUTS, "src_heads": SRC_HEADS}
    features["targets"] = TARGETS
    gold = naive_gold(gold_kind)
    size = gold.shape[1]
    logits = rng.normal(size=(2, size, size)).astype(np.float32)
    logits[1, :, 3:] = -1e9  # the second sentence's padding keys are masked
    outputs = {"logits": rng.normal(size=(2, 4, 9)).astype(np.float32),
               model.head.logits_key: logits}
    criterion = criteria.for_model(model)
    assert isinstance(criterion, HeadSupervision)
    np.testing.assert_array_equal(ops.convert_to_numpy(criterion.gold(features)), gold)
    losses = criterion(features, outputs)
    eps = {"logits": 0.0, "attention": 0.1}[form] if smoothing is None else smoothing
    expected = naive_head_loss(logits, gold, form, eps)
    assert value(losses["parse"]) == pytest.approx(expected, rel=1e-4)
    nmt = naive_smoothed_cross_entropy(outputs["logits"], TARGETS, 0.1)
    assert value(losses["nmt"]) == pytest.approx(nmt, rel=1e-5)
    assert value(losses["total"]) == pytest.approx(nmt + 0.5 * expected, rel=1e-4)

    diagnostics = criterion.diagnostics(features, outputs, losses)
    assert value(diagnostics["parse_share"]) == pytest.approx(
        0.5 * expected / (nmt + 0.5 * expected), rel=1e-4)
    assert value(diagnostics["parse_entropy"]) == pytest.approx(naive_entropy(logits, gold),
                                                               rel=1e-4)
    counts = criterion.eval_counts(features, outputs)
    scored = gold >= 0
    correct = (np.argmax(logits, axis=-1) == gold)[scored].sum()
    assert (value(counts["correct_heads"]), value(counts["words"])) == (correct, scored.sum())


def test_head_supervision_refuses_a_model_without_a_supervised_head():
    with pytest.raises(ValueError, match="supervises no attention head"):
        HeadSupervision(StandIn())


def test_supervised_heads_refuse_unknown_golds_and_forms():
    with pytest.raises(ValueError, match="gold='grandparents'"):
        SupervisedHead("parse_logits", "grandparents", 1.0)
    with pytest.raises(ValueError, match="form='probs'"):
        SupervisedHead("parse_logits", contract.PREVIOUS_TOKEN, 1.0, "probs")


# ------------------------------------------------------------ phrase tags


class Tagger(StandIn):
    """MG-SA's members that its criterion reads: the derived phrase structure and vocabularies."""

    def __init__(self, reduction_name, tag_heads, tag_kinds):
        super().__init__(mgsa_tag_loss_weight=0.25)
        self.tag_loss_reduction = reduction_name
        self.arrays = (np.zeros_like(tag_heads), tag_heads, tag_kinds)

    def vocab_size(self, key):
        return {"upos": 4}[key]

    def syntactic_features(self, features, length):
        return self.arrays


@pytest.mark.parametrize("reduction_name", contract.REDUCTIONS)
def test_phrase_tags_against_hand_labels(rng, reduction_name):
    # One level (K = 1) over 3 words with UPOS 1 2 3: a single word (word 2),
    # the projection of word 0, and no phrase.
    tag_heads = np.array([[[2, 0, 0]], [[1, 0, 0]]], np.int32)
    tag_kinds = np.array([[[WORD, PROJECTION, 0]], [[PROJECTION, 0, 0]]], np.int32)
    features = {"targets": TARGETS, "src_upos": np.array([[1, 2, 3], [3, 2, 0]], np.int32)}
    tags = np.array([[[3, 1 + 4, 0]], [[2 + 4, 0, 0]]])  # word: its UPOS; phrase: UPOS + V
    logits = rng.normal(size=(2, 1, 3, 8)).astype(np.float32)
    outputs = {"logits": rng.normal(size=(2, 4, 9)).astype(np.float32),
               "phrase_tag_logits": logits}
    losses = PhraseTags(Tagger(reduction_name, tag_heads, tag_kinds))(features, outputs)
    terms = [-log_softmax(logits[b, k, s])[tags[b, k, s]]
             for b, k, s in np.ndindex(tags.shape) if tags[b, k, s]]
    expected = np.sum(terms) / (5 if reduction_name == "sum" else len(terms))  # 5 target tokens
    assert value(losses["phrase_tag"]) == pytest.approx(expected, rel=1e-5)
    assert value(losses["total"]) == pytest.approx(value(losses["nmt"]) + 0.25 * expected,
                                                   rel=1e-5)
    without = PhraseTags(Tagger(reduction_name, tag_heads, tag_kinds))(
        features, {"logits": outputs["logits"]})
    assert set(without) == {"nmt", "total"}


def test_reductions_by_hand():
    losses = np.array([[1.0, 2.0, 4.0]], np.float32)
    weights = np.array([[1.0, 1.0, 0.0]], np.float32)
    assert value(reduction.reduce_loss(losses, weights, "mean")) == pytest.approx(1.5)
    assert value(reduction.reduce_loss(losses, weights, "sum", 6.0)) == pytest.approx(0.5)
    assert value(reduction.target_tokens(TARGETS)) == 5.0
    with pytest.raises(ValueError, match="num_target_tokens is missing"):
        reduction.reduce_loss(losses, weights, "sum")


# ------------------------------------------------------ syntactic distances


class DistancePredictor(StandIn):
    """NSD's members that its criterion reads: the gold distance ids and the reductions."""

    loss_reductions = ("mean", "sum")

    def __init__(self, distance_loss):
        super().__init__(nsd_max_distance=1, nsd_distance_loss=distance_loss,
                         nsd_loss_weight=0.5)

    def source_distance_ids(self, features, length):
        return np.array([[3, 1, 2], [2, 0, 0]], np.int32)[:, :length]

    def target_distance_ids(self, features, length):
        raise AssertionError("no nsd_target_logits, so no target distances are read")


def naive_distance_terms(logits, gold_ids, tokens):
    """L_ent_dist averaged over words; L_dist summed over words and pairs per target token."""
    k = 1
    entropy, squared, hinge, words = [], 0.0, 0.0, []
    for b, i in np.ndindex(gold_ids.shape):
        if gold_ids[b, i] == 0:
            continue
        log_p = log_softmax(logits[b, i])
        entropy.append(-log_p[gold_ids[b, i] - 1])
        expected = (np.exp(log_p) * np.arange(-k, k + 1)).sum()
        words.append((b, i, gold_ids[b, i] - k - 1, expected))
        squared += (gold_ids[b, i] - k - 1 - expected) ** 2
    for b, i, gold_i, predicted_i in words:
        for c, j, gold_j, predicted_j in words:
            if c == b and j > i:
                hinge += max(0.0, 1 - np.sign(gold_i - gold_j) * (predicted_i - predicted_j))
    return np.mean(entropy), (squared + hinge) / tokens


@pytest.mark.parametrize("distance_loss", [True, False])
def test_syntactic_distances_against_the_equations(rng, distance_loss):
    logits = rng.normal(size=(2, 3, 3)).astype(np.float32)
    outputs = {"logits": rng.normal(size=(2, 4, 9)).astype(np.float32), "nsd_logits": logits}
    losses = SyntacticDistances(DistancePredictor(distance_loss))({"targets": TARGETS}, outputs)
    entropy, distance = naive_distance_terms(logits, np.array([[3, 1, 2], [2, 0, 0]]), 5)
    assert value(losses["nsd_entropy"]) == pytest.approx(entropy, rel=1e-5)
    terms = entropy + (distance if distance_loss else 0.0)
    assert value(losses["total"]) == pytest.approx(value(losses["nmt"]) + 0.5 * terms, rel=1e-5)
    if distance_loss:
        assert value(losses["nsd_distance"]) == pytest.approx(distance, rel=1e-5)
    else:
        assert "nsd_distance" not in losses
    got = nsd_distances.distance_losses(logits, np.array([[3, 1, 2], [2, 0, 0]]), 1, "mean",
                                        "sum", 5.0)
    assert value(got[1]) == pytest.approx(distance, rel=1e-5)


# --------------------------------------------------------------- Tree2Seq


class SampledSoftmax:
    """An output layer whose sampled loss is a known constant."""

    def loss(self, inputs, targets):
        return ops.convert_to_tensor(2.5, "float32")


@pytest.mark.parametrize("normalization", ["sentence", "token"])
def test_tree2seq_loss_per_sentence_or_token(rng, normalization):
    model = StandIn(loss_normalization=normalization, label_smoothing=0.0)
    model.output_layer = SampledSoftmax()
    logits = rng.normal(size=(2, 4, 9)).astype(np.float32)
    losses = Tree2SeqLoss(model)({"targets": TARGETS}, {"logits": logits})
    nmt = naive_smoothed_cross_entropy(logits, TARGETS, 0.0)
    assert value(losses["nmt"]) == pytest.approx(nmt, rel=1e-5)
    # 5 target tokens in 2 sentences: the sentence mean of summed token losses.
    scale = 5 / 2 if normalization == "sentence" else 1.0
    assert value(losses["total"]) == pytest.approx(nmt * scale, rel=1e-5)
    sampled = Tree2SeqLoss(model)({"targets": TARGETS},
                                  {"logits": logits, "softmax_inputs": np.zeros((2, 4, 3))})
    assert value(sampled["nmt"]) == 2.5
    assert value(sampled["total"]) == pytest.approx(2.5 * scale)


# ---------------------------------------------------------- the selection


def test_for_model_builds_what_the_contract_names():
    assert type(criteria.for_model(StandIn())) is Translation
    assert type(criteria.for_model(Parser(contract.PREVIOUS_TOKEN))) is HeadSupervision

    class Own(translation.Translation):
        pass

    model = StandIn()
    model.criterion = Own
    assert type(criteria.for_model(model)) is Own
    model.criterion = "translaton"
    with pytest.raises(registry.RegistryError, match="Did you mean translation"):
        criteria.for_model(model)


def test_the_built_in_models_name_their_criteria():
    import syntax_t2t.models  # noqa: F401  (registers the models)

    expected = {"transformer": Translation, "dep_parse": HeadSupervision,
                "diagonal_parse": HeadSupervision, "sisa": HeadSupervision, "mgsa": PhraseTags,
                "nsd": SyntacticDistances, "tree2seq": Tree2SeqLoss, "anmt": Tree2SeqLoss,
                "pascal": Translation}
    for name, criterion in expected.items():
        assert registry.criteria.get(registry.model(name).criterion) is criterion, name
    assert phrase_tags.PhraseTags is PhraseTags
