"""Running an experiment's (system, seed) pairs: train, pick a checkpoint, decode, score.

Layout of the grid directory `G` (`bin/grid --output_dir`):

    G/runs/<system>/seed<k>/          a bin/train run directory, plus
        grid.json                     what defines the run, and which stages are done
        .syntax_t2t.lock              held by the process working on the run
        train.log                     bin/train's output, appended per invocation
        tests/<test>.hyp              test translations of the chosen checkpoint
        tests/length_penalty.json,    with `Experiment.length_penalties`: the alpha
        tests/<test>.dev_alpha.hyp    chosen on dev, the test translations with it
        tests/dev/                    and the dev translations of each candidate
        tests/<parse test>.conllu     the parse head's trees of gold-treebank words
        tests/sealed/<test>.hyp       a sealed test's translations, not scored here
        scores.json                   the run's scores and training figures
    G/teacher/<parse test>.conllu     the teacher parser's trees of the same words
    G/sources/<test>.conllu           a raw-text test source, parsed once by the
                                      data's parser (`TranslationTest.raw_source`)
    G/sealed/<test>.json, <test>/     a sealed test's record and the translations
                                      it scored (`grid/seal.py`)
    G/results.md, results.json, *.png the report (`grid/report.py`)
    G/jax_compilation_cache/          XLA programs the runs compiled on JAX, shared
                                      by all (`grid/child_process.py`)

Every stage runs the project's own programs as subprocesses (bin/train,
bin/average_checkpoints, bin/decode, bin/parse), so a run is exactly what a
user gets by typing the commands, each program's resumption and checks
apply, and a crash in one run cannot leave TensorFlow state behind for the
next. A stage is marked done in `grid.json` (atomically) only after its
program succeeded, so an interrupted grid redoes the interrupted stage (a
training stage resumes from the run's newest checkpoint) and nothing that
finished. `grid.json` also records the run's configuration: a directory
holding another configuration is refused, never overwritten.

Stopping a grid: SIGINT (Ctrl-C) or SIGTERM to `bin/grid` is passed on, once
per signal received, to the program it is running, and the grid waits for
that program to stop: bin/train then saves a checkpoint at the step it
reached, as it does when run by hand. Programs run in a session of their
own, so a terminal's Ctrl-C reaches them only through the grid (never
twice, which would mean "stop at once, without saving"), and a signal sent
to the grid alone does not leave them running on; a grid killed outright
takes its running program with it (`grid/child_process.py`).

A grid may continue another's runs under a larger training budget
(`bin/grid --continue_from=G0`, `grid/continuation.py`).

Two grid processes never work on one run at once: a run is done under the
exclusive lock of its directory (`directory_lock`, the lock bin/train and
the other programs take too; the grid's programs work under the grid's),
and a process that finds it held skips the run (the lock goes with the
process that held it, however it ended). So a second `bin/grid` on the same
`G`, by mistake or to put some runs first (`--systems`, `--seeds`), cannot
train a run twice, nor can a bin/train typed by hand into a run's
directory. Grids before this lock held `grid.lock`; one still running on a
run is respected (`LEGACY_LOCK_FILE`).
"""

import contextlib
import dataclasses
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from absl import logging

from syntax_t2t import directory_lock, io_utils, registry
from syntax_t2t.evaluation import attachment, translation
from syntax_t2t.grid import backend_record, child_process, length_penalty
from syntax_t2t.grid.child_process import PassedOnSignals
from syntax_t2t.grid.experiment import ExperimentError
from syntax_t2t.models.contract import HEAD_SUPERVISION
from syntax_t2t.training import progress, validation

STATE_FILE = "grid.json"
SCORES_FILE = "scores.json"
LOCK_FILE = directory_lock.LOCK_FILE
#: The `grid.json` key of each stage's seconds, summed over invocations (`grid/budget.py`).
STAGE_SECONDS = "stage_seconds"
#: What grids before `directory_lock` locked (and left) in each run directory.
LEGACY_LOCK_FILE = "grid.lock"
#: The `grid.json` key of the settings each sealed test was translated under.
SEALED_KEY = "sealed"
#: The grid directory's JAX compilation cache, shared by every run's programs.
COMPILATION_CACHE = "jax_compilation_cache"


class GridError(RuntimeError):
    """A stage of a run failed, or a run directory belongs to another configuration."""


class GridInterrupted(GridError):
    """The grid was stopped by a signal while one of its programs ran.

    Attributes:
        signal_number: the first signal received.
    """

    def __init__(self, signal_number, run_name, program, log_path):
        self.signal_number = signal_number
        super().__init__(
            f"stopped by {signal.Signals(signal_number).name} while {run_name} ran {program} "
            f"(it was let stop cleanly; see {log_path}); run the same command again to resume")

    @property
    def exit_status(self):
        """The shell's status for a process ended by this signal: 128 + its number."""
        return 128 + int(self.signal_number)


class BudgetSpent(GridError):
    """`--time_budget` ran out while one of the grid's programs ran; it was let stop cleanly."""

    def __init__(self, run_name, program, log_path):
        super().__init__(f"the time budget ran out for {run_name} at {program} (a running "
                         f"program is stopped with SIGINT and let save; see {log_path})")


def test_output(test):
    """The run-relative path of a test set's translations at the experiment's decoding settings."""
    return os.path.join("tests", f"{test.name}.hyp")


def sealed_output(test):
    """The run-relative path of a sealed test's translations, which only `grid/seal.py` scores."""
    return os.path.join("tests", "sealed", f"{test.name}.hyp")


def parse_output(test):
    """The run-relative path of a parse head's trees of a parse test's gold words."""
    return os.path.join("tests", f"{test.name}.conllu")


def tool_command(name):
    """The command that runs the project's program `name` (`bin/<name>` or its console script)."""
    script = Path(__file__).resolve().parents[2] / "bin" / name
    if script.is_file():
        return [sys.executable, str(script)]
    console = Path(sys.executable).parent / f"syntax-t2t-{name.replace('_', '-')}"
    if console.is_file():
        return [str(console)]
    raise GridError(f"cannot find the program {name}: neither {script} nor {console} exists")


@dataclasses.dataclass(frozen=True)
class Run:
    """One (system, seed) of an experiment."""

    system: object
    seed: int
    directory: str

    @property
    def name(self):
        return f"{self.system.name}/seed{self.seed}" if self.system else self.directory


def plan(experiment, output_dir, systems=None, seeds=None):
    """Every run of the experiment, optionally only some systems and seeds.

    Seed by seed, systems in the experiment's order within a seed: the first
    seed of every system comes before anyone's second, so that a grid cut
    short has compared every system once.

    Raises:
        ExperimentError: a requested system is not in the experiment.
    """
    chosen = experiment.systems
    if systems:
        chosen = [experiment.system(name) for name in systems]
    every_seed = sorted({seed for system in chosen for seed in experiment.seeds_of(system)})
    runs = []
    for seed in every_seed:
        if seeds and seed not in seeds:
            continue
        for system in chosen:
            if seed in experiment.seeds_of(system):
                runs.append(Run(system, seed, os.path.join(output_dir, "runs", system.name,
                                                           f"seed{seed}")))
    return runs


def share(runs, num_tasks, task_id):
    """The runs task `task_id` of `num_tasks` does: every `num_tasks`-th, from `task_id`."""
    if not 0 <= task_id < num_tasks:
        raise ExperimentError(f"--task_id={task_id} must be in 0 .. {num_tasks - 1}")
    return [run for index, run in enumerate(runs) if index % num_tasks == task_id]


def read_json(path, default=None):
    return io_utils.read_json(path, default, "delete it to redo that stage")


def differing_keys(config, other, ignore=()):
    """The keys, sorted, whose values differ between two run configurations."""
    return sorted(key for key in set(config) | set(other)
                  if key not in ignore and config.get(key) != other.get(key))


def write_json(path, value):
    io_utils.atomic_write_text(path, json.dumps(value, indent=1, sort_keys=True) + "\n")


def is_done(run, state, key):
    """Whether a stage is done: marked so, and for the scores, their file still there."""
    if key == "score" and not os.path.exists(os.path.join(run.directory, SCORES_FILE)):
        return False  # deleted since: scored again rather than "testing" for ever
    return bool(state.get("done", {}).get(key))


@contextlib.contextmanager
def _legacy_lock(directory):
    """Waits for no grid of the code before `directory_lock` that works on the run.

    Such a grid holds `grid.lock`; finding it free, the file, which nothing
    reads any more, is removed.

    Raises:
        DirectoryInUseError: such a grid holds it.
    """
    path = os.path.join(directory, LEGACY_LOCK_FILE)
    if not os.path.exists(path):
        yield
        return
    with open(path, "a", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise directory_lock.DirectoryInUseError(
                f"a bin/grid of earlier code holds {path}") from None
        os.remove(path)
        yield


class GridRunner:
    """Runs the stages of an experiment's runs.

    Args:
        experiment: the `Experiment`.
        name: its registered name (for messages and the report).
        output_dir: the grid directory `G`.
        paths: the values of `{data_dir}`, `{tmp_dir}`, `{treebank_dir}` in
            the experiment's file names (`data_dir` is also where the data is).
        extra_flags: flags passed to every program (e.g. `--usr_dir=...`).
    """

    def __init__(self, experiment, name, output_dir, paths, extra_flags=()):
        self.experiment = experiment
        self.name = name
        self.output_dir = output_dir
        self.paths = dict(paths, problem=experiment.problem)
        self.data_dir = paths["data_dir"]
        self.extra_flags = list(extra_flags)
        #: A `grid.budget.Budget`: at its end the running program gets SIGINT.
        self.budget = None

    def path(self, template):
        """A file name of the experiment with `{data_dir}` and the others filled in."""
        try:
            return template.format(**self.paths)
        except KeyError as error:
            raise ExperimentError(f"experiment {self.name}: {template!r} names {error}, which is "
                                  f"not one of {', '.join(sorted(self.paths))}") from None

    # Configuration -------------------------------------------------------

    def system_data_dir(self, system):
        """Where a system's data is: its `data_dir` template filled in, or the grid's."""
        return self.path(system.data_dir) if system.data_dir else self.data_dir

    def config(self, run):
        """What defines a run: a directory with another configuration is refused."""
        experiment = self.experiment
        system = run.system
        config = {"experiment": self.name, "problem": experiment.problem, "model": system.model,
                  "hparams_set": experiment.hparams_set_of(system), "hparams": system.hparams,
                  "seed": run.seed, "train_steps": experiment.train_steps,
                  "eval_every": experiment.eval_every,
                  "early_stopping_patience": experiment.early_stopping_patience,
                  "best_checkpoint_metric": experiment.best_checkpoint_metric,
                  "data_dir": os.path.abspath(self.system_data_dir(system))}
        if system.problem_options:
            # Only where given, so that runs of earlier grids keep their configuration.
            config["problem_options"] = system.problem_options
        return config

    def claim(self, run):
        """The run's state; records its configuration, or refuses another one's directory."""
        path = os.path.join(run.directory, STATE_FILE)
        state = read_json(path)
        config = self.config(run)
        if state is None:
            if os.path.isdir(run.directory) and os.listdir(run.directory):
                has_run = os.path.exists(os.path.join(run.directory, "hparams.json"))
                if has_run:
                    logging.info("%s: adopting the bin/train run already in %s", run.name,
                                 run.directory)
            os.makedirs(run.directory, exist_ok=True)
            state = {"config": config, "done": {}, "wall_seconds": 0.0}
            write_json(path, state)
            return state
        if state.get("config") != config:
            differences = differing_keys(config, state.get("config", {}))
            raise GridError(
                f"{run.directory} holds a run of another configuration (differs in "
                f"{', '.join(differences)}); it is not overwritten: choose another --output_dir "
                f"or delete that directory")
        return state

    def _save_state(self, run, state):
        write_json(os.path.join(run.directory, STATE_FILE), state)

    # Stages ----------------------------------------------------------------

    def _call(self, run, command, log_name):
        """Runs a program, its output appended to the run's log; raises `GridError` on failure."""
        log_path = os.path.join(run.directory, log_name)
        logging.info("%s: %s", run.name, " ".join(command))
        program = command[1] if len(command) > 1 else command[0]
        if self.budget is not None and self.budget.spent():  # not started only to be stopped
            raise BudgetSpent(run.name, program, log_path)
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"\n$ {' '.join(command)}\n")
            log.flush()
            with child_process.start(command + self.extra_flags, log,
                                     os.path.join(self.output_dir, COMPILATION_CACHE)) as process:
                with PassedOnSignals(process) as signals:
                    returncode, out_of_time = self._wait(process)
        if signals.received is not None:
            raise GridInterrupted(signals.received, run.name, program, log_path)
        if out_of_time:
            raise BudgetSpent(run.name, program, log_path)
        if returncode != 0:
            raise GridError(f"{run.name}: {program} exited with status {returncode}; "
                            f"see {log_path}")

    def _wait(self, process):
        """`(exit status, whether the budget ran out)`; at its end the program gets one SIGINT."""
        if self.budget is None:
            return process.wait(), False
        try:
            return process.wait(timeout=max(self.budget.remaining(), 0.001)), False
        except subprocess.TimeoutExpired:
            logging.warning("the time budget ran out: SIGINT to the running program (pid %d); "
                            "waiting for it to save and stop", process.pid)
            process.send_signal(signal.SIGINT)
            return process.wait(), True

    def train(self, run, state):
        """bin/train of the run: starts it, or resumes it from its newest checkpoint."""
        experiment = self.experiment
        system = run.system
        command = tool_command("train") + [
            f"--problem={experiment.problem}", f"--model={system.model}",
            f"--hparams_set={experiment.hparams_set_of(system)}", f"--hparams={system.hparams}",
            f"--data_dir={self.system_data_dir(system)}", f"--output_dir={run.directory}",
            f"--train_steps={experiment.train_steps}", f"--eval_every={experiment.eval_every}",
            f"--save_checkpoints_steps={experiment.eval_every}",
            f"--keep_checkpoint_max={experiment.keep_checkpoint_max}",
            f"--best_checkpoint_metric={experiment.best_checkpoint_metric}",
            f"--early_stopping_patience={experiment.early_stopping_patience}",
            f"--random_seed={run.seed}"]
        if experiment.best_checkpoint_metric == "bleu":
            command += ["--eval_bleu",
                        f"--eval_bleu_max_sentences={experiment.eval_bleu_max_sentences}"]
        start = time.perf_counter()
        try:
            self._call(run, command, "train.log")
        finally:
            state["wall_seconds"] = state.get("wall_seconds", 0.0) + time.perf_counter() - start
            self._save_state(run, state)

    def checkpoint_dir(self, run):
        """The directory `bin/decode --output_dir` reads the tested weights from."""
        choice = self.experiment.checkpoint
        if choice == "best":
            return os.path.join(run.directory, validation.BEST_DIR)
        if choice == "average":
            return os.path.join(run.directory, "averaged")
        return run.directory

    def average(self, run):
        averaged = os.path.join(run.directory, "averaged")
        self._call(run, tool_command("average_checkpoints") + [
            f"--output_dir={run.directory}", f"--averaged_dir={averaged}",
            f"--num_last_checkpoints={self.experiment.average_checkpoints}"], "test.log")

    def decode_test(self, run, test, output=None, alpha=None):
        """Translates a test (or dev) set; `alpha` replaces the experiment's length penalty."""
        output = os.path.join(run.directory, output or test_output(test))
        os.makedirs(os.path.dirname(output), exist_ok=True)
        settings = self.experiment.decode_hparams
        if alpha is not None:
            settings = length_penalty.with_alpha(settings, alpha)
        command = tool_command("decode") + [
            f"--output_dir={self.checkpoint_dir(run)}", f"--decode_hparams={settings}",
            f"--decode_from_file={self.test_source(test)}", f"--decode_to_file={output}"]
        if test.detokenize:
            command.append("--detokenize")
        self._call(run, command, "test.log")

    def decoding_settings(self, test):
        """What a test's translations depend on besides the run: files, decoding, checkpoint."""
        experiment = self.experiment
        settings = {"source_sha256": io_utils.sha256_file(self.path(test.source)),
                    "raw_source": test.raw_source, "detokenize": test.detokenize,
                    "decode_hparams": experiment.decode_hparams,
                    "checkpoint": experiment.checkpoint,
                    "average_checkpoints": experiment.average_checkpoints}
        if test.raw_source:  # the words decoded are the parser's: another parser, other input
            settings["parsed_source_sha256"] = io_utils.sha256_file(self.test_source(test))
        return settings

    def decode_sealed(self, run, test, state):
        """Translates a sealed test into the run; `state` records the settings it was under."""
        self.decode_test(run, test, sealed_output(test))
        state.setdefault(SEALED_KEY, {})[test.name] = self.decoding_settings(test)

    def parse_test(self, run, test):
        output = os.path.join(run.directory, parse_output(test))
        os.makedirs(os.path.dirname(output), exist_ok=True)
        # Greedy: the translations are a by-product; the parse comes from the encoder.
        self._call(run, tool_command("decode") + [
            f"--output_dir={self.checkpoint_dir(run)}", "--decode_hparams=beam_size=1",
            f"--decode_from_file={self.path(test.gold)}",
            f"--decode_to_file={os.path.join(run.directory, test_output(test))}",
            f"--parse_to_file={output}", "--parse_decoder=mst"], "test.log")

    def has_parse_head(self, run):
        return registry.model(run.system.model).criterion == HEAD_SUPERVISION

    def teacher_parse(self, test):
        """The teacher parser's UAS/LAS on a parse test's gold trees (parsed once per grid).

        The teacher is `test.teacher_parser`, or the parser the problem's data
        was built with (recorded by bin/datagen); None when neither is known.
        """
        spec = test.teacher_parser or (self.problem_options().get("parser") or None)
        if not spec:
            return None
        output = self.teacher_output(test)
        if not os.path.exists(output):
            os.makedirs(os.path.dirname(output), exist_ok=True)
            log = Run(None, 0, os.path.dirname(output))
            self._call(log, tool_command("parse") + [
                f"--parser={spec}", f"--input_file={self.path(test.gold)}",
                "--input_format=conllu", f"--output_file={output}"], "parse.log")
        result = attachment.score_parse_files(output, self.path(test.gold))
        return {"parser": spec, "UAS": result.uas, "LAS": result.las}

    def test_source(self, test):
        """The file `bin/decode` reads for a test: its source, or its raw source parsed once.

        A raw-text source is parsed by the parser the problem's data was built
        with, so that every system, tree-reading or not, reads the words the
        parser makes of it, as in training.
        """
        if not test.raw_source:
            return self.path(test.source)
        output = os.path.join(self.output_dir, "sources", f"{test.name}.conllu")
        if not os.path.exists(output):
            spec = self.problem_options().get("parser")
            if not spec:
                raise GridError(f"test {test.name}: its source is raw text, but the data in "
                                f"{self.data_dir} records no parser to parse it with")
            os.makedirs(os.path.dirname(output), exist_ok=True)
            log = Run(None, 0, os.path.dirname(output))
            partial = f"{output}.partial"
            self._call(log, tool_command("parse") + [
                f"--parser={spec}", f"--input_file={self.path(test.source)}",
                "--input_format=text", f"--output_file={partial}"], "parse.log")
            os.replace(partial, output)
        return output

    def teacher_output(self, test):
        """The teacher parser's trees of a parse test's gold words."""
        return os.path.join(self.output_dir, "teacher", f"{test.name}.conllu")

    def problem_options(self):
        """The options bin/datagen recorded for the problem's data."""
        problem = registry.problem(self.experiment.problem)
        return (problem.completion_record(self.data_dir) or {}).get("options", {})

    def stages(self, run, state):
        """`[(key, action)]`: the stages of `run` in order; `grid.json` marks the done keys."""
        stages = [("train", lambda: self.train(run, state))]
        if self.experiment.checkpoint == "average":
            stages.append(("average", lambda: self.average(run)))
        for test in self.experiment.open_tests():
            stages.append((f"decode:{test.name}", lambda test=test: self.decode_test(run, test)))
        # A sealed test is translated here, where the weights are (a GPU session keeps none),
        # and not scored: `grid/seal.py` scores every run's translations once all have finished.
        for test in self.experiment.sealed_tests():
            stages.append((f"sealed:{test.name}",
                           lambda test=test: self.decode_sealed(run, test, state)))
        stages += self.length_penalty_stages(run)
        if self.has_parse_head(run):
            for test in self.experiment.parse_tests:
                stages.append((f"parse:{test.name}", lambda test=test: self.parse_test(run, test)))
        stages.append(("score", lambda: write_json(os.path.join(run.directory, SCORES_FILE),
                                                   self.score(run, state))))
        return stages

    def length_penalty_stages(self, run):
        """The dev decodes of each candidate alpha, the choice, the test decodes with it."""
        experiment = self.experiment
        if not experiment.length_penalties:
            return []
        dev = experiment.dev_set
        stages = [(f"dev:alpha={alpha:g}", lambda alpha=alpha: self.decode_test(
            run, dev, length_penalty.dev_output(dev, alpha), alpha))
            for alpha in experiment.length_penalties]
        stages.append(("choose:alpha", lambda: length_penalty.write_choice(
            run.directory, dev, experiment.length_penalties, self.path(dev.reference))))
        for test in experiment.open_tests():
            stages.append((f"decode:{test.name}:dev_alpha", lambda test=test: self.decode_test(
                run, test, length_penalty.test_output(test),
                length_penalty.read_choice(run.directory)["alpha"])))
        return stages

    def execute(self, run):
        """Does every stage of `run` that is not done yet; marks each done once it succeeded.

        Returns:
            False, doing nothing, when another process holds the run's lock.
        """
        os.makedirs(run.directory, exist_ok=True)
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(directory_lock.locked(run.directory))
                held.enter_context(_legacy_lock(run.directory))
            except directory_lock.DirectoryInUseError as error:
                logging.warning("%s: skipped, %s", run.name, error)
                return False
            state = self.claim(run)  # read under the lock: the other process may have moved on
            state.setdefault("done", {})
            worked = False
            for key, action in self.stages(run, state):
                # Scores are rewritten after any stage ran: a stage the experiment
                # gained after the run was scored (`length_penalties`) adds to them.
                if not is_done(run, state, key) or (key == "score" and worked):
                    worked = True
                    if key == "train":
                        backend_record.record(state)
                    start = time.perf_counter()
                    try:
                        action()
                    finally:  # an interrupted stage's time counts too: it resumes
                        times = state.setdefault(STAGE_SECONDS, {})
                        times[key] = times.get(key, 0.0) + time.perf_counter() - start
                        self._save_state(run, state)
                    state["done"][key] = True
                    self._save_state(run, state)
        return True

    # Scores ------------------------------------------------------------------

    def _score_translations(self, run, output):
        """`{test: {metric: score}}` of the translations at `output(test)` in the run."""
        return {test.name: {key: value.score for key, value in translation.score_files(
                    os.path.join(run.directory, output(test)), self.path(test.reference)).items()}
                for test in self.experiment.open_tests()}

    def score(self, run, state):
        """The run's test scores and training figures."""
        history = validation.read_history(run.directory)
        evaluations = history["evaluations"]
        trained = progress.read_training_time(run.directory)
        scores = {"system": run.system.name, "seed": run.seed,
                  "steps": evaluations[-1]["step"] if evaluations else 0,
                  "best": history.get("best"), "stopped_early": history.get("stopped_early"),
                  "train_seconds": trained["seconds"],
                  "tokens_per_second": (trained["tokens"] / trained["seconds"]
                                        if trained["seconds"] else None),
                  "wall_seconds": state.get("wall_seconds", 0.0),
                  backend_record.SCORES_KEY: backend_record.of_state(state),
                  "translation": self._score_translations(run, test_output), "parse": {}}
        if self.experiment.length_penalties:
            scores["length_penalty"] = length_penalty.read_choice(run.directory)
            scores[length_penalty.SCORES_KEY] = self._score_translations(
                run, length_penalty.test_output)
        if self.has_parse_head(run):
            for test in self.experiment.parse_tests:
                predicted = os.path.join(run.directory, parse_output(test))
                result = attachment.score_parse_files(predicted, self.path(test.gold))
                scores["parse"][test.name] = {"UAS": result.uas, "LAS": result.las}
        return scores
