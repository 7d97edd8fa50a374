"""C&H: the multi-task translate-and-parse problem wrapper."""

import collections
import os
import random

import pytest

from syntax_t2t.problems.currey_heafield import (PARSE, TASK_TAGS, TRANSLATE,
                                      SyntheticSyntaxReorderCurreyHeafield,
                                      SyntheticSyntaxReorderSubwordCurreyHeafield, TaskSource,
                                      shuffled, tagged)
from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder
from syntax_t2t.data import linearize
from syntax_t2t.data.bracketed import parse_bracketed
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.vocab import EOS_ID
from syntax_t2t.errors import InputError
from syntax_t2t.problem import DEV, TEST, TRAIN

SIZES = {"train_size": 30, "dev_size": 5, "test_size": 5, "max_length": 8}


def first_sentence(split):
    tree, _ = next(iter(SyntheticSyntaxReorder(**SIZES).generate_samples(None, split, None)))
    return list(tree.tokens)


def problem(cls=SyntheticSyntaxReorderCurreyHeafield, **options):
    return cls(base_options=SIZES, mix_buffer_size=16, **options)


def test_tags_and_task_sources():
    assert tagged(["a", "b"]) == ["<translate>", "a", "b", "<translate>"]
    assert tagged(TaskSource(["a"], PARSE)) == ["<parse>", "a", "<parse>"]
    assert TaskSource(["a"], PARSE) == ["a"]
    with pytest.raises(ValueError, match="unknown task 'tag'"):
        TaskSource(["a"], "tag")


def test_shuffle_buffer_is_a_seeded_permutation():
    items = list(range(100))
    first = list(shuffled(items, 10, random.Random(1)))
    assert sorted(first) == items and first != items
    assert first == list(shuffled(items, 10, random.Random(1)))
    assert list(shuffled(items[:3], 10, random.Random(2))) != [] and \
        sorted(shuffled(items[:3], 10, random.Random(2))) == [0, 1, 2]


def test_training_split_holds_both_tasks_of_every_pair_mixed():
    base = SyntheticSyntaxReorder(**SIZES)
    pairs = list(base.generate_samples(None, TRAIN, None))
    samples = list(problem().generate_samples(None, TRAIN, None))
    assert len(samples) == 2 * len(pairs)
    by_task = collections.defaultdict(list)
    for source, target in samples:
        by_task[source.task].append((list(source), target))
    expected_translations = [(list(tree.tokens), target) for tree, target in pairs]
    expected_parses = [(list(tree.tokens), linearize.dependency_tokens(tree)) for tree, _ in pairs]
    assert sorted(by_task[TRANSLATE]) == sorted(expected_translations)
    assert sorted(by_task[PARSE]) == sorted(expected_parses)
    # Mixed: not each translation followed by its parse.
    tasks = [source.task for source, _ in samples]
    assert tasks != [TRANSLATE, PARSE] * len(pairs)
    assert samples == list(problem().generate_samples(None, TRAIN, None))
    words = problem(linearization_words=True)
    parse_targets = [t for s, t in words.generate_samples(None, TRAIN, None) if s.task == PARSE]
    assert sorted(parse_targets) == sorted(linearize.dependency_tokens(tree, words=True)
                                           for tree, _ in pairs)


def test_dev_and_test_translate_only():
    for split in (DEV, TEST):
        samples = list(problem().generate_samples(None, split, None))
        base = list(SyntheticSyntaxReorder(**SIZES).generate_samples(None, split, None))
        assert [(list(s), t) for s, t in samples] == [(list(tree.tokens), t) for tree, t in base]
        assert {source.task for source, _ in samples} == {TRANSLATE}


def test_encoding_tags_the_source_and_decoding_translates(tmp_path):
    chp = problem()
    chp.generate_data(str(tmp_path / "data"), str(tmp_path))
    vocabularies = chp.load_vocabularies(str(tmp_path / "data"))
    assert chp.feature_keys == ("inputs", "targets")
    translate_id = vocabularies["inputs"].token_to_id(TASK_TAGS[TRANSLATE])
    parse_id = vocabularies["inputs"].token_to_id(TASK_TAGS[PARSE])
    assert translate_id > 3 and parse_id > 3 and translate_id != parse_id
    # Plain sentences (what bin/decode reads) get the translation tag.
    words = first_sentence(TRAIN)
    inputs = chp.encode_source(words)["inputs"]
    assert inputs[0] == inputs[-2] == translate_id and inputs[-1] == EOS_ID
    assert vocabularies["inputs"].decode(inputs[1:-2]) == words
    inputs = chp.encode_source(TaskSource(words, PARSE))["inputs"]
    assert inputs[0] == inputs[-2] == parse_id
    # Parse tokens are target words.
    assert vocabularies["targets"].token_to_id("(root") > 3
    # The raw test copy holds the untagged source.
    raw = chp.raw_paths(str(tmp_path / "data"), TEST)["source"]
    test_words = first_sentence(TEST)
    with open(raw, encoding="utf-8") as stream:
        assert stream.readline().split() == test_words


def test_subword_variant_keeps_tags_through_subwords(tmp_path):
    chp = problem(SyntheticSyntaxReorderSubwordCurreyHeafield)
    assert chp.subwords == "joint" and chp.subword_vocab_size == 300
    chp.generate_data(str(tmp_path / "data"), str(tmp_path))
    vocabulary = chp.load_vocabularies(str(tmp_path / "data"))["inputs"]
    inputs = chp.encode_source(["bozi", "kam"])["inputs"]
    assert vocabulary.decode(inputs) == ["<translate>", "bozi", "kam", "<translate>"]


def write_trees(path, pairs):
    with open(path, "w", encoding="utf-8") as stream:
        for tree, _ in pairs:
            stream.write(phrase_structure_from_dependencies(tree).to_bracketed() + "\n")


def test_bracketed_constituency_parses_are_used_when_given(tmp_path):
    pairs = list(SyntheticSyntaxReorder(**SIZES).generate_samples(None, TRAIN, None))
    write_trees(tmp_path / "synthetic_syntax_reorder.train.trees", pairs)
    chp = problem()
    assert chp.constituency_path(str(tmp_path), TRAIN) == \
        os.path.join(str(tmp_path), "synthetic_syntax_reorder.train.trees")
    samples = chp.generate_samples(str(tmp_path), TRAIN, None)
    parses = sorted(target for source, target in samples if source.task == PARSE)
    bracketed = [phrase_structure_from_dependencies(tree).to_bracketed() for tree, _ in pairs]
    expected = sorted(linearize.constituency_tokens(parse_bracketed(text)) for text in bracketed)
    assert parses == expected
    assert all(token.endswith("P") or token == ")" or token.startswith("(ROOT")
               for parse in parses for token in parse)


def test_misaligned_constituency_files_are_named(tmp_path):
    pairs = list(SyntheticSyntaxReorder(**SIZES).generate_samples(None, TRAIN, None))
    path = tmp_path / "synthetic_syntax_reorder.train.trees"
    write_trees(path, pairs[:-1])
    with pytest.raises(InputError, match="fewer trees"):
        list(problem().generate_samples(str(tmp_path), TRAIN, None))
    write_trees(path, pairs[1:] + pairs[:1])
    message = r"synthetic_syntax_reorder\.train\.trees.*tree 1 has the words"
    with pytest.raises(InputError, match=message):
        list(problem().generate_samples(str(tmp_path), TRAIN, None))
    write_trees(path, pairs + pairs[:1])
    with pytest.raises(InputError, match="more trees"):
        list(problem().generate_samples(str(tmp_path), TRAIN, None))
