"""Tests for syntax_t2t.decoding.length_model and the length-aware beam search (Eriguchi et al. 2016, eq. 16-17).

They run on every Keras backend: the search and its length table are
`keras.ops`, and the statistics are read from shards without TensorFlow.
"""

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops

from syntax_t2t.data import tfrecord
from syntax_t2t.decoding.length_model import FILE_NAME, LengthModel, load_or_collect
from syntax_t2t.decoding.search import search
from syntax_t2t.errors import InputError

pytestmark = pytest.mark.backends

# Training pairs (source length, target length): source 2 -> 3, 3, 4; source 5 -> 6.
PAIRS = [(2, 3), (2, 3), (2, 4), (5, 6)]


def test_add_one_smoothed_conditional_probabilities():
    model = LengthModel.from_pairs(PAIRS)
    log_probs = model.log_probs([2, 5], num_lengths=8)
    # p(m | 2) = (c(2, m) + 1) / (3 + 8); p(m | 5) = (c(5, m) + 1) / (1 + 8).
    np.testing.assert_allclose(np.exp(log_probs[0]), np.array([1, 1, 1, 3, 2, 1, 1, 1]) / 11, rtol=1e-6)
    np.testing.assert_allclose(np.exp(log_probs[1]), np.array([1, 1, 1, 1, 1, 1, 2, 1]) / 9, rtol=1e-6)
    # A buffer shorter than the longest target drops the lengths it cannot produce.
    np.testing.assert_allclose(np.exp(model.log_probs([5], num_lengths=4))[0], [0.25] * 4, rtol=1e-6)


def test_unseen_source_lengths_back_off_to_the_nearest_seen_one():
    model = LengthModel.from_pairs(PAIRS)
    table = model.log_probs([0, 3, 4, 100], num_lengths=8)
    seen = model.log_probs([2, 2, 5, 5], num_lengths=8)
    np.testing.assert_array_equal(table, seen)  # 3 is closer to 2, 4 to 5; 100 is past 5
    tie = LengthModel.from_pairs([(2, 1), (4, 3)])
    np.testing.assert_array_equal(tie.log_probs([3], 5), tie.log_probs([2], 5))  # the shorter


def test_the_search_table_is_the_log_probability_of_the_length_without_eos():
    model = LengthModel.from_pairs(PAIRS)
    table = ops.convert_to_numpy(model.search_scores(ops.convert_to_tensor([2, 4]), 8))
    assert table.shape == (2, 9)
    assert np.all(table[:, 0] == -np.inf)  # no hypothesis is empty
    np.testing.assert_allclose(table[:, 1:], model.log_probs([2, 4], 8), rtol=1e-6)
    # A buffer shorter than the longest training target (6) drops the longer lengths.
    short = ops.convert_to_numpy(model.search_scores(ops.convert_to_tensor([5]), 4))
    np.testing.assert_allclose(short[:, 1:], model.log_probs([5], 4), rtol=1e-6)


def test_json_round_trip_and_bad_files(tmp_path):
    model = LengthModel.from_pairs(PAIRS)
    path = tmp_path / "lengths.json"
    model.save(str(path))
    assert LengthModel.load(str(path)).counts == {(2, 3): 2, (2, 4): 1, (5, 6): 1}
    path.write_text('{"format": "syntax_t2t length model",\n "version": 1, "pairs": [[1, 2]}\n')
    with pytest.raises(InputError, match=r"lengths.json:2: not JSON"):
        LengthModel.load(str(path))
    path.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(InputError, match="not a length model file"):
        LengthModel.load(str(path))
    path.write_text(json.dumps({"format": "syntax_t2t length model", "version": 1,
                                "pairs": [[1, 2, 0]]}))
    with pytest.raises(InputError, match="counts > 0"):
        LengthModel.load(str(path))
    with pytest.raises(ValueError, match="at least one training pair"):
        LengthModel({})


class ShardProblem:
    """The two methods `load_or_collect` needs from a problem."""

    name = "toy"

    def __init__(self, shard):
        self.shard = shard

    def filepaths(self, data_dir, split):
        assert split == "train"
        return [self.shard]


def test_statistics_are_counted_from_the_training_shards_and_kept_in_the_run(tmp_path):
    shard = str(tmp_path / "toy-train-00000-of-00001")
    # ids then <EOS>, as the problem writes them
    tfrecord.write_records(shard, [tfrecord.serialize_int64_features(
        {"inputs": [5] * n + [1], "targets": [6] * m + [1], "src_heads": [0] * n})
        for n, m in PAIRS])
    run = tmp_path / "run"
    run.mkdir()
    model = load_or_collect(str(run), ShardProblem(shard), str(tmp_path))
    assert model.counts == {(2, 3): 2, (2, 4): 1, (5, 6): 1}
    assert LengthModel.load(str(run / FILE_NAME)).counts == model.counts
    # The saved file wins over the shards from now on.
    LengthModel.from_pairs([(1, 1)]).save(str(run / FILE_NAME))
    assert load_or_collect(str(run), ShardProblem(shard), str(tmp_path)).counts == {(1, 1): 1}


def test_a_damaged_training_shard_is_named(tmp_path):
    shard = tmp_path / "toy-train-00000-of-00001"
    tfrecord.write_records(str(shard), [tfrecord.serialize_int64_features(
        {"inputs": [5, 1], "targets": [6, 6, 1]})] * 3)
    data = bytearray(shard.read_bytes())
    data[-6] ^= 0xFF  # inside the last record's data
    shard.write_bytes(bytes(data))
    with pytest.raises(tfrecord.DamagedRecordError, match="toy-train-00000-of-00001"):
        LengthModel.from_shards([str(shard)])


# A toy decoder: tokens 0 (padding, never chosen), 1 (<EOS>), 2 and 3; the
# logits of a step depend on the step and the previous token.
VOCAB, MAX_STEPS = 4, 4


def table_model(logit_table):
    table = np.asarray(logit_table, np.float32)  # [steps, previous token, vocab]

    def symbols_to_logits(ids, step, cache):
        return ops.take(ops.convert_to_tensor(table)[step], ids, axis=0), cache
    return symbols_to_logits


def sequence_score(logit_table, length_scores, tokens):
    """log p(tokens) + the length score of their length (eq. 16), in float64."""
    log_probs = logit_table - np.log(np.exp(logit_table).sum(-1, keepdims=True))
    previous, total = 0, 0.0
    for step, token in enumerate(tokens):
        total += log_probs[step, previous, token]
        previous = token
    return total + length_scores[len(tokens)]


def brute_force_best(logit_table, length_scores):
    """The best finished hypothesis by log p + length score, over every sequence."""
    candidates = [list(words) + [1] for length in range(1, MAX_STEPS + 1)
                  for words in itertools.product([2, 3], repeat=length - 1)]
    scores = [sequence_score(logit_table, length_scores, tokens) for tokens in candidates]
    return candidates[int(np.argmax(scores))], max(scores)


def run_search(logit_table, length_scores, beam_size=16):
    result = search(table_model(logit_table), ops.zeros((1,), "int32"), beam_size, MAX_STEPS,
                    np.array([MAX_STEPS], np.int32), {}, alpha=0.0, eos_id=1,
                    length_scores=None if length_scores is None else np.float32([length_scores]))
    length = int(result.lengths[0, 0])
    return ops.convert_to_numpy(result.ids)[0, 0, :length + 1].tolist(), float(result.scores[0, 0])


def test_the_length_score_changes_the_ranking_as_expected():
    logits = np.full([MAX_STEPS, VOCAB, VOCAB], 0.0)
    logits[:, :, 0] = -1e9
    logits[0, 0, 1] = 2.0  # ending at once is the likeliest translation
    no_length_model, _ = run_search(logits, None)
    assert no_length_model == [1]
    # Training data says such sources have 2-word translations: eq. 16 prefers them.
    lengths = np.log([1e-9, 0.01, 0.01, 0.97, 0.01])  # by length with <EOS>: 3 = two words
    with_length_model, length_score = run_search(logits, lengths)
    assert len(with_length_model) == 3 and with_length_model[-1] == 1
    best, best_score = brute_force_best(logits, lengths)
    assert with_length_model == best and length_score == pytest.approx(best_score, abs=1e-4)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_beam_search_with_length_scores_finds_the_brute_force_best(seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=[MAX_STEPS, VOCAB, VOCAB])
    logits[:, :, 0] = -1e9
    lengths = np.concatenate([[-np.inf], np.log(rng.dirichlet(np.ones(MAX_STEPS)))])
    # A beam of 16 keeps every one of the at most 8 alive sequences.
    tokens, score = run_search(logits, lengths)
    _, best_score = brute_force_best(logits, lengths)
    assert score == pytest.approx(best_score, abs=1e-4)
    assert sequence_score(logits, lengths, tokens) == pytest.approx(score, abs=1e-4)


def test_greedy_search_adds_the_length_score_to_its_score():
    logits = np.zeros([MAX_STEPS, VOCAB, VOCAB])
    logits[:, :, 0] = -1e9
    logits[0, 0, 2] = 5.0  # first token 2, then <EOS> is as likely as the others
    logits[1:, :, 1] = 5.0
    lengths = np.log([1e-9, 0.1, 0.6, 0.2, 0.1])
    plain = search(table_model(logits), ops.zeros((1,), "int32"), 1, MAX_STEPS,
                   np.array([MAX_STEPS], np.int32), {}, alpha=0.0)
    scored = search(table_model(logits), ops.zeros((1,), "int32"), 1, MAX_STEPS,
                    np.array([MAX_STEPS], np.int32), {}, alpha=0.0,
                    length_scores=np.float32([lengths]))
    np.testing.assert_array_equal(ops.convert_to_numpy(plain.ids), ops.convert_to_numpy(scored.ids))
    assert int(scored.lengths[0, 0]) == 1  # "2 <EOS>": 2 tokens with <EOS>
    assert float(scored.scores[0, 0]) == pytest.approx(float(plain.scores[0, 0]) + lengths[2],
                                                       rel=1e-5)
