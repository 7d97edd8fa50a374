"""A grid's inputs in one directory, for a machine that has neither the raw data nor the parser.

A lent GPU machine has JAX but no TensorFlow (so no bin/datagen), no spaCy
(so no parser) and no network, and sees only what travels with the working
tree. `bin/grid --bundle_dir=B` (here, with everything installed) copies
what the experiment's runs read into `B` and makes here what only this
machine can make:

    B/data, B/data_random_trees, ...  every system's data directory
                                      (`{data_dir}` and the systems' templates)
    B/tmp/..., B/treebank/...         the test and treebank files that
                                      `{tmp_dir}` and `{treebank_dir}` name
    B/grid/sources/<test>.conllu      raw-text test sources parsed by the
                                      data's parser (`GridRunner.test_source`)
    B/grid/teacher/<test>.conllu      the teacher's parse of each parse test
    B/bundle.json                     the experiment, the commit, and the
                                      command that runs the grid from `B`

There, `B/grid` is copied to a writable grid directory and `bin/grid` runs
with `--data_dir=B/data --tmp_dir=B/tmp --treebank_dir=B/treebank`
(`docs/gpu_grid.sh`): the grid finds its parsed sources and the teacher's
parses in place and parses nothing. A run's configuration names its
`data_dir`, which `archive.MACHINE_KEYS` lets differ between machines.
"""

import datetime
import os
import shutil

from syntax_t2t.grid import runner, seal

#: The path keys of a grid, and where each points inside a bundle.
PLACES = {"data_dir": "data", "tmp_dir": "tmp", "treebank_dir": "treebank"}
GRID_DIR = "grid"
RECORD_FILE = "bundle.json"
#: Not copied from a data directory: another process's lock, a killed write's leftovers.
_IGNORED = shutil.ignore_patterns(runner.LOCK_FILE, ".*.tmp", "*.partial")


def bundle_paths(grid_runner, bundle_dir):
    """The grid's `{data_dir}`, `{tmp_dir}`, `{treebank_dir}` as they are inside the bundle."""
    return {key: os.path.join(bundle_dir, PLACES[key]) for key in grid_runner.paths
            if key in PLACES}


def _test_files(experiment):
    """`[(what, template)]` of every file the experiment's tests read."""
    tests = list(experiment.translation_tests)
    if experiment.dev_set is not None:
        tests.append(experiment.dev_set)
    files = [(f"test set {test.name}", template)
             for test in tests for template in (test.source, test.reference)]
    return files + [(f"parse test {test.name}", test.gold) for test in experiment.parse_tests]


def _copies(grid_runner, there):
    """`{target: (source, is_directory)}`: each system's data, then each test file outside it."""
    experiment = grid_runner.experiment
    copies = {}
    for system in experiment.systems:
        copies.setdefault(there.system_data_dir(system), (grid_runner.system_data_dir(system), True))
    for what, template in _test_files(experiment):
        source, target = grid_runner.path(template), there.path(template)
        if os.path.abspath(source) == os.path.abspath(target):
            raise runner.GridError(f"{what}: {template} names no directory of the grid "
                                   f"({', '.join(sorted(PLACES))}), so it cannot be bundled")
        if not any(target.startswith(directory + os.sep)
                   for directory, (_, is_directory) in copies.items() if is_directory):
            copies.setdefault(target, (source, False))
    return copies


def write(grid_runner, bundle_dir):
    """Makes `bundle_dir`, a new directory, holding the grid's inputs (module docstring).

    The bundle is built beside its place and renamed into it at the end, so
    a failure leaves no half-made bundle there.

    Returns:
        The bundle's record (also written to `bundle_dir/bundle.json`).

    Raises:
        GridError: `bundle_dir` exists and is not empty, or a test file's
            name does not start with one of the grid's directories (it could
            not move with them).
    """
    if os.path.isdir(bundle_dir) and os.listdir(bundle_dir):
        raise runner.GridError(f"--bundle_dir={bundle_dir} is not empty; give a new directory")
    bundle_dir = os.path.abspath(bundle_dir)
    partial = f"{bundle_dir}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    experiment = grid_runner.experiment
    there = runner.GridRunner(experiment, grid_runner.name, os.path.join(partial, GRID_DIR),
                              bundle_paths(grid_runner, partial))
    copies = _copies(grid_runner, there)  # checked before anything is written
    try:
        for target, (source, is_directory) in copies.items():
            if is_directory:
                shutil.copytree(source, target, ignore=_IGNORED)
            else:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copyfile(source, target)  # the content of a link, not the link
        # Parsed here, into the grid directory the bundle starts the grid with.
        os.makedirs(there.output_dir, exist_ok=True)
        parsing = runner.GridRunner(experiment, grid_runner.name, there.output_dir,
                                    grid_runner.paths, grid_runner.extra_flags)
        parsed = [parsing.test_source(test) for test in experiment.translation_tests
                  if test.raw_source]
        parsed += [parsing.teacher_output(test) for test in experiment.parse_tests
                   if parsing.teacher_parse(test) is not None]
        places = {key: PLACES[key] for key in bundle_paths(grid_runner, partial)}
        record = {
            "experiment": grid_runner.name,
            "made": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "git": seal.git_commit(), "places": places,
            "copied": {os.path.relpath(target, partial): source
                       for target, (source, _) in sorted(copies.items())},
            "parsed": sorted(os.path.relpath(path, partial) for path in parsed),
            "command": ["bin/grid", f"--experiment={grid_runner.name}",
                        *[f"--{key}=B/{place}" for key, place in sorted(places.items())],
                        "--output_dir=G  (a copy of B/grid)"]}
        runner.write_json(os.path.join(partial, RECORD_FILE), record)
        if os.path.isdir(bundle_dir):
            os.rmdir(bundle_dir)  # empty (checked above)
        os.rename(partial, bundle_dir)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return record
