"""Word-level parses read from parse heads over subwords, and from SISA's parent head.

`decoding/parse_heads.decode_word_heads` turns a head's scores over
subwords into one head per *word* (what `bin/decode --parse_to_file` writes
and UAS scores against the gold trees): checked against a naive reference
(loops over words and subwords), against `decode_heads` where every word is
one subword, and on a worked sentence whose word "think" has 3 pieces. The
`Decoder` writes word heads on subword problems for dep_parse and sisa.
"""

import itertools

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.criteria import head_gold
from syntax_t2t.data import subword_syntax
from syntax_t2t.decoding import parse_heads
from syntax_t2t.decoding.decode_hparams import decode_hparams
from syntax_t2t.decoding.decoder import Decoder
from syntax_t2t.decoding.inputs import SourceSentence
from syntax_t2t.data.conllu_reader import format_conllu
from syntax_t2t.data.parse_file import ParsedSentence, write_parsed
from syntax_t2t.evaluation.attachment import score_parse_files
from syntax_t2t.models import sisa

# "I think this is a good example", "think" in 3 pieces (subwords 1, 2, 3).
WORD_HEADS = [2, 0, 4, 2, 7, 7, 4]
PIECES = [1, 3, 1, 1, 1, 1, 1]
PEAK = 8.0


def naive_word_log_probs(logits, word_index):
    """Loops: P(word h heads word d) = sum over h's subwords of the softmax of d's first subword row."""
    index = np.asarray(word_index)
    n = index[-1] + 1
    first = [int(np.flatnonzero(index == w)[0]) for w in range(n)]
    node = [0] + [int(w) + 1 for w in index]  # position -> node (0 = ROOT)
    result = np.full((n + 1, n + 1), -np.inf)
    result[0] = 0.0
    for d in range(1, n + 1):
        row = logits[first[d - 1] + 1]
        allowed = [p for p in range(index.size + 1) if node[p] != d]
        total = sum(np.exp(row[p]) for p in allowed)
        for h in range(n + 1):
            if h != d:
                result[d, h] = np.log(sum(np.exp(row[p]) for p in allowed if node[p] == h) / total)
    return result


@st.composite
def split_logits(draw):
    pieces = draw(st.lists(st.integers(1, 3), min_size=1, max_size=6))
    size = sum(pieces) + 1 + draw(st.integers(0, 2))  # <ROOT>, subwords, <EOS>/padding
    seed = draw(st.integers(0, 2**16))
    logits = np.random.default_rng(seed).normal(0, 2, (size, size))
    return subword_syntax.word_index_from_counts(pieces), logits


@settings(max_examples=40, deadline=None)
@given(split_logits())
def test_word_log_probs_equal_naive_reference(case):
    index, logits = case
    np.testing.assert_allclose(parse_heads.word_head_log_probs(logits, index),
                               naive_word_log_probs(logits, index), atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(split_logits(), st.sampled_from(parse_heads.PARSE_DECODERS))
def test_one_subword_per_word_is_the_word_level_decoder(case, method):
    index, logits = case
    n = index[-1] + 1
    words = np.arange(n)
    np.testing.assert_allclose(parse_heads.word_head_log_probs(logits, words)[1:],
                               parse_heads.head_log_probs(logits, n)[1:], atol=1e-9)
    np.testing.assert_array_equal(parse_heads.decode_word_heads(logits, words, method),
                                  parse_heads.decode_heads(logits, n, method))


def peaked(size, targets):
    """Scores [size, size] that peak at `targets[row]` (rows without a target are flat)."""
    logits = np.zeros((size, size))
    for row, target in enumerate(targets):
        if target >= 0:
            logits[row, target] = PEAK
    return logits


@pytest.mark.parametrize("method", parse_heads.PARSE_DECODERS)
def test_worked_example_gold_subword_heads_give_the_gold_word_heads(method):
    index = subword_syntax.word_index_from_counts(PIECES)
    subword_heads = subword_syntax.first_subword_heads(index, WORD_HEADS)
    # Every piece of "think" points at ROOT, "I" and "is" at th (position 2 with <ROOT>).
    assert subword_heads.tolist() == [2, 0, 0, 0, 6, 2, 9, 9, 6]
    logits = peaked(11, [-1] + subword_heads.tolist())
    heads = parse_heads.decode_word_heads(logits, index, method)
    assert heads.tolist() == WORD_HEADS
    # The word-level reading of the subword heads agrees.
    assert subword_syntax.word_heads_from_subword_heads(subword_heads, index).tolist() == WORD_HEADS
    # Reading the subword argmax as if subwords were words would give 9 "heads".
    assert parse_heads.decode_heads(logits, index.size, method).size == 9


def test_mass_on_any_piece_of_the_head_word_counts_for_that_word():
    index = subword_syntax.word_index_from_counts(PIECES)
    # "I" (row 1) puts a little on each piece of "think" (positions 2-4) and
    # more on "this" (position 5) than on any single piece.
    logits = np.zeros((10, 10))
    logits[1, [2, 3, 4]] = 3.0
    logits[1, 5] = 3.5
    heads = parse_heads.decode_word_heads(logits, index)
    assert heads[0] == 2  # think: 3 e^3 > e^3.5
    # Pieces of a word's own word are never its head: "think"'s first piece
    # peaks on its second piece, so the best other node wins.
    logits[2, 3] = 20.0
    logits[2, 0] = 1.0
    assert parse_heads.decode_word_heads(logits, index)[1] == 0


@pytest.mark.parametrize("pieces", [PIECES, [1] * 7])
@pytest.mark.parametrize("method", parse_heads.PARSE_DECODERS)
def test_sisa_parent_scores_decode_to_the_gold_word_heads(pieces, method):
    index = subword_syntax.word_index_from_counts(pieces)
    subword_heads = subword_syntax.first_subword_heads(index, WORD_HEADS)
    # SISA's targets: 0-based parent, ROOT's children point at their own first piece.
    targets = sisa.parent_targets(subword_heads[None], (index + 1)[None]).numpy()[0]
    if pieces == PIECES:
        assert targets[1] == targets[2] == targets[3] == 1  # the pieces of "think"
    else:
        assert targets[1] == 1  # "think" is its own parent
    logits = peaked(index.size + 1, targets.tolist())  # one extra row/column: <EOS>
    heads = parse_heads.decode_word_heads(logits, index, method, root_prefixed=False)
    assert heads.tolist() == WORD_HEADS


def test_root_prefixed_sisa_scores_move_the_own_word_score_to_root():
    index = subword_syntax.word_index_from_counts([2, 1])
    logits = np.arange(16, dtype=float).reshape(4, 4)
    prefixed = parse_heads.root_prefixed_logits(logits, index)
    assert prefixed.shape == (4, 4)
    # Subword 1 (second piece of word 0): ROOT takes its score of subword 0.
    np.testing.assert_array_equal(prefixed[2], [logits[1, 0], -np.inf, logits[1, 1], logits[1, 2]])
    np.testing.assert_array_equal(prefixed[3], [logits[2, 2], logits[2, 0], logits[2, 1], -np.inf])


# ----------------------------------------------------------- the decoder


class _GoldParse:
    """Mixin: the encoder head's scores peak at the gold heads read from the batch."""

    def encode(self, features, training=False, return_attention=False):
        encoded = super().encode(features, training=training, return_attention=return_attention)
        key = self.head_logits_key
        size = tf.shape(encoded[key])[-1]
        gold = head_gold.gold_head_positions(self, features)
        encoded[key] = tf.one_hot(tf.maximum(gold, 0), size) * PEAK
        return encoded


@pytest.fixture(scope="module")
def subword_problem(tmp_path_factory):
    registration.import_all()
    problem = registry.problems.get("synthetic_syntax_reorder_subword")(
        train_size=200, dev_size=10, test_size=10)
    root = tmp_path_factory.mktemp("subword_parse")
    problem.generate_data(str(root / "data"), str(root / "raw"))
    problem.load_vocabularies(str(root / "data"))
    trees = [tree for tree, _ in itertools.islice(problem.generate_samples(None, "test", None), 10)]
    return problem, str(root / "data"), trees


@pytest.mark.parametrize("name,overrides", [("dep_parse", ""), ("sisa", "source_word_positions=true")])
@pytest.mark.parametrize("method", parse_heads.PARSE_DECODERS)
def test_decoder_writes_word_heads_on_subword_problems(subword_problem, tmp_path, name, overrides,
                                                       method):
    problem, data_dir, trees = subword_problem
    base = registry.model(name)
    model_class = type(f"Gold{base.__name__}", (_GoldParse, base), {
        "decode_features": base.train_features - {"targets"}})
    hparams = registry.hparams("transformer_tiny").parse(
        "hidden_size=16,filter_size=32,num_encoder_layers=1,num_decoder_layers=1,parse_layer=0")
    hparams.parse(overrides)
    model = model_class(hparams, problem.vocab_sizes(data_dir))
    if name == "sisa":
        model.decode_features = model.train_features - {"targets"}
    sentences = [SourceSentence(tree, f"test:{i}") for i, tree in enumerate(trees)]
    # The split really puts several pieces in some words.
    pieces = [len(problem.encode_source(tree)["inputs"]) - 1 for tree in trees]
    assert sum(pieces) > sum(len(tree) for tree in trees)
    translations = Decoder(model, problem, decode_hparams("beam_size=1,extra_length=2"),
                           parse_decoder=method).translate(sentences)
    for tree, translation in zip(trees, translations):
        assert translation.heads.tolist() == list(tree.heads)
    # As bin/decode --parse_to_file writes them, scored by bin/evaluate.
    write_parsed([ParsedSentence.predicted(tree, t.heads) for tree, t in zip(trees, translations)],
                 tmp_path / "parse.conllu")
    (tmp_path / "gold.conllu").write_text(format_conllu(trees), encoding="utf-8")
    scores = score_parse_files(tmp_path / "parse.conllu", tmp_path / "gold.conllu")
    assert scores.words == sum(len(tree) for tree in trees) and scores.uas == 100.0
