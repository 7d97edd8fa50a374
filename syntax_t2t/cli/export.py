"""`bin/export`: a trained model for serving, as a SavedModel or a CTranslate2 model.

    bin/export --output_dir=runs/transformer --format=saved_model \\
        --decode_hparams=beam_size=4,alpha=0.6 --export_dir=exported/transformer
    bin/export --output_dir=runs/transformer --format=ctranslate2 --export_dir=ct2/transformer

The model is restored as `bin/decode` restores it (newest checkpoint of
`--output_dir`, or `--checkpoint_path`).

`--format=saved_model` (`export/to_saved_model.py`) writes a TensorFlow
SavedModel whose `serving_default` signature takes tokenised source strings
and returns `translations`, `scores`, `beams` and `beam_scores`, with the
beam search of `bin/decode` (`--decode_hparams`: beam_size, alpha,
extra_length) inside the graph; `tf.saved_model.load` or TensorFlow Serving
runs it without this project:

    model = tf.saved_model.load("exported/transformer")
    model.signatures["serving_default"](sources=tf.constant(["a b c"]))["translations"]

`--format=ctranslate2` (`export/to_ctranslate2.py`, needs the
`ctranslate2` extra) writes a CTranslate2 model directory for models whose
inference graph is a plain Transformer (`transformer`, relative positions
without sinusoids as in `transformer_relative`, `dep_parse`,
`diagonal_parse`); `--quantization=int8` stores int8 weights:

    translator = ctranslate2.Translator("ct2/transformer")
    translator.translate_batch([["a", "b", "c"]], beam_size=4, length_penalty=0.6,
                               min_decoding_length=0,
                               max_decoding_length=len(tokens) + 1 + extra_length)

CTranslate2's length penalty divides by `length ** alpha`, not GNMT's
`((5 + length) / 6) ** alpha` that `bin/decode` uses, so with alpha > 0
its beam search can rank finished hypotheses differently; greedy search and
`length_penalty=0` reproduce `bin/decode` (alpha=0) token for token.

Models a format cannot hold are refused with the reason
(`export/exportable.py`). The export is written beside its destination and
renamed into place when complete; an existing `--export_dir` is never
overwritten.
"""

import os
import shutil
import tempfile

from absl import flags

from syntax_t2t import directory_lock
from syntax_t2t.cli import common, export_flags
from syntax_t2t.decoding.decode_hparams import decode_hparams
from syntax_t2t.decoding.model_loading import load_trained_model
from syntax_t2t.errors import InputError
from syntax_t2t.export import exportable
from syntax_t2t.training import run_directory
from syntax_t2t.training.checkpoints import CheckpointError

FLAGS = flags.FLAGS
# Defined apart, so that bin/export answers --help and flag errors before Keras loads;
# this module's --help (common.run) lists them as its own.
flags.adopt_module_key_flags(export_flags)


def _export_dir():
    if not FLAGS.export_dir and not FLAGS.output_dir:
        common.require("export_dir")
    export_dir = FLAGS.export_dir or os.path.join(FLAGS.output_dir, "export", FLAGS.format)
    if FLAGS.output_dir and _inside(export_dir, FLAGS.output_dir):
        directory_lock.acquire(FLAGS.output_dir)  # writing into a run: no other program there
    if os.path.exists(export_dir):
        raise common.UsageError(f"--export_dir={export_dir} already exists; remove it or "
                                f"choose another")
    return export_dir


def _inside(path, directory):
    real, real_directory = os.path.realpath(path), os.path.realpath(directory)
    return real == real_directory or real.startswith(real_directory.rstrip(os.sep) + os.sep)


def _write_then_rename(export_dir, write):
    """Calls `write(directory)` on a fresh directory beside `export_dir`, then renames it."""
    parent = os.path.dirname(os.path.abspath(export_dir))
    os.makedirs(parent, exist_ok=True)
    temporary = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(export_dir)}.")
    try:
        target = os.path.join(temporary, "model")
        write(target)
        os.rename(target, export_dir)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    common.require("format")
    if not (FLAGS.output_dir or FLAGS.checkpoint_path):
        raise common.UsageError("give --output_dir (a training run) or --checkpoint_path")
    if FLAGS.quantization and FLAGS.format != "ctranslate2":
        raise common.UsageError("--quantization applies to --format=ctranslate2 only")
    export_dir = _export_dir()
    settings = decode_hparams(FLAGS.decode_hparams)
    trained = load_trained_model(
        output_dir=FLAGS.output_dir, checkpoint_path=FLAGS.checkpoint_path, model_name=FLAGS.model,
        problem_name=FLAGS.problem, data_dir=FLAGS.data_dir, hparams_set=FLAGS.hparams_set,
        hparams_overrides=FLAGS.hparams)
    vocabularies = trained.problem.load_vocabularies(trained.data_dir)
    if FLAGS.format == "saved_model":
        refusal = exportable.saved_model_refusal(trained.model, trained.problem, settings)
    else:
        refusal = exportable.ctranslate2_refusal(trained.model)
    if refusal:
        raise common.UsageError(f"cannot export {trained.model_name} to {FLAGS.format}: "
                                f"{refusal}")
    if FLAGS.format == "saved_model":
        from syntax_t2t.export.to_saved_model import export_saved_model

        _write_then_rename(export_dir, lambda directory: export_saved_model(
            trained.model, vocabularies, settings, directory))
        print(f"exported {trained.model_name} ({trained.checkpoint}) as a SavedModel with "
              f"beam_size={settings.beam_size}, alpha={settings.alpha}, "
              f"extra_length={settings.extra_length}, eos_candidates={settings.eos_candidates} "
              f"to {export_dir}")
    else:
        from syntax_t2t.export.to_ctranslate2 import export_ctranslate2

        _write_then_rename(export_dir, lambda directory: export_ctranslate2(
            trained.model, vocabularies, directory, FLAGS.quantization))
        print(f"exported {trained.model_name} ({trained.checkpoint}) as a CTranslate2 model "
              f"({FLAGS.quantization or 'float32'}) to {export_dir}")


def entry_point():
    """The program's `main` and the errors it reports as one line (`common.run`'s arguments)."""
    return main, (InputError, CheckpointError, run_directory.RunDirectoryError)


def run():
    """Runs the program on `sys.argv` in a process that has imported this module already.

    `bin/export` and `syntax-t2t-export` start at `export_flags.run`, which
    parses the command line before this module is imported.
    """
    main_function, user_errors = entry_point()
    common.run(main_function, extra_user_errors=user_errors)
