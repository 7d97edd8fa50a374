"""Tests for syntax_t2t.problem (the Problem base class) on small in-test problems."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.data.vocab import EOS_ID, UNK_ID
from syntax_t2t.errors import InputError, SkipCounter, raise_or_skip
from syntax_t2t.hparams import HParams
from syntax_t2t.problem import DEV, TEST, TRAIN, DataNotGeneratedError, Problem


def tree(words, heads, labels, upos=None, xpos=None):
    return DependencyTree.from_heads(words, np.array(heads), labels=labels, upos=upos or ["X"] * len(words),
                                     xpos=xpos or ["x"] * len(words))


TRAIN_PAIRS = [
    (tree(["a", "dog", "barks"], [2, 3, 0], ["det", "nsubj", "root"], ["DET", "NOUN", "VERB"]),
     ["ein", "Hund", "bellt"]),
    (tree(["a", "cat", "sleeps"], [2, 3, 0], ["det", "nsubj", "root"], ["DET", "NOUN", "VERB"]),
     ["eine", "Katze", "schläft"]),
    (tree(["dog", "sleeps", "."], [2, 0, 2], ["nsubj", "root", "punct"], ["NOUN", "VERB", "PUNCT"]),
     ["Hund", "schläft", "."]),
]
DEV_PAIRS = [(tree(["a", "cow", "barks"], [2, 3, 0], ["det", "nsubj", "root"]), ["eine", "Kuh", "bellt"])]
TEST_PAIRS = [(tree(["cat"], [0], ["root"]), ["Katze"])]


class TinyProblem(Problem):
    """Fixed pairs; `fail_in` makes a split raise halfway, `bad` adds a skippable example."""

    num_shards = {TRAIN: 2, DEV: 1, TEST: 1}
    fail_in = None
    bad = False
    option_names = Problem.option_names + ("fail_in", "bad")

    def generate_samples(self, tmp_dir, split, skip):
        pairs = {TRAIN: TRAIN_PAIRS, DEV: DEV_PAIRS, TEST: TEST_PAIRS}[split]
        for index, pair in enumerate(pairs):
            if split == self.fail_in and index == len(pairs) // 2:
                raise RuntimeError("interrupted")
            if self.bad and split == TRAIN and index == 1:
                raise_or_skip(InputError("raw.txt", 7, "broken pair", reason="broken"), skip)
            yield pair


def test_names_keys_and_options():
    problem = TinyProblem()
    assert problem.name == "tiny_problem"
    assert problem.feature_keys == ("inputs", "targets", "src_heads", "src_deprel", "src_upos", "src_xpos")
    assert problem.vocabulary_names == ("inputs", "targets", "deprel", "upos", "xpos")
    assert TinyProblem(vocab_size=10).options()["vocab_size"] == 10
    assert Problem.vocab_size == 50_000
    with pytest.raises(TypeError, match="tiny_problem has no option 'vocab'"):
        TinyProblem(vocab=10)


def test_encode_follows_the_design(tmp_path):
    problem = TinyProblem()
    problem.generate_data(str(tmp_path), str(tmp_path))
    vocabs = problem.load_vocabularies(str(tmp_path))
    source, target = TRAIN_PAIRS[0]
    features = problem.encode((source, target))
    assert features["inputs"] == vocabs["inputs"].encode(["a", "dog", "barks"]) + [EOS_ID]
    assert features["targets"] == vocabs["targets"].encode(["ein", "Hund", "bellt"]) + [EOS_ID]
    assert features["src_heads"] == [2, 3, 0]
    assert features["src_deprel"] == vocabs["deprel"].encode(["det", "nsubj", "root"])
    assert features["src_upos"] == vocabs["upos"].encode(["DET", "NOUN", "VERB"])
    assert features["src_xpos"] == vocabs["xpos"].encode(["x", "x", "x"])
    assert min(features["inputs"][:-1]) >= 4 and UNK_ID not in features["src_deprel"]
    # Words seen only outside the training split are unknown.
    dev = problem.encode(DEV_PAIRS[0])
    assert dev["inputs"][1] == UNK_ID and dev["targets"][1] == UNK_ID
    assert problem.decode_targets(features["targets"] + [5, 6]) == ["ein", "Hund", "bellt"]
    assert problem.decode_inputs(features["inputs"]) == ["a", "dog", "barks"]


def test_vocabularies_count_the_training_split(tmp_path):
    problem = TinyProblem()
    problem.generate_data(str(tmp_path), str(tmp_path))
    vocabs = problem.load_vocabularies(str(tmp_path))
    # "a", "dog", "sleeps" twice; then once each, in code-point order.
    assert vocabs["inputs"].tokens[4:] == ("a", "dog", "sleeps", ".", "barks", "cat")
    assert vocabs["deprel"].tokens[4:] == ("nsubj", "root", "det", "punct")
    assert problem.vocab_sizes(str(tmp_path)) == {"inputs": 10, "targets": 11, "deprel": 8, "upos": 8,
                                                  "xpos": 5}
    limited = TinyProblem(vocab_size=6, tag_vocab_size=5)
    limited.generate_data(str(tmp_path / "limited"), str(tmp_path))
    sizes = limited.vocab_sizes(str(tmp_path / "limited"))
    assert sizes == {"inputs": 6, "targets": 6, "deprel": 5, "upos": 5, "xpos": 5}


def _read_examples(paths, keys):
    examples = []
    for path in paths:
        for record in tf.data.TFRecordDataset(path):
            parsed = tf.train.Example.FromString(record.numpy())
            examples.append({k: list(parsed.features.feature[k].int64_list.value) for k in keys})
    return examples


def test_shards_hold_the_encoded_examples(tmp_path):
    problem = TinyProblem()
    record = problem.generate_data(str(tmp_path), str(tmp_path))
    assert record["counts"] == {TRAIN: 3, DEV: 1, TEST: 1}
    assert record["kept_existing"] is False
    train_paths = problem.filepaths(str(tmp_path), TRAIN)
    assert [os.path.basename(p) for p in train_paths] == ["tiny_problem-train-00000-of-00002",
                                                          "tiny_problem-train-00001-of-00002"]
    examples = _read_examples(train_paths, problem.feature_keys)
    # Round robin over the shards: examples 0 and 2 in shard 0, example 1 in shard 1.
    expected = [problem.encode(TRAIN_PAIRS[i]) for i in (0, 2, 1)]
    assert examples == expected
    assert _read_examples(problem.filepaths(str(tmp_path), TEST), problem.feature_keys) == \
        [problem.encode(TEST_PAIRS[0])]


def _mtimes(directory):
    return {name: os.stat(os.path.join(directory, name)).st_mtime_ns for name in os.listdir(directory)}


def test_generate_data_is_idempotent_and_overwrite_regenerates(tmp_path):
    problem = TinyProblem()
    problem.generate_data(str(tmp_path), str(tmp_path))
    before = _mtimes(tmp_path)
    again = TinyProblem().generate_data(str(tmp_path), str(tmp_path))
    assert again["kept_existing"] is True
    assert _mtimes(tmp_path) == before
    os.utime(tmp_path / "tiny_problem-dev-00000-of-00001", ns=(1, 1))
    regenerated = TinyProblem().generate_data(str(tmp_path), str(tmp_path), overwrite=True)
    assert regenerated["kept_existing"] is False
    after = _mtimes(tmp_path)
    assert set(after) == set(before)
    assert after["tiny_problem-dev-00000-of-00001"] > 1


def test_a_missing_listed_file_makes_the_data_incomplete(tmp_path):
    TinyProblem().generate_data(str(tmp_path), str(tmp_path))
    os.remove(tmp_path / "tiny_problem-test-00000-of-00001")
    with pytest.raises(DataNotGeneratedError, match="bin/datagen --problem=tiny_problem"):
        TinyProblem().filepaths(str(tmp_path), TRAIN)
    assert TinyProblem().generate_data(str(tmp_path), str(tmp_path))["kept_existing"] is False
    assert (tmp_path / "tiny_problem-test-00000-of-00001").is_file()


@pytest.mark.parametrize("fail_in", [TRAIN, TEST])
def test_an_interrupted_run_leaves_nothing_that_looks_complete(tmp_path, fail_in):
    with pytest.raises(RuntimeError, match="interrupted"):
        TinyProblem(fail_in=fail_in).generate_data(str(tmp_path), str(tmp_path))
    names = os.listdir(tmp_path)
    assert not [n for n in names if "-of-" in n], f"shards left behind: {names}"
    assert not [n for n in names if n.endswith(".tmp")], f"temporary files left behind: {names}"
    assert "tiny_problem.datagen.json" not in names
    with pytest.raises(DataNotGeneratedError):
        TinyProblem().filepaths(str(tmp_path), TRAIN)


def test_an_interrupted_overwrite_keeps_the_old_data_complete(tmp_path):
    # #35 item 8: the new data is built aside and moved in whole, so the old data stays usable.
    data = tmp_path / "data"
    TinyProblem().generate_data(str(data), str(tmp_path))
    before = {name: (data / name).read_bytes() for name in os.listdir(data) if not name.startswith(".")}
    with pytest.raises(RuntimeError, match="interrupted"):
        TinyProblem(fail_in=TEST).generate_data(str(data), str(tmp_path), overwrite=True)
    assert not [n for n in os.listdir(data) if n.endswith(".tmp")]
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".overwrite")]
    assert {name: (data / name).read_bytes() for name in os.listdir(data)
            if not name.startswith(".")} == before
    assert TinyProblem().filepaths(str(data), TRAIN)


def test_vocabularies_need_only_the_vocabulary_files(tmp_path):
    TinyProblem().generate_data(str(tmp_path), str(tmp_path))
    for path in tmp_path.iterdir():
        if ".vocab." not in path.name:
            path.unlink()
    assert TinyProblem().vocab_sizes(str(tmp_path))["inputs"] == 10
    (tmp_path / "tiny_problem.vocab.upos.txt").unlink()
    with pytest.raises(DataNotGeneratedError, match="missing vocabulary file.*vocab.upos.txt"):
        TinyProblem().vocab_sizes(str(tmp_path))


def test_max_examples_and_stale_shards(tmp_path):
    record = TinyProblem().generate_data(str(tmp_path), str(tmp_path), max_examples=2)
    assert record["counts"] == {TRAIN: 2, DEV: 1, TEST: 1}
    fewer_shards = TinyProblem(num_shards={TRAIN: 1, DEV: 1, TEST: 1})
    fewer_shards.generate_data(str(tmp_path), str(tmp_path), overwrite=True)
    assert sorted(n for n in os.listdir(tmp_path) if "-of-" in n) == [
        "tiny_problem-dev-00000-of-00001", "tiny_problem-test-00000-of-00001",
        "tiny_problem-train-00000-of-00001"]


def test_skipped_examples_are_counted_once(tmp_path):
    skip = SkipCounter()
    record = TinyProblem(bad=True).generate_data(str(tmp_path), str(tmp_path), skip=skip)
    # The vocabulary pass reads the training split too, but reports nothing.
    assert skip.counts == {"broken": 1}
    assert record["skipped"] == {"broken": 1}
    with pytest.raises(InputError, match="raw.txt:7: broken pair"):
        TinyProblem(bad=True).generate_data(str(tmp_path / "strict"), str(tmp_path))


def test_completion_record_lists_what_was_written(tmp_path):
    TinyProblem().generate_data(str(tmp_path), str(tmp_path), max_examples=5)
    record = json.loads((tmp_path / "tiny_problem.datagen.json").read_text())
    assert record["problem"] == "tiny_problem" and record["max_examples"] == 5
    assert record["vocabularies"]["xpos"] == "tiny_problem.vocab.xpos.txt"
    for names in record["shards"].values():
        assert all((tmp_path / name).is_file() for name in names)


def test_dataset_batches_the_split(tmp_path):
    problem = TinyProblem()
    problem.generate_data(str(tmp_path), str(tmp_path))
    hparams = HParams(batch_size=64, max_length=16, min_length_bucket=4, length_bucket_step=2.0)
    batches = list(problem.dataset("eval", str(tmp_path), hparams))
    assert len(batches) == 1
    batch = batches[0]
    assert batch["inputs"].shape == (1, 4) and batch["inputs"].dtype == tf.int32
    assert batch["src_heads"].numpy().tolist() == [[2, 3, 0, -1]]
    with pytest.raises(ValueError, match="unknown mode 'dev'"):
        problem.dataset("dev", str(tmp_path), hparams)
    with pytest.raises(DataNotGeneratedError, match="no complete data of problem tiny_problem"):
        problem.dataset("train", str(tmp_path / "empty"), hparams)


class PlainProblem(Problem):
    has_source_trees = False

    def generate_samples(self, tmp_dir, split, skip):
        yield ["hello", "world"], ["hallo", "Welt"]


def test_problem_without_source_trees(tmp_path):
    problem = PlainProblem()
    assert problem.feature_keys == ("inputs", "targets")
    problem.generate_data(str(tmp_path), str(tmp_path))
    assert set(problem.vocab_sizes(str(tmp_path))) == {"inputs", "targets"}
    features = problem.encode((["hello", "world"], ["hallo", "Welt"]))
    assert set(features) == {"inputs", "targets"} and features["inputs"][-1] == EOS_ID
    with pytest.raises(TypeError, match="has source trees"):
        TinyProblem().build_vocabularies([(["plain"], ["tokens"])])


def test_encode_source_of_tokens_gives_inputs_only(tmp_path):
    problem = TinyProblem()
    problem.generate_data(str(tmp_path), str(tmp_path))
    problem.load_vocabularies(str(tmp_path))
    assert set(problem.encode_source(["a", "dog"])) == {"inputs"}
    with pytest.raises(RuntimeError, match="vocabularies are not loaded"):
        TinyProblem().encode_source(["a"])
