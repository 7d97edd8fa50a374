"""Incremental decoding of real models: cached steps, batching, search on top of the model."""

import numpy as np
import pytest
import tensorflow as tf

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.decoding.decode_hparams import decode_hparams
from syntax_t2t.decoding.decoder import Decoder, MissingFeaturesError, pad_batch
from syntax_t2t.decoding.fast_decode import decode_batch, input_lengths
from syntax_t2t.decoding.inputs import SourceSentence

VOCAB_SIZES = {"inputs": 30, "targets": 40, "deprel": 8, "upos": 8, "xpos": 8}
registration.import_all()


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
    tf.random.set_seed(0)
    model = registry.model(model_name)(tiny_hparams(**overrides), VOCAB_SIZES)
    batch = random_batch(1)
    full = model(batch, training=False)["logits"].numpy()

    features = {key: batch[key] for key in model.decode_features}
    memory = model.decoder_memory(model.encode(features))
    cache = model.initial_decoder_cache(4, 9)  # room for more steps than used
    ids = tf.fill([4], model.decode_start_id)
    for step in range(batch["targets"].shape[1]):
        logits, cache = model.decode_step(ids, tf.constant(step), cache, memory)
        np.testing.assert_allclose(logits.numpy(), full[:, step], atol=2e-5, rtol=1e-4)
        ids = tf.constant(batch["targets"][:, step])


def test_search_on_a_model_scores_its_own_output():
    # The score of the returned hypothesis is the model's log-probability of
    # it (teacher-forced) divided by the length penalty.
    tf.random.set_seed(1)
    model = registry.model("transformer")(tiny_hparams(), VOCAB_SIZES)
    batch = random_batch(2)
    outputs = tf.function(lambda f: decode_batch(model, f, beam_size=3, alpha=0.6, extra_length=4))(
        {"inputs": tf.constant(batch["inputs"])})
    limits = input_lengths(batch["inputs"]).numpy() + 4
    for row in range(4):
        length = int(outputs["lengths"][row, 0])
        assert length <= limits[row]
        ids = outputs["ids"][row, 0].numpy()
        finished = length < ids.shape[0] and ids[length] == 1
        tokens = ids[:length + int(finished)]
        if not len(tokens):
            continue
        logits = model({"inputs": batch["inputs"][row:row + 1], "targets": tokens[None]})["logits"]
        log_probs = tf.nn.log_softmax(logits[0]).numpy()
        total = log_probs[np.arange(len(tokens)), tokens].sum()
        penalty = ((5.0 + (length + 1 if finished else limits[row])) / 6.0) ** 0.6
        assert outputs["scores"][row, 0].numpy() == pytest.approx(total / penalty, rel=1e-4, abs=1e-4)


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

    def decode_targets(self, ids):
        words = []
        for token in ids:
            if token == 1:
                break
            words.append(f"w{int(token)}")
        return words


def sentences(count, seed):
    rng = np.random.RandomState(seed)
    result = []
    for index in range(count):
        length = rng.randint(1, 12)
        tokens = [f"w{t}" for t in rng.randint(4, VOCAB_SIZES["inputs"], size=length)]
        tree = DependencyTree.from_heads(tokens, np.arange(length))
        result.append(SourceSentence(tree, f"test:{index + 1}"))
    return result


def test_batch_size_one_and_thirty_two_decode_the_same():
    tf.random.set_seed(2)
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
