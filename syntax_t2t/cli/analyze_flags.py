"""`bin/analyze`'s flags, and its entry point.

The program (`cli/analyze.py`) imports Keras and TensorFlow;
defined here, the flags answer `--help`, an unknown flag or a malformed
value at once, and the program is imported only for a command line that
parsed (`common.run_deferred`).
"""

from absl import flags

from syntax_t2t.cli import common, scoring_flags  # noqa: F401 (scoring_flags: --tokenize, --lowercase)
from syntax_t2t.decoding import inputs as decode_inputs
from syntax_t2t.evaluation import length_buckets, ngram_precision

FLAGS = flags.FLAGS

if "checkpoint_path" not in FLAGS:
    # bin/decode defines the same flag; tests and tools may import both programs.
    flags.DEFINE_string("checkpoint_path", None,
                        "Checkpoint prefix to restore; default: the newest checkpoint of --output_dir.")
flags.DEFINE_string("analysis_dir", None, "Where the plots and analysis.json go.")
flags.DEFINE_string("analyze_from_file", None, "Source sentences for the attention analyses.")
flags.DEFINE_enum("analyze_input_format", "auto", decode_inputs.FORMATS, "Format of --analyze_from_file.")
flags.DEFINE_integer("num_sentences", 100, "Sentences of --analyze_from_file to analyse (thesis: 100).",
                     lower_bound=1)
flags.DEFINE_integer("histogram_layer", None,
                     "Encoder layer of the per-head histograms; default: the parse layer, else the last.")
flags.DEFINE_integer("heatmap_sentence", 0, "0-based index of the sentence whose attention is drawn.",
                     lower_bound=0)
flags.DEFINE_string("length_source_file", None, "Source sentences, for BLEU by source length.")
flags.DEFINE_string("length_references", None, "References, for BLEU by source length.")
flags.DEFINE_string("length_baseline", None, "Baseline translations, for BLEU by source length.")
flags.DEFINE_string("length_system", None, "Compared translations, for BLEU by source length.")
flags.DEFINE_list("length_buckets", [str(edge) for edge in length_buckets.DEFAULT_EDGES],
                  "Upper ends of the source-length buckets; a last open bucket follows.")

flags.DEFINE_string("phrase_levels_from", None,
                    "CoNLL-U trees whose MG-SA phrase levels are counted, per dependency rule.")
flags.DEFINE_integer("phrase_levels", 3, "Levels counted with --phrase_levels_from (MG-SA: 3).",
                     lower_bound=1)
flags.DEFINE_string("ngram_references", None, "References, for the n-gram precision changes.")
flags.DEFINE_string("ngram_baseline", None, "Baseline translations, for the n-gram precision changes.")
flags.DEFINE_list("ngram_systems", [], "Translations compared with --ngram_baseline by n-gram precision.")
flags.DEFINE_list("ngram_names", [], "Names of the baseline and of each --ngram_systems "
                  "(default: file names).")
flags.DEFINE_integer("ngram_max_order", ngram_precision.DEFAULT_MAX_ORDER,
                     "Highest n-gram order of the precision changes (MG-SA's Figure 2: 4 and more).",
                     lower_bound=1)

# Shared flags this program reads: its --help lists them (common.adopt_program_flags).
for _name in ("problem", "model", "hparams_set", "hparams",
              "data_dir", "output_dir", "checkpoint_path"):
    flags.declare_key_flag(_name)


def run() -> None:
    """Entry point of `bin/analyze` and `syntax-t2t-analyze`."""
    common.run_deferred(__name__, "syntax_t2t.cli.analyze")
