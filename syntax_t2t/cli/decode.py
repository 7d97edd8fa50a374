"""`bin/decode`: translates a file with a trained model (T2T's t2t-decoder).

    bin/decode --problem=synthetic_syntax_reorder --model=dep_parse \\
        --data_dir=data --output_dir=runs/dep_parse \\
        --decode_from_file=test.src.conllu --decode_to_file=test.dep_parse.txt \\
        --decode_hparams='beam_size=4,alpha=0.6' --parse_to_file=test.dep_parse.conllu

The model is restored from the newest checkpoint of `--output_dir` or from
`--checkpoint_path` (e.g. an averaged checkpoint); model, problem, data
directory and hparams default to what the training run recorded.

Input (`--decode_input_format`, guessed by default): plain text, one
sentence per line, or CoNLL-U or CzEng export lines for any model. Plain
text goes through what the training sources went through: on a problem
whose datagen parsed raw text (`translate_syntax`, Multi30k) the recorded
parser tokenises and parses it, for every model; on other problems it is
split at whitespace, and models that need trees require trees.
The output has exactly one line per input sentence; an empty or unusable
input sentence gives an empty line and a warning. With
`return_beams=true` a line holds the hypotheses of every beam, tab-separated,
best first (fewer than `beam_size` when the search stopped with fewer
finished hypotheses).

n-best lists (T2T's `--decode_hparams=return_beams=true,write_beam_scores=true`,
or fairseq's `--nbest=N` for the best N of the beam) write one line per
hypothesis, `hypothesis<TAB>score`, best first, the hypotheses of one input
sentence together and one blank line after each input sentence (an unusable
one: the blank line alone):

    der Hund bellt<TAB>-1.234567
    der Hund bellte<TAB>-2.345678

    ein Satz<TAB>-0.456789

The score is the beam search's ranking score: the log-probability (natural
log) divided by the GNMT length penalty ((5 + length) / 6) ** alpha, length
counting `<EOS>` (`decoding/output_format.py`).

Models with a parse head (`dep_parse`, `diagonal_parse`, and `sisa`, whose
bi-affine head is trained on parents) also write the source parse read from
that head to `--parse_to_file` as CoNLL-U, without `<ROOT>`:
`--parse_decoder=argmax` as in the thesis (heads chosen one by one, cycles
possible) or `mst` (Chu-Liu/Edmonds, always a tree). On subword problems the
parse is over the original words (`decoding/parse_heads.py`), so it scores
against the gold trees. Other models refuse `--parse_to_file`. Unusable
input sentences have no parse block.

`--decode_interactive` (T2T), or `--decode_from_file=-` with no
`--decode_to_file` (or `-`), reads tokenised text lines from standard input
as they arrive and decodes them in batches: a batch closes when it holds
`batch_size` lines or 0.1 s after its first line arrived, and its
translations are written to standard output and flushed as soon as it is
decoded, one line (or n-best block) per input line, in input order; so a
program can send a line and read its translation before sending the next
(`decoding/streaming.py`). It stops at the end of the input. Lines are
parsed as file input is; models that need source trees are refused where
the problem has no parser.

Forced scoring (`--score_file=F` as in T2T, lines `source<TAB>target`; or
fairseq's `--score_reference` with `--decode_from_file` and
`--reference_file`) writes, instead of translations, one line per input
sentence: `total<TAB>per_token`, the natural-log probability of the given
translation (`<EOS>` included) and that per target id, without length
penalty (`decoding/forced_scoring.py`).

Every output is written under a temporary name and renamed when complete,
so an interrupted decode never leaves a file that looks complete.

The flags are defined in `cli/decode_flags.py`, which also holds the entry
point: the command line is parsed before this module loads Keras.
"""

import sys

from absl import flags, logging

from syntax_t2t import io_utils
from syntax_t2t.cli import common, decode_flags
from syntax_t2t.decoding import forced_scoring
from syntax_t2t.decoding import inputs as decode_inputs
from syntax_t2t.decoding import length_model as length_model_lib
from syntax_t2t.decoding import streaming
from syntax_t2t.decoding.decode_hparams import decode_hparams
from syntax_t2t.decoding.decoder import Decoder, MissingFeaturesError
from syntax_t2t.decoding.model_loading import load_trained_model, run_dir_of
from syntax_t2t.decoding.output_format import output_format
from syntax_t2t.data.parse_file import ParsedSentence, write_parsed
from syntax_t2t.decoding.source_parsing import parses_plain_text, with_parsed_sources
from syntax_t2t.errors import InputError, counted
from syntax_t2t.training import precision, run_directory
from syntax_t2t.training.checkpoints import CheckpointError

FLAGS = flags.FLAGS

# Defined apart, so that bin/decode answers --help and flag errors before Keras loads; this
# module's --help (common.run) lists them as its own.
flags.adopt_module_key_flags(decode_flags)


def output_text(sentences, translations, layout):
    """The output of every input sentence in `layout` (`OutputFormat`); warns about unusable ones."""
    for sentence, translation in zip(sentences, translations):
        if translation is None:
            logging.warning("no translation for an unusable input sentence: %s", sentence.problem)
    return "".join(layout.text(translation) for translation in translations)


def parsed_sentences(sentences, translations):
    """The predicted parses of the usable sentences."""
    parsed = []
    for number, (sentence, translation) in enumerate(zip(sentences, translations), start=1):
        if translation is None:
            continue
        comments = {} if sentence.has_tree else {"sent_id": str(number), "text": " ".join(sentence.tokens)}
        parsed.append(ParsedSentence.predicted(sentence.source, translation.heads, comments))
    return parsed


def _streaming():
    """Whether to decode standard input as it arrives (`--decode_interactive`, or `-` to stdout)."""
    return FLAGS.decode_interactive or (FLAGS.decode_from_file == "-"
                                        and FLAGS.decode_to_file in (None, "-"))


def _check_mode():
    """The flags each mode needs: streaming, forced scoring or decoding a file."""
    if _streaming():
        given = [f"--{name}" for name in ("score_file", "score_reference", "parse_to_file")
                 if FLAGS[name].value]
        if FLAGS.decode_to_file not in (None, "-"):
            given.append("--decode_to_file")
        if given:
            raise common.UsageError(
                f"{', '.join(given)}: decoding standard input as it arrives "
                f"(--decode_interactive or --decode_from_file=-) writes translations to "
                f"standard output only")
        return
    if FLAGS.score_file and FLAGS.score_reference:
        raise common.UsageError("--score_file and --score_reference exclude each other: score "
                                "source<TAB>target lines, or --decode_from_file's sources with "
                                "--reference_file's translations")
    if FLAGS.score_file:
        common.require("decode_to_file")
    elif FLAGS.score_reference:
        common.require("decode_from_file", "reference_file", "decode_to_file")
    else:
        common.require("decode_from_file", "decode_to_file")
    if (FLAGS.score_file or FLAGS.score_reference) and FLAGS.parse_to_file:
        raise common.UsageError("--parse_to_file: forced scoring writes no parses")


def _load_decoder(settings):
    """The trained model's `Decoder` (and the `TrainedModel`), as the flags ask."""
    trained = load_trained_model(
        output_dir=FLAGS.output_dir, checkpoint_path=FLAGS.checkpoint_path, model_name=FLAGS.model,
        problem_name=FLAGS.problem, data_dir=FLAGS.data_dir, hparams_set=FLAGS.hparams_set,
        hparams_overrides=FLAGS.hparams, problem_options_text=FLAGS.problem_options)
    has_parse_head = any(trained.model.parse_head(layer) is not None
                         for layer in range(trained.hparams.num_encoder_layers))
    if FLAGS.parse_to_file and not has_parse_head:
        raise common.UsageError(
            f"--parse_to_file: model {trained.model_name} has no parse head, so it predicts no "
            f"source parse; only dep_parse, diagonal_parse and sisa parse (drop --parse_to_file)")
    logging.info("decoding with %s from %s, %s", trained.model_name, trained.checkpoint, settings)

    # The length model (length_model=true): counted from the training data once, kept in the run.
    length_model = (length_model_lib.load_or_collect(
        run_dir_of(FLAGS.output_dir, FLAGS.checkpoint_path), trained.problem, trained.data_dir)
        if settings.length_model else None)
    decoder = Decoder(trained.model, trained.problem, settings, parse_decoder=FLAGS.parse_decoder,
                      jit_compile=precision.resolve_xla(FLAGS.xla), length_model=length_model)
    return decoder, trained


def _score(settings):
    """Forced scoring (`--score_file`, `--score_reference`)."""
    # The inputs are read first: their errors show before the model is built.
    if FLAGS.score_file:
        sentences, targets = forced_scoring.read_score_file(FLAGS.score_file)
        input_name = f"--score_file={FLAGS.score_file}"
    else:
        sentences = decode_inputs.read_sources(FLAGS.decode_from_file, FLAGS.decode_input_format)
        targets = forced_scoring.read_references(FLAGS.reference_file, len(sentences))
        input_name = f"--decode_from_file={FLAGS.decode_from_file}"
    decoder, _ = _load_decoder(settings)
    decoder.check_features(sentences, input_name)
    scores = decoder.score(sentences, targets)
    io_utils.atomic_write_text(FLAGS.decode_to_file, forced_scoring.score_text(scores))
    print(f"scored {sum(score is not None for score in scores)} translations to "
          f"{FLAGS.decode_to_file}")


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    _check_mode()
    settings = decode_hparams(FLAGS.decode_hparams)
    files = ("decode_from_file", "score_file", "reference_file", "decode_to_file", "parse_to_file")
    for flag in ("decode_to_file", "parse_to_file"):
        if getattr(FLAGS, flag):
            # Neither output may replace an input or the other output.
            io_utils.check_output_path(getattr(FLAGS, flag), f"--{flag}", [
                (f"--{other}", getattr(FLAGS, other)) for other in files if other != flag])
    if FLAGS.score_file or FLAGS.score_reference:
        _score(settings)
        return
    output_format(settings, FLAGS.nbest)  # its errors show before the model is built
    if _streaming():
        decoder, trained = _load_decoder(settings)
        if not parses_plain_text(trained.problem):
            streaming.plain_text_check(decoder)
        count = streaming.decode_stream(
            decoder, sys.stdin.buffer, sys.stdout, _layout(settings, trained),
            prepare=lambda sentences: with_parsed_sources(sentences, trained.problem))
        logging.info("decoded %d lines of standard input", count)
        return
    # The input is read first: its errors show before the model is built.
    sentences = decode_inputs.read_sources(FLAGS.decode_from_file, FLAGS.decode_input_format)
    decoder, trained = _load_decoder(settings)
    # Plain text, for every model: tokenised (and parsed) by the parser the data was built with.
    sentences = with_parsed_sources(sentences, trained.problem)
    decoder.check_features(sentences, f"--decode_from_file={FLAGS.decode_from_file}")
    layout = _layout(settings, trained)
    translations = decoder.translate(sentences)

    io_utils.atomic_write_text(FLAGS.decode_to_file, output_text(sentences, translations, layout))
    unusable = sum(translation is None for translation in translations)
    summary = io_utils.summary_stream(FLAGS.decode_to_file, FLAGS.parse_to_file)
    print(f"decoded {_sentences(len(sentences) - unusable)} to {FLAGS.decode_to_file}"
          + (f" ({_sentences(unusable, 'unusable input')} left empty)" if unusable else ""),
          file=summary)
    if FLAGS.parse_to_file:
        write_parsed(parsed_sentences(sentences, translations), FLAGS.parse_to_file)
        print(f"wrote their source parses ({FLAGS.parse_decoder}) to {FLAGS.parse_to_file}",
              file=summary)


def _sentences(count: int, kind: str = "") -> str:
    """`1 sentence`, `2 sentences`, `1 unusable input sentence`, ..."""
    return counted(count, f"{kind} sentence" if kind else "sentence")


def _layout(settings, trained):
    """The output layout, with the detokeniser `--detokenize` asks for."""
    detokenize = trained.problem.detokenize_target if FLAGS.detokenize else " ".join
    detokenize(())  # builds the detokeniser: its errors show before the decoding, not after
    return output_format(settings, FLAGS.nbest, detokenize)


def entry_point():
    """The program's `main` and the errors it reports as one line (`common.run`'s arguments)."""
    return main, (InputError, CheckpointError, MissingFeaturesError,
                  run_directory.RunDirectoryError)


def run():
    """Runs the program on `sys.argv` in a process that has imported this module already.

    `bin/decode` and `syntax-t2t-decode` start at `decode_flags.run`, which
    parses the command line before this module is imported.
    """
    main_function, user_errors = entry_point()
    common.run(main_function, extra_user_errors=user_errors)
