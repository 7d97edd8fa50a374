"""Tests for MG-SA: phrase heads, the phrase memory and the `mgsa` model."""

import numpy as np
import pytest
from keras import ops

import syntax_t2t.hparams_sets  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import criteria, registry
from syntax_t2t.backend.gradients import value_and_gradients
from syntax_t2t.criteria import phrase_tags
from syntax_t2t.data.phrases import ngram_partition
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers.attention import MultiHeadAttention
from syntax_t2t.layers.attention_terms import ParseHead, PhraseHeads
from syntax_t2t.layers.phrase_memory import PhraseMemory
from syntax_t2t.models import mgsa

pytestmark = pytest.mark.backends

VOCABS = {"inputs": 30, "targets": 30, "upos": 20, "deprel": 10, "xpos": 10}
# "She saw the cat ." with its <EOS> and padding; a two-word sentence below it.
HEADS = [[2, 0, 4, 2, 2, -1, -1], [0, 1, -1, -1, -1, -1, -1]]
UPOS = [[5, 6, 7, 8, 9, 0, 0], [10, 11, 0, 0, 0, 0, 0]]
INPUTS = [[5, 6, 7, 8, 9, 1, 0], [10, 11, 1, 0, 0, 0, 0]]


def numpy(value):
    return ops.convert_to_numpy(value)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_phrase_head_groups_keep_a_quarter_for_words():
    assert mgsa.phrase_head_groups(8, 0, 3) == ((2, 3, 4, 5, 6, 7), (0, 0, 1, 1, 2, 2))
    assert mgsa.phrase_head_groups(4, 0, 3) == ((1, 2, 3), (0, 1, 2))
    assert mgsa.phrase_head_groups(4, 2, 2) == ((2, 3), (0, 1))
    with pytest.raises(HParamsError, match="each granularity needs a head"):
        mgsa.phrase_head_groups(4, 2, 3)


def test_ngram_phrase_ids_leave_eos_and_padding_out():
    ids = numpy(mgsa.ngram_phrase_ids(np.array(INPUTS), (2, 3)))
    assert ids.tolist() == [[[0, 0, 1, 1, 2, -1, -1], [0, 0, 0, 1, 1, -1, -1]],
                            [[0, 0, -1, -1, -1, -1, -1], [0, 0, -1, -1, -1, -1, -1]]]
    assert ids[0, 0, :5].tolist() == ngram_partition(5, 2).tolist()


def test_syntactic_phrase_features_worked_example():
    # (VERBP (PRON She) (VERB saw) (NOUNP (DET the) (NOUN cat)) (PUNCT .)): level 1 is
    # (She)(saw)(the cat)(.), level 2 splits "the cat".
    ids, heads, kinds = mgsa.syntactic_phrase_features(np.array(HEADS), 2)
    assert ids[0].tolist() == [[0, 1, 2, 2, 3, -1, -1], [0, 1, 2, 3, 4, -1, -1]]
    assert heads[0, 0].tolist() == [0, 1, 3, 4, -1, -1, -1]
    assert kinds[0, 0].tolist() == [1, 1, 2, 1, 0, 0, 0]
    assert kinds[0, 1].tolist() == [1, 1, 1, 1, 1, 0, 0]
    # "a b" with b attached to a: a's projection is the root, its words are level 1.
    assert ids[1].tolist() == [[0, 1, -1, -1, -1, -1, -1]] * 2
    tags = numpy(mgsa.phrase_tags(heads, kinds, np.array(UPOS), 20))
    assert tags[0, 0].tolist() == [5, 6, 8 + 20, 9, 0, 0, 0]  # NOUNP takes "cat"'s tag + V


def test_partitions_of_a_tree_with_an_extra_root_phrase():
    # ROOT has two dependents ("saw" and "."): the root is the extra ROOT phrase (level 0),
    # level 1 holds saw's projection and the final punctuation.
    ids, heads, kinds = mgsa.syntactic_phrase_features(np.array([[2, 0, 4, 2, 0]]), 1)
    assert ids[0, 0].tolist() == [0, 0, 0, 0, 1]
    assert heads[0, 0].tolist() == [1, 4, -1, -1, -1]
    assert kinds[0, 0].tolist() == [mgsa.PROJECTION, mgsa.WORD, 0, 0, 0]


def segments_of(phrase_ids):
    return [np.flatnonzero(phrase_ids == p) for p in range(phrase_ids.max() + 1)]


def test_max_pooling_matches_naive_reference(rng):
    x = rng.normal(size=(2, 7, 8)).astype(np.float32)
    ids, _, _ = mgsa.syntactic_phrase_features(np.array(HEADS), 2)
    layer = PhraseMemory(8, 2, composition="max")
    memory, mask = (numpy(value) for value in layer(x, ids))
    for b in range(2):
        for g in range(2):
            segments = segments_of(ids[b, g])
            assert mask[b, g].tolist() == [p < len(segments) for p in range(7)]
            for p, tokens in enumerate(segments):
                np.testing.assert_allclose(memory[b, g, p], x[b, tokens].max(axis=0), rtol=1e-6)
            assert not memory[b, g, len(segments):].any()


def test_attention_composition_matches_naive_reference(rng):
    x = rng.normal(size=(2, 7, 8)).astype(np.float32)
    ids = numpy(mgsa.ngram_phrase_ids(np.array(INPUTS), (2, 3)))
    layer = PhraseMemory(8, 2, composition="attention")
    memory, _ = layer(x, ids)
    memory = numpy(memory)
    wq, wk, wv = (numpy(layer.composer[name].kernel) for name in ("query", "key", "value"))
    for b in range(2):
        for g in range(2):
            for p, tokens in enumerate(segments_of(ids[b, g])):
                query = x[b, tokens].max(axis=0) @ wq
                scores = (x[b, tokens] @ wk) @ query / np.sqrt(8)
                weights = np.exp(scores - scores.max())
                weights /= weights.sum()
                np.testing.assert_allclose(memory[b, g, p], weights @ (x[b, tokens] @ wv),
                                           rtol=1e-4, atol=1e-5)


def test_lstm_composition_is_the_last_state_of_each_phrase(rng):
    x = rng.normal(size=(2, 7, 8)).astype(np.float32)
    ids, _, _ = mgsa.syntactic_phrase_features(np.array(HEADS), 1)
    layer = PhraseMemory(8, 1, composition="lstm")
    memory, _ = layer(x, ids)
    memory = numpy(memory)
    cell = layer.composer.cell.cell
    for b in range(2):
        for p, tokens in enumerate(segments_of(ids[b, 0])):
            states = [np.zeros([1, 8], np.float32), np.zeros([1, 8], np.float32)]
            for t in tokens:  # a fresh LSTM over the phrase alone
                output, states = cell(x[b, t][None], states)
            np.testing.assert_allclose(memory[b, 0, p], numpy(output)[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("interaction", ["lstm", "on_lstm"])
def test_interaction_keeps_empty_slots_zero(rng, interaction):
    x = rng.normal(size=(2, 7, 8)).astype(np.float32)
    ids = numpy(mgsa.ngram_phrase_ids(np.array(INPUTS), (2,)))
    memory, mask = (numpy(value) for value in PhraseMemory(
        8, 1, composition="max", interaction=interaction, chunk_size=4)(x, ids))
    assert memory.shape == (2, 1, 7, 8)
    assert not memory[~mask].any()
    assert np.abs(memory[mask]).sum(axis=-1).min() > 0


def test_unigram_max_pooled_phrase_head_equals_word_head(rng):
    x = rng.normal(size=(2, 7, 8)).astype(np.float32)
    valid = np.array(INPUTS) > 0
    words = MultiHeadAttention(4, 2)
    phrases = MultiHeadAttention(4, 2, terms=[PhraseHeads((1, 3), (0, 0))])
    words.build(x.shape)
    phrases.build(x.shape)
    phrases.set_weights(words.get_weights())
    unigrams = np.where(valid, np.arange(7), -1)[:, None]  # every token its own phrase
    memory, mask = PhraseMemory(8, 1, composition="max")(x, unigrams)
    assert (numpy(mask)[:, 0] == valid).all()
    expected, _ = words(x, attention_mask=valid[:, None, :])
    got, details = phrases(x, attention_mask=valid[:, None, :],
                           term_inputs={"phrase_memory": memory, "phrase_mask": mask},
                           return_probs=True)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # And a bigram memory changes exactly the phrase heads' attention.
    bigrams = np.where(valid, np.arange(7) // 2, -1)[:, None]
    memory, mask = PhraseMemory(8, 1, composition="max")(x, bigrams)
    _, changed = phrases(x, attention_mask=valid[:, None, :],
                         term_inputs={"phrase_memory": memory, "phrase_mask": mask},
                         return_probs=True)
    differs = np.abs(numpy(changed["probs"]) - numpy(details["probs"])).max(axis=(0, 2, 3))
    assert (differs[[0, 2]] == 0).all() and (differs[[1, 3]] > 1e-3).all()
    assert numpy(changed["probs"])[0, 1, 0, 3:].max() < 1e-6  # 5 words: 3 bigrams


def test_phrase_heads_need_a_memory():
    layer = MultiHeadAttention(4, 2, terms=[PhraseHeads((1,), (0,))])
    with pytest.raises(ValueError, match="no phrase_memory"):
        layer(np.zeros([1, 3, 8], np.float32))
    with pytest.raises(ValueError, match="one index >= 0 per phrase head"):
        MultiHeadAttention(4, 2, terms=[PhraseHeads((1, 2), (0,))])
    with pytest.raises(ValueError, match="head 1 cannot be both a phrase head and a parse head"):
        MultiHeadAttention(4, 2, terms=[PhraseHeads((1,), (0,)), ParseHead(1)])


def test_phrase_tag_loss_against_hand_computation():
    logits = np.log(np.array([[[[0.5, 0.25, 0.25], [0.2, 0.2, 0.6], [1 / 3] * 3]]], np.float32))
    tags = np.array([[[1, 2, 0]]])  # the third slot holds no phrase
    expected = -(np.log(0.25) + np.log(0.6)) / 2
    np.testing.assert_allclose(phrase_tags.phrase_tag_loss(logits, tags), expected, rtol=1e-5)


def tiny_model(**overrides):
    hparams = registry.hparams("transformer_tiny")
    hparams.override(dict(hidden_size=16, filter_size=32, **overrides))
    return registry.model("mgsa")(hparams, VOCABS)


def plain_batch():
    return {"inputs": np.array(INPUTS), "targets": np.array(INPUTS),
            "src_heads": np.array(HEADS), "src_upos": np.array(UPOS)}


def batch(model):
    """The batch with the features `model` derives on the host, as the trainer adds them."""
    features = plain_batch()
    features.update(model.derived_features.compute(features))
    return features


def test_model_reads_the_derived_features_and_refuses_a_batch_without_them():
    model = tiny_model()
    derived = model.derived_features.compute(plain_batch())
    assert sorted(derived) == sorted(
        [f"mgsa_phrases_{k}" for k in (1, 2, 3)] + [f"mgsa_tag_heads_{k}" for k in (1, 2, 3)]
        + [f"mgsa_tag_kinds_{k}" for k in (1, 2, 3)])
    features = {**plain_batch(), **derived}
    computed = model(features)
    # Derived on the host only: the model says which keys are missing and how to add them.
    with pytest.raises(KeyError, match=r"mgsa_phrases_1, .*mgsa_tag_kinds_3.*derived_features"):
        model(plain_batch())
    # The phrases the model reads are the derived ones: other partitions change the logits.
    moved = dict(features, mgsa_phrases_1=np.where(derived["mgsa_phrases_1"] >= 0, 0, -1))
    assert not np.allclose(numpy(model(moved)["logits"]), numpy(computed["logits"]))
    losses = criteria.for_model(model)(features, computed)
    assert set(losses) == {"nmt", "phrase_tag", "total"}
    np.testing.assert_allclose(losses["total"], losses["nmt"] + 0.001 * losses["phrase_tag"],
                               rtol=1e-6)
    assert model.encoder_layers[0].self_attention.term(PhraseHeads).heads == (1, 2, 3)
    assert not hasattr(model.encoder_layers[1].self_attention, "phrase_memory")


def test_ngram_model_needs_no_trees():
    model = tiny_model(mgsa_partition="ngram", mgsa_composition="max", mgsa_layers=[0, 1])
    assert model.train_features == {"inputs", "targets"}
    assert model.derived_features is None
    outputs = model({"inputs": np.array(INPUTS), "targets": np.array(INPUTS)})
    losses = criteria.for_model(model)({"targets": np.array(INPUTS)}, outputs)
    assert set(losses) == {"nmt", "total"}


def test_bad_hparams_are_named():
    with pytest.raises(HParamsError, match="mgsa_composition"):
        tiny_model(mgsa_composition="cnn")
    with pytest.raises(HParamsError, match="mgsa_partition"):
        tiny_model(mgsa_partition="random")
    with pytest.raises(HParamsError, match="mgsa_layers"):
        tiny_model(mgsa_layers=[5])


@pytest.mark.parametrize("interaction", ["lstm", "on_lstm"])
def test_tag_loss_reads_the_composition_not_the_interaction(interaction):
    # Seed eq. 9-10: tags are predicted from G_x, the memory right after composition, so
    # the tag loss has no gradient into the interaction's weights (eq. 11 comes after).
    model = tiny_model(mgsa_interaction=interaction, mgsa_composition="attention")
    _, _, gradients = value_and_gradients(model, criteria.for_model(model), batch(model),
                                          total_key="phrase_tag")
    by_weight = {id(weight): gradient
                 for weight, gradient in zip(model.trainable_variables, gradients)}
    memory = model.encoder_layers[0].phrase_memory
    interaction_weights = memory.interactor.trainable_weights
    composition_weights = [dense.kernel for dense in memory.composer.values()]
    for weight in interaction_weights:  # None on TensorFlow, zeros on JAX
        gradient = by_weight[id(weight)]
        assert gradient is None or not np.any(numpy(gradient)), weight.path
    assert all(by_weight[id(weight)] is not None and np.any(numpy(by_weight[id(weight)]))
               for weight in composition_weights)


def test_phrase_memory_returns_the_composition_before_the_interaction(rng):
    x = rng.normal(size=(1, 5, 8)).astype(np.float32)
    ids = np.array([[[0, 0, 1, 2, 2]]])
    plain, _ = PhraseMemory(8, 1, composition="max")(x, ids)
    memory, mask, composed = PhraseMemory(8, 1, composition="max", interaction="lstm")(
        x, ids, return_composition=True)
    np.testing.assert_allclose(composed, plain, rtol=1e-6)
    assert not np.allclose(memory, composed)
    assert numpy(mask).tolist() == [[[True, True, True, False, False]]]


def test_model_phrases_follow_the_seeds_figure_by_default():
    # "Bush held a talk with Sharon" (UD heads) + <EOS>: level 1 (Bush)(held a talk with
    # Sharon), level 2 (Bush)(held)(a talk)(with Sharon), as in the seed's Figure 1.
    heads = np.array([[2, 0, 4, 2, 6, 2, -1]])
    derived = tiny_model().derived_features.compute({"src_heads": heads})
    assert derived["mgsa_phrases_1"].tolist() == [[0, 1, 1, 1, 1, 1, -1]]
    assert derived["mgsa_phrases_2"].tolist() == [[0, 1, 2, 2, 3, 3, -1]]
    assert derived["mgsa_phrases_3"].tolist() == [[0, 1, 2, 3, 4, 5, -1]]
    # The VP's tag is its head's (a projection); Bush is a word.
    assert derived["mgsa_tag_kinds_1"][0, :2].tolist() == [mgsa.WORD, mgsa.PROJECTION]
    flat = tiny_model(mgsa_dependency_phrases="projection").derived_features
    assert flat.compute({"src_heads": heads})["mgsa_phrases_1"].tolist() == [[0, 1, 2, 2, 3, 3, -1]]
    with pytest.raises(HParamsError, match="mgsa_dependency_phrases"):
        tiny_model(mgsa_dependency_phrases="flat")


def test_summed_tag_loss_per_target_token_against_hand_computation():
    logits = np.log(np.array([[[[0.5, 0.25, 0.25], [0.2, 0.2, 0.6], [1 / 3] * 3]]], np.float32))
    tags = np.array([[[1, 2, 0]]])
    expected = -(np.log(0.25) + np.log(0.6)) / 7  # summed over phrases, per target token
    np.testing.assert_allclose(phrase_tags.phrase_tag_loss(logits, tags, "sum", 7.0), expected,
                               rtol=1e-5)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_model_tag_loss_reduction(reduction):
    model = tiny_model(mgsa_tag_loss_reduction=reduction)
    features = batch(model)
    outputs = model(features)
    losses = criteria.for_model(model)(features, outputs)
    _, heads, kinds = model.syntactic_features(features, 7)
    tags = numpy(mgsa.phrase_tags(heads, kinds, features["src_upos"], VOCABS["upos"]))
    log_probs = numpy(ops.log_softmax(outputs["phrase_tag_logits"], axis=-1))
    naive = [-log_probs[b, k, s, tags[b, k, s]] for b, k, s in zip(*np.nonzero(tags))]
    # The seed's eq. 12 per target token (6 + 3 tokens of INPUTS), or the mean over phrases.
    expected = sum(naive) / (9 if reduction == "sum" else len(naive))
    np.testing.assert_allclose(losses["phrase_tag"], expected, rtol=1e-5)
    np.testing.assert_allclose(losses["total"], losses["nmt"] + 0.001 * losses["phrase_tag"],
                               rtol=1e-6)
    with pytest.raises(HParamsError, match="mgsa_tag_loss_reduction='max'"):
        tiny_model(mgsa_tag_loss_reduction="max")
