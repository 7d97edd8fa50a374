"""Datagen at scale: workers, T2T-style tasks, the vocabulary pass (syntax_t2t/datagen/writer.py)."""

import json
import os
import pickle

import pytest
from absl import flags
from absl.testing import flagsaver

from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder
from syntax_t2t.cli import common, datagen, registration
from syntax_t2t.data import pipeline
from syntax_t2t.datagen.writer import DatagenTask
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.datagen.worker_pool import ordered_map
from syntax_t2t.problem import DEV, SPLITS, TEST, TRAIN, DataNotGeneratedError, Problem, TreeTokens

FLAGS = flags.FLAGS
SIZES = dict(train_size=300, dev_size=40, test_size=30)


def _files(directory) -> dict:
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


def _examples(problem, data_dir) -> dict:
    """Decoded examples of every split, shard by shard, in file order."""
    import tensorflow as tf

    keys = problem.data_feature_keys(str(data_dir))
    return {split: [{key: value.numpy().tolist()
                     for key, value in pipeline.parse_example(record, keys).items()}
                    for path in problem.filepaths(str(data_dir), split)
                    for record in tf.data.TFRecordDataset(path)]
            for split in SPLITS}


def _square(value):
    return value * value


def test_ordered_map_keeps_order_and_results():
    items = list(range(100))
    assert list(ordered_map(_square, iter(items), 2, window=3)) == [_square(i) for i in items]
    assert list(ordered_map(_square, iter(items), 1)) == [_square(i) for i in items]
    with pytest.raises(ValueError, match="at least 1"):
        list(ordered_map(_square, items, 0))


def test_trees_survive_pickling_with_their_comments():
    tree = DependencyTree.from_heads(["a", "b"], [2, 0], labels=["det", "root"],
                                     comments={"text": "a b", "source_line": "3"})
    copy = pickle.loads(pickle.dumps(TreeTokens(tree)))
    assert copy == ["a", "b"] and copy.tree == tree
    assert dict(copy.tree.comments) == {"text": "a b", "source_line": "3"}
    assert copy.tree.heads.tolist() == [2, 0]


def test_synthetic_records_give_the_samples():
    problem = SyntheticSyntaxReorder(**SIZES)
    samples = list(problem.generate_samples(None, DEV, None))
    from_records = [problem.sample_of_record(record)
                    for record in problem.generate_records(None, DEV, None)]
    assert len(samples) == SIZES["dev_size"]
    assert [(s.tokens, s.heads.tolist(), list(t)) for s, t in samples] == [
        (s.tokens, s.heads.tolist(), list(t)) for s, t in from_records]


def test_two_workers_write_the_same_bytes_as_one(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    SyntheticSyntaxReorder(**SIZES).generate_data(str(one), str(tmp_path), num_workers=1)
    record = SyntheticSyntaxReorder(**SIZES).generate_data(str(two), str(tmp_path), num_workers=2)
    assert record["counts"] == {TRAIN: 300, DEV: 40, TEST: 30}
    files = _files(one)
    assert any(name.endswith("-train-00001-of-00002") for name in files)
    assert files == _files(two)


class TreeProblem(Problem):
    """Samples that are not records (the default `generate_records`): trees cross processes."""

    num_shards = {TRAIN: 3, DEV: 1, TEST: 1}

    def generate_samples(self, tmp_dir, split, skip):
        for index in range({TRAIN: 50, DEV: 7, TEST: 5}[split]):
            words = [f"w{index % 13}", f"v{index % 7}", "."]
            tree = DependencyTree.from_heads(words, [2, 0, 2], labels=["nsubj", "root", "punct"],
                                             comments={"text": " ".join(words)})
            yield tree, [f"t{index % 11}", "."]


def test_workers_encode_problems_without_records_alike(tmp_path):
    TreeProblem().generate_data(str(tmp_path / "one"), str(tmp_path))
    TreeProblem().generate_data(str(tmp_path / "two"), str(tmp_path), num_workers=2)
    assert _files(tmp_path / "one") == _files(tmp_path / "two")


def test_tasks_write_together_what_one_run_writes(tmp_path):
    options = dict(SIZES, num_shards={TRAIN: 3, DEV: 1, TEST: 1})
    whole, tasks = tmp_path / "whole", tmp_path / "tasks"
    SyntheticSyntaxReorder(**options).generate_data(str(whole), str(tmp_path))

    with pytest.raises(DataNotGeneratedError, match="--only_vocab"):
        SyntheticSyntaxReorder(**options).generate_data(str(tasks), str(tmp_path),
                                                        task=DatagenTask(0, 2))
    vocabulary = SyntheticSyntaxReorder(**options).generate_data(str(tasks), str(tmp_path),
                                                                 only_vocab=True)
    assert not vocabulary["kept_existing"]
    assert sorted(os.listdir(tasks)) == sorted(
        name for name in os.listdir(whole) if ".vocab." in name or name.endswith("-vocab.json"))

    first = SyntheticSyntaxReorder(**options).generate_data(str(tasks), str(tmp_path),
                                                            task=DatagenTask(1, 2), num_workers=2)
    assert not first["complete"]
    assert SyntheticSyntaxReorder(**options).completion_record(str(tasks)) is None
    # Task 1 of 2 owns train shard 1 only; dev and test shard 0 and the text copies are task 0's.
    assert sorted(name for name in os.listdir(tasks)
                  if name.startswith("synthetic_syntax_reorder-")) == [
        "synthetic_syntax_reorder-train-00001-of-00003"]
    last = SyntheticSyntaxReorder(**options).generate_data(str(tasks), str(tmp_path),
                                                           task=DatagenTask(0, 2))
    assert last["complete"] and last["counts"] == {TRAIN: 300, DEV: 40, TEST: 30}

    task_records = {name for name in os.listdir(tasks) if "-task-" in name}
    assert task_records == {"synthetic_syntax_reorder.datagen-task-00000-of-00002.json",
                            "synthetic_syntax_reorder.datagen-task-00001-of-00002.json"}
    together = {name: data for name, data in _files(tasks).items() if name not in task_records}
    assert together == _files(whole)


def test_tasks_refuse_vocabularies_of_other_options(tmp_path):
    SyntheticSyntaxReorder(**SIZES).generate_data(str(tmp_path), str(tmp_path), only_vocab=True)
    with pytest.raises(DataNotGeneratedError, match="missing or differs"):
        SyntheticSyntaxReorder(**dict(SIZES, train_size=200)).generate_data(
            str(tmp_path), str(tmp_path), task=DatagenTask(0, 2))


@pytest.fixture
def run_datagen(capsys):
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["datagen"])

    def run(**flag_values):
        with flagsaver.flagsaver(**flag_values):
            datagen.main(["datagen"])
        return capsys.readouterr().out

    return run


def test_cli_workers_shards_and_tasks(tmp_path, run_datagen):
    base = dict(problem="synthetic_syntax_reorder", tmp_dir=str(tmp_path), max_examples=60,
                num_shards=4)
    out = run_datagen(data_dir=str(tmp_path / "one"), **base)
    assert "wrote 60 train, 60 dev, 60 test examples" in out
    run_datagen(data_dir=str(tmp_path / "two"), num_workers=2, **base)
    problem = SyntheticSyntaxReorder()
    examples = _examples(problem, tmp_path / "one")
    assert len(problem.filepaths(str(tmp_path / "one"), TRAIN)) == 4
    assert sum(len(split) for split in examples.values()) == 180
    assert _examples(problem, tmp_path / "two") == examples

    out = run_datagen(data_dir=str(tmp_path / "tasks"), only_vocab=True, **base)
    assert "wrote vocabularies" in out and "inputs" in out
    for task_id in (0, 1, 2):
        out = run_datagen(data_dir=str(tmp_path / "tasks"), task_id=task_id, num_tasks=3, **base)
    assert "wrote 60 train, 60 dev, 60 test examples" in out
    assert _examples(problem, tmp_path / "tasks") == examples
    with open(tmp_path / "tasks" / "synthetic_syntax_reorder.datagen.json") as stream:
        assert json.load(stream)["max_examples"] == 60

    with pytest.raises(common.UsageError, match="--task_id and --num_tasks go together"):
        run_datagen(data_dir=str(tmp_path / "x"), task_id=0, **base)
    with pytest.raises(common.UsageError, match="--task_id=3 must be below --num_tasks=3"):
        run_datagen(data_dir=str(tmp_path / "x"), task_id=3, num_tasks=3, **base)
