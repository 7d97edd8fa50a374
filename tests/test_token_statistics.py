"""Datagen's per split and side token counts and `<UNK>` rates (#34 item 5), against a naive count of the shards."""

import logging as std_logging

import numpy as np
import pytest

from syntax_t2t.data import pipeline
from syntax_t2t.data.schema import INPUTS, SPLITS, TARGETS
from syntax_t2t.data.vocab import EOS_ID, PAD_ID, ROOT_ID, UNK_ID
from syntax_t2t.datagen import token_statistics


def test_example_counts_leave_out_reserved_ids_but_count_unk():
    features = {INPUTS: [ROOT_ID, 7, UNK_ID, 9, EOS_ID], TARGETS: [5, UNK_ID, UNK_ID, EOS_ID, PAD_ID],
                "dep": [1, 2, 3]}
    assert token_statistics.example_counts(features) == {"source": (3, 1), "target": (3, 2)}


def test_statistics_sum_per_split_and_side():
    statistics = token_statistics.TokenStatistics()
    statistics.add("train", {"source": (10, 1), "target": (8, 0)})
    statistics.add("train", {"source": (10, 3), "target": (12, 2)})
    statistics.add("dev", {"source": (4, 0)})
    summary = statistics.summary()
    assert summary["train"]["source"] == {"tokens": 20, "unknown": 4, "unknown_rate": 0.2}
    assert summary["train"]["target"]["unknown_rate"] == 0.1
    assert summary["dev"] == {"source": {"tokens": 4, "unknown": 0, "unknown_rate": 0.0}}


def test_datagen_logs_the_unknown_rate_of_every_split_and_side(tmp_path, caplog):
    tf = pytest.importorskip("tensorflow")
    from syntax_t2t.cli import registration
    from syntax_t2t import registry
    registration.import_all()
    # A word vocabulary smaller than the language: dev and test words fall out.
    problem = registry.problem("synthetic_syntax_reorder")
    problem.vocab_size = 30
    with caplog.at_level(std_logging.INFO):
        problem.generate_data(str(tmp_path / "data"), str(tmp_path / "tmp"), max_examples=40)
    lines = [record.getMessage() for record in caplog.records if "<UNK>" in record.getMessage()]
    assert len(lines) == 2 * len(SPLITS)
    keys = problem.data_feature_keys(str(tmp_path / "data"))
    sizes = {name: len(vocab) for name, vocab in problem.load_vocabularies(str(tmp_path / "data")).items()}
    for split in SPLITS:
        for key, side in ((INPUTS, "source"), (TARGETS, "target")):
            ids = np.concatenate([pipeline.parse_example(record, keys)[key].numpy()
                                  for path in problem.filepaths(str(tmp_path / "data"), split)
                                  for record in tf.data.TFRecordDataset(path)])
            ids = ids[(ids != PAD_ID) & (ids != EOS_ID) & (ids != ROOT_ID)]
            unknown = int((ids == UNK_ID).sum())
            (line,) = [line for line in lines if f" {split} {side}: " in line]
            assert f"{ids.size} tokens, {100 * unknown / ids.size:.2f}% <UNK> ({unknown})" in line
            assert f"vocabulary of {sizes[key]:,} entries" in line
    assert any("% <UNK> (0)" not in line for line in lines)
