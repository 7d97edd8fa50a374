"""S&H: source factor embeddings, in the Pascal paper's form and Sennrich and Haddow's."""

import keras
import numpy as np
import pytest
from keras import ops

import syntax_t2t.hparams_sets.transformer  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import criteria, registry
from syntax_t2t.backend.gradients import value_and_gradients
from syntax_t2t.hparams import HParamsError
from syntax_t2t.models.sennrich_haddow import BEGIN, END, INSIDE, WHOLE_WORD, subword_tags

pytestmark = pytest.mark.backends

VOCAB_SIZES = {"inputs": 20, "targets": 18, "deprel": 8, "upos": 7, "xpos": 9, "lemma": 12}
HIDDEN = 24


def ints(values):
    """An int32 backend tensor."""
    return ops.convert_to_tensor(np.asarray(values, np.int32))


def to_numpy(tensor):
    return ops.convert_to_numpy(tensor)


def tiny_hparams(overrides=""):
    hp = registry.hparams("transformer_tiny")
    hp.parse(f"hidden_size={HIDDEN},filter_size=32,num_heads=2,num_encoder_layers=1,"
             "num_decoder_layers=1,layer_prepostprocess_dropout=0,attention_dropout=0,"
             "relu_dropout=0")
    return hp.parse(overrides)


def model_batch():
    return {
        "inputs": ints([[5, 6, 7, 8, 1, 0], [9, 10, 1, 0, 0, 0]]),
        "targets": ints([[4, 5, 6, 1], [7, 1, 0, 0]]),
        "src_heads": ints([[2, 0, 4, 2, -1, -1], [0, 1, -1, -1, -1, -1]]),
        "src_deprel": ints([[4, 5, 6, 7, 0, 0], [5, 4, 0, 0, 0, 0]]),
        "src_upos": ints([[4, 5, 6, 5, 0, 0], [6, 4, 0, 0, 0, 0]]),
        "src_xpos": ints([[4, 5, 6, 5, 0, 0], [6, 4, 0, 0, 0, 0]]),
        "src_lemma": ints([[4, 11, 6, 2, 0, 0], [9, 4, 0, 0, 0, 0]]),
        "src_word_position": ints([[1, 1, 1, 2, 0, 0], [1, 2, 0, 0, 0, 0]]),
    }


def test_subword_tags_mark_positions_in_words():
    words = ints([[1, 2, 2, 2, 3, 3, 4, 0, 0]])
    assert to_numpy(subword_tags(words)).tolist() == [
        [WHOLE_WORD, BEGIN, INSIDE, END, BEGIN, END, WHOLE_WORD, 0, 0]]


def test_seed_variant_puts_a_label_embedding_in_the_last_ten_dimensions():
    model = registry.model("sennrich_haddow")(tiny_hparams("position_encoding=none"), VOCAB_SIZES)
    assert model.train_features == {"inputs", "targets", "src_deprel"}
    assert model.decode_features == {"inputs", "src_deprel"}
    assert model.source_embedding.embeddings.shape == (20, HIDDEN - 10)
    (labels,) = model.factor_embeddings
    assert labels.embeddings.shape == (8, 10)
    features = model_batch()
    x = to_numpy(model.embed_source(features, model.source_ids(features), training=False))
    assert x.shape == (2, 6, HIDDEN)
    words = model.source_embedding.embeddings.numpy() * np.sqrt(HIDDEN - 10)
    table = labels.embeddings.numpy() * np.sqrt(10)
    inputs, deprel = to_numpy(features["inputs"]), to_numpy(features["src_deprel"])
    for b, t in np.ndindex(2, 6):
        if inputs[b, t] == 0:
            np.testing.assert_array_equal(x[b, t], 0.0)
            continue
        np.testing.assert_allclose(x[b, t, :HIDDEN - 10], words[inputs[b, t]], rtol=1e-6)
        label = 1 if inputs[b, t] == 1 else deprel[b, t]  # <EOS> gets the <EOS> row
        np.testing.assert_allclose(x[b, t, HIDDEN - 10:], table[label], rtol=1e-6)


def test_only_the_chosen_factors_change_the_translation():
    model = registry.model("sennrich_haddow")(tiny_hparams(), VOCAB_SIZES)
    features = model_batch()
    logits = to_numpy(model(features)["logits"])
    other_upos = dict(features, src_upos=ints([[6, 6, 6, 6, 0, 0], [4, 4, 0, 0, 0, 0]]))
    np.testing.assert_allclose(model(other_upos)["logits"], logits)
    other_deprel = dict(features, src_deprel=ints([[7, 7, 7, 7, 0, 0], [4, 5, 0, 0, 0, 0]]))
    assert not np.allclose(model(other_deprel)["logits"], logits)


def test_original_form_concatenates_several_factors():
    overrides = ("sh_factors=[lemma,upos,deprel,subword_tag],sh_factor_sizes=[6,2,2,1],"
                 "position_encoding=none,source_word_positions=true")
    model = registry.model("sennrich_haddow")(tiny_hparams(overrides), VOCAB_SIZES)
    assert model.train_features == {"inputs", "targets", "src_lemma", "src_upos", "src_deprel",
                                    "src_word_position"}
    shapes = [e.embeddings.shape for e in model.factor_embeddings]
    assert shapes == [(12, 6), (7, 2), (8, 2), (8, 1)]
    assert model.source_embedding.embeddings.shape == (20, HIDDEN - 11)
    features = model_batch()
    x = to_numpy(model.embed_source(features, model.source_ids(features), training=False))
    tags = model.factor_embeddings[3].embeddings.numpy()[:, 0]
    # Subword tags of words [1, 1, 1, 2] and [1, 2], then <EOS>.
    expected = [[BEGIN, INSIDE, END, WHOLE_WORD, 1], [WHOLE_WORD, WHOLE_WORD, 1]]
    for b, row in enumerate(expected):
        np.testing.assert_allclose(x[b, :len(row), -1], tags[row] * 1.0, rtol=1e-6)
    lemmas = model.factor_embeddings[0].embeddings.numpy() * np.sqrt(6)
    np.testing.assert_allclose(x[0, 1, HIDDEN - 11:HIDDEN - 5], lemmas[11], rtol=1e-6)
    # Without word positions every word is whole.
    word_level = registry.model("sennrich_haddow")(
        tiny_hparams(overrides.replace("true", "false")), VOCAB_SIZES)
    assert "src_word_position" not in word_level.train_features
    ids = to_numpy(word_level.factor_ids("subword_tag", features, word_level.source_ids(features)))
    assert ids.tolist() == [[4, 4, 4, 4, 1, 0], [4, 4, 1, 0, 0, 0]]


@pytest.mark.parametrize("overrides,message", [
    ("sh_factors=[tense]", "unknown factor"),
    ("sh_factors=[upos,upos],sh_factor_sizes=[2,2]", "repeats a factor"),
    ("sh_factors=[upos,deprel],sh_factor_sizes=[2]", "one width for each"),
    ("sh_factor_sizes=[0]", "must be positive"),
    ("sh_factor_sizes=[24]", "no room for the word embedding"),
])
def test_bad_factor_hparams_are_named(overrides, message):
    with pytest.raises(HParamsError, match=message):
        registry.model("sennrich_haddow")(tiny_hparams(overrides), VOCAB_SIZES)


def test_missing_factor_vocabulary_or_feature_is_named():
    sizes = {key: value for key, value in VOCAB_SIZES.items() if key != "lemma"}
    with pytest.raises(KeyError, match="lemma"):
        registry.model("sennrich_haddow")(
            tiny_hparams("sh_factors=[lemma],sh_factor_sizes=[4]"), sizes)
    model = registry.model("sennrich_haddow")(tiny_hparams(), VOCAB_SIZES)
    features = {key: value for key, value in model_batch().items() if key != "src_deprel"}
    with pytest.raises(KeyError, match="src_deprel"):
        model(features)


def test_a_few_steps_reduce_the_loss():
    keras.utils.set_random_seed(3)
    model = registry.model("sennrich_haddow")(
        tiny_hparams("sh_factors=[upos,deprel],sh_factor_sizes=[3,3]"), VOCAB_SIZES)
    features = {key: model_batch()[key] for key in model.train_features}
    optimizer = keras.optimizers.Adam(0.02)
    losses = []
    for _ in range(8):
        _, step_losses, gradients = value_and_gradients(model, criteria.for_model(model), features,
                                                        training=True)
        optimizer.apply(gradients, model.trainable_variables)
        losses.append(float(step_losses["total"]))
    assert losses[-1] < 0.75 * losses[0]
