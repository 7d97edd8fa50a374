"""`bin/grid`: one command for a head-to-head comparison of systems over seeds.

    bin/grid --experiment=multi30k_cs_en_syntax --output_dir=G \\
        --data_dir=D --tmp_dir=T --treebank_dir=../shared/data/pud

trains every (system, seed) of the registered experiment that is not
finished (resuming interrupted runs from their newest checkpoint), decodes
its test sets with the chosen checkpoint, scores them, and writes
`G/results.md`, `G/results.json` and plots (`syntax_t2t/grid/`). Running the
same command again redoes nothing that finished. `--systems` and `--seeds`
restrict the runs; `--problem_options` must match the data's (as for
bin/train) and is passed on to every program; `--num_tasks=N --task_id=I` gives this process every N-th
run, so that N machines (or GPUs) sharing `G` split the grid; each task
writes the report of whatever has finished so far (`--report_only` just
writes it). Ctrl-C or SIGTERM stops the grid cleanly: the running program is
let stop (bin/train saves a checkpoint first), and the same command resumes.
`--continue_from=G0` starts each run from the same run of the grid `G0`
when this experiment only grows its budget (more steps, no early stopping).
`--archive_dir=A` keeps each finished run's record, without checkpoints, in
`A` (to be committed) and restores the records of the runs `G` lacks: a grid
survives the loss of the machine that trained it. `--bundle_dir=B` copies
what the runs read into `B`, parsing here what needs the parser, for a
machine that has neither (`syntax_t2t/grid/bundle.py`, docs/gpu_grid.sh).

`--time_budget=8m` (or 90s, 1.5h) bounds this invocation's wall time, for
a machine lent for a few minutes: a run is started only when its estimated
duration fits in what is left (the estimate: each stage's longest time in
the finished runs of the same system in this grid, else of the other
systems; a run with no such measurement is started, as its first
measurement); a run still going when the budget ends gets SIGINT, saves a
checkpoint and stops (nothing is killed half-written); every run that
finished is scored, reported and archived, and the grid exits 0 naming what
is left and the command that continues (the same command:
`syntax_t2t/grid/budget.py`).

The grid's programs run under its Keras backend (`KERAS_BACKEND`, e.g.
`KERAS_BACKEND=jax` in the JAX environment without TensorFlow). The data
must exist then: bin/datagen needs TensorFlow, so generate it in the
TensorFlow environment first. Each run's record says which backend trained
it, and a report whose runs mix backends says so (`grid/backend_record.py`).

Everything that can be checked is checked before anything trains: the
experiment's problem, models, hparams sets and overrides (each model is
built with the problem's vocabularies), the generated data, the test files,
and that no run directory holds another configuration.
"""

import os
import shlex
import sys

from absl import flags, logging

from syntax_t2t import problem_options, registry
from syntax_t2t.cli import common, grid_flags
from syntax_t2t.grid import experiment as experiment_lib
from syntax_t2t.grid import (archive, backend_record, budget, bundle, continuation, report,
                             runner, schedule, seal)

FLAGS = flags.FLAGS

# Defined apart, so that bin/grid answers --help and flag errors before Keras loads;
# this module's --help (common.run) lists them as its own.
flags.adopt_module_key_flags(grid_flags)


def _command():
    return " ".join(["bin/grid"] + [shlex.quote(argument) for argument in sys.argv[1:]])


def _paths():
    paths = {"data_dir": FLAGS.data_dir}
    if FLAGS.tmp_dir:
        paths["tmp_dir"] = FLAGS.tmp_dir
    if FLAGS.treebank_dir:
        paths["treebank_dir"] = FLAGS.treebank_dir
    return paths


def _check_files(grid_runner):
    """Every test file exists (before hours of training, not after)."""
    experiment = grid_runner.experiment
    for test in experiment.translation_tests:
        for template in (test.source, test.reference):
            _require_file(grid_runner.path(template), f"test set {test.name}")
    for test in experiment.parse_tests:
        _require_file(grid_runner.path(test.gold), f"parse test {test.name}")


def _check_system_data(grid_runner, problem_class):
    """Every system's data is complete and was generated with the options its system names."""
    for system in grid_runner.experiment.systems:
        data_dir = grid_runner.system_data_dir(system)
        if data_dir == FLAGS.data_dir and not system.problem_options:
            continue
        problem = problem_options.problem_for_data(grid_runner.experiment.problem, data_dir)
        _require_data(problem, data_dir)
        wanted = problem_options.parse(problem_class, system.problem_options)
        recorded = problem_options.recorded(problem_class, data_dir) or {}
        differing = {key: recorded.get(key, getattr(problem_class, key))
                     for key, value in wanted.items()
                     if recorded.get(key, getattr(problem_class, key)) != value}
        if differing:
            raise common.UsageError(
                f"system {system.name}: its data in {data_dir} was generated with "
                f"{', '.join(f'{key}={value!r}' for key, value in sorted(differing.items()))}, "
                f"not with its problem_options {system.problem_options!r}; generate it with "
                f"bin/datagen --data_dir={data_dir} --problem_options='{system.problem_options}'")


def _open_seals(grid_runner, everything):
    """Opens each sealed test whose runs have all finished (once; `grid/seal.py`)."""
    for test in grid_runner.experiment.sealed_tests():
        record = seal.open_seal(grid_runner, everything, test)
        if record is None:
            logging.info("sealed test %s: waits for %d unfinished runs", test.name,
                         len(seal.unfinished(grid_runner, everything)))
        elif FLAGS.archive_dir:
            seal.copy_to_archive(grid_runner, test, FLAGS.archive_dir)


def _require_data(problem, data_dir):
    """The data exists; if not, the error names bin/datagen (and, off TensorFlow, where it runs)."""
    try:
        problem.filepaths(data_dir, "train")
    except FileNotFoundError as error:
        backend = backend_record.current()
        if backend == "tensorflow":
            raise
        raise common.UsageError(
            f"{error}. bin/datagen needs TensorFlow, which the {backend} backend's environment "
            f"may lack: run it in the TensorFlow environment (e.g. .venv/bin/python bin/datagen "
            f"...), then this grid under {backend}") from None


def _require_file(path, what):
    if not os.path.isfile(path):
        raise common.UsageError(f"{what}: {path} does not exist")


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    common.require("experiment", "data_dir")
    if not FLAGS.bundle_dir:
        common.require("output_dir")
    time_budget = None  # it starts with the invocation: the checks take the lent time too
    if FLAGS.time_budget:
        try:
            time_budget = budget.Budget(budget.parse_duration(FLAGS.time_budget))
        except budget.BudgetError as error:
            raise common.UsageError(str(error)) from None
    experiment = registry.experiment(FLAGS.experiment)
    # The problem as its data was generated (bin/datagen records its options).
    problem = problem_options.problem_for_data(experiment.problem, FLAGS.data_dir,
                                               FLAGS.problem_options)
    _require_data(problem, FLAGS.data_dir)
    experiment_lib.check(experiment, FLAGS.experiment, problem.vocab_sizes(FLAGS.data_dir))
    try:
        seeds = [int(seed) for seed in FLAGS.seeds]
    except ValueError:
        raise common.UsageError(f"--seeds={','.join(FLAGS.seeds)}: seeds are integers") from None
    passed_on = [f"--{name}={getattr(FLAGS, name)}" for name in ("usr_dir", "problem_options")
                 if getattr(FLAGS, name)]
    grid_runner = runner.GridRunner(experiment, FLAGS.experiment,
                                    FLAGS.output_dir or os.path.join(FLAGS.bundle_dir, "grid"),
                                    _paths(), passed_on)
    _check_files(grid_runner)
    _check_system_data(grid_runner, registry.problems.get(experiment.problem))
    if FLAGS.bundle_dir:
        record = bundle.write(grid_runner, FLAGS.bundle_dir)
        print(f"bundle of {len(record['copied'])} copies and {len(record['parsed'])} parses in "
              f"{FLAGS.bundle_dir}; there: {' '.join(record['command'])}")
        return
    everything = runner.plan(experiment, FLAGS.output_dir)
    mine = runner.share(runner.plan(experiment, FLAGS.output_dir, FLAGS.systems, seeds),
                        FLAGS.num_tasks, FLAGS.task_id)
    if FLAGS.archive_dir:
        for run in everything:
            archive.restore(grid_runner, run, FLAGS.archive_dir)
            archive.store(grid_runner, run, FLAGS.archive_dir)  # finished before the flag was given
        for test in experiment.sealed_tests():  # opened on another machine: not again here
            seal.restore_from_archive(grid_runner, test, FLAGS.archive_dir)
    grid_runner.budget = time_budget
    waiting, ready = [], []
    outcome = schedule.Outcome()
    if not FLAGS.report_only:
        for run in mine:  # refuse a foreign directory before anything trains
            if FLAGS.continue_from and not continuation.continue_from(
                    grid_runner, run, FLAGS.continue_from):
                waiting.append(run)
                continue
            grid_runner.claim(run)
            ready.append(run)
        try:
            outcome = schedule.run_all(grid_runner, ready, everything, FLAGS.archive_dir,
                                       after_run=lambda: _write_report(grid_runner, everything))
            if not outcome.left:  # a sealed test waits for every run anyway
                _open_seals(grid_runner, everything)
        except runner.BudgetSpent as spent:  # while opening a seal
            logging.warning("%s", spent)
            outcome.left.append(None)
        except runner.GridInterrupted as interrupted:
            print(f"stopped: {interrupted}", file=sys.stderr)
            sys.exit(interrupted.exit_status)
    written = _write_report(grid_runner, everything)
    finished = written["runs"]["finished"]
    print(f"{finished} of {len(everything)} runs finished; report in "
          f"{FLAGS.output_dir}/results.md")
    if outcome.skipped:
        print(f"skipped (another bin/grid process is running them): "
              f"{', '.join(outcome.skipped)}")
    if waiting:
        print(f"not started (still training in {FLAGS.continue_from}): "
              f"{', '.join(run.name for run in waiting)}")
    if outcome.left:
        runs = [run.name for run in outcome.left if run is not None]
        print(f"time budget {FLAGS.time_budget}: left for the next invocation: "
              + (", ".join(runs) if runs else "the sealed tests")
              + f"; continue with: {_command()}")


def _write_report(grid_runner, everything):
    """Writes the report; a teacher parse it starts is not stopped by the budget (it is short)."""
    held, grid_runner.budget = grid_runner.budget, None
    try:
        return report.write(grid_runner, everything, _command(), FLAGS.bootstrap_samples)
    finally:
        grid_runner.budget = held


def entry_point():
    """The program's `main` and the errors it reports as one line (`common.run`'s arguments)."""
    return main, (experiment_lib.ExperimentError, runner.GridError)


def run():
    """Runs the program on `sys.argv` in a process that has imported this module already.

    `bin/grid` and `syntax-t2t-grid` start at `grid_flags.run`, which parses
    the command line before this module is imported.
    """
    main_function, user_errors = entry_point()
    common.run(main_function, extra_user_errors=user_errors)
