"""The `subwords` and `source_lemmas` problem options and the `*_subword` problems."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from syntax_t2t.problems.pud import PudSyntaxDeCs, pud_filename
from syntax_t2t.problems.subword import PudSyntaxDeCsSubword, SyntheticSyntaxReorderSubword
from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder
from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.data import subword_syntax
from syntax_t2t.data.subwords import ESCAPE_CHARACTERS, SubwordVocabulary
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.data.vocab import EOS_ID, Vocabulary
from syntax_t2t.hparams import HParams
from syntax_t2t.problem import DEV, TEST, TRAIN, Problem

PUD = Path(__file__).resolve().parents[2] / "shared" / "data" / "pud"
needs_pud = pytest.mark.skipif(not PUD.is_dir(), reason=f"real data folder {PUD} is absent")
SIZES = {"train_size": 200, "dev_size": 5, "test_size": 5, "max_length": 10}


def tree(words, heads, labels, lemmas):
    return DependencyTree.from_heads(words, np.array(heads), labels=labels, lemmas=lemmas,
                                     upos=["X"] * len(words), xpos=["x"] * len(words))


PAIRS = [
    (tree(["unbelievable", "dogs", "bark"], [2, 3, 0], ["amod", "nsubj", "root"],
          ["unbelievable", "dog", "bark"]), ["unglaubliche", "Hunde", "bellen"]),
    (tree(["dogs", "sleep"], [2, 0], ["nsubj", "root"], ["dog", "sleep"]), ["Hunde", "schlafen"]),
]


class TinySubwords(Problem):
    num_shards = {TRAIN: 1, DEV: 1, TEST: 1}
    subwords = "joint"
    subword_vocab_size = 48
    source_lemmas = True

    def generate_samples(self, tmp_dir, split, skip):
        yield from PAIRS


def test_features_and_vocabularies_with_subwords_and_lemmas():
    problem = TinySubwords()
    assert problem.feature_keys == ("inputs", "targets", "src_heads", "src_deprel", "src_upos",
                                    "src_xpos", "src_lemma", "src_word_position")
    assert problem.vocabulary_names == ("inputs", "targets", "deprel", "upos", "xpos", "lemma")
    assert TinySubwords(subwords=None, source_lemmas=False).feature_keys == (
        "inputs", "targets", "src_heads", "src_deprel", "src_upos", "src_xpos")
    with pytest.raises(ValueError, match="subwords='bpe'"):
        TinySubwords(subwords="bpe")
    with pytest.raises(ValueError, match="subword_vocab_size=10 is below the minimum"):
        TinySubwords(subword_vocab_size=10)


def test_encoding_projects_the_word_syntax_onto_subwords(tmp_path):
    problem = TinySubwords()
    problem.generate_data(str(tmp_path / "data"), str(tmp_path))
    vocabularies = problem.load_vocabularies(str(tmp_path / "data"))
    source_vocabulary = vocabularies["inputs"]
    assert isinstance(source_vocabulary, SubwordVocabulary)
    assert vocabularies["targets"] == source_vocabulary  # joint
    assert isinstance(vocabularies["lemma"], Vocabulary)
    source, target = PAIRS[0]
    encoded = source_vocabulary.encode_with_word_index(source.tokens)
    assert len(encoded.ids) > len(source), "the tiny vocabulary must split some words"
    features = problem.encode((source, target))
    assert features["inputs"] == encoded.ids.tolist() + [EOS_ID]
    assert features["src_word_position"] == (encoded.word_index + 1).tolist()
    assert features["src_heads"] == subword_syntax.first_subword_heads(
        encoded.word_index, source.heads).tolist()
    for key, vocabulary, values in (("src_deprel", "deprel", source.labels),
                                    ("src_lemma", "lemma", source.lemmas)):
        word_ids = vocabularies[vocabulary].encode(values)
        assert features[key] == [word_ids[w] for w in encoded.word_index]
    assert problem.decode_targets(features["targets"]) == target
    assert problem.decode_inputs(features["inputs"]) == list(source.tokens)
    sizes = problem.vocab_sizes(str(tmp_path / "data"))
    assert sizes["inputs"] == sizes["targets"] <= 48 and sizes["lemma"] == 4 + 4


def test_separate_vocabularies(tmp_path):
    problem = TinySubwords(subwords="separate")
    problem.generate_data(str(tmp_path / "data"), str(tmp_path))
    vocabularies = problem.load_vocabularies(str(tmp_path / "data"))
    assert vocabularies["inputs"] != vocabularies["targets"]
    # Each side's characters come from its own words only.
    for name, side in (("inputs", 0), ("targets", 1)):
        words = [pair[side].tokens if side == 0 else pair[side] for pair in PAIRS]
        characters = {character for sentence in words for word in sentence for character in word}
        assert vocabularies[name].alphabet - ESCAPE_CHARACTERS <= characters


def test_batches_pad_word_positions_with_zero(tmp_path):
    problem = TinySubwords()
    problem.generate_data(str(tmp_path / "data"), str(tmp_path))
    hparams = HParams(batch_size=64, max_length=16, min_length_bucket=8, length_bucket_step=1.5)
    batch = next(iter(problem.dataset("eval", str(tmp_path / "data"), hparams)))
    for row in range(batch["inputs"].shape[0]):
        length = int(np.sum(batch["inputs"][row].numpy() > 0)) - 1  # without <EOS>
        positions = batch["src_word_position"][row].numpy()
        assert np.all(positions[:length] > 0) and np.all(positions[length:] == 0)
        assert np.all(batch["src_heads"][row].numpy()[length:] == -1)


def test_synthetic_subword_problem_round_trips_every_sentence(tmp_path):
    registration.import_all()
    registered = registry.problem("synthetic_syntax_reorder_subword")
    assert type(registered) is SyntheticSyntaxReorderSubword
    problem = SyntheticSyntaxReorderSubword(**SIZES)
    problem.generate_data(str(tmp_path / "data"), str(tmp_path))
    split_words = 0
    for source, target in SyntheticSyntaxReorder(**SIZES).generate_samples(None, DEV, None):
        features = problem.encode((source, target))
        assert problem.decode_inputs(features["inputs"]) == list(source.tokens)
        assert problem.decode_targets(features["targets"]) == target
        split_words += len(features["inputs"]) - 1 - len(source)
        # The SISA heads read back to the word tree.
        word_index = np.array(features["src_word_position"]) - 1
        heads = np.array(features["src_heads"])
        np.testing.assert_array_equal(
            subword_syntax.word_heads_from_subword_heads(heads, word_index), source.heads)
    assert split_words > 0


@pytest.mark.real_data
@needs_pud
def test_pud_subword_problem_from_the_real_files(tmp_path):
    tmp_dir = tmp_path / "tmp"
    tmp_dir.mkdir()
    for language in ("de", "cs"):
        shutil.copy(PUD / f"{pud_filename(language)}.gz", tmp_dir)
    problem = PudSyntaxDeCsSubword(train_size=200, dev_size=20, test_size=20)
    record = problem.generate_data(str(tmp_path / "data"), str(tmp_dir))
    assert record["counts"] == {TRAIN: 200, DEV: 20, TEST: 20}
    assert record["vocab_sizes"]["inputs"] <= 4_000
    words = subwords = 0
    for source, target in PudSyntaxDeCs(train_size=200, dev_size=20, test_size=20).generate_samples(
            str(tmp_dir), TEST, None):
        features = problem.encode((source, target))
        assert problem.decode_inputs(features["inputs"]) == list(source.tokens)
        assert problem.decode_targets(features["targets"]) == target
        words += len(source)
        subwords += len(features["inputs"]) - 1
    assert subwords > words  # unseen words are split
