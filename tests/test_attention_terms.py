"""Attention terms serialise, and the blocks that hold them round-trip through their configs.

The numbers of each term are tested against naive references in
test_attention.py (label biases, specialised and parse heads),
test_pascal.py, test_sisa.py and test_mgsa.py; here: configs.
"""

import json

import keras
import numpy as np
import pytest
from keras import ops

from syntax_t2t.layers.attention import MultiHeadAttention
from syntax_t2t.layers.attention_terms import (BiaffineHead, LabelBias, ParentScaledHeads,
                                               ParseHead, PhraseHeads, SpecializedHeads,
                                               deserialize_term, serialize_term)
from syntax_t2t.layers.encoder_layer import TransformerEncoderLayer
from syntax_t2t.layers.multi_granularity_encoder_layer import MultiGranularityEncoderLayer

pytestmark = pytest.mark.backends

WIDTH, HEADS, LENGTH = 8, 4, 5

#: One of each term, with options away from their defaults.
TERMS = {
    "label_bias": lambda: LabelBias({"relative": 5, "tree": 3}, ["tree"]),
    "specialised": lambda: SpecializedHeads([2, 0]),
    "parse": lambda: ParseHead(3),
    "parent_scaled": lambda: ParentScaledHeads([1], variance=2.0, weighting="parent_only",
                                               ignoring=0.25, seed=3),
    "biaffine": lambda: BiaffineHead(3, size=6),
    "phrase": lambda: PhraseHeads([1, 3], [0, 1]),
}


@pytest.mark.parametrize("kind", sorted(TERMS))
def test_each_term_round_trips_through_its_config(kind):
    term = TERMS[kind]()
    clone = deserialize_term(serialize_term(term))
    assert type(clone) is type(term) and clone is not term
    assert clone.get_config() == term.get_config()
    assert clone.heads == term.heads and clone.input_names == term.input_names
    # Configs are plain data: a JSON file keeps them.
    stored = json.loads(json.dumps(serialize_term(term)))
    assert deserialize_term(stored).get_config() == term.get_config()


def test_deserialize_refuses_what_is_not_a_term():
    with pytest.raises(TypeError, match="expected an AttentionTerm"):
        deserialize_term(keras.saving.serialize_keras_object(keras.layers.Dense(2)))


@pytest.fixture
def rng():
    return np.random.default_rng(3)


def random_weights(layer, rng):
    for weight in layer.weights:
        weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))


def test_an_encoder_block_with_terms_round_trips(rng):
    terms = [TERMS["specialised"](), TERMS["parse"](), ParentScaledHeads([1], variance=2.0),
             TERMS["biaffine"](), TERMS["label_bias"]()]
    block = TransformerEncoderLayer(WIDTH, 12, HEADS, attention_terms=terms, name="block")
    shapes = {"spec_inputs": (None, None, 6)}
    block.build((None, None, WIDTH), attention_inputs_shape=shapes)
    random_weights(block, rng)
    clone = TransformerEncoderLayer.from_config(block.get_config())
    assert clone.get_config() == block.get_config()
    assert [type(t) for t in clone.self_attention.terms] == [
        SpecializedHeads, ParseHead, ParentScaledHeads, BiaffineHead, LabelBias]
    clone.build((None, None, WIDTH), attention_inputs_shape=shapes)
    assert [w.path for w in clone.weights] == [w.path for w in block.weights]
    clone.set_weights(block.get_weights())
    x = rng.normal(size=(2, LENGTH, WIDTH)).astype("float32")
    inputs = {"labels": {"relative": rng.integers(0, 5, (LENGTH, LENGTH)),
                         "tree": rng.integers(0, 3, (2, LENGTH, LENGTH))},
              "spec_inputs": rng.normal(size=(2, LENGTH, 6)).astype("float32"),
              "parents": rng.uniform(0, LENGTH - 1, (2, LENGTH)).astype("float32")}
    expected, details = block(x, attention_inputs=inputs)
    got, clone_details = clone(x, attention_inputs=inputs)
    np.testing.assert_array_equal(ops.convert_to_numpy(got), ops.convert_to_numpy(expected))
    np.testing.assert_array_equal(ops.convert_to_numpy(clone_details["head_logits"]),
                                  ops.convert_to_numpy(details["head_logits"]))
    assert set(block.self_attention.input_names) == {"labels", "spec_inputs", "parents"}


def test_a_multi_granularity_block_round_trips(rng):
    block = MultiGranularityEncoderLayer(
        WIDTH, 12, HEADS, num_granularities=2, composition="max",
        attention_terms=[TERMS["phrase"]()], name="block")
    block.build((None, None, WIDTH))
    random_weights(block, rng)
    clone = MultiGranularityEncoderLayer.from_config(block.get_config())
    assert clone.get_config() == block.get_config()
    clone.build((None, None, WIDTH))
    clone.set_weights(block.get_weights())
    x = rng.normal(size=(2, LENGTH, WIDTH)).astype("float32")
    phrase_ids = np.array([[[0, 0, 1, 2, -1], [0, 1, 1, 1, -1]],
                           [[0, 1, 1, -1, -1], [0, 0, 0, -1, -1]]], np.int32)
    expected, _ = block(x, phrase_ids=phrase_ids)
    got, _ = clone(x, phrase_ids=phrase_ids)
    np.testing.assert_array_equal(ops.convert_to_numpy(got), ops.convert_to_numpy(expected))
    # The phrase heads attend over the phrases: other memories change their output.
    other, _ = block(x, phrase_ids=np.where(phrase_ids >= 0, 0, -1).astype(np.int32))
    assert np.abs(ops.convert_to_numpy(other) - ops.convert_to_numpy(expected)).max() > 1e-4


def test_attention_layer_config_keeps_term_order_and_initializers():
    layer = MultiHeadAttention(HEADS, 2, terms=[TERMS["parse"](), TERMS["label_bias"]()],
                               embedding_initializer="zeros")
    clone = MultiHeadAttention.from_config(layer.get_config())
    clone.build((None, None, WIDTH))
    tables = clone.term(LabelBias).key_tables
    assert sorted(tables) == ["relative", "tree"]
    assert not np.any(ops.convert_to_numpy(tables["tree"]))
    assert [type(t) for t in clone.terms] == [ParseHead, LabelBias]
