"""`bin/decode`'s flags, and its entry point, which parses them before Keras loads.

The flags are defined here, apart from the program (`cli/decode.py`, which
imports Keras, TensorFlow and the registry), from modules that load in a
fraction of a second: `--help`, `--helpfull`, an unknown flag or a
malformed value come back at once, and the program is imported only for a
command line that parsed (`common.run_deferred`).
"""

from absl import flags

from syntax_t2t.cli import common
from syntax_t2t.decoding import inputs as decode_inputs
from syntax_t2t.decoding.parse_heads import PARSE_DECODERS
from syntax_t2t.training import precision

FLAGS = flags.FLAGS

if "checkpoint_path" not in FLAGS:
    # bin/analyze defines the same flag; tests and tools may import both programs.
    flags.DEFINE_string("checkpoint_path", None,
                        "Checkpoint prefix to restore (e.g. runs/x/averaged/ckpt-5000); default: the "
                        "newest checkpoint of --output_dir.")
flags.DEFINE_string("decode_from_file", None, "The sentences to translate; - with no "
                    "--decode_to_file (or -) decodes standard input as it arrives, as "
                    "--decode_interactive.")
flags.DEFINE_bool("decode_interactive", False,
                  "Translate tokenised lines of standard input as they arrive, in batches that "
                  "close when full or after a short wait, writing each batch's translations to "
                  "standard output as soon as they are done (T2T's flag).")
flags.DEFINE_string("decode_to_file", None, "Where the translations go, one line per input sentence.")
if "decode_hparams" not in FLAGS:
    # bin/train (--eval_bleu) and bin/export define the same flag; tests and tools may
    # import several programs.
    flags.DEFINE_string("decode_hparams", "",
                        "Decoding settings, default 'beam_size=4,alpha=0.6,batch_size=32,extra_length=50,"
                        "return_beams=false,write_beam_scores=false,length_model=false,"
                        "eos_candidates=all'; "
                        "write_beam_scores=true (with return_beams=true) writes n-best lists; "
                        "length_model=true scores by log p(y|x) + log p(len y | len x) from "
                        "training statistics (Eriguchi et al. 2016); eos_candidates=beam ends "
                        "hypotheses as fairseq and CTranslate2 do (<EOS> only among the best "
                        "beam of the 2 x beam candidates), T2T's all among every candidate.")
flags.DEFINE_integer("nbest", None, "Write the best N hypotheses of the beam with their scores "
                     "(fairseq's --nbest; the n-best layout of write_beam_scores=true).",
                     lower_bound=1)
flags.DEFINE_string("score_file", None,
                    "Forced scoring (T2T): give the log-probability of each translation of this "
                    "file of tokenised source<TAB>target lines, as total<TAB>per_token lines in "
                    "--decode_to_file, instead of decoding.")
flags.DEFINE_bool("score_reference", False,
                  "Forced scoring (fairseq): score --reference_file's translations of "
                  "--decode_from_file's sentences (any input format) instead of decoding.")
flags.DEFINE_string("reference_file", None,
                    "With --score_reference: the tokenised translations, one line per source "
                    "sentence.")
flags.DEFINE_enum("decode_input_format", "auto", decode_inputs.FORMATS,
                  "Format of --decode_from_file; auto guesses from the name and the first line.")
flags.DEFINE_string("parse_to_file", None,
                    "For models with a parse head (dep_parse, diagonal_parse, sisa): write the "
                    "source parse read from it as CoNLL-U, one head per source word.")
flags.DEFINE_enum("parse_decoder", "argmax", PARSE_DECODERS,
                  "How heads are read from the parse head: argmax (the thesis) or mst (a tree).")
flags.DEFINE_bool("detokenize", False,
                  "Write the problem's detokenised text instead of space-separated tokens "
                  "(for problems that tokenised raw targets themselves, e.g. Multi30k: score "
                  "that output against the raw references); other problems join tokens by "
                  "spaces either way.")
if "xla" not in FLAGS:
    # bin/train defines the same flag; tests and tools may import both programs.
    flags.DEFINE_enum("xla", "auto", precision.XLA_CHOICES,
                      "Compile with XLA (here: the search loop); auto = on a GPU only.")

# Shared flags this program reads: its --help lists them (common.adopt_program_flags).
for _name in ("problem", "problem_options", "model", "hparams_set", "hparams",
              "data_dir", "output_dir", "checkpoint_path", "xla", "decode_hparams"):
    flags.declare_key_flag(_name)


def run() -> None:
    """Entry point of `bin/decode` and `syntax-t2t-decode`."""
    common.run_deferred(__name__, "syntax_t2t.cli.decode")
