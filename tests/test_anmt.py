"""The sequential attentional baseline of Tree2Seq (`anmt`), with and without reversed input."""

import keras
import numpy as np
import pytest
from keras import ops

import syntax_t2t.hparams_sets  # noqa: F401  (registers the hparams sets)
from syntax_t2t import criteria, registry
from syntax_t2t.hparams import HParamsError
from syntax_t2t.models.anmt import ANMT, reverse_words
from syntax_t2t.models.tree2seq import Tree2Seq, _masked_lstm

pytestmark = pytest.mark.backends

VOCAB = {"inputs": 30, "targets": 20}
# Three sentences of 4, 1 and 2 words, each with <EOS> (1), right-padded.
INPUTS = [[5, 6, 7, 8, 1, 0], [9, 1, 0, 0, 0, 0], [10, 11, 1, 0, 0, 0]]
TARGETS = [[4, 5, 6, 1, 0], [7, 1, 0, 0, 0], [8, 9, 10, 11, 1]]


def numpy(value):
    return ops.convert_to_numpy(value)


def make_model(seed=0, **overrides):
    hparams = registry.hparams("tree2seq_tiny")
    hparams.override({"embedding_size": 8, "hidden_size": 6, "blackout_samples": 5, **overrides})
    model = ANMT(hparams, VOCAB)
    rng = np.random.default_rng(seed)
    for weight in model.trainable_weights:  # the softmax starts at zero: randomise it too
        weight.assign(rng.uniform(-0.5, 0.5, weight.shape))
    return model


def test_reverse_words_keeps_eos_and_padding_in_place():
    reversed_ = numpy(reverse_words(np.array(INPUTS)))
    assert reversed_.tolist() == [[8, 7, 6, 5, 1, 0], [9, 1, 0, 0, 0, 0], [11, 10, 1, 0, 0, 0]]
    np.testing.assert_array_equal(numpy(reverse_words(reversed_)), INPUTS)


def test_the_reversed_model_reads_the_reversed_source():
    plain, reversed_ = make_model(), make_model(reverse_source=True)
    reversed_.set_weights(plain.get_weights())
    features = {"inputs": np.array(INPUTS)}
    by_hand = {"inputs": np.array([[8, 7, 6, 5, 1, 0], [9, 1, 0, 0, 0, 0], [11, 10, 1, 0, 0, 0]])}
    got, expected = reversed_.encode(features), plain.encode(by_hand)
    for key in ("outputs", "initial_h", "initial_c", "padding_mask"):
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-6)
    # Not a no-op: the plain model reads sentence 0 in the other order.
    assert not np.allclose(plain.encode(features)["initial_h"][0], got["initial_h"][0])
    # A one-word sentence reads the same either way.
    np.testing.assert_allclose(plain.encode(features)["initial_h"][1], got["initial_h"][1], rtol=1e-6)


def test_no_tree_weights_and_the_decoder_starts_from_the_last_state():
    model = make_model()
    tree = Tree2Seq(model.hparams, VOCAB)
    names = {weight.path.split("/")[0] for weight in model.weights}
    assert names == {w.path.split("/")[0] for w in tree.weights} - {"tree_lstm", "decoder_initializer"}
    assert model.train_features == {"inputs", "targets"} and model.derived_features is None
    inputs = np.array(INPUTS)
    encoded = model.encode({"inputs": inputs})
    h, c = _masked_lstm(model.encoder_cells[0], model.source_embedding(inputs), inputs != 0)
    # s_1 is the state at <EOS>, carried on over the padding; attention reads tokens only.
    np.testing.assert_allclose(encoded["initial_h"], numpy(h)[[0, 1, 2], [4, 1, 2]], rtol=1e-6)
    np.testing.assert_allclose(encoded["initial_c"], numpy(c)[[0, 1, 2], [4, 1, 2]], rtol=1e-6)
    np.testing.assert_array_equal(np.sum(encoded["padding_mask"], axis=1), [5, 2, 3])


def test_the_tree_model_refuses_reversed_input():
    with pytest.raises(HParamsError, match="reverse_source=true: the tree encoder"):
        Tree2Seq(registry.hparams("anmt_small_reversed"), VOCAB)
    assert registry.hparams("anmt_small").reverse_source is False
    small, reversed_ = registry.hparams("tree2seq_small"), registry.hparams("anmt_small_reversed")
    reversed_.set("reverse_source", False)
    assert reversed_.to_json() == small.to_json()


def test_teacher_forcing_and_incremental_decoding_agree_with_reversed_input():
    model = make_model(reverse_source=True)
    features = {"inputs": np.array(INPUTS), "targets": np.array(TARGETS)}
    full = numpy(model(features)["logits"])
    memory = model.decoder_memory(model.encode(features))
    cache = model.initial_decoder_cache(3, 5)
    ids = np.full([3], model.decode_start_id, np.int32)
    for step in range(5):
        logits, cache = model.decode_step(ids, ops.convert_to_tensor(step, "int32"), cache,
                                          memory)
        np.testing.assert_allclose(numpy(logits), full[:, step], rtol=1e-5, atol=1e-5)
        ids = features["targets"][:, step]


def test_a_reversed_model_learns_a_batch_and_beam_search_decodes_it():
    tf = pytest.importorskip("tensorflow", reason="beam search decoding runs on TensorFlow")
    from syntax_t2t.decoding.fast_decode import make_decode_function

    keras.utils.set_random_seed(3)
    model = make_model(reverse_source=True, softmax="full", embedding_size=16, hidden_size=32)
    features = {"inputs": tf.constant(INPUTS), "targets": tf.constant(TARGETS)}
    optimizer = keras.optimizers.Adam(0.05)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = criteria.for_model(model)(features, model(features, training=True))["total"]
        optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss

    for _ in range(60):
        loss = train_step()
    assert float(loss) < 0.1
    decode = make_decode_function(model, ["inputs"], beam_size=3, alpha=0.6, extra_length=3)
    result = decode({"inputs": features["inputs"]})
    best = result["ids"].numpy()[:, 0]
    lengths = result["lengths"].numpy()[:, 0]
    for row, target in enumerate(TARGETS):
        words = [t for t in target if t > 1]  # lengths leave out <EOS>
        assert best[row, :lengths[row] + 1].tolist() == words + [1]
