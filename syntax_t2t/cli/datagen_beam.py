"""`bin/datagen_beam`: `bin/datagen`'s data, written by an Apache Beam pipeline.

    bin/datagen_beam --problem=synthetic_syntax_reorder --data_dir=data --tmp_dir=raw \\
        --direct_num_workers=2
    bin/datagen_beam --problem=multi30k_syntax_de_en --data_dir=/mnt/shared/data \\
        --tmp_dir=/mnt/shared/raw --runner=FlinkRunner \\
        --beam_pipeline_options=flink_master=HOST:8081,environment_type=LOOPBACK

Needs the optional extra `beam` (`pip install -e '.[beam]'`). The
vocabularies are built first, here, by `bin/datagen`'s vocabulary pass (in
`--num_workers` processes); then a Beam pipeline reads, parses (problems that
parse raw text), encodes and writes the TFRecord shards
(`syntax_t2t.datagen.beam_pipeline`), and the completion record is written
last. The data is the same as `bin/datagen`'s with the same flags, except
for the order of the examples within and across the shards of a split.

`--runner` picks the Beam runner: `DirectRunner` (here, in
`--direct_num_workers` processes) or a cluster's (`DataflowRunner`,
`FlinkRunner`, `SparkRunner`, ...), configured by `--beam_pipeline_options`.
Workers read `--tmp_dir` and write `--data_dir`, so on a cluster both must be
on a file system every worker shares.
"""

import logging
import os

from absl import flags

import syntax_t2t
from syntax_t2t.cli import common, datagen
from syntax_t2t.data.download import DownloadError
from syntax_t2t.datagen.records import DataOptionsError
from syntax_t2t.errors import InputError, MissingExtraError, SkipCounter, WorkerError
from syntax_t2t.parsing.parser import ParserError
from syntax_t2t.problem import RawDataError

FLAGS = flags.FLAGS

flags.DEFINE_string("runner", "DirectRunner", "The Beam runner: DirectRunner (local processes), "
                    "DataflowRunner, FlinkRunner, SparkRunner, PortableRunner, ...")
flags.DEFINE_integer("direct_num_workers", 2, "Processes of the DirectRunner (1: in this "
                     "process); other runners ignore it.", lower_bound=1)
flags.DEFINE_list("beam_pipeline_options", [], "Further Beam pipeline options, comma-separated "
                  "key=value, e.g. project=P,region=R,temp_location=gs://B/tmp for Dataflow.")

# The flags of bin/datagen this program reads (the others, tasks and
# --only_vocab, are bin/datagen's own scaling).
for _name in ("problem", "problem_options", "data_dir", "random_seed", "parser", "tmp_dir",
              "max_examples", "overwrite", "skip_bad_examples", "num_shards", "num_workers"):
    flags.declare_key_flag(_name)


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    problem = datagen.problem_from_flags()
    from syntax_t2t.datagen import beam_pipeline  # raises MissingExtraError without Beam

    try:
        options = beam_pipeline.pipeline_options(FLAGS.runner, FLAGS.direct_num_workers,
                                                 FLAGS.beam_pipeline_options)
    except ValueError as error:
        raise common.UsageError(f"--beam_pipeline_options: {error}") from error
    _workers_import_this_checkout()
    # Beam logs every bundle and worker start at INFO; its warnings and errors still show.
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    skip = SkipCounter() if FLAGS.skip_bad_examples else None
    record = problem.generate_data(FLAGS.data_dir, FLAGS.tmp_dir, max_examples=FLAGS.max_examples,
                                   overwrite=FLAGS.overwrite, skip=skip,
                                   num_workers=FLAGS.num_workers,
                                   shard_pass=beam_pipeline.BeamShardPass(options))
    datagen.report(problem, record, skip)


def _workers_import_this_checkout():
    """Local Beam workers are new Python processes: they import the syntax_t2t this one did."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(syntax_t2t.__file__)))
    path = os.environ.get("PYTHONPATH", "")
    if root not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (root, path)))


def run():
    """Entry point of `bin/datagen_beam` and `syntax-t2t-datagen-beam`."""
    common.run(main, extra_user_errors=(InputError, DownloadError, RawDataError, ParserError,
                                        MissingExtraError, WorkerError, DataOptionsError))
