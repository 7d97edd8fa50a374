"""`bin/parse`: parses a file with a `--parser` and writes CoNLL-U.

    bin/parse --parser=spacy:parsers/cs --input_file=cs_pud-ud-test.conllu.gz \\
        --input_format=conllu --output_file=pud.parsed.conllu

The same adapters that annotate raw text in `bin/datagen` (see
`syntax_t2t/parsing/parser_spec.py` for `--parser` values). Input formats:

    text     raw text, one sentence per line; the parser tokenises it
    tokens   whitespace-separated words, one sentence per line, kept as given
    conllu   a CoNLL-U file whose word forms are parsed as given; its comments
             (sent_id, text, ...) are kept, so `bin/evaluate --gold_parse=INPUT
             --parses=OUTPUT` scores the parser against the file's own trees

For text and tokens, each tree carries `# source_line = N`, its line in the
input; blank lines and lines that are not UTF-8 get no tree, and a warning
counts them and names the first. The output is written atomically (gzip if
it ends in `.gz`); `-` reads standard input or writes standard output.
"""

import dataclasses
import sys

from absl import flags, logging

from syntax_t2t import io_utils
from syntax_t2t.cli import common
from syntax_t2t.data.conllu_reader import read_conllu, write_conllu
from syntax_t2t.parsing import parse_cache
from syntax_t2t.parsing.parser import ParserError
from syntax_t2t.parsing.parser_spec import load_parser

FLAGS = flags.FLAGS
TEXT, TOKENS, CONLLU = "text", "tokens", "conllu"
_SPACE_IN_FORM = "_"

if "parser" not in FLAGS:
    # bin/datagen defines the same flag; tests and tools may import both programs.
    flags.DEFINE_string("parser", None, "spacy:MODEL or stanza:LANG[:MODEL_DIR].")
flags.DEFINE_string("input_file", None, "What to parse (plain or .gz).")
flags.DEFINE_enum("input_format", TEXT, (TEXT, TOKENS, CONLLU), "How --input_file is laid out.")
flags.DEFINE_string("output_file", None, "Where the CoNLL-U parses go.")
# Defined by bin/datagen when both are imported: still this program's (common.adopt_program_flags).
flags.declare_key_flag("parser")


def parse_conllu(parser, path):
    """Trees of `parser` over the word forms of the CoNLL-U file `path`, forms and comments kept.

    UD allows spaces inside a form (Czech "25 000"); the parser gets such a
    form joined by "_" ("25_000") so that it stays one word.
    """
    gold = list(read_conllu(path))
    parsed = parser.parse_tokens([[_SPACE_IN_FORM.join(form.split()) for form in tree.tokens]
                                  for tree in gold])
    return [dataclasses.replace(tree, tokens=original.tokens, comments=dict(original.comments))
            for original, tree in zip(gold, parsed, strict=True)]


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    common.require("parser", "input_file", "output_file")
    io_utils.check_output_path(FLAGS.output_file, "--output_file",
                               [("--input_file", FLAGS.input_file)])
    pretokenized = FLAGS.input_format != TEXT
    parser = load_parser(FLAGS.parser, pretokenized=pretokenized)
    passed_over = []
    if FLAGS.input_format == CONLLU:
        trees = parse_conllu(parser, FLAGS.input_file)
    else:
        trees = list(parse_cache.parse_lines(parser, FLAGS.input_file, pretokenized, passed_over)[1])
    write_conllu(trees, FLAGS.output_file)
    logging.info("parsed %d sentences of %s", len(trees), FLAGS.input_file)
    summary = io_utils.summary_stream(FLAGS.output_file)
    print(f"wrote {len(trees)} parses of {FLAGS.input_file} to {FLAGS.output_file}", file=summary)
    _warn_passed_over(passed_over)


def _warn_passed_over(passed_over):
    """One warning line per kind of input line that got no tree, with its count and first line."""
    by_reason = {}
    for error in passed_over:
        by_reason.setdefault(error.reason, []).append(error)
    for reason, errors in sorted(by_reason.items()):
        print(f"warning: {len(errors)} input line(s) got no tree ({reason}), the first: {errors[0]}",
              file=sys.stderr)


def run():
    """Entry point of `bin/parse`."""
    common.run(main, extra_user_errors=(ParserError,))
