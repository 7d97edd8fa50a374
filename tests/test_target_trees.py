"""Problems with target trees: the synthetic target tree, `tgt_heads` in the examples and
batches (words and subwords), and data generated before target trees were stored."""

import itertools
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from syntax_t2t.problems.pud import PudSyntaxCsEn
from syntax_t2t.problems.synthetic import Lexicon, SyntheticSyntaxReorder, sample_tree, target_tree, translate
from syntax_t2t import registry
from syntax_t2t.cli import registration
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.problem import DEV, TEST, TRAIN, Problem, TreeTokens

PUD = Path(__file__).resolve().parents[2] / "shared" / "data" / "pud"
SIZES = {"train_size": 30, "dev_size": 4, "test_size": 4, "max_length": 8}


def test_synthetic_target_tree_is_the_source_tree_reordered():
    lexicon = Lexicon(0)
    rng = random.Random(5)
    for _ in range(50):
        source = sample_tree(rng, lexicon, rng.randint(1, 15), 0.3)
        target = target_tree(source, lexicon)
        assert list(target.tokens) == translate(source, lexicon)
        # Every arc of the source is an arc of the target between the translations.
        source_arcs = {(lexicon.translation[source.tokens[d - 1]],
                        "ROOT" if h == 0 else lexicon.translation[source.tokens[h - 1]], label)
                       for d, (h, label) in enumerate(zip(source.heads, source.labels), start=1)}
        target_arcs = {(target.tokens[d - 1], "ROOT" if h == 0 else target.tokens[h - 1], label)
                       for d, (h, label) in enumerate(zip(target.heads, target.labels), start=1)}
        assert target_arcs == source_arcs
        assert sorted(target.upos) == sorted(source.upos)


def test_worked_example_of_target_heads():
    # Source "PRON VERB NOUN" (nsubj, root, obj) -> target SOV: PRON NOUN VERB.
    lexicon = Lexicon(0)
    words = {upos: lexicon.words[upos][0][0] for upos in ("PRON", "VERB", "NOUN")}
    source = DependencyTree.from_heads([words["PRON"], words["VERB"], words["NOUN"]], [2, 0, 2],
                                       labels=["nsubj", "root", "obj"],
                                       upos=["PRON", "VERB", "NOUN"])
    target = target_tree(source, lexicon)
    assert target.labels == ("nsubj", "obj", "root")
    assert target.heads.tolist() == [3, 3, 0]


def test_synthetic_examples_and_batches_carry_target_heads(tmp_path):
    registration.import_all()
    problem = SyntheticSyntaxReorder(**SIZES)
    assert problem.feature_keys[-1] == "tgt_heads"
    source, target = next(iter(problem.generate_samples(None, TRAIN, None)))
    assert isinstance(target, TreeTokens) and list(target) == list(target.tree.tokens)
    record = problem.generate_data(str(tmp_path), None)
    assert record["feature_keys"] == list(problem.feature_keys)
    example = problem.encode((source, target))
    assert example["tgt_heads"] == target.tree.heads.tolist()
    assert len(example["targets"]) == len(example["tgt_heads"]) + 1

    hparams = registry.hparams("transformer_tiny")
    batch = next(iter(problem.dataset("eval", str(tmp_path), hparams)))
    heads, targets = batch["tgt_heads"].numpy(), batch["targets"].numpy()
    words = (targets > 1).sum(axis=1)
    for row in range(len(words)):
        # A word per head, then -1 (the <EOS> position too), as src_heads are padded.
        assert (heads[row, :words[row]] >= 0).all() and (heads[row, words[row]:] == -1).all()


def test_data_without_a_feature_key_record_holds_no_target_heads(tmp_path):
    problem = SyntheticSyntaxReorder(**SIZES)
    problem.generate_data(str(tmp_path), None)
    record_path = Path(problem.completion_record_path(str(tmp_path)))
    record = json.loads(record_path.read_text())
    del record["feature_keys"]  # as written before target trees were stored
    record_path.write_text(json.dumps(record))
    assert "tgt_heads" not in problem.data_feature_keys(str(tmp_path))
    assert "tgt_heads" in problem.feature_keys


class TinySubwordTargets(Problem):
    num_shards = {TRAIN: 1, DEV: 1, TEST: 1}
    subwords = "joint"
    subword_vocab_size = 40
    has_target_trees = True

    def generate_samples(self, tmp_dir, split, skip):
        source = DependencyTree.from_heads(["dogs", "sleep"], [2, 0])
        target = DependencyTree.from_heads(["unbelievable", "Hunde", "schlafen"], [2, 3, 0])
        yield source, TreeTokens(target)


def test_target_heads_are_projected_onto_target_subwords(tmp_path):
    problem = TinySubwordTargets()
    problem.generate_data(str(tmp_path), None)
    sample = next(iter(problem.generate_samples(None, TRAIN, None)))
    example = problem.encode(sample)
    vocabulary = problem.load_vocabularies(str(tmp_path))["targets"]
    _, word_index = vocabulary.encode_with_word_index(sample[1])
    assert len(word_index) > 3  # the words were really split
    first = {word: int(np.flatnonzero(word_index == word)[0]) + 1 for word in range(3)}
    # Each subword depends on the first subword of its word's head (0 = ROOT).
    expected = [{0: first[1], 1: first[2], 2: 0}[word] for word in word_index]
    assert example["tgt_heads"] == expected
    assert len(example["targets"]) == len(word_index) + 1


def test_a_problem_with_target_trees_refuses_plain_targets():
    class Plain(TinySubwordTargets):
        def generate_samples(self, tmp_dir, split, skip):
            yield DependencyTree.from_heads(["a"], [0]), ["b"]

    problem = Plain(subwords=None)
    problem._vocabularies = problem.build_vocabularies(problem.generate_samples(None, TRAIN, None))
    with pytest.raises(TypeError, match="has target trees, but a sample's target is list"):
        problem.encode(next(iter(problem.generate_samples(None, TRAIN, None))))


@pytest.mark.real_data
@pytest.mark.skipif(not PUD.is_dir(), reason=f"real data folder {PUD} is absent")
def test_pud_targets_are_the_gold_target_trees(tmp_path):
    for language in ("cs", "en"):
        shutil.copy(PUD / f"{language}_pud-ud-test.conllu.gz", tmp_path)
    problem = PudSyntaxCsEn(train_size=5, dev_size=2, test_size=2)
    english = {tree.comments["parallel_id"]: tree
               for tree in read_conllu(PUD / "en_pud-ud-test.conllu.gz")}
    for source, target in itertools.islice(problem.generate_samples(str(tmp_path), TRAIN, None), 5):
        assert target.tree == english[source.comments["parallel_id"]]
