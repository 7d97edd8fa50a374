"""Incremental decoding of real models: cached steps, batching, search on top of the model.

On every Keras backend: the decoding functions are compiled as the backend
compiles them (`backend/compile.py`), which the program-count test checks.
"""

import keras
import numpy as np
import pytest
from keras import ops

import syntax_t2t.hparams_sets  # noqa: F401  (registers the hparams sets)
import syntax_t2t.models  # noqa: F401  (registers the models)
from syntax_t2t import registry
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.decoding.decode_hparams import decode_hparams
from syntax_t2t.decoding.decoder import Decoder, MissingFeaturesError, pad_batch
from syntax_t2t.decoding.fast_decode import input_lengths, make_decode_function, padded_rows
from syntax_t2t.decoding.inputs import SourceSentence

pytestmark = pytest.mark.backends

VOCAB_SIZES = {"inputs": 30, "targets": 40, "deprel": 8, "upos": 8, "xpos": 8}


def tiny_hparams(**overrides):
    hparams = registry.hparams("transformer_tiny")
    hparams.override(dict(layer_prepostprocess_dropout=0.0, attention_dropout=0.0, relu_dropout=0.0,
                          hidden_size=32, filter_size=64, num_heads=4))
    return hparams.override(overrides)


def random_batch(seed, batch=4, source_length=7, target_length=6):
    rng = np.random.RandomState(seed)
    inputs = rng.randint(4, VOCAB_SIZES["inputs"], size=(batch, source_length)).astype(np.int32)
    lengths = rng.randint(1, source_length, size=batch)
    heads = np.full((batch, source_length), -1, np.int32)
    for row, length in enumerate(lengths):
        inputs[row, length] = 1
        inputs[row, length + 1:] = 0
        heads[row, :length] = np.arange(length)  # a chain: word i hangs on word i - 1
    targets = rng.randint(4, VOCAB_SIZES["targets"], size=(batch, target_length)).astype(np.int32)
    targets[:, -1] = 1
    return {"inputs": inputs, "targets": targets, "src_heads": heads}


@pytest.mark.parametrize("model_name, overrides", [
    ("transformer", {}),
    ("transformer", {"max_relative_position": 3, "position_encoding": "none"}),
    ("dep_parse", {}),
    ("tree_distance", {}),
])
def test_cached_step_logits_equal_a_full_recompute(model_name, overrides):
    keras.utils.set_random_seed(0)
    model = registry.model(model_name)(tiny_hparams(**overrides), VOCAB_SIZES)
    batch = random_batch(1)
    full = ops.convert_to_numpy(model(batch, training=False)["logits"])

    features = {key: batch[key] for key in model.decode_features}
    memory = model.decoder_memory(model.encode(features))
    cache = model.initial_decoder_cache(4, 9)  # room for more steps than used
    ids = ops.full((4,), model.decode_start_id, "int32")
    for step in range(batch["targets"].shape[1]):
        logits, cache = model.decode_step(ids, ops.convert_to_tensor(step, "int32"), cache, memory)
        np.testing.assert_allclose(ops.convert_to_numpy(logits), full[:, step], atol=2e-5,
                                   rtol=1e-4)
        ids = ops.convert_to_tensor(batch["targets"][:, step])


def test_search_on_a_model_scores_its_own_output():
    # The score of the returned hypothesis is the model's log-probability of
    # it (teacher-forced) divided by the length penalty.
    keras.utils.set_random_seed(1)
    model = registry.model("transformer")(tiny_hparams(), VOCAB_SIZES)
    batch = random_batch(2)
    decode = make_decode_function(model, ["inputs"], beam_size=3, alpha=0.6, extra_length=4)
    outputs = {key: ops.convert_to_numpy(value)
               for key, value in decode({"inputs": batch["inputs"]}).items()}
    limits = ops.convert_to_numpy(input_lengths(batch["inputs"])) + 4
    for row in range(4):
        length = int(outputs["lengths"][row, 0])
        assert length <= limits[row]
        ids = outputs["ids"][row, 0]
        finished = length < ids.shape[0] and ids[length] == 1
        tokens = ids[:length + int(finished)]
        if not len(tokens):
            continue
        logits = model({"inputs": batch["inputs"][row:row + 1], "targets": tokens[None]})["logits"]
        log_probs = ops.convert_to_numpy(ops.log_softmax(logits[0]))
        total = log_probs[np.arange(len(tokens)), tokens].sum()
        penalty = ((5.0 + (length + 1 if finished else limits[row])) / 6.0) ** 0.6
        assert outputs["scores"][row, 0] == pytest.approx(total / penalty, rel=1e-4, abs=1e-4)


class _Problem:
    """Encodes words `w<id>` to `id` (and trees' heads), as `Problem.encode_source`."""

    name = "stand_in"
    has_source_trees = True

    def encode_source(self, source):
        tokens = source.tokens if isinstance(source, DependencyTree) else source
        features = {"inputs": [int(t[1:]) for t in tokens] + [1]}
        if isinstance(source, DependencyTree):
            features["src_heads"] = [int(h) for h in source.heads]
        return features

    def encode_target(self, tokens):
        return [int(t[1:]) for t in tokens] + [1]

    def decode_targets(self, ids):
        words = []
        for token in ids:
            if token == 1:
                break
            words.append(f"w{int(token)}")
        return words


def sentences(count, seed, lengths=(1, 12)):
    rng = np.random.RandomState(seed)
    result = []
    for index in range(count):
        length = rng.randint(*lengths)
        tokens = [f"w{t}" for t in rng.randint(4, VOCAB_SIZES["inputs"], size=length)]
        tree = DependencyTree.from_heads(tokens, np.arange(length))
        result.append(SourceSentence(tree, f"test:{index + 1}"))
    return result


def test_batch_size_one_and_thirty_two_decode_the_same():
    keras.utils.set_random_seed(2)
    model = registry.model("dep_parse")(tiny_hparams(), VOCAB_SIZES)
    inputs = sentences(40, seed=3)
    inputs.insert(7, SourceSentence(None, "test:8", "empty line"))
    results = {}
    for batch_size in (1, 32):
        settings = decode_hparams(f"batch_size={batch_size},beam_size=3,extra_length=3")
        results[batch_size] = Decoder(model, _Problem(), settings, parse_decoder="mst").translate(inputs)
    assert results[1][7] is None and results[32][7] is None
    for one, many in zip(results[1], results[32]):
        if one is None:
            continue
        assert one.tokens == many.tokens
        assert [tokens for tokens, _ in one.beams] == [tokens for tokens, _ in many.beams]
        np.testing.assert_allclose([s for _, s in one.beams], [s for _, s in many.beams], rtol=1e-4)
        np.testing.assert_array_equal(one.heads, many.heads)


def test_a_model_needing_trees_refuses_plain_text():
    model = registry.model("tree_distance")(tiny_hparams(), VOCAB_SIZES)
    decoder = Decoder(model, _Problem(), decode_hparams("beam_size=1"))
    text = [SourceSentence(None, "in.txt:1", "empty line"), SourceSentence(["w4", "w5"], "in.txt:2")]
    message = r"needs source trees \(src_heads\) to decode, but the input is plain text \(first at in.txt:2\)"
    with pytest.raises(MissingFeaturesError, match=message):
        decoder.translate(text)


def test_padding_follows_the_design_contract():
    examples = [{"inputs": [5, 1], "src_heads": [0]}, {"inputs": [5, 6, 7, 1], "src_heads": [0, 1, 2]}]
    batch = pad_batch(examples, ["inputs", "src_heads"], length_multiple=8)
    assert batch["inputs"].tolist() == [[5, 1, 0, 0, 0, 0, 0, 0], [5, 6, 7, 1, 0, 0, 0, 0]]
    assert batch["src_heads"].tolist() == [[0] + [-1] * 7, [0, 1, 2] + [-1] * 5]


def test_rows_are_padded_to_powers_of_two_within_the_batch_size():
    assert [padded_rows(rows) for rows in (1, 2, 3, 5, 8, 9)] == [1, 2, 4, 8, 8, 16]
    assert [padded_rows(rows, batch_size=6) for rows in (1, 3, 5, 6, 7)] == [1, 4, 6, 6, 8]
    with pytest.raises(ValueError, match="at least one sentence"):
        padded_rows(0)


def test_a_file_is_decoded_by_one_program_per_padded_shape():
    # Under XLA (always under JAX) each batch shape is a program of its own.
    # In batches of 4, 3 long sentences and 9 short ones pad to (4, 16),
    # (4, 8), (4, 8); then 3 short ones pad to (4, 8) and a single one is
    # (1, 8): 3 programs, where the unpadded shapes would have made 5.
    keras.utils.set_random_seed(4)
    model = registry.model("transformer")(tiny_hparams(), VOCAB_SIZES)
    decoder = Decoder(model, _Problem(), decode_hparams("batch_size=4,beam_size=2,extra_length=2"),
                      jit_compile=True)
    programs = decoder._decode.compiled  # what the test counts
    long, short = sentences(3, seed=5, lengths=(8, 13)), sentences(9, seed=6, lengths=(1, 8))
    first = decoder.translate(long + short)
    assert programs.traces == 2
    later = decoder.translate(short[:3]) + decoder.translate(short[3:4])
    assert programs.traces == 3
    # Padding changes no result: one sentence at a time, unpadded rows, decodes the same.
    alone = Decoder(model, _Problem(), decode_hparams("batch_size=1,beam_size=2,extra_length=2"))
    expected = alone.translate(long + short)
    for got, want in zip(first + later, expected + expected[3:7]):
        assert [tokens for tokens, _ in got.beams] == [tokens for tokens, _ in want.beams]
        np.testing.assert_allclose([s for _, s in got.beams], [s for _, s in want.beams],
                                   rtol=1e-5, atol=1e-6)


def test_forced_scores_are_the_teacher_forced_log_probabilities():
    keras.utils.set_random_seed(7)
    model = registry.model("tree_distance")(tiny_hparams(), VOCAB_SIZES)
    decoder = Decoder(model, _Problem(), decode_hparams("batch_size=4"))
    inputs = sentences(5, seed=8)
    rng = np.random.RandomState(9)
    targets = [[f"w{t}" for t in rng.randint(4, VOCAB_SIZES["targets"], size=rng.randint(0, 9))]
               for _ in inputs]
    scores = decoder.score(inputs, targets)
    # The reference: the model's teacher-forced call on the whole batch, padded.
    problem = _Problem()
    batch = pad_batch([problem.encode_source(sentence.source) for sentence in inputs],
                      ["inputs", "src_heads"])
    target_ids = [problem.encode_target(target) for target in targets]
    batch["targets"] = pad_batch([{"inputs": ids} for ids in target_ids], ["inputs"])["inputs"]
    log_probs = ops.convert_to_numpy(ops.log_softmax(model(batch)["logits"]))
    for row, (ids, score) in enumerate(zip(target_ids, scores)):
        assert score.tokens == len(ids)
        expected = log_probs[row, np.arange(len(ids)), ids].sum()
        assert score.total == pytest.approx(expected, abs=1e-4)
