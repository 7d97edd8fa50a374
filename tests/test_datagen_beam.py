"""bin/datagen_beam (syntax_t2t/datagen/beam_pipeline.py): the same data as bin/datagen."""

import collections
import gzip
import json
import os
import sys

import pytest
from absl import flags
from absl.testing import flagsaver

from parser_fixtures import MULTI30K, untrained_pipeline_dir
from syntax_t2t.cli import datagen, datagen_beam, registration
from syntax_t2t.data import pipeline
from syntax_t2t.errors import InputError, MissingExtraError, SkipCounter, WorkerError
from syntax_t2t.problem import DEV, SPLITS, TEST, TRAIN, Problem
from syntax_t2t.problems.multi30k import SPLIT_FILES, Multi30kSyntaxDeEn
from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder

FLAGS = flags.FLAGS
SIZES = dict(train_size=120, dev_size=30, test_size=20, num_shards={TRAIN: 3, DEV: 1, TEST: 2})


def needs_beam():
    return pytest.importorskip("apache_beam", reason="the optional extra beam is not installed "
                                                     "(pip install -e '.[beam]')")


def _examples(problem, data_dir) -> dict:
    """Each split's examples as a multiset: decoded features, order aside."""
    import tensorflow as tf

    keys = problem.data_feature_keys(str(data_dir))
    return {split: collections.Counter(
        json.dumps({key: value.numpy().tolist()
                    for key, value in pipeline.parse_example(record, keys).items()}, sort_keys=True)
        for path in problem.filepaths(str(data_dir), split)
        for record in tf.data.TFRecordDataset(path))
        for split in SPLITS}


def _non_shard_files(directory) -> dict:
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))
            if "-of-" not in name and not name.endswith(".datagen.json")}


def _record(problem, data_dir) -> dict:
    with open(problem.completion_record_path(str(data_dir)), encoding="utf-8") as stream:
        return json.load(stream)


def assert_same_data(make_problem, datagen_dir, beam_dir):
    """Same examples per split (order aside), same vocabularies and text copies byte for
    byte, same completion record, same shard files."""
    problem = make_problem()
    assert _non_shard_files(beam_dir) == _non_shard_files(datagen_dir)
    assert _record(problem, beam_dir) == _record(problem, datagen_dir)
    assert sorted(os.listdir(beam_dir)) == sorted(os.listdir(datagen_dir))
    expected = _examples(problem, datagen_dir)
    assert sum(sum(split.values()) for split in expected.values()) > 0
    assert _examples(make_problem(), beam_dir) == expected


# ----------------------------------------------------------------------
# Without the extra.

def test_without_beam_the_tool_says_how_to_install_it(tmp_path, monkeypatch):
    # None in sys.modules makes `import apache_beam` raise ModuleNotFoundError.
    monkeypatch.setitem(sys.modules, "apache_beam", None)
    monkeypatch.delitem(sys.modules, "syntax_t2t.datagen.beam_pipeline", raising=False)
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["datagen_beam"])
    with flagsaver.flagsaver(problem="synthetic_syntax_reorder", data_dir=str(tmp_path / "data"),
                             tmp_dir=str(tmp_path)):
        with pytest.raises(MissingExtraError, match=r"needs Apache Beam.*pip install -e '\.\[beam\]'"):
            datagen_beam.main(["datagen_beam"])
    # It fails before writing anything (the vocabulary pass comes after the check).
    assert not (tmp_path / "data").exists()


# ----------------------------------------------------------------------
# Pipeline options.

def test_pipeline_options_runner_workers_and_extra_options():
    needs_beam()
    from syntax_t2t.datagen.beam_pipeline import pipeline_options

    options = pipeline_options("DirectRunner", 2, ["direct_running_mode=multi_threading",
                                                   "save_main_session"]).get_all_options()
    assert options["runner"] == "DirectRunner" and options["direct_num_workers"] == 2
    # A later option wins: the user's running mode replaces the default one.
    assert options["direct_running_mode"] == "multi_threading" and options["save_main_session"]
    flink = pipeline_options("FlinkRunner", 2, ["flink_master=host:8081"]).get_all_options()
    assert flink["runner"] == "FlinkRunner" and flink["flink_master"] == "host:8081"
    assert flink["direct_num_workers"] == 1  # Beam's default: only the DirectRunner reads it
    with pytest.raises(ValueError, match="choose the runner with --runner"):
        pipeline_options("DirectRunner", 1, ["runner=DataflowRunner"])
    with pytest.raises(ValueError, match="has no name"):
        pipeline_options("DirectRunner", 1, ["=3"])


# ----------------------------------------------------------------------
# The same data as bin/datagen.

class BadLinesProblem(Problem):
    """Samples from a records generator that skips bad lines: skip counts must survive Beam."""

    num_shards = {TRAIN: 2, DEV: 1, TEST: 1}
    has_source_trees = False

    def generate_samples(self, tmp_dir, split, skip):
        for index in range({TRAIN: 40, DEV: 9, TEST: 6}[split]):
            if index % 7 == 3:
                error = InputError(f"{split}.txt", index + 1, "bad line", reason="bad line")
                if skip is None:
                    raise error
                skip.record(error)
                continue
            yield [f"w{index % 5}", f"v{index % 3}"], [f"t{index % 4}"]


def test_synthetic_in_one_process_is_bin_datagens_data(tmp_path):
    needs_beam()
    from syntax_t2t.datagen.beam_pipeline import BeamShardPass, pipeline_options

    SyntheticSyntaxReorder(**SIZES).generate_data(str(tmp_path / "datagen"), str(tmp_path),
                                                  max_examples=100)
    record = SyntheticSyntaxReorder(**SIZES).generate_data(
        str(tmp_path / "beam"), str(tmp_path), max_examples=100,
        shard_pass=BeamShardPass(pipeline_options("DirectRunner", 1)))
    assert record["counts"] == {TRAIN: 100, DEV: 30, TEST: 20}
    assert_same_data(lambda: SyntheticSyntaxReorder(**SIZES), tmp_path / "datagen", tmp_path / "beam")
    assert not [name for name in os.listdir(tmp_path / "beam") if name.startswith((".", "beam-temp"))]


def test_skipped_examples_are_counted_as_bin_datagen_counts_them(tmp_path):
    needs_beam()
    from syntax_t2t.datagen.beam_pipeline import BeamShardPass, pipeline_options

    datagen_skip, beam_skip = SkipCounter(), SkipCounter()
    BadLinesProblem().generate_data(str(tmp_path / "datagen"), str(tmp_path), skip=datagen_skip)
    record = BadLinesProblem().generate_data(
        str(tmp_path / "beam"), str(tmp_path), skip=beam_skip,
        shard_pass=BeamShardPass(pipeline_options("DirectRunner", 1)))
    assert beam_skip.counts == datagen_skip.counts == {"bad line": 6 + 1 + 1}
    assert record["skipped"] == {"bad line": 8} and record["counts"] == {TRAIN: 34, DEV: 8, TEST: 5}
    assert_same_data(BadLinesProblem, tmp_path / "datagen", tmp_path / "beam")


class BadDevProblem(BadLinesProblem):
    """A bad line in dev only: the vocabulary pass passes, a Beam worker meets it."""

    def generate_samples(self, tmp_dir, split, skip):
        samples = super().generate_samples(tmp_dir, split, skip or SkipCounter())
        return samples if split != DEV else super().generate_samples(tmp_dir, split, skip)


def test_bad_input_met_by_a_worker_is_one_clear_error_and_no_data(tmp_path):
    needs_beam()
    from syntax_t2t.datagen.beam_pipeline import BeamShardPass, pipeline_options

    with pytest.raises(WorkerError, match=r"^dev.txt:4: bad line \(Beam step 'dev: read/"):
        BadDevProblem().generate_data(str(tmp_path), str(tmp_path),
                                      shard_pass=BeamShardPass(pipeline_options("DirectRunner", 1)))
    assert BadDevProblem().completion_record(str(tmp_path)) is None
    assert not [name for name in os.listdir(tmp_path) if name.startswith((".", "beam-temp"))]


@pytest.fixture
def run_tool(capsys):
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["datagen_beam"])

    def run(module, **flag_values):
        with flagsaver.flagsaver(**flag_values):
            module.main([module.__name__])
        return capsys.readouterr().out

    return run


@pytest.mark.slow
def test_cli_with_two_worker_processes_writes_bin_datagens_data(tmp_path, run_tool):
    needs_beam()
    base = dict(problem="synthetic_syntax_reorder", tmp_dir=str(tmp_path), max_examples=80,
                num_shards=4, problem_options="train_size=200,dev_size=50,test_size=50")
    run_tool(datagen, data_dir=str(tmp_path / "datagen"), **base)
    out = run_tool(datagen_beam, data_dir=str(tmp_path / "beam"), runner="DirectRunner",
                   direct_num_workers=2, **base)
    assert "wrote 80 train, 50 dev, 50 test examples" in out
    problem = lambda: SyntheticSyntaxReorder(train_size=200, dev_size=50, test_size=50,
                                             num_shards={TRAIN: 4, DEV: 1, TEST: 1})
    assert_same_data(problem, tmp_path / "datagen", tmp_path / "beam")
    assert "complete data already" in run_tool(datagen_beam, data_dir=str(tmp_path / "beam"), **base)


@pytest.mark.slow
@pytest.mark.real_data
@pytest.mark.skipif(not MULTI30K.is_dir(), reason=f"real data folder {MULTI30K} is absent")
def test_multi30k_parsed_in_beam_workers_is_bin_datagens_data(tmp_path):
    """The first lines of the real Multi30k, parsed by a (untrained, fixed) spaCy pipeline:
    bin/datagen reads the parse cache, the Beam pipeline parses in its workers."""
    needs_beam()
    from syntax_t2t.datagen.beam_pipeline import BeamShardPass, parses_in_workers, pipeline_options

    raw = tmp_path / "raw" / "multi30k"
    raw.mkdir(parents=True)
    for split, stem in SPLIT_FILES.items():
        for language in ("de", "en"):
            with gzip.open(MULTI30K / f"{stem}.{language}.gz", "rt", encoding="utf-8") as stream:
                lines = [line for _, line in zip(range(150 if split == TRAIN else 40), stream)]
            (raw / f"{stem}.{language}").write_text("".join(lines), encoding="utf-8")
    parser = f"spacy:{untrained_pipeline_dir(tmp_path / 'untrained', lang='de')}"
    make = lambda: Multi30kSyntaxDeEn(parser=parser, num_shards={TRAIN: 3, DEV: 1, TEST: 1})
    make().generate_data(str(tmp_path / "datagen"), str(tmp_path / "raw"))
    # A fresh raw directory: no parse cache, so the Beam workers parse everything.
    beam_raw = tmp_path / "beam_raw" / "multi30k"
    beam_raw.mkdir(parents=True)
    for name in os.listdir(raw):
        if name != "parses":
            (beam_raw / name).write_bytes((raw / name).read_bytes())
    assert parses_in_workers(make(), str(beam_raw.parent), TRAIN)
    make().generate_data(str(tmp_path / "beam"), str(beam_raw.parent),
                         shard_pass=BeamShardPass(pipeline_options("DirectRunner", 2)))
    # Only the vocabulary pass (here) parsed through the cache: dev and test were
    # parsed by the Beam workers alone.
    assert [name.split(".")[0] for name in os.listdir(beam_raw / "parses")] == ["train"]
    assert_same_data(make, tmp_path / "datagen", tmp_path / "beam")
