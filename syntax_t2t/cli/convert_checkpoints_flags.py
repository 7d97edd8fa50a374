"""`bin/convert_checkpoints`'s flags, and its entry point.

The program (`cli/convert_checkpoints.py`) imports Keras and TensorFlow;
defined here, the flags answer `--help`, an unknown flag or a malformed
value at once, and the program is imported only for a command line that
parsed (`common.run_deferred`).
"""

from absl import flags

from syntax_t2t.cli import common

FLAGS = flags.FLAGS

flags.DEFINE_boolean("include_model_dirs", True,
                     "Also convert the run's best/ and averaged/ directories, where they exist.")

# Shared flags this program reads: its --help lists them (common.adopt_program_flags).
for _name in ("problem", "model", "hparams_set", "hparams", "data_dir", "output_dir"):
    flags.declare_key_flag(_name)


def run() -> None:
    """Entry point of `bin/convert_checkpoints` and `syntax-t2t-convert-checkpoints`."""
    common.run_deferred(__name__, "syntax_t2t.cli.convert_checkpoints")
