"""`bin/grid`'s flags, and its entry point.

The program (`cli/grid.py`) imports Keras, TensorFlow and the registry;
defined here, the flags answer `--help`, an unknown flag or a malformed
value at once, and the program is imported only for a command line that
parsed (`common.run_deferred`).
"""

from absl import flags

from syntax_t2t.cli import common
from syntax_t2t.evaluation import seed_significance

FLAGS = flags.FLAGS

flags.DEFINE_string("experiment", None, "Registered experiment (see --registry_help).")
flags.DEFINE_string("tmp_dir", None, "Value of {tmp_dir} in the experiment's file names "
                    "(where bin/datagen found the raw data).")
flags.DEFINE_string("treebank_dir", None, "Value of {treebank_dir} in the experiment's file "
                    "names: a directory of gold treebanks (e.g. UD PUD) for the parse tests.")
flags.DEFINE_list("systems", [], "Only these systems (default: all).")
flags.DEFINE_list("seeds", [], "Only these seeds (default: each system's).")
flags.DEFINE_integer("num_tasks", 1, "Split the runs over this many tasks.", lower_bound=1)
flags.DEFINE_integer("task_id", 0, "This task's number, 0 .. num_tasks - 1.", lower_bound=0)
flags.DEFINE_string("continue_from", None,
                    "A grid directory whose runs of the same systems and seeds this one "
                    "continues under a larger budget (more steps, no or longer early "
                    "stopping), copying their training instead of redoing it.")
flags.DEFINE_string("archive_dir", None,
                    "Keep the record of each finished run here, without its checkpoints (commit "
                    "it), and restore the records of runs --output_dir lacks, so that a grid "
                    "begun on another machine is reported whole and only its unfinished runs "
                    "train (syntax_t2t/grid/archive.py).")
flags.DEFINE_string("time_budget", None,
                    "Wall-clock budget of this invocation, e.g. 90s, 8m, 1.5h: start no run "
                    "whose measured duration (the longest of the finished runs of its system in "
                    "this grid, stage by stage) does not fit in what is left; a run not yet "
                    "measured is started; at the end the running program gets SIGINT and "
                    "saves; finished runs are archived, and the grid exits 0 naming what is "
                    "left and the command that continues.")
flags.DEFINE_bool("report_only", False, "Write the report of the finished runs and exit.")
flags.DEFINE_string("bundle_dir", None,
                    "Copy what the runs read (every system's data, the test and treebank files) "
                    "into this new directory, with raw-text test sources and the teacher's "
                    "parses made here, and exit: the grid then runs from it on a machine without "
                    "the raw data or the parser, e.g. a GPU session (syntax_t2t/grid/bundle.py, "
                    "docs/gpu_grid.sh).")
flags.DEFINE_integer("bootstrap_samples", seed_significance.DEFAULT_SAMPLES,
                     "Resamples of the significance tests.", lower_bound=1)


def run() -> None:
    """Entry point of `bin/grid` and `syntax-t2t-grid`."""
    common.run_deferred(__name__, "syntax_t2t.cli.grid")
