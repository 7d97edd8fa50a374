"""`bin/bench`'s flags, and its entry point.

The program (`cli/bench.py`) imports Keras and TensorFlow; defined here, the
flags answer `--help`, an unknown flag or a malformed value at once, and the
program is imported only for a command line that parsed
(`common.run_deferred`).
"""

from absl import flags

from syntax_t2t.benchmarks import backends as backends_lib
from syntax_t2t.cli import common
from syntax_t2t.training import precision

FLAGS = flags.FLAGS

DEFAULT_HPARAMS_SET = "transformer_small"
# --output_dir (shared with the other programs) when not given.
DEFAULT_OUTPUT_DIR = "bench_results"
PARTS = ("training", "scaling", "decoding", "torch", "precision", "mst", "ctranslate2")
# Parts that time the models built by the training part (ctranslate2 is a
# peer of the decoding part and runs with it).
NEEDS_TRAINING = ("training", "scaling", "decoding", "torch")
#: What runs on a backend other than TensorFlow (the rest times TensorFlow code).
OTHER_BACKEND_PARTS = ("training", "decoding", "torch", "precision", "mst")
#: Parts that make synthetic batches of their own lengths (or read the problem's
#: vocabularies): not with --batch_file. Decoding reads the file's decoding batch.
MAKES_BATCHES = ("scaling", "ctranslate2")

flags.DEFINE_bool("datagen", False, "Benchmark data preparation instead (and only): datagen "
                  "examples/s with 1 and 2 workers, spaCy parsing at 1 and 2 processes, peak "
                  "memory of datagen at --datagen_memory_sizes (syntax_t2t/benchmarks/"
                  "datagen_speed.py).")
flags.DEFINE_integer("datagen_train_size", 20_000, "Training pairs of the --datagen speed runs.",
                     lower_bound=1)
flags.DEFINE_integer("datagen_parse_sentences", 4_000, "Sentences of the --datagen parsing runs.",
                     lower_bound=1)
flags.DEFINE_list("datagen_memory_sizes", ["100000", "1000000"],
                  "Training-set sizes of the --datagen peak-memory runs.")
flags.DEFINE_bool("quick", False, "A CI-sized run: small batches, few repetitions, two "
                  "lengths, short decoding, no relative combinations.")
flags.DEFINE_list("models", [], "Models to time (default: every registered model).")
flags.DEFINE_list("skip", [], f"Parts to leave out, of {', '.join(PARTS[1:])}.")
flags.DEFINE_list("only", [], f"Parts to run alone, of {', '.join(PARTS)} (default: all but "
                  f"--skip).")
flags.DEFINE_list("mst_lengths", ["10", "20", "40", "80", "100"],
                  "Sentence lengths (words) of the MST parse decoding timing.")
flags.DEFINE_bool("relative", True, "Also time the thesis variants with relative positions "
                  "(off under --quick unless given).")
flags.DEFINE_integer("length", 33, "Padded source and target length of the training batch: "
                     "a length the trainer pads batches to (a boundary of "
                     "data/batching.bucket_boundaries: ..., 28, 30, 33, 36, ...).", lower_bound=4)
flags.DEFINE_integer("batch_tokens", 512, "Tokens per training batch, padding included "
                     "(sentences = batch_tokens // length).", lower_bound=1)
flags.DEFINE_integer("warmup_steps", 2, "Untimed steps per model.", lower_bound=2)
flags.DEFINE_integer("repetitions", 7, "Interleaved timed rounds.", lower_bound=1)
flags.DEFINE_integer("steps_per_repetition", 2, "Steps per model per round.", lower_bound=1)
flags.DEFINE_list("scaling_lengths", ["16", "32", "64", "128", "256"],
                  "Source lengths of the cost-growth measurement.")
flags.DEFINE_integer("decode_sentences", 32, "Sentences per decoding batch (32 is bin/decode's "
                     "default batch_size).", lower_bound=1)
flags.DEFINE_integer("decode_output_tokens", 50, "Output tokens per decoded sentence.",
                     lower_bound=2)
flags.DEFINE_integer("threads", 0, "Intra-op and inter-op threads of TensorFlow and of the "
                     "PyTorch peer alike (0 = one per core).", lower_bound=0)
flags.DEFINE_list("model_hparams_sets", [], "model:set pairs: models of another architecture "
                  "timed with a set of their own (default: tree2seq with tree2seq_<size>, the "
                  "size that of --hparams_set).")
flags.DEFINE_integer("matmul_size", 1024, "Side of the square matmul timed for the peak rate.",
                     lower_bound=16)
flags.DEFINE_string("save_batch", None, "Also write the training batch and the vocabulary sizes "
                    "to this .npz, for --batch_file of a run without TensorFlow.")
flags.DEFINE_string("batch_file", None, "Time the training step on the batch of this .npz "
                    "(written by --save_batch) instead of making one, and decoding on its "
                    "decoding batch: needed under KERAS_BACKEND=jax without TensorFlow. Its "
                    "shapes set --length, the sentences per batch and --decode_sentences.")
flags.DEFINE_bool("batch_only", False, "With --save_batch: write the batches and stop (time "
                  "nothing), e.g. to carry them to a machine without TensorFlow.")
flags.DEFINE_list("backends", [], "Run on these Keras backends side by side (tensorflow,jax), "
                  "from the TensorFlow environment: the other side runs as a subprocess of "
                  "--jax_python on this run's batches; writes <output_dir>/<backend>/ and the "
                  "ratios other/tensorflow in <output_dir>/backends.md.")
flags.DEFINE_string("jax_python", None, "The Python of the JAX environment for --backends "
                    f"(default: $SYNTAX_T2T_JAX_PYTHON, else {backends_lib.DEFAULT_JAX_PYTHON}).")
if "mixed_precision" not in FLAGS:
    flags.DEFINE_enum("mixed_precision", "auto", precision.PRECISIONS,
                      "Policy compared with float32; auto = mixed precision on a GPU only.")
if "xla" not in FLAGS:
    flags.DEFINE_enum("xla", "auto", precision.XLA_CHOICES,
                      "Also time the step with XLA; auto = on a GPU only.")

# Shared flags this program reads: its --help lists them (common.adopt_program_flags).
for _name in ("hparams_set", "hparams", "output_dir", "random_seed", "mixed_precision", "xla"):
    flags.declare_key_flag(_name)


def run() -> None:
    """Entry point of `bin/bench` and `syntax-t2t-bench`."""
    common.run_deferred(__name__, "syntax_t2t.cli.bench")
