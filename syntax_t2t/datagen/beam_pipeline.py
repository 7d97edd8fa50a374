"""`bin/datagen`'s shard pass as an Apache Beam pipeline (`bin/datagen_beam`).

Beam is the engine TensorFlow Datasets runs large corpora on: the same
pipeline runs in local processes (`DirectRunner`) or on a cluster
(Dataflow, Flink, Spark), chosen by its pipeline options. Per split:

    read:   one worker reads the split's records in order and numbers them
            (`ReadSplit`: what `bin/datagen` reads in its main process);
    parse:  problems that parse raw source text (`Problem.unparsed_records`)
            parse batches of sources in `ParseSources`, which loads the
            parser once per worker (`setup`);
    encode: `EncodeSamples` makes the samples of other problems' records
            (`Problem.sample_of_record`) and encodes every sample with
            `datagen_writer.encode_example`, the code `bin/datagen` runs;
    write:  `WriteToTFRecord` writes the shards, named as `bin/datagen`
            names them; the plain-text copies of dev and test are written in
            input order; the example counts and skipped examples go to a
            summary the launcher reads back.

The vocabularies are built before the pipeline, by `bin/datagen`'s own
vocabulary pass, and the completion record is written after it by the
launcher (`datagen_writer.generate_data`, with `BeamShardPass` as its shard
pass). The data is the same as `bin/datagen`'s: the same examples in the same
shard files, though not in the same order or shard (`bin/datagen` puts
example `i` in shard `i % num_shards`); the same vocabularies byte for byte;
the same plain-text copies.

Workers rebuild the problem from its class and options and load the
vocabularies from `data_dir`, so `data_dir` (and `tmp_dir`, which the
read step reads) must be paths every worker can read and write: local paths
for the `DirectRunner`, a shared file system on a cluster.
"""

import dataclasses
import glob
import itertools
import json
import os
import re
import shutil
import uuid
from typing import Optional

from syntax_t2t import io_utils
from syntax_t2t.data.schema import SPLITS, TRAIN
from syntax_t2t.datagen import writer as datagen_writer
from syntax_t2t.errors import MissingExtraError, SkipCounter, WorkerError
from syntax_t2t.parsing import parse_cache

try:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
except ModuleNotFoundError as error:
    raise MissingExtraError(
        "bin/datagen_beam needs Apache Beam, an optional extra: pip install -e '.[beam]' "
        "(or pip install 'apache-beam>=2.60,<3')") from error

#: A project error raised in a worker, as the runners report it: the last
#: line naming its class, maybe followed by the step it failed in.
_WORKER_ERROR = re.compile(r"^(?:syntax_t2t\.[\w.]+Error): (.+?)(?: \[while running '([^']*)'\])?$",
                           re.M)

#: Sources per parser call: batches large enough for the parser's own
#: batching, small enough to spread a split over the workers.
PARSE_BATCH_SIZE = 256
SUMMARY, RAW_COPY = "summary", "raw_copy"


def worker_error_message(error: Exception) -> Optional[str]:
    """The message of the project error (`syntax_t2t...Error`) that failed a pipeline, or
    None when none did (a bug or the runner's own failure keeps its traceback)."""
    matches = list(_WORKER_ERROR.finditer(str(error)))
    if not matches:
        return None
    message, step = matches[-1].groups()
    return f"{message} (Beam step {step!r})" if step else message


def pipeline_options(runner: str, direct_num_workers: int = 1,
                     extra: Optional[list[str]] = None) -> PipelineOptions:
    """Beam pipeline options for `runner`.

    Args:
        runner: a Beam runner name, e.g. `DirectRunner`, `DataflowRunner`,
            `FlinkRunner`, `SparkRunner`.
        direct_num_workers: processes of the `DirectRunner` (multi-process
            above 1); other runners ignore it.
        extra: further options as `key=value` (or `key` for a switch), as
            TensorFlow Datasets' `--beam_pipeline_options` takes them, e.g.
            `project=P`, `region=R`, `temp_location=gs://B/tmp`.

    Raises:
        ValueError: `extra` sets the runner, or an item has no key.
    """
    args = [f"--runner={runner}"]
    if runner == "DirectRunner":
        args += [f"--direct_num_workers={direct_num_workers}",
                 "--direct_running_mode=" + ("multi_processing" if direct_num_workers > 1
                                             else "in_memory")]
    for item in extra or ():
        key = item.split("=", 1)[0].strip().lstrip("-")
        if not key:
            raise ValueError(f"Beam pipeline option {item!r} has no name; expected key=value")
        if key == "runner":
            raise ValueError(f"Beam pipeline option {item!r}: choose the runner with --runner")
        args.append(f"--{item.strip().lstrip('-')}")
    return PipelineOptions(args)


@dataclasses.dataclass(frozen=True)
class ProblemSpec:
    """What a worker rebuilds the problem from: its class, options and data directory."""

    problem_class: type
    options: dict
    data_dir: str

    @classmethod
    def of(cls, problem, data_dir: str) -> "ProblemSpec":
        return cls(type(problem), problem.options(), os.path.abspath(data_dir))

    def load(self, vocabularies: bool = True):
        problem = self.problem_class(**self.options)
        if vocabularies:
            problem.load_vocabularies(self.data_dir)
        return problem


def parses_in_workers(problem, tmp_dir: str, split: str) -> bool:
    """Whether the pipeline parses `split`'s sources (`Problem.unparsed_records`).

    Not when the split comes with a file of bracketed trees: `bin/datagen`
    joins those to the parsed samples in order, which the read step does.
    """
    if problem.source_trees_path(tmp_dir, split) is not None:
        return False
    records = problem.unparsed_records(tmp_dir, split, None)
    if records is None:
        return False
    getattr(records, "close", lambda: None)()  # a generator not started reads nothing
    return True


class ReadSplit(beam.DoFn):
    """Reads a split's records in order: `(index, record)`, then its summary.

    The records are unparsed ones when `parse` (`Problem.unparsed_records`),
    otherwise those of `bin/datagen` (`datagen_writer.split_items`). The
    summary (tagged `SUMMARY`) gives the count and the skipped examples.
    """

    def __init__(self, spec: ProblemSpec, tmp_dir: str, max_examples: Optional[int],
                 skipping: bool, parse: bool):
        self.spec, self.tmp_dir, self.max_examples = spec, tmp_dir, max_examples
        self.skipping, self.parse = skipping, parse

    def process(self, split):
        problem = self.spec.load(vocabularies=False)
        skip = SkipCounter() if self.skipping else None
        if self.parse:
            items = itertools.islice(problem.unparsed_records(self.tmp_dir, split, skip),
                                     self.max_examples)
        else:
            items, _ = datagen_writer.split_items(problem, self.tmp_dir, split, self.max_examples,
                                                  skip, "reading")
        count = 0
        for count, item in enumerate(items, start=1):
            yield count - 1, item
        yield beam.pvalue.TaggedOutput(SUMMARY, {"split": split, "count": count,
                                                 "skipped": skip.counts if skip else {}})


class ParseSources(beam.DoFn):
    """Parses a batch of `(index, (line number, source text, target))` into `(index, sample)`.

    The trees are those of `bin/datagen`'s parse cache (`parse_cache.parse_numbered`).
    """

    def __init__(self, spec: ProblemSpec, split: str):
        self.spec, self.split = spec, split

    def setup(self):
        self.parser = self.spec.load(vocabularies=False).source_parser()

    def process(self, batch):
        lines = [(number, text) for _, (number, text, _) in batch]
        trees = parse_cache.parse_numbered(self.parser, lines, False, f"the {self.split} split")
        for (index, (_, _, target)), (_, tree) in zip(batch, trees, strict=True):
            yield index, (tree, target)


class EncodeSamples(beam.DoFn):
    """Encodes `(index, item)` into serialized examples (and raw copy lines, tagged `RAW_COPY`).

    Args:
        make_samples: the items are `bin/datagen`'s records, made into
            samples as its workers do (`datagen_writer.sample_maker`);
            otherwise they are samples.
        raw_copy: also give each sample's lines of the plain-text copies.
    """

    def __init__(self, spec: ProblemSpec, tmp_dir: str, split: str, make_samples: bool,
                 raw_copy: bool):
        self.spec, self.tmp_dir, self.split = spec, tmp_dir, split
        self.make_samples, self.raw_copy = make_samples, raw_copy

    def setup(self):
        self.problem = self.spec.load()
        self.bracketed = datagen_writer.has_bracketed_trees(self.problem)
        self.expand = (datagen_writer.sample_maker(self.problem, self.tmp_dir, self.split)
                       if self.make_samples else None)

    def process(self, element):
        index, item = element
        sample = self.expand(item) if self.expand else item
        yield datagen_writer.encode_example(self.problem, sample, self.split, index,
                                            self.bracketed)
        if self.raw_copy:
            yield beam.pvalue.TaggedOutput(
                RAW_COPY, (index, datagen_writer.raw_copy_lines(self.problem, sample)))


def write_raw_copies(lines: list, paths: dict) -> None:
    """Writes the plain-text copies of a split (`Problem.raw_paths`) in input order."""
    ordered = [pair for _, pair in sorted(lines, key=lambda item: item[0])]
    for column, kind in enumerate(("source", "reference")):
        io_utils.atomic_write_text(paths[kind], "".join(pair[column] for pair in ordered))


def write_summary(summaries: list, path: str) -> None:
    io_utils.atomic_write_text(path, json.dumps(summaries) + "\n")


class BeamShardPass:
    """`datagen_writer.generate_data`'s shard pass, run as a Beam pipeline (module docstring).

    Args:
        options: the Beam pipeline options (`pipeline_options`).
    """

    def __init__(self, options: PipelineOptions):
        self.options = options

    def __call__(self, problem, data_dir: str, tmp_dir: str, max_examples: Optional[int],
                 skip: Optional[SkipCounter]) -> tuple[dict, dict]:
        """Writes every split's shards and copies; returns the counts and shard names per split."""
        spec = ProblemSpec.of(problem, data_dir)
        summary_path = os.path.join(data_dir, f".{problem.name}.beam-summary.{uuid.uuid4().hex[:12]}.tmp")
        try:
            try:
                with beam.Pipeline(options=self.options) as root:
                    summaries = [self._split(root, problem, spec, data_dir, tmp_dir, split,
                                             max_examples, skip is not None) for split in SPLITS]
                    _ = (summaries | "summaries" >> beam.Flatten()
                         | "all summaries" >> beam.combiners.ToList()
                         | "write summary" >> beam.Map(write_summary, summary_path))
            except Exception as error:  # noqa: BLE001 (the runners' wrapping differs)
                message = worker_error_message(error)
                if message is None:
                    raise
                raise WorkerError(message) from error
            with open(summary_path, encoding="utf-8") as stream:
                by_split = {summary["split"]: summary for summary in json.load(stream)}
        finally:
            if os.path.exists(summary_path):
                os.remove(summary_path)
            # What a failed pipeline's file sinks leave behind.
            for directory in glob.glob(os.path.join(glob.escape(spec.data_dir),
                                                    f"beam-temp-{glob.escape(problem.name)}-*")):
                shutil.rmtree(directory, ignore_errors=True)
        if skip is not None:
            for summary in by_split.values():
                skip.add(summary["skipped"])
        counts = {split: by_split[split]["count"] for split in SPLITS}
        shards = {split: [os.path.basename(problem.shard_path(data_dir, split, index,
                                                              problem.num_shards[split]))
                          for index in range(problem.num_shards[split])] for split in SPLITS}
        return counts, shards

    @staticmethod
    def _split(root, problem, spec, data_dir, tmp_dir, split, max_examples, skipping):
        """Adds the steps of one split; returns its summary collection."""
        parse = parses_in_workers(problem, tmp_dir, split)
        read = (root | f"{split}: name" >> beam.Create([split])
                | f"{split}: read" >> beam.ParDo(
                    ReadSplit(spec, tmp_dir, max_examples, skipping, parse)).with_outputs(
                        SUMMARY, main="records"))
        items = read.records | f"{split}: spread" >> beam.Reshuffle()
        if parse:
            items = (items
                     | f"{split}: batch" >> beam.BatchElements(min_batch_size=1,
                                                               max_batch_size=PARSE_BATCH_SIZE)
                     | f"{split}: parse" >> beam.ParDo(ParseSources(spec, split)))
        raw_paths = problem.raw_paths(data_dir, split) if split != TRAIN else {}
        encoded = items | f"{split}: encode" >> beam.ParDo(
            EncodeSamples(spec, tmp_dir, split, not parse, bool(raw_paths))).with_outputs(
                RAW_COPY, main="examples")
        _ = encoded.examples | f"{split}: write" >> beam.io.WriteToTFRecord(
            os.path.join(spec.data_dir, f"{problem.name}-{split}"),
            num_shards=problem.num_shards[split], shard_name_template="-SSSSS-of-NNNNN")
        if raw_paths:
            _ = (encoded[RAW_COPY] | f"{split}: collect copies" >> beam.combiners.ToList()
                 | f"{split}: write copies" >> beam.Map(write_raw_copies, raw_paths))
        return read[SUMMARY]
