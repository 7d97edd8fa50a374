"""`bin/evaluate`: translation and parsing scores, with significance (thesis 5.3).

    bin/evaluate --references=test.ref.txt \\
        --hypotheses=transformer.txt,dep_parse.txt --system_names=transformer,dep_parse \\
        --gold_parse=test.src.conllu --parses=dep_parse.conllu \\
        --json_output=scores.json

* Translation: corpus BLEU and chrF by sacreBLEU (signatures printed),
  cased and with the 13a tokenizer unless `--tokenize` (any of sacreBLEU's
  `13a`, `intl`, `zh`, `ja-mecab`, `char`, `none`) or `--lowercase` say
  otherwise: NSD's character-level BLEU on Chinese and Japanese is
  `--tokenize=char`, its case-insensitive English BLEU `--lowercase`,
  Pascal's and Tree2Seq's WAT-style Japanese BLEU and RIBES
  `--tokenize=ja-mecab --ribes` (`ja-mecab` needs `pip install
  syntax_t2t[ja]`). With two or more systems, sacreBLEU's paired bootstrap
  resampling compares each with the first (`--bootstrap_samples`, 0 to
  skip).
* Parsing: UAS and LAS of each predicted CoNLL-U file (`bin/decode
  --parse_to_file`) against `--gold_parse`; LAS only for predictions with
  labels.
* `--ribes`: RIBES of each system too (mean sentence score, NLTK), on the
  tokens BLEU sees (`--tokenize`, `--lowercase`).
* Diagonal parsing: the precision of each `--diagonal_parses` file, whose
  correct head of word i is word i - 1.

The scores are printed as tables and, with `--json_output`, written as JSON.
Any input may be `-` (standard input) or a pipe; `--json_output=-` writes
the JSON to standard output and the tables to standard error.
"""

import logging as python_logging
import os

from absl import flags

from syntax_t2t import io_utils
from syntax_t2t.cli import common, scoring_flags
from syntax_t2t.errors import InputError
from syntax_t2t.evaluation import attachment, ribes, translation
from syntax_t2t.evaluation.report import format_table, write_json

FLAGS = flags.FLAGS

flags.DEFINE_string("references", None, "Reference translations, one per line.")
flags.DEFINE_list("hypotheses", [], "Translation files to score (the first is the baseline of the "
                  "significance tests).")
flags.DEFINE_list("system_names", [], "Names of the --hypotheses systems (default: file names).")
flags.DEFINE_integer("bootstrap_samples", translation.DEFAULT_BOOTSTRAP_SAMPLES,
                     "Paired bootstrap resamples (sacreBLEU); 0 = no significance tests.", lower_bound=0)
flags.DEFINE_string("gold_parse", None, "Gold source trees (CoNLL-U) for --parses.")
flags.DEFINE_list("parses", [], "Predicted source parses (CoNLL-U) to score against --gold_parse.")
flags.DEFINE_list("diagonal_parses", [], "Predicted diagonal parses (CoNLL-U) to score.")
flags.DEFINE_string("json_output", None, "Also write the scores to this JSON file.")
flags.DEFINE_bool("ribes", False, "Also score RIBES (word order; the Pascal and Tree2Seq papers' "
                  "metric for English-Japanese) on the tokens of --tokenize.")


def _system_names(paths, names):
    if names and len(names) != len(paths):
        raise common.UsageError(f"--system_names has {len(names)} names for {len(paths)} --hypotheses")
    return names or [os.path.basename(path) for path in paths]


def evaluate_translations(reference_path, hypothesis_paths, names, samples, with_ribes=False,
                          tokenize=translation.DEFAULT_TOKENIZE, lowercase=False):
    """Scores every system; returns (report dict, printed text)."""
    references = translation.read_segments(reference_path)
    if not references:
        raise InputError(reference_path, None, "file is empty (no reference segment to score "
                         "against)", reason="empty file")
    outputs = {}
    for name, path in zip(names, hypothesis_paths):
        outputs[name] = translation.read_segments(path)
        translation.check_aligned(outputs[name], references, path, reference_path)
    scores = {name: translation.corpus_scores(hyps, references, tokenize, lowercase)
              for name, hyps in outputs.items()}
    if with_ribes:
        for name, hyps in outputs.items():
            scores[name]["RIBES"] = ribes.corpus_ribes(hyps, references, tokenize=tokenize,
                                                       lowercase=lowercase)
    first = next(iter(scores.values()))
    report = {
        "references": reference_path,
        "signatures": {score.name: score.signature for score in first.values()},
        "systems": [{"name": name, "file": path,
                     **{score.name: score.score for score in scores[name].values()},
                     "details": {score.name: score.details for score in scores[name].values()}}
                    for name, path in zip(names, hypothesis_paths)],
    }
    metric_names = [score.name for score in first.values()]
    text = [f"Translation against {reference_path}",
            format_table(["system", *metric_names],
                         [[name, *(score.score for score in scores[name].values())] for name in names])]
    text += [f"  {score.name} signature: {score.signature}" for score in first.values()]

    if len(names) > 1 and samples:
        comparisons = translation.paired_bootstrap(
            (names[0], outputs[names[0]]), [(name, outputs[name]) for name in names[1:]], references,
            samples=samples, tokenize=tokenize, lowercase=lowercase)
        report["significance"] = [vars(c) for c in comparisons]
        text += ["", f"Paired bootstrap resampling against {names[0]} ({samples} samples)",
                 format_table(["system", "metric", "baseline", "system", "mean", "95% CI ±", "p-value"],
                              [[c.system, c.metric, c.baseline_score, c.system_score, c.system_mean,
                                c.system_ci, c.p_value] for c in comparisons], decimals=4)]
        text.append(f"  signature: {comparisons[0].signature}")
    return report, "\n".join(text)


def evaluate_parses(gold_path, parse_paths):
    """Scores every predicted parse; returns (report dict, printed text)."""
    gold = attachment.read_gold(gold_path)
    rows, report = [], {"gold": gold_path, "systems": []}
    for path in parse_paths:
        scores = attachment.score_parse_files(path, gold_path, gold)
        report["systems"].append({"file": path, **scores.as_dict()})
        rows.append([os.path.basename(path), scores.sentences, scores.words, scores.uas, scores.las])
    table = format_table(["parse", "sentences", "words", "UAS", "LAS"], rows)
    text = f"Parsing against {gold_path}\n{table}"
    return report, text


def evaluate_diagonal(parse_paths):
    """Diagonal-parse precision of every file; returns (report dict, printed text)."""
    rows, report = [], []
    for path in parse_paths:
        scores = attachment.diagonal_precision_of_file(path)
        report.append({"file": path, "sentences": scores.sentences, "words": scores.words,
                       "correct_heads": scores.correct_heads, "precision": scores.uas})
        rows.append([os.path.basename(path), scores.sentences, scores.words, scores.uas])
    return report, "Diagonal parsing\n" + format_table(["parse", "sentences", "words", "precision"], rows)


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    if not (FLAGS.hypotheses or FLAGS.parses or FLAGS.diagonal_parses):
        raise common.UsageError("nothing to evaluate: give --hypotheses, --parses or --diagonal_parses")
    if FLAGS.hypotheses:
        common.require("references")
    if FLAGS.parses:
        common.require("gold_parse")
    if FLAGS.json_output:
        inputs = [("--references", FLAGS.references), ("--gold_parse", FLAGS.gold_parse)] + [
            (f"--{flag}", path) for flag in ("hypotheses", "parses", "diagonal_parses")
            for path in FLAGS[flag].value or ()]
        io_utils.check_output_path(FLAGS.json_output, "--json_output", inputs)
    if FLAGS.hypotheses:
        scoring_flags.checked_tokenize()
    # sacreBLEU reports every step of its bootstrap at INFO level.
    python_logging.getLogger("sacrebleu").setLevel(python_logging.WARNING)
    report, sections = {}, []
    if FLAGS.hypotheses:
        names = _system_names(FLAGS.hypotheses, FLAGS.system_names)
        report["translation"], text = evaluate_translations(
            FLAGS.references, FLAGS.hypotheses, names, FLAGS.bootstrap_samples, FLAGS.ribes,
            FLAGS.tokenize, FLAGS.lowercase)
        sections.append(text)
    if FLAGS.parses:
        report["parsing"], text = evaluate_parses(FLAGS.gold_parse, FLAGS.parses)
        sections.append(text)
    if FLAGS.diagonal_parses:
        report["diagonal_parsing"], text = evaluate_diagonal(FLAGS.diagonal_parses)
        sections.append(text)
    summary = io_utils.summary_stream(FLAGS.json_output)
    print("\n\n".join(sections), file=summary)
    if FLAGS.json_output:
        write_json(FLAGS.json_output, report)
        print(f"\nwrote {FLAGS.json_output}", file=summary)


def run():
    """Entry point of `bin/evaluate` and `syntax-t2t-evaluate`."""
    common.run(main, extra_user_errors=(InputError,))
