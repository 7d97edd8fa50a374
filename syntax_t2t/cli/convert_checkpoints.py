"""`bin/convert_checkpoints`: a run's TensorFlow checkpoints rewritten for every backend.

    bin/convert_checkpoints --output_dir=runs/dep_parse
    KERAS_BACKEND=jax bin/decode --output_dir=runs/dep_parse ...

Runs trained before the directory format (`checkpointing/directory_format.py`)
hold TensorFlow's `ckpt-<step>.index` and `.data-*` files, which only
TensorFlow reads. Run this where TensorFlow is installed (the TensorFlow
backend, the default) to give each such checkpoint a `ckpt-<step>/` twin in
the directory format, after which the run decodes, averages, exports and
resumes on JAX too. The model is rebuilt from the run's `hparams.json` and
`flags.txt` (as `bin/decode` rebuilds it) and every checkpoint is checked
against it; training checkpoints keep their optimizer, step and dropout
state, but not the position of the `tf.data` input (a run resumed from them
starts its input again). With `--include_model_dirs` the run's `best/` and
`averaged/` directories are converted too. The TensorFlow files are left in
place; where both formats hold a step, every tool uses the directory.
The TensorFlow backend needs no conversion: it reads both formats.
"""

import os

from absl import flags

from syntax_t2t.cli import common, convert_checkpoints_flags
from syntax_t2t.checkpointing import discovery
from syntax_t2t.decoding.model_loading import load_trained_model
from syntax_t2t.errors import InputError
from syntax_t2t.training import checkpoints, run_directory
from syntax_t2t.training.checkpoints import CheckpointError

FLAGS = flags.FLAGS

# Defined apart, so that bin/convert_checkpoints answers --help and flag errors before Keras loads;
# this module's --help (common.run) lists them as its own.
flags.adopt_module_key_flags(convert_checkpoints_flags)

MODEL_DIRS = ("best", "averaged")


def _directories(output_dir):
    directories = [output_dir]
    if FLAGS.include_model_dirs:
        directories += [os.path.join(output_dir, name) for name in MODEL_DIRS
                        if os.path.isdir(os.path.join(output_dir, name))]
    return directories


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    common.require("output_dir")
    if not discovery.find_checkpoints(FLAGS.output_dir):
        raise CheckpointError(f"--output_dir={FLAGS.output_dir} holds no checkpoint to convert")
    converted = 0
    for directory in _directories(FLAGS.output_dir):
        pending = [found for found in discovery.find_checkpoints(directory)
                   if found.format == discovery.TENSORFLOW_FORMAT]
        if not pending:
            print(f"{directory}: nothing to convert (no checkpoint in TensorFlow's format only)")
            continue
        trained = load_trained_model(
            output_dir=directory, model_name=FLAGS.model, problem_name=FLAGS.problem,
            data_dir=FLAGS.data_dir, hparams_set=FLAGS.hparams_set, hparams_overrides=FLAGS.hparams)
        written = checkpoints.convert_tensorflow_checkpoints(directory, trained.model,
                                                             trained.hparams)
        converted += len(written)
        names = ", ".join(os.path.basename(path) for path in written)
        print(f"{directory}: converted {len(written)} checkpoint(s) ({names})")
    print(f"converted {converted} checkpoint(s); the TensorFlow files are left in place")


def entry_point():
    """The program's `main` and the errors it reports as one line (`common.run`'s arguments)."""
    return main, (InputError, CheckpointError, run_directory.RunDirectoryError)


def run():
    """Runs the program on `sys.argv` in a process that has imported this module already.

    `bin/convert_checkpoints` and `syntax-t2t-convert-checkpoints` start at
    `convert_checkpoints_flags.run`, which parses the command line before
    this module is imported.
    """
    main_function, user_errors = entry_point()
    common.run(main_function, extra_user_errors=user_errors)
