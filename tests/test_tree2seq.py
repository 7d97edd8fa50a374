"""Tests for syntax_t2t.models.tree2seq (Eriguchi et al. 2016); its training and decoding
paths are in test_tree2seq_training.py."""

import math

import numpy as np
import pytest
from keras import ops

import syntax_t2t.hparams_sets  # noqa: F401  (registers the hparams sets)
from syntax_t2t import criteria, registry
from syntax_t2t.data.binary_tree import batch_binary_trees, binarize
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.hparams import HParamsError
from syntax_t2t.models.tree2seq import Tree2Seq, _masked_lstm, source_tree_arrays

pytestmark = pytest.mark.backends

VOCAB = {"inputs": 30, "targets": 20}


def numpy(value):
    return ops.convert_to_numpy(value)


def tiny_hparams(**overrides):
    hparams = registry.hparams("tree2seq_tiny")
    hparams.override({"embedding_size": 8, "hidden_size": 6, "blackout_samples": 5, **overrides})
    return hparams


def make_model(**overrides):
    return Tree2Seq(tiny_hparams(**overrides), VOCAB)


def with_trees(model, batch):
    batch = {key: np.asarray(value, np.int32) for key, value in batch.items()}
    batch.update(model.derived_features.compute(batch))
    return batch


# "She saw cats ." (saw the root), a one-word sentence, and one without a parse.
BATCH = {
    "inputs": [[5, 6, 7, 8, 1, 0], [9, 1, 0, 0, 0, 0], [10, 11, 1, 0, 0, 0]],
    "targets": [[4, 5, 6, 1, 0, 0], [7, 1, 0, 0, 0, 0], [8, 9, 10, 11, 1, 0]],
    "src_heads": [[2, 0, 2, 2, -1, -1], [0, -1, -1, -1, -1, -1], [-1] * 6],
}


def test_source_trees_are_binarised_dependency_phrases_in_level_order():
    left, right, level = source_tree_arrays(np.array(BATCH["src_heads"]), rule="head")
    # Head rule: "saw" takes "cats", then ".", then "She": (She ((saw cats) .));
    # phrase slot k is node 6 + k.
    assert left.tolist()[0] == [1, 6, 0, -1, -1, -1]
    assert right.tolist()[0] == [2, 3, 7, -1, -1, -1]
    assert level.tolist()[0] == [1, 2, 3, -1, -1, -1]
    for array in (left, right, level):  # one word: no phrase; no parse: nothing
        assert array[1:].tolist() == [[-1] * 6] * 2
    # The same as binarising the phrase structure and batching it.
    heads = [3, 3, 0, 5, 3, 3]
    tree = binarize(phrase_structure_from_dependencies(
        DependencyTree.from_heads(["w"] * 6, heads)), "right")
    expected = batch_binary_trees([tree], 8)
    arrays = source_tree_arrays(np.array([heads + [-1, -1]]), rule="right")
    for array, key in zip(arrays, ("tree_left", "tree_right", "tree_level")):
        assert array[0, :7].tolist() == expected[key][0].tolist() and array[0, 7] == -1


def test_bad_heads_are_named_by_row():
    with pytest.raises(ValueError, match=r"src_heads row 1: heads must come first"):
        source_tree_arrays(np.array([[0, -1], [-1, 0]]))
    with pytest.raises(ValueError, match=r"src_heads row 0: .*cycle"):
        source_tree_arrays(np.array([[2, 1, 0]]))


def test_weights_exist_after_construction_and_start_as_in_the_paper():
    model = make_model()
    weights = {weight.path: numpy(weight) for weight in model.weights}
    assert "softmax/kernel" in weights and "tree_lstm/cell/kernel" in weights
    d = 6
    for name in ("encoder_lstm_0/bias", "decoder_lstm/bias"):  # gates i, f, c, o
        np.testing.assert_array_equal(weights[name], [0] * d + [1] * d + [0] * (2 * d))
    for name in ("tree_lstm/cell/bias", "decoder_initializer/bias"):  # i, f_l, f_r, o, u
        np.testing.assert_array_equal(weights[name], [0] * d + [1] * (2 * d) + [0] * (2 * d))
    np.testing.assert_array_equal(weights["softmax/kernel"], 0.0)
    np.testing.assert_array_equal(weights["softmax/bias"], 0.0)
    others = [w for name, w in weights.items() if not name.startswith("softmax")
              and not name.endswith("bias")]
    assert all(np.abs(w).max() <= 0.1 for w in others)
    assert all(np.abs(w).max() > 0.05 for w in others)  # uniform in [-0.1, 0.1], not tiny


def test_evaluation_uses_the_full_softmax_and_training_blackout():
    model = make_model()
    batch = with_trees(model, BATCH)
    outputs = model(batch, training=False)
    assert outputs["logits"].shape == (3, 6, 20) and "softmax_inputs" not in outputs
    # Zero softmax weights: every word has probability 1 / V. The objective
    # sums each sentence's 4, 2 and 5 tokens and averages over the 3 sentences.
    losses = criteria.for_model(model)(batch, outputs)
    assert float(losses["nmt"]) == pytest.approx(math.log(20), rel=1e-6)
    assert float(losses["total"]) == pytest.approx(11 / 3 * math.log(20), rel=1e-6)
    per_token = make_model(loss_normalization="token")
    per_token_losses = criteria.for_model(per_token)(batch, outputs)
    assert float(per_token_losses["total"]) == pytest.approx(math.log(20))
    np.testing.assert_array_equal(numpy(model.output_layer.unigram_counts), 0.0)
    outputs = model(batch, training=True)
    losses = criteria.for_model(model)(batch, outputs)
    assert np.isfinite(float(losses["total"])) and float(losses["total"]) != pytest.approx(
        math.log(20))
    counts = numpy(model.output_layer.unigram_counts)
    assert counts.sum() == 11 and counts[1] == 3  # the target tokens, <EOS> included
    full = make_model(softmax="full")
    outputs = full(with_trees(full, BATCH), training=True)
    assert "softmax_inputs" not in outputs
    full_losses = criteria.for_model(full)(batch, outputs)
    assert float(full_losses["nmt"]) == pytest.approx(math.log(20), rel=1e-6)


def randomised(model, seed=0):
    """The model with random weights everywhere (the softmax starts at zero)."""
    rng = np.random.default_rng(seed)
    for weight in model.trainable_weights:
        weight.assign(rng.uniform(-0.5, 0.5, weight.shape))
    return model


def incremental_logits(model, batch):
    encoded = model.encode(batch)
    memory = model.decoder_memory(encoded)
    targets = batch["targets"]
    cache = model.initial_decoder_cache(targets.shape[0], targets.shape[1])
    ids = np.full([targets.shape[0]], model.decode_start_id, np.int32)
    steps = []
    for step in range(targets.shape[1]):
        logits, cache = model.decode_step(ids, ops.convert_to_tensor(step, "int32"), cache,
                                          memory)
        steps.append(numpy(logits))
        ids = targets[:, step]
    return np.stack(steps, axis=1)


def test_teacher_forcing_and_incremental_decoding_agree():
    model = randomised(make_model())
    batch = with_trees(model, BATCH)
    np.testing.assert_allclose(numpy(model(batch)["logits"]), incremental_logits(model, batch),
                               rtol=1e-5, atol=1e-5)


def test_padding_does_not_change_a_sentence():
    model = randomised(make_model(), seed=1)
    first = {key: [values[0]] for key, values in BATCH.items()}
    padded = {key: [values[0] + [-1 if key == "src_heads" else 0] * 4] for key, values in BATCH.items()}
    alone, longer = (numpy(model(with_trees(model, b))["logits"])[0] for b in (first, padded))
    np.testing.assert_allclose(alone, longer[:6], rtol=1e-5, atol=1e-5)


def test_the_decoder_starts_from_the_last_state_and_the_root_or_zero_without_a_parse():
    model = randomised(make_model(), seed=2)
    batch = with_trees(model, BATCH)
    encoded = model.encode(batch)
    # Attended: the tokens with <EOS>, then the phrases (3, 0 and 0 of them).
    np.testing.assert_array_equal(np.sum(numpy(encoded["padding_mask"]), axis=1), [8, 2, 3])
    inputs = batch["inputs"]
    h, c = _masked_lstm(model.encoder_cells[0], model.source_embedding(inputs), inputs != 0)
    # Sentence 2 has no parse: s_1 = g_tree(h_n, c_n, 0, 0), h_n at <EOS>.
    zeros = np.zeros([1, 6], np.float32)
    expected_h, expected_c = model.decoder_initializer(h[2:, 2], c[2:, 2], zeros, zeros)
    np.testing.assert_allclose(numpy(encoded["initial_h"][2:]), numpy(expected_h), rtol=1e-5)
    np.testing.assert_allclose(numpy(encoded["initial_c"][2:]), numpy(expected_c), rtol=1e-5)
    # Sentence 1 is one word: its root is the word itself.
    root_h, root_c = h[1:2, 0], c[1:2, 0]
    expected_h, _ = model.decoder_initializer(h[1:2, 1], c[1:2, 1], root_h, root_c)
    np.testing.assert_allclose(numpy(encoded["initial_h"][1:2]), numpy(expected_h), rtol=1e-5)
    # Another parse of sentence 0 changes its phrases and s_1.
    other = dict(BATCH, src_heads=[[0, 1, 2, 3, -1, -1]] + BATCH["src_heads"][1:])
    changed = model.encode(with_trees(model, other))
    assert not np.allclose(changed["initial_h"][0], encoded["initial_h"][0])
    np.testing.assert_allclose(changed["initial_h"][1:], encoded["initial_h"][1:], rtol=1e-6)


def test_missing_tree_features_and_bad_hparams_are_explained():
    model = make_model()
    batch = {key: np.array(value) for key, value in BATCH.items()}
    with pytest.raises(KeyError, match="src_tree_left, src_tree_right, src_tree_level.*derived_features"):
        model(batch)
    with pytest.raises(HParamsError, match="softmax='sampled': expected one of blackout, full"):
        make_model(softmax="sampled")
    with pytest.raises(HParamsError, match="tree_binarization='middle'"):
        make_model(tree_binarization="middle")
    with pytest.raises(HParamsError, match="loss_normalization='batch'"):
        make_model(loss_normalization="batch")


def test_a_vocabulary_the_problem_lacks_is_named_with_the_ones_it_gives():
    with pytest.raises(KeyError, match=r"model Tree2Seq needs vocab_sizes\['targets'\]; "
                                       r"the problem gives \['inputs'\]"):
        Tree2Seq(tiny_hparams(), {"inputs": 30})
