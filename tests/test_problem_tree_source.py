"""The `tree_source` problem option: control trees through the same path as parser trees."""

import logging

import numpy as np
import pytest

from syntax_t2t import problem_options
from syntax_t2t.data.dependency_phrases import is_projective
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.problem import TRAIN, Problem
from test_problem_base import TRAIN_PAIRS, TinyProblem, _read_examples, tree


def test_chains_replace_the_parsers_trees_in_vocabularies_and_shards(tmp_path):
    problem = TinyProblem(tree_source="chain_next")
    problem.generate_data(str(tmp_path), str(tmp_path))
    vocabs = problem.load_vocabularies(str(tmp_path))
    # Six words on the next word, three roots: the parser's labels are gone.
    assert vocabs["deprel"].tokens[4:] == ("dep", "root")
    assert vocabs["upos"].tokens[4:7] == ("NOUN", "VERB", "DET")  # tags describe words: kept
    examples = _read_examples(problem.filepaths(str(tmp_path), TRAIN), problem.feature_keys)
    assert sorted(example["src_heads"] for example in examples) == [[2, 3, 0]] * 3
    assert problem_options.recorded(TinyProblem, str(tmp_path))["tree_source"] == "chain_next"


def test_random_trees_are_the_same_at_datagen_and_at_decoding(tmp_path):
    problem = TinyProblem(tree_source="random", tree_seed=7)
    problem.generate_data(str(tmp_path), str(tmp_path))
    words = "a dog chases a cat into the old garden shed".split()
    parsed = tree(words, [2, 3, 0, 5, 3, 3, 10, 10, 10, 6], ["x"] * 10)
    first = problem.encode_source(parsed)
    # Decoding builds the problem from the options its data recorded and
    # encodes the parser's tree of the sentence again.
    reloaded = TinyProblem(**problem_options.recorded(TinyProblem, str(tmp_path)))
    reloaded.load_vocabularies(str(tmp_path))
    assert reloaded.encode_source(parsed) == first
    heads = np.array(first["src_heads"])
    assert heads.tolist() != parsed.heads.tolist()
    assert int(np.sum(heads == 0)) == 1 and is_projective(heads)
    # Other seeds draw other trees of these words: among 690,690 projective
    # trees of 10 words, ten seeds drawing one and the same means the seed is ignored.
    others = []
    for seed in range(8, 18):
        other = TinyProblem(tree_source="random", tree_seed=seed)
        other.load_vocabularies(str(tmp_path))
        others.append(tuple(other.encode_source(parsed)["src_heads"]))
    assert len(set(others)) > 1


def test_bad_tree_sources_are_refused():
    with pytest.raises(ValueError, match="tree_source='gold'"):
        TinyProblem(tree_source="gold")

    class Plain(Problem):
        has_source_trees = False

    with pytest.raises(ValueError, match="replaces source trees, and this problem has none"):
        Plain(tree_source="random")
    assert problem_options.parse(TinyProblem, "tree_source=random,tree_seed=3") == {
        "tree_source": "random", "tree_seed": 3}


def test_datagen_says_how_many_words_have_no_xpos(tmp_path, caplog):
    untagged = [(DependencyTree.from_heads(["Pes", "běží"], [2, 0], labels=["nsubj", "root"],
                                           upos=["NOUN", "VERB"]), ["Dog", "runs"])] * 3

    class NoTagger(TinyProblem):
        def generate_samples(self, tmp_dir, split, skip):
            yield from untagged

    with caplog.at_level(logging.WARNING):
        NoTagger().vocabularies_from_counts(NoTagger().vocabulary_counts(untagged))
    message = " ".join(record.getMessage() for record in caplog.records)
    assert "6 of 6 training words have no XPOS" in message and "pos=upos" in message
    assert "have no UPOS" not in message
