"""`bin/average_checkpoints`: averages the last N checkpoints of a run (Popel & Bojar 2018).

    bin/average_checkpoints --output_dir=runs/dep_parse --num_last_checkpoints=8
    bin/decode --output_dir=runs/dep_parse/averaged --decode_from_file=... --decode_to_file=...

The model is rebuilt from the run's `hparams.json` and `flags.txt` (model,
problem, data directory; flags given here must agree with them), each
checkpoint's model weights are read, and their mean is saved as
`<averaged_dir>/ckpt-<newest step>` together with copies of the run's files,
so that the averaged directory decodes like a run directory.

`--averaged_dir` is refused when it is (after resolving symbolic links) the
run itself or contains it, or holds another run's or averaging's files; the
averaging is written beside it and swapped in whole.
"""

import os

from absl import flags

from syntax_t2t import directory_lock
from syntax_t2t.cli import common, average_checkpoints_flags
from syntax_t2t.decoding.model_loading import load_trained_model
from syntax_t2t.errors import InputError
from syntax_t2t.training import checkpoint_averaging, run_directory
from syntax_t2t.training.checkpoints import CheckpointError

FLAGS = flags.FLAGS

# Defined apart, so that bin/average_checkpoints answers --help and flag errors before Keras loads;
# this module's --help (common.run) lists them as its own.
flags.adopt_module_key_flags(average_checkpoints_flags)


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    common.require("output_dir")
    # A trainer of the run would delete the checkpoints being averaged, and two averagings mix.
    directory_lock.acquire(FLAGS.output_dir)
    averaged_dir = FLAGS.averaged_dir or os.path.join(FLAGS.output_dir, "averaged")
    # Refused before the work: a wrong directory must not cost the averaging, nor damage a run.
    checkpoint_averaging.check_averaged_dir(FLAGS.output_dir, averaged_dir)
    prefixes = checkpoint_averaging.last_checkpoints(FLAGS.output_dir, FLAGS.num_last_checkpoints)
    trained = load_trained_model(
        output_dir=FLAGS.output_dir, model_name=FLAGS.model, problem_name=FLAGS.problem,
        data_dir=FLAGS.data_dir, hparams_set=FLAGS.hparams_set, hparams_overrides=FLAGS.hparams)
    checkpoint_averaging.average_into(trained.model, prefixes)
    step = checkpoint_averaging.checkpoint_step(prefixes[-1])
    path = checkpoint_averaging.save_averaged(trained.model, FLAGS.output_dir, averaged_dir, step)
    names = ", ".join(os.path.basename(prefix) for prefix in prefixes)
    print(f"averaged {len(prefixes)} checkpoints ({names}) into {path}")


def entry_point():
    """The program's `main` and the errors it reports as one line (`common.run`'s arguments)."""
    return main, (InputError, CheckpointError, run_directory.RunDirectoryError)


def run():
    """Runs the program on `sys.argv` in a process that has imported this module already.

    `bin/average_checkpoints` and `syntax-t2t-average-checkpoints` start at
    `average_checkpoints_flags.run`, which parses the command line before
    this module is imported.
    """
    main_function, user_errors = entry_point()
    common.run(main_function, extra_user_errors=user_errors)
