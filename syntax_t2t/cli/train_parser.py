"""`bin/train_parser`: trains a spaCy tagger and dependency parser on UD CoNLL-U files.

    bin/train_parser --lang=cs --output_dir=parsers/cs \\
        --train_files=cs_cac-ud-train.conllu.gz --dev_files=cs_cac-ud-dev.conllu.gz

For languages or machines without a pretrained parser. The pipeline directory
it writes parses raw text for data generation:

    bin/datagen --problem=multi30k_syntax_cs_en --parser=spacy:parsers/cs ...

Raw text is tokenised by the rule-based tokenizer of `spacy.blank(--lang)`.
See `syntax_t2t/parsing/spacy_training.py` for what is trained; spaCy's
training table (losses, dev UAS/LAS, tag accuracies) is printed as it goes.
Training stops at `--max_steps` updates, `--max_epochs` passes or after
`--patience` steps without improvement on the dev files, whichever comes
first; `--random_seed` seeds it (default 0). Each evaluation prints the dev
scores and an estimate of the time left. The defaults (20,000 updates,
patience 1,600) take hours on a few CPU cores; a first parser for data
generation needs far fewer (e.g. `--max_steps=2000`).

SIGINT (Ctrl-C) or SIGTERM stops it after the update it is in: the best
pipeline so far goes to `--output_dir`, the state to resume from stays in
`<output_dir>.training/`, and the same command resumes there (exit status
128 + the signal's number, as `bin/train`). A second signal stops at once.
"""

import logging
import sys


from absl import flags

from syntax_t2t.cli import common
from syntax_t2t.parsing.parser import ParserError
from syntax_t2t.parsing.spacy_training_settings import ParserTrainingInterrupted, TrainingSettings
from syntax_t2t.training.stop_signals import StopSignals

FLAGS = flags.FLAGS
_DEFAULTS = TrainingSettings(lang="")
# The shared --output_dir's own help describes a training run of bin/train.
OUTPUT_DIR_HELP = ("Where the trained spaCy pipeline goes (use it as --parser=spacy:DIR); an "
                   "earlier pipeline there is replaced when training ends or is stopped; an "
                   "interrupted run's state waits in DIR.training/ to be resumed.")

flags.DEFINE_string("lang", None, "spaCy language code of the data (cs, de, en, ...; xx for any).")
flags.DEFINE_list("train_files", None, "UD CoNLL-U training files (plain or .gz), comma-separated.")
flags.DEFINE_list("dev_files", [], "UD CoNLL-U files that choose the best checkpoint; without them "
                  "the last checkpoint is kept.")
flags.DEFINE_integer("max_train_sentences", None, "Use at most this many training sentences.",
                     lower_bound=1)
flags.DEFINE_integer("max_steps", _DEFAULTS.max_steps, "Stop after this many updates (0 = no limit).",
                     lower_bound=0)
flags.DEFINE_integer("max_epochs", _DEFAULTS.max_epochs,
                     "Stop after this many passes over the training data (0 = no limit).", lower_bound=0)
flags.DEFINE_integer("eval_frequency", _DEFAULTS.eval_frequency, "Evaluate every this many updates.",
                     lower_bound=1)
flags.DEFINE_integer("patience", _DEFAULTS.patience, "Stop after this many updates without a better "
                     "dev score (0 = never).", lower_bound=0)
flags.DEFINE_integer("tok2vec_width", _DEFAULTS.width, "Width of the shared token vectors.",
                     lower_bound=1)
flags.DEFINE_integer("tok2vec_depth", _DEFAULTS.depth, "CNN layers of the shared token encoder.",
                     lower_bound=1)
flags.DEFINE_integer("parser_hidden_width", _DEFAULTS.parser_hidden_width,
                     "Hidden width of the parser's state model.", lower_bound=1)
flags.DEFINE_integer("sentences_per_doc", _DEFAULTS.sentences_per_doc,
                     "Sentences per training document (the parser learns sentence ends within them).",
                     lower_bound=1)
flags.DEFINE_float("training_dropout", _DEFAULTS.dropout, "Dropout rate.", lower_bound=0.0,
                   upper_bound=1.0)

_REPORTED_SCORES = (("dep_uas", "UAS"), ("dep_las", "LAS"), ("pos_acc", "UPOS"), ("tag_acc", "XPOS"))

# Shared flags this program reads: its --help lists them (common.adopt_program_flags).
for _name in ("output_dir", "random_seed"):
    flags.declare_key_flag(_name)


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    common.require("lang", "train_files", "output_dir")
    settings = TrainingSettings(
        lang=FLAGS.lang, max_steps=FLAGS.max_steps, max_epochs=FLAGS.max_epochs,
        eval_frequency=FLAGS.eval_frequency, patience=FLAGS.patience, width=FLAGS.tok2vec_width,
        depth=FLAGS.tok2vec_depth, parser_hidden_width=FLAGS.parser_hidden_width,
        sentences_per_doc=FLAGS.sentences_per_doc, max_train_sentences=FLAGS.max_train_sentences,
        seed=FLAGS.random_seed if FLAGS.random_seed is not None else _DEFAULTS.seed,
        dropout=FLAGS.training_dropout)
    # Here, not at the top: --help and flag errors come back without spaCy's import.
    from syntax_t2t.parsing.spacy_training import train_spacy_parser

    # spaCy's logger has its own handler; through absl's root handler each line came twice.
    logging.getLogger("spacy").propagate = False
    with StopSignals() as stop:
        try:
            summary = train_spacy_parser(FLAGS.train_files, FLAGS.output_dir, settings,
                                         dev_files=FLAGS.dev_files,
                                         should_stop=lambda: stop.received is not None)
        except ParserTrainingInterrupted as interrupted:
            print(f"{interrupted}", file=sys.stderr)
            sys.exit(128 + int(stop.received))
    scores = summary["scores"]
    on = "dev" if summary["dev_sentences"] else "training"
    reported = ", ".join(f"{name} {100 * scores[key]:.1f}" for key, name in _REPORTED_SCORES
                         if key in scores)
    print(f"trained {'+'.join(summary['components'])} on {summary['train_sentences']} sentences; "
          f"{on} scores: {reported}")
    print(f"saved the pipeline to {FLAGS.output_dir}; parse with --parser=spacy:{FLAGS.output_dir}")


def use_own_help() -> None:
    """Gives `--output_dir` this program's meaning in `--help` (the flag is shared)."""
    FLAGS["output_dir"].help = OUTPUT_DIR_HELP


def run():
    """Entry point of `bin/train_parser`."""
    use_own_help()
    common.run(main, extra_user_errors=(ParserError,))
