"""`bin/datagen`: generates a problem's vocabularies and TFRecord shards.

    bin/datagen --problem=synthetic_syntax_reorder --data_dir=data --tmp_dir=raw
    bin/datagen --problem=czeng_syntax --data_dir=data --tmp_dir=raw \\
        --skip_bad_examples

Raw data is read from (or downloaded into) `--tmp_dir`; the outputs go to
`--data_dir`. Complete outputs already there are kept, so running the same
command twice is cheap; `--overwrite` regenerates them. Complete outputs of
other options (`--problem_options`, `--max_examples`, ...) are an error that
names the options that differ: regenerate with `--overwrite`, or give
another `--data_dir`. Every file is written
under a temporary name and renamed when complete (see `syntax_t2t.problem`).
Progress (examples, examples/s) is logged; with `--skip_bad_examples` bad
examples are logged, skipped and counted by reason instead of stopping the
run.

Scaling (see `syntax_t2t.datagen.writer` and docs/performance.md):
`--num_workers=N` makes samples, encodes them (and parses raw text) in N
processes, writing the same shards as one process; `--num_shards` sets the
number of training shards. Independent jobs (machines, cluster tasks) share
the work: build the vocabularies once, then run each task with the same
flags; the last task to finish writes the completion record:

    bin/datagen --problem=P --data_dir=D --tmp_dir=T --num_shards=100 --only_vocab
    bin/datagen --problem=P --data_dir=D --tmp_dir=T --num_shards=100 \\
        --task_id=$I --num_tasks=10 --num_workers=8          # for I in 0..9
"""

import os

from absl import flags

from syntax_t2t import problem_options, registry
from syntax_t2t.cli import common
from syntax_t2t.data.download import DownloadError
from syntax_t2t.errors import InputError, SkipCounter
from syntax_t2t.parsing.parser import ParserError
from syntax_t2t.datagen.records import DataOptionsError
from syntax_t2t.problem import SPLITS, TRAIN, RawDataError

FLAGS = flags.FLAGS

DEFAULT_TMP_DIR = "/tmp/syntax_t2t_datagen"

flags.DEFINE_string("tmp_dir", DEFAULT_TMP_DIR,
                    "Directory of raw data: downloads go here, user-provided files are read from here.")
flags.DEFINE_integer("max_examples", None, "Keep at most this many examples per split.", lower_bound=0)
flags.DEFINE_bool("overwrite", False, "Regenerate even if complete outputs are already in --data_dir.")
flags.DEFINE_bool("skip_bad_examples", False,
                  "Log, count and skip bad examples instead of stopping at the first one.")
if "parser" not in FLAGS:
    # bin/parse defines the same flag; tests and tools may import both programs.
    flags.DEFINE_string("parser", None,
                        "Parser of problems that start from raw text (their 'parser' option): "
                        "spacy:MODEL (package or directory, e.g. from bin/train_parser) or "
                        "stanza:LANG[:MODEL_DIR]; default: the problem's (translate_syntax: "
                        "stanza:<source_language>).")

# Shared flags this program reads: its --help lists them (common.adopt_program_flags).
for _name in ("problem", "problem_options", "data_dir", "random_seed", "parser"):
    flags.declare_key_flag(_name)
flags.DEFINE_integer("num_workers", 1, "Processes that make, encode (and parse) the samples; "
                     "the output does not depend on it.", lower_bound=1)
flags.DEFINE_integer("num_shards", None, "Training shards (default: the problem's).", lower_bound=1)
flags.DEFINE_integer("task_id", None, "This job's task, 0 <= task_id < --num_tasks: write only "
                     "the shards j with j % num_tasks == task_id, with the vocabularies of an "
                     "--only_vocab run.", lower_bound=0)
flags.DEFINE_integer("num_tasks", None, "The number of independent datagen tasks.", lower_bound=1)
flags.DEFINE_bool("only_vocab", False, "Only build the vocabularies (run once before the tasks).")


def _task():
    # The writer imports TensorFlow: imported here, --help and flag errors come back at once.
    from syntax_t2t.datagen.writer import DatagenTask

    if (FLAGS.task_id is None) != (FLAGS.num_tasks is None):
        raise common.UsageError("--task_id and --num_tasks go together")
    if FLAGS.task_id is None:
        return DatagenTask()
    if FLAGS.only_vocab:
        raise common.UsageError("--only_vocab builds the vocabularies for all tasks: run it once, "
                                "without --task_id and --num_tasks")
    if FLAGS.task_id >= FLAGS.num_tasks:
        raise common.UsageError(f"--task_id={FLAGS.task_id} must be below "
                                f"--num_tasks={FLAGS.num_tasks}")
    return DatagenTask(FLAGS.task_id, FLAGS.num_tasks)


def problem_from_flags():
    """The problem of `--problem`, `--problem_options`, `--random_seed`, `--parser`
    and `--num_shards` (also `bin/datagen_beam`'s); checks `--data_dir`."""
    common.require("problem", "data_dir")
    if os.path.exists(FLAGS.data_dir) and not os.path.isdir(FLAGS.data_dir):
        raise common.UsageError(f"--data_dir={FLAGS.data_dir} is a file, not a directory")
    problem_class = registry.problems.get(FLAGS.problem)
    options = problem_options.parse(problem_class, FLAGS.problem_options)
    for name in ("random_seed", "parser"):
        value = FLAGS[name].value
        if value is None or (name == "random_seed" and name not in problem_class.option_names):
            continue
        if name not in problem_class.option_names:
            raise common.UsageError(f"--parser: problem {FLAGS.problem} does not parse raw text")
        if options.get(name, value) != value:
            raise common.UsageError(f"--{name}={value} and --problem_options {name}="
                                    f"{options[name]} differ")
        options[name] = value
    if FLAGS.num_shards is not None:
        options["num_shards"] = dict(problem_class.num_shards, **{TRAIN: FLAGS.num_shards})
    return problem_class(**options)


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    if FLAGS.max_examples == 0:
        raise common.UsageError("--max_examples=0 keeps no example; give at least 1, or leave it "
                                "out to keep every example")
    problem = problem_from_flags()
    task = _task()
    skip = SkipCounter() if FLAGS.skip_bad_examples else None

    record = problem.generate_data(FLAGS.data_dir, FLAGS.tmp_dir, max_examples=FLAGS.max_examples,
                                   overwrite=FLAGS.overwrite, skip=skip,
                                   num_workers=FLAGS.num_workers, task=task,
                                   only_vocab=FLAGS.only_vocab)
    if FLAGS.only_vocab:
        sizes = ", ".join(f"{name} {size}" for name, size in record["vocab_sizes"].items())
        print(f"{problem.name}: {'kept the' if record['kept_existing'] else 'wrote'} vocabularies "
              f"in {FLAGS.data_dir} ({sizes})")
        return
    if not record["complete"]:
        print(f"{problem.name}: task {task.task_id} of {task.num_tasks} wrote its shards to "
              f"{FLAGS.data_dir}; the data is complete when every task has finished")
        return
    report(problem, record, skip)


def report(problem, record, skip) -> None:
    """Prints what a complete run wrote or kept (also `bin/datagen_beam`'s)."""
    counts = ", ".join(f"{record['counts'][split]} {split}" for split in SPLITS)
    if record["kept_existing"]:
        # Data of other options never gets here (`records.DataOptionsError`).
        print(f"{problem.name}: complete data already in {FLAGS.data_dir} ({counts} examples); "
              f"kept it (pass --overwrite to regenerate)")
    else:
        print(f"{problem.name}: wrote {counts} examples to {FLAGS.data_dir}")
    if skip is not None:
        print(f"{problem.name}: {skip.summary()}" if not record["kept_existing"]
              else f"{problem.name}: the kept data was generated skipping {_skipped_text(record)}")


def _skipped_text(record) -> str:
    skipped = record.get("skipped") or {}
    total = sum(skipped.values())
    if not total:
        return "0 examples"
    reasons = ", ".join(f"{count} {reason}" for reason, count in
                        sorted(skipped.items(), key=lambda item: (-item[1], item[0])))
    return f"{total} examples: {reasons}"


def run():
    """Entry point of `bin/datagen` and `syntax-t2t-datagen`."""
    common.run(main, extra_user_errors=(InputError, DownloadError, RawDataError, ParserError,
                                        DataOptionsError))
