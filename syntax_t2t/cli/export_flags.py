"""`bin/export`'s flags, and its entry point.

The program (`cli/export.py`) imports Keras and TensorFlow; defined here,
the flags answer `--help`, an unknown flag or a malformed value at once, and
the program is imported only for a command line that parsed
(`common.run_deferred`).
"""

from absl import flags

from syntax_t2t.cli import common

FLAGS = flags.FLAGS

FORMATS = ("saved_model", "ctranslate2")

flags.DEFINE_enum("format", None, FORMATS, "What to export to.")
flags.DEFINE_string("export_dir", None,
                    "Where the export goes (must not exist); default <output_dir>/export/<format>.")
if "checkpoint_path" not in FLAGS:
    flags.DEFINE_string("checkpoint_path", None,
                        "Checkpoint prefix to restore; default: the newest checkpoint of "
                        "--output_dir.")
if "decode_hparams" not in FLAGS:
    # bin/decode defines the same flag; tests and tools may import both programs.
    flags.DEFINE_string("decode_hparams", "",
                        "Decoding settings built into a SavedModel (beam_size, alpha, "
                        "extra_length), as bin/decode's.")
flags.DEFINE_enum("quantization", None, ["int8", "int8_float32", "int16", "float16"],
                  "CTranslate2 weight quantization (default: float32 weights).")


def run() -> None:
    """Entry point of `bin/export` and `syntax-t2t-export`."""
    common.run_deferred(__name__, "syntax_t2t.cli.export")
