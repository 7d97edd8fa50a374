"""Beam and greedy search on toy models whose every score is known, on every Keras backend.

The toy model reads its next-token logits from a table indexed by the whole
prefix decoded so far (the prefix's code lives in the cache, so the cache must
follow the beams correctly), one table per sentence. References: exhaustive
enumeration of all outputs, a plain-Python greedy decoder, and a plain-Python
transcription of T2T's alive/finished beam search. The searches run compiled
as decoding compiles them (`backend/compile.py`: `tf.function` on
TensorFlow, `jax.jit` on JAX).
"""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops

from syntax_t2t.backend.compile import CompiledFunction
from syntax_t2t.decoding.beam_search import beam_search, length_penalty
from syntax_t2t.decoding.greedy_search import greedy_search
from syntax_t2t.decoding.search import search

pytestmark = pytest.mark.backends

EOS = 1
START = 0
RESULT_KEYS = ("ids", "lengths", "scores", "finished")


def prefix_code(prefix, vocab_size):
    """Bijective base-V numbering of prefixes: () -> 0, (t,) -> t + 1, ..."""
    code = 0
    for token in prefix:
        code = code * vocab_size + token + 1
    return code


class PrefixTableModel:
    """Next-token logits read from `table[sentence, prefix_code(prefix)]`."""

    def __init__(self, table):
        self.table = np.asarray(table, np.float32)  # [batch, codes, vocab]
        self.codes, self.vocab_size = self.table.shape[1:]
        self.log_probs = ops.convert_to_numpy(ops.log_softmax(self.table))

    def initial_cache(self, beam_size):
        rows = np.repeat(np.arange(self.table.shape[0], dtype=np.int32), beam_size)
        return {"code": ops.zeros(rows.shape, "int32"), "row": ops.convert_to_tensor(rows)}

    def symbols_to_logits(self, ids, step, cache):
        code = ops.where(step == 0, 0, cache["code"] * self.vocab_size + ids + 1)
        rows = ops.reshape(ops.convert_to_tensor(self.table), (-1, self.vocab_size))
        logits = ops.take(rows, cache["row"] * self.codes + code, axis=0)
        return logits, {"code": code, "row": cache["row"]}

    def sentence_log_prob(self, sentence, prefix, token):
        return self.log_probs[sentence, prefix_code(prefix, self.vocab_size), token]


def table_for(prefix_probs, vocab_size, max_length):
    """A one-sentence table from `{prefix: {token: probability}}`; unlisted
    prefixes get a uniform distribution."""
    codes = prefix_code((vocab_size - 1,) * max_length, vocab_size) + 1
    table = np.zeros([1, codes, vocab_size], np.float32)
    for prefix, probs in prefix_probs.items():
        row = np.full(vocab_size, -30.0, np.float32)
        for token, p in probs.items():
            row[token] = math.log(p)
        table[0, prefix_code(prefix, vocab_size)] = row
    return table


def random_table(seed, batch, vocab_size, max_length, scale):
    rng = np.random.RandomState(seed)
    codes = prefix_code((vocab_size - 1,) * max_length, vocab_size) + 1
    return rng.normal(0.0, scale, size=[batch, codes, vocab_size]).astype(np.float32)


def as_numpy(result):
    return {key: ops.convert_to_numpy(getattr(result, key)) for key in RESULT_KEYS}


def run(decode, compiled=True, jit_compile=False):
    """`decode()` compiled as decoding compiles it, or called eagerly."""
    return as_numpy(CompiledFunction(decode, jit_compile=jit_compile)() if compiled else decode())


def run_beam(model, beam_size, max_lengths, alpha, eos_candidates="all", **compilation):
    max_lengths = np.asarray(max_lengths, np.int32)
    max_steps = int(max_lengths.max())

    def decode():
        return beam_search(model.symbols_to_logits, ops.zeros((len(max_lengths),), "int32"),
                           beam_size, max_steps, max_lengths, model.initial_cache(beam_size),
                           alpha=alpha, eos_id=EOS, eos_candidates=eos_candidates)

    return run(decode, **compilation)


def run_greedy(model, max_lengths, alpha, **compilation):
    max_lengths = np.asarray(max_lengths, np.int32)

    def decode():
        return greedy_search(model.symbols_to_logits, ops.zeros((len(max_lengths),), "int32"),
                             int(max_lengths.max()), max_lengths, model.initial_cache(1),
                             alpha=alpha, eos_id=EOS)

    return run(decode, **compilation)


def hypothesis(result, sentence, rank=0):
    length = result["lengths"][sentence, rank]
    return tuple(result["ids"][sentence, rank, :length].tolist())


def penalty(length, alpha):
    return float(ops.convert_to_numpy(length_penalty(length, alpha)))


# --- worked examples -------------------------------------------------------

A, B = 2, 3  # two word ids; 0 is <pad>, 1 is <EOS>


def test_length_penalty_is_gnmt_formula():
    assert penalty(1, 0.6) == pytest.approx(1.0)
    assert penalty(7, 0.6) == pytest.approx(2.0 ** 0.6)
    assert penalty(10, 0.0) == 1.0
    assert penalty(19, 1.0) == pytest.approx(4.0)


def test_beam_finds_the_path_greedy_misses():
    # Greedy takes A (0.6) and then has only a 0.3 <EOS>; B (0.4) continues
    # with a certain <EOS>: P(A EOS) = 0.18 < P(B EOS) = 0.4.
    table = table_for({
        (): {A: 0.6, B: 0.4},
        (A,): {EOS: 0.3, A: 0.35, B: 0.35},
        (A, A): {EOS: 1.0}, (A, B): {EOS: 1.0},
        (B,): {EOS: 1.0},
    }, vocab_size=4, max_length=4)
    model = PrefixTableModel(table)
    greedy = run_greedy(model, [4], alpha=0.0)
    assert hypothesis(greedy, 0) == (A, A)  # ties between A and B pick the lower id
    beam = run_beam(model, 2, [4], alpha=0.0)
    assert hypothesis(beam, 0) == (B,)
    assert beam["finished"][0, 0]
    assert beam["scores"][0, 0] == pytest.approx(math.log(0.4), abs=1e-5)
    # After step 1 the alive A A (0.21) cannot beat B <EOS> (0.4): the search
    # stops with A <EOS> (0.18) as the runner-up.
    assert hypothesis(beam, 0, rank=1) == (A,)
    assert beam["scores"][0, 1] == pytest.approx(math.log(0.6 * 0.3), abs=1e-5)


def test_length_penalty_changes_the_winner():
    # Short: B <EOS> with p = 0.2; long: A A A <EOS> with p = 0.8 * 0.6 * 0.6 * 0.5.
    table = table_for({
        (): {A: 0.8, B: 0.2},
        (B,): {EOS: 1.0},
        (A,): {A: 0.6, EOS: 0.01, B: 0.39},
        (A, A): {A: 0.6, EOS: 0.01, B: 0.39},
        (A, B): {EOS: 0.01, A: 0.99}, (A, A, B): {EOS: 0.01, A: 0.99},
        (A, A, A): {EOS: 0.5, B: 0.5},
    }, vocab_size=4, max_length=5)
    model = PrefixTableModel(table)
    short, long = math.log(0.2), math.log(0.8 * 0.6 * 0.6 * 0.5)
    assert short > long
    assert short / penalty(2, 2.0) < long / penalty(4, 2.0)

    without = run_beam(model, 4, [5], alpha=0.0)
    assert hypothesis(without, 0) == (B,)
    assert without["scores"][0, 0] == pytest.approx(short, abs=1e-5)

    with_penalty = run_beam(model, 4, [5], alpha=2.0)
    assert hypothesis(with_penalty, 0) == (A, A, A)
    assert with_penalty["scores"][0, 0] == pytest.approx(long / penalty(4, 2.0), abs=1e-5)


def test_eos_among_the_best_beam_only_is_fairseqs_and_ctranslate2s_rule():
    # Step 0's four candidates are A (0.5), B (0.3), <EOS> (0.2): with beam 2,
    # <EOS> is third. T2T finishes it; fairseq and CTranslate2 do not, and
    # find A A <EOS> (0.5 * 0.35 * 0.9) instead.
    table = table_for({
        (): {A: 0.5, B: 0.3, EOS: 0.2},
        (A,): {EOS: 0.3, A: 0.35, B: 0.35},
        (B,): {EOS: 0.3, A: 0.35, B: 0.35},
        (A, A): {EOS: 0.9, A: 0.05, B: 0.05},
    }, vocab_size=4, max_length=4)
    model = PrefixTableModel(table)
    t2t = run_beam(model, 2, [4], alpha=0.0)
    assert hypothesis(t2t, 0) == ()
    assert t2t["scores"][0, 0] == pytest.approx(math.log(0.2), abs=1e-5)
    in_beam = run_beam(model, 2, [4], alpha=0.0, eos_candidates="beam")
    assert hypothesis(in_beam, 0) == (A, A)
    assert in_beam["finished"][0, 0]
    assert in_beam["scores"][0, 0] == pytest.approx(math.log(0.5 * 0.35 * 0.9), abs=1e-5)


def test_an_unknown_finishing_rule_is_refused():
    model = PrefixTableModel(random_table(0, 1, 4, 2, 1.0))
    with pytest.raises(ValueError, match="eos_candidates must be one of"):
        run_beam(model, 2, [2], alpha=0.0, eos_candidates="some")


def test_output_is_cut_at_the_sentence_maximum_length():
    # <EOS> is impossible: nothing finishes, the alive hypotheses come back.
    table = table_for({}, vocab_size=4, max_length=4)
    table[..., EOS] = -np.inf
    model = PrefixTableModel(np.concatenate([table, table]))
    result = run_beam(model, 2, [2, 4], alpha=0.6)
    assert result["lengths"][:, 0].tolist() == [2, 4]
    assert not result["finished"].any()
    assert (result["ids"][0, :, 2:] == 0).all()
    greedy = run_greedy(model, [2, 4], alpha=0.6)
    assert greedy["lengths"][:, 0].tolist() == [2, 4]
    assert not greedy["finished"].any()


# --- references --------------------------------------------------------------

def exhaustive_best(model, sentence, max_length, alpha):
    """Best finished output over all token sequences (brute force)."""
    words = [t for t in range(model.vocab_size) if t != EOS]
    best = (-math.inf, None)
    for length in range(max_length):
        for prefix in itertools.product(words, repeat=length):
            log_prob = np.float32(0.0)
            for i, token in enumerate(prefix + (EOS,)):
                log_prob = log_prob + model.sentence_log_prob(sentence, prefix[:i], token)
            best = max(best, (log_prob / penalty(length + 1, alpha), prefix))
    return best


def reference_greedy(model, sentence, max_length):
    prefix = ()
    while len(prefix) < max_length:
        token = int(np.argmax(model.log_probs[sentence, prefix_code(prefix, model.vocab_size)]))
        if token == EOS:
            return prefix, True
        prefix += (token,)
    return prefix, False


def reference_beam(model, sentence, beam_size, max_length, alpha):
    """T2T's beam search transcribed to plain Python, one sentence.

    Returns the (prefix, score) pairs of the result, best first.
    """
    inf = math.inf
    alive = [((), np.float32(0.0))] + [((), np.float32(-inf))] * (beam_size - 1)
    finished = [((), -inf, False)] * beam_size
    vocab = model.vocab_size
    for step in range(max_length):
        candidates = []
        for k, (prefix, log_prob) in enumerate(alive):
            for token in range(vocab):
                total = log_prob + model.sentence_log_prob(sentence, prefix, token)
                candidates.append((-total, k * vocab + token, prefix, token, total))
        candidates = sorted(candidates, key=lambda c: (c[0], c[1]))[:2 * beam_size]
        ranked = [(-(-inf if c[3] == EOS else c[4]), i) for i, c in enumerate(candidates)]
        alive = [(candidates[i][2] + (candidates[i][3],),
                  -inf if candidates[i][3] == EOS else candidates[i][4])
                 for _, i in sorted(ranked)[:beam_size]]
        ended = [(c[2], c[4] / penalty(step + 1, alpha) if c[3] == EOS and c[4] > -inf else -inf,
                  c[3] == EOS and c[4] > -inf) for c in candidates]
        merged = finished + ended
        order = sorted(range(len(merged)), key=lambda i: (-merged[i][1], i))[:beam_size]
        finished = [merged[i] for i in order]
        if finished[0][1] > alive[0][1] / penalty(max_length, alpha):
            break
    if any(flag for _, _, flag in finished):
        return [(prefix, score) for prefix, score, _ in finished]
    return [(prefix, log_prob / penalty(max_length, alpha)) for prefix, log_prob in alive]


def reference_ctranslate2_beam(model, sentence, beam_size, max_length):
    """CTranslate2 4.x's `BeamSearch::search` at length penalty 0, transcribed
    to plain Python for one sentence (src/decoding.cc).

    Returns (prefix, log-probability, ended with <EOS>) of its best hypothesis.
    """
    # Beam 0 only is live at first (CTranslate2 either expands after the
    # first step or, for a vocabulary under 2 * beam, starts the others at -inf).
    alive = [((), np.float32(0.0))] + [((), np.float32(-math.inf))] * (beam_size - 1)
    hypotheses = []
    for step in range(max_length):
        candidates = []
        for k, (prefix, log_prob) in enumerate(alive):
            for token in range(model.vocab_size):
                total = log_prob + model.sentence_log_prob(sentence, prefix, token)
                candidates.append((-total, k * model.vocab_size + token, prefix + (token,)))
        candidates = [(c[2], -c[0]) for c in sorted(candidates)[:2 * beam_size]]
        last_step = step == max_length - 1
        next_alive, secondary = [], beam_size
        top_finished = False
        for k in range(beam_size):
            prefix, total = candidates[k]
            next_beam = k
            if prefix[-1] == EOS or last_step:
                top_finished |= k == 0
                hypotheses.append((prefix[:-1] if prefix[-1] == EOS else prefix, total,
                                   prefix[-1] == EOS))
                # Another candidate that did not end takes the freed place.
                for j in range(secondary, 2 * beam_size):
                    if candidates[j][0][-1] != EOS:
                        next_beam, secondary = j, j + 1
                        break
            next_alive.append(candidates[next_beam])
        if last_step or top_finished:
            break
        alive = next_alive
    return max(hypotheses, key=lambda h: h[1])


# --- properties ---------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), vocab=st.integers(3, 6), beam_size=st.integers(2, 4),
       max_length=st.integers(1, 5), scale=st.sampled_from([0.3, 1.0, 4.0]))
def test_eos_candidates_beam_matches_ctranslate2s_search(seed, vocab, beam_size, max_length,
                                                         scale):
    table = random_table(seed, 2, vocab, max_length, scale)
    table[..., 0] = -30.0  # keep <pad> out, as a trained model does
    model = PrefixTableModel(table)
    limits = [max_length, max(1, max_length - 1)]
    result = run_beam(model, beam_size, limits, alpha=0.0, eos_candidates="beam")
    for sentence, limit in enumerate(limits):
        prefix, log_prob, ended = reference_ctranslate2_beam(model, sentence, beam_size, limit)
        assert hypothesis(result, sentence) == prefix
        assert result["finished"][sentence, 0] == ended
        assert result["scores"][sentence, 0] == pytest.approx(log_prob, rel=1e-5)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), vocab=st.integers(3, 5), max_length=st.integers(1, 4),
       alpha=st.sampled_from([0.0, 0.6, 1.5]), scale=st.sampled_from([0.5, 3.0]))
def test_a_wide_beam_finds_the_exhaustive_best(seed, vocab, max_length, alpha, scale):
    table = random_table(seed, 1, vocab, max_length, scale)
    table[..., 0] = -30.0  # keep <pad> out, as a trained model does
    model = PrefixTableModel(table)
    # Nothing is ever pruned when the 2 * beam candidates of a step cover
    # every extension of every possible prefix.
    beam_size = math.ceil(vocab * (vocab - 1) ** (max_length - 1) / 2)
    result = run_beam(model, beam_size, [max_length], alpha)
    best_score, best_prefix = exhaustive_best(model, 0, max_length, alpha)
    assert result["finished"][0, 0]
    assert hypothesis(result, 0) == best_prefix
    assert result["scores"][0, 0] == pytest.approx(best_score, rel=1e-5, abs=1e-5)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), vocab=st.integers(3, 6), beam_size=st.integers(2, 4),
       max_length=st.integers(1, 5), alpha=st.sampled_from([0.0, 0.6, 1.0]),
       scale=st.sampled_from([0.3, 1.0, 4.0]))
def test_beam_search_matches_the_plain_python_transcription(seed, vocab, beam_size, max_length,
                                                             alpha, scale):
    model = PrefixTableModel(random_table(seed, 2, vocab, max_length, scale))
    result = run_beam(model, beam_size, [max_length, max(1, max_length - 1)], alpha)
    for sentence, limit in enumerate([max_length, max(1, max_length - 1)]):
        expected = reference_beam(model, sentence, beam_size, limit, alpha)
        for rank, (prefix, score) in enumerate(expected):
            if score == -math.inf:
                assert result["scores"][sentence, rank] == -np.inf
                continue
            assert hypothesis(result, sentence, rank) == prefix
            assert result["scores"][sentence, rank] == pytest.approx(score, rel=1e-5)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), vocab=st.integers(3, 6), max_length=st.integers(1, 5))
def test_greedy_matches_the_plain_python_greedy(seed, vocab, max_length):
    model = PrefixTableModel(random_table(seed, 3, vocab, max_length, 2.0))
    limits = [max_length, 1, max(1, max_length - 2)]
    result = run_greedy(model, limits, alpha=0.0)
    for sentence, limit in enumerate(limits):
        prefix, ended = reference_greedy(model, sentence, limit)
        assert hypothesis(result, sentence) == prefix
        assert result["finished"][sentence, 0] == ended
        log_prob = sum(model.sentence_log_prob(sentence, prefix[:i], t)
                       for i, t in enumerate(prefix + ((EOS,) if ended else ())))
        assert result["scores"][sentence, 0] == pytest.approx(log_prob, rel=1e-5, abs=1e-6)


def test_search_with_beam_size_one_is_greedy_search():
    model = PrefixTableModel(random_table(7, 4, 5, 5, 2.0))
    limits = np.array([5, 3, 5, 2], np.int32)

    def decode():
        return search(model.symbols_to_logits, ops.zeros((4,), "int32"), 1, 5, limits,
                      model.initial_cache(1), alpha=0.6, eos_id=EOS)

    result = run(decode)
    greedy = run_greedy(model, limits, alpha=0.6)
    np.testing.assert_array_equal(result["ids"], greedy["ids"])
    np.testing.assert_array_equal(result["scores"], greedy["scores"])


def test_t2ts_beam_of_one_keeps_an_eos_that_greedy_passes_over():
    # Step 0: A (0.6), <EOS> (0.4). Greedy goes on to A A <EOS> (0.33); T2T's
    # beam of one finishes the runner-up <EOS> as well, which then wins.
    # Under the in-beam rule only the best candidate may end: greedy's path.
    table = table_for({
        (): {A: 0.6, EOS: 0.4},
        (A,): {A: 0.55, EOS: 0.45},
        (A, A): {EOS: 1.0},
    }, vocab_size=4, max_length=4)
    model = PrefixTableModel(table)
    greedy = run_greedy(model, [4], alpha=0.0)
    assert hypothesis(greedy, 0) == (A, A) and greedy["finished"][0, 0]
    t2t = run_beam(model, 1, [4], alpha=0.0)
    assert hypothesis(t2t, 0) == ()
    assert t2t["scores"][0, 0] == pytest.approx(math.log(0.4), abs=1e-5)
    in_beam = run_beam(model, 1, [4], alpha=0.0, eos_candidates="beam")
    for key in RESULT_KEYS:
        np.testing.assert_array_equal(in_beam[key], greedy[key], err_msg=key)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), vocab=st.integers(3, 6), max_length=st.integers(1, 5),
       scale=st.sampled_from([0.5, 2.0, 6.0]))
def test_a_beam_of_one_under_the_in_beam_rule_is_greedy_at_alpha_zero(seed, vocab, max_length,
                                                                      scale):
    # Only the best candidate may end, and at alpha 0 nothing alive can beat a
    # finished hypothesis: every step takes greedy's token.
    model = PrefixTableModel(random_table(seed, 3, vocab, max_length, scale))
    limits = [max_length, 1, max(1, max_length - 2)]
    beam = run_beam(model, 1, limits, alpha=0.0, eos_candidates="beam")
    greedy = run_greedy(model, limits, alpha=0.0)
    for key in ("ids", "lengths", "finished"):
        np.testing.assert_array_equal(beam[key], greedy[key], err_msg=key)
    np.testing.assert_allclose(beam["scores"], greedy["scores"], rtol=1e-6)


def test_batch_of_one_equals_batch_of_many():
    sentences, vocab, max_length = 32, 5, 5
    model = PrefixTableModel(random_table(3, sentences, vocab, max_length, 2.0))
    limits = np.random.RandomState(0).randint(1, max_length + 1, size=sentences)
    together = run_beam(model, 3, limits, alpha=0.6)
    for sentence in (0, 5, 17, 31):
        alone = run_beam(PrefixTableModel(model.table[sentence:sentence + 1]), 3,
                         limits[sentence:sentence + 1], alpha=0.6)
        steps = alone["ids"].shape[-1]
        np.testing.assert_array_equal(together["ids"][sentence, :, :steps], alone["ids"][0])
        assert (together["ids"][sentence, :, steps:] == 0).all()
        # The log-softmax kernel may round differently for another batch shape.
        np.testing.assert_allclose(together["scores"][sentence], alone["scores"][0], rtol=1e-6)
        np.testing.assert_array_equal(together["lengths"][sentence], alone["lengths"][0])


@pytest.mark.parametrize("eos_candidates", ["all", "beam"])
def test_the_xla_compiled_loop_gives_the_eager_result(eos_candidates):
    model = PrefixTableModel(random_table(11, 3, 5, 4, 2.0))
    eager = run_beam(model, 3, [4, 2, 3], alpha=0.6, eos_candidates=eos_candidates,
                     compiled=False)
    compiled = run_beam(model, 3, [4, 2, 3], alpha=0.6, jit_compile=True,
                        eos_candidates=eos_candidates)
    for key in RESULT_KEYS:
        np.testing.assert_allclose(eager[key], compiled[key], rtol=1e-6, err_msg=key)
