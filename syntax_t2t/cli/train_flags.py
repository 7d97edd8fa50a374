"""`bin/train`'s flags, and its entry point, which parses them before Keras loads.

The flags are defined here, apart from the program (`cli/train.py`, which
imports Keras, TensorFlow and the registry), from modules that load in a
fraction of a second: `--help`, `--helpfull`, an unknown flag or a
malformed value come back at once, and the program is imported only for a
command line that parsed (`common.run_deferred`).
"""

from absl import flags

from syntax_t2t.cli import aliases, common
from syntax_t2t.training import distribution, precision, validation

FLAGS = flags.FLAGS
SCHEDULES = ("train_and_evaluate", "train", "evaluate")

flags.DEFINE_integer("train_steps", 250_000,
                     "Global step to train up to (a resumed run trains the rest).", lower_bound=1)
flags.DEFINE_integer("eval_steps", 100, "Dev batches per evaluation (0 = the whole dev set).",
                     lower_bound=0)
flags.DEFINE_integer("eval_every", 1000, "Evaluate on the dev set every this many steps "
                     "(0 = only at the end).", lower_bound=0)
flags.DEFINE_integer("save_checkpoints_steps", 1000, "Save a checkpoint every this many steps.",
                     lower_bound=1)
flags.DEFINE_integer("keep_checkpoint_max", 20, "How many of the newest checkpoints to keep.",
                     lower_bound=1)
flags.DEFINE_integer("log_step_count_steps", 100, "Report progress every this many steps.",
                     lower_bound=1)
if "random_seed" not in FLAGS:
    # bin/datagen defines the same flag; tests and tools may import both programs.
    flags.DEFINE_integer("random_seed", None, "Seeds initialisation, dropout and the data order "
                         "(Python, NumPy and TensorFlow); unseeded when not given.")
if "mixed_precision" not in FLAGS:
    # bin/bench defines the same flag; tests and tools may import both programs.
    flags.DEFINE_enum("mixed_precision", "auto", precision.PRECISIONS,
                      "Numeric policy; auto = mixed precision on a GPU, float32 on a CPU.")
if "xla" not in FLAGS:
    # bin/decode defines the same flag; tests and tools may import both programs.
    flags.DEFINE_enum("xla", "auto", precision.XLA_CHOICES,
                      "Compile the train step with XLA; auto = on a GPU only.")
flags.DEFINE_bool("deterministic", False,
                  "Deterministic TensorFlow ops and input order (needs --random_seed): a resumed "
                  "run ends with the weights of an uninterrupted one. Slower.")
flags.DEFINE_bool("skip_nonfinite_batches", False,
                  "Skip (and count) batches whose loss or gradient is NaN or infinite instead of "
                  "stopping at the first one.")
flags.DEFINE_bool("eval_bleu", False,
                  "At each evaluation also decode the dev split (greedy, or --decode_hparams) and "
                  "log its BLEU against the tokenised references (T2T's "
                  "--eval_run_autoregressive, fairseq's --eval-bleu).")
flags.DEFINE_integer("eval_bleu_max_sentences", 0,
                     "Decode only the first this many dev sentences for BLEU (0 = all).",
                     lower_bound=0)
if "decode_hparams" not in FLAGS:
    # bin/decode defines the same flag; tests and tools may import both programs.
    flags.DEFINE_string("decode_hparams", "",
                        "Decoding settings (bin/decode's); for --eval_bleu the default is greedy "
                        "search, beam_size=1.")
flags.DEFINE_enum("best_checkpoint_metric", "loss", list(validation.METRICS),
                  "Keep the weights of the best evaluation in <output_dir>/best/: by dev BLEU "
                  "(needs --eval_bleu), dev translation loss, or the parse head's dev UAS.")
flags.DEFINE_integer("early_stopping_patience", 0,
                     "Stop after this many evaluations in a row without a better "
                     "--best_checkpoint_metric (0 = never; fairseq's --patience). A run that "
                     "stopped early, resumed with a patience that would not have stopped it, "
                     "trains on.", lower_bound=0)
flags.DEFINE_bool("print_hparams", False,
                  "Print the hparams that --hparams_set and --hparams resolve to, one line on "
                  "each, and exit.")
flags.DEFINE_enum("schedule", "train_and_evaluate", SCHEDULES,
                  "T2T's schedule: train_and_evaluate (evaluate every --eval_every steps), train "
                  "(no evaluation), or evaluate (evaluate the newest checkpoint of --output_dir "
                  "on the dev set, no training).")
flags.DEFINE_enum("distribution", "auto", distribution.DISTRIBUTIONS,
                  "tf.distribute strategy: none, mirrored (the GPUs of this host), multi_worker "
                  "(hosts named by TF_CONFIG); auto picks by the hardware. Under "
                  "KERAS_BACKEND=jax: keras.distribution.DataParallel over this host's devices "
                  "(mirrored) or over the hosts joined by keras.distribution.initialize "
                  "(multi_worker, configured by KERAS_DISTRIBUTION_JOB_ADDRESSES, "
                  "KERAS_DISTRIBUTION_NUM_PROCESSES, KERAS_DISTRIBUTION_PROCESS_ID).")

# Shared flags this program reads: its --help lists them (common.adopt_program_flags).
for _name in ("problem", "problem_options", "model", "hparams_set", "hparams",
              "data_dir", "output_dir", "random_seed", "mixed_precision", "xla",
              "decode_hparams"):
    flags.declare_key_flag(_name)
aliases.define_train_aliases()
flags.adopt_module_key_flags(aliases)


def run() -> None:
    """Entry point of `bin/train` and `syntax-t2t-train`."""
    common.run_deferred(__name__, "syntax_t2t.cli.train")
