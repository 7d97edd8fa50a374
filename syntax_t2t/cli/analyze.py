"""`bin/analyze`: the thesis's analyses as PNG plots, with the numbers behind them in JSON.

    bin/analyze --output_dir=runs/dep_parse --analyze_from_file=test.src.conllu \\
        --analysis_dir=analysis/dep_parse
    bin/analyze --analysis_dir=analysis/compare --length_source_file=test.src.conllu \\
        --length_references=test.ref.txt --length_baseline=transformer.txt \\
        --length_system=dep_parse.txt
    bin/analyze --analysis_dir=analysis/ngrams --ngram_references=dev.ref.txt \\
        --ngram_baseline=transformer.txt --ngram_systems=mg_ngram.txt,mg_syn.txt,mgsa.txt

Attention (needs a trained model, restored as `bin/decode` does, and
`--analyze_from_file` in any `bin/decode` input format), over the first
`--num_sentences` sentences (thesis: 100):

* `attention_histograms_layers.png`: per encoder layer, the histogram of the
  self-attention weights of all heads, bin [0, 0.1) removed (Figure 6.1);
* `attention_histograms_layer<L>_heads.png`: the same per head of layer
  `--histogram_layer` (default: the parse layer, else the last; Figure 6.2);
* `attention_maps_sentence<I>.png`: every layer's and head's attention for
  sentence `--heatmap_sentence`, the parse head framed (Figure 6.3).

Source length (no model needed): `bleu_by_source_length.png`, the BLEU
difference of two systems per source-length bucket (Bugliarello & Okazaki
2020, Figure 3).

N-gram precision (no model needed): with `--ngram_references`,
`--ngram_baseline` and `--ngram_systems` (one or more), each system's corpus
n-gram precision of orders 1..`--ngram_max_order` and its change over the
baseline's, `ngram_precision_changes.png` (Hao et al. 2019, Figure 2), on
the tokens of `--tokenize` / `--lowercase` (as `bin/evaluate`).

MG-SA phrase levels (no model needed): with `--phrase_levels_from` (a
CoNLL-U file), the mean number of phrases at levels 1..`--phrase_levels` of
the phrase structures derived from its trees by each rule of
`data/dependency_phrases.py`, beside the mean number of words.

Everything is summarised in `<analysis_dir>/analysis.json`.
"""

import os
import sys

import numpy as np
from absl import flags

from syntax_t2t.cli import analyze_flags, common, scoring_flags
from syntax_t2t.data import dependency_phrases
from syntax_t2t.data.conllu_reader import read_conllu
from syntax_t2t.decoding import inputs as decode_inputs
from syntax_t2t.decoding.encoder_attention import encoder_attention
from syntax_t2t.decoding.model_loading import load_trained_model
from syntax_t2t.errors import InputError
from syntax_t2t.evaluation import attention, length_buckets, ngram_precision, plots, translation
from syntax_t2t.evaluation.report import write_json
from syntax_t2t.training import run_directory
from syntax_t2t.training.checkpoints import CheckpointError

FLAGS = flags.FLAGS

_LENGTH_FLAGS = ("length_source_file", "length_references", "length_baseline", "length_system")
_NGRAM_FLAGS = ("ngram_references", "ngram_baseline", "ngram_systems")

# Defined apart, so that bin/analyze answers --help and flag errors before Keras loads;
# this module's --help (common.run) lists them as its own.
flags.adopt_module_key_flags(analyze_flags)


def _parse_location(model, hparams):
    """(layer, head) of the model's parse head, or None."""
    for layer in range(hparams.num_encoder_layers):
        head = model.parse_head(layer)
        if head is not None:
            return layer, head
    return None


def analyze_attention(analysis_dir):
    """Figures 6.1-6.3 for the model of the run; returns their numbers."""
    trained = load_trained_model(
        output_dir=FLAGS.output_dir, checkpoint_path=FLAGS.checkpoint_path, model_name=FLAGS.model,
        problem_name=FLAGS.problem, data_dir=FLAGS.data_dir, hparams_set=FLAGS.hparams_set,
        hparams_overrides=FLAGS.hparams)
    entries = decode_inputs.read_sources(FLAGS.analyze_from_file, FLAGS.analyze_input_format)
    usable = [entry for entry in entries if entry.usable][:FLAGS.num_sentences]
    if not usable:
        raise InputError(FLAGS.analyze_from_file, None, "has no usable sentence to analyse")
    if len(usable) < FLAGS.num_sentences:
        unusable = [entry for entry in entries if not entry.usable]
        detail = (f"; {len(unusable)} unusable, the first at {unusable[0].location}: "
                  f"{unusable[0].problem}" if unusable else "")
        message = (f"analysing {len(usable)} of the {FLAGS.num_sentences} sentences asked for "
                   f"(--num_sentences): {FLAGS.analyze_from_file} has {len(entries)} sentences{detail}")
        print(f"warning: {message}", file=sys.stderr)
    needs_trees = sorted(set(trained.model.decode_features) - {"inputs"})
    if needs_trees and not all(entry.has_tree for entry in usable):
        raise common.UsageError(f"model {trained.model_name} needs source trees ({', '.join(needs_trees)}); "
                                f"--analyze_from_file={FLAGS.analyze_from_file} is plain text")
    if FLAGS.heatmap_sentence >= len(usable):
        raise common.UsageError(f"--heatmap_sentence={FLAGS.heatmap_sentence}: only {len(usable)} "
                                f"sentences are analysed")
    sentences = encoder_attention(trained.model, trained.problem, [e.source for e in usable])
    num_layers = len(sentences[0].layers)
    parse = _parse_location(trained.model, trained.hparams)
    layer = FLAGS.histogram_layer
    if layer is None:
        layer = parse[0] if parse else num_layers - 1
    if not 0 <= layer < num_layers:
        raise common.UsageError(f"--histogram_layer={layer}: the encoder has layers 0 .. {num_layers - 1}")
    name = trained.model_name

    layer_counts = attention.weight_histograms(sentences)
    plots.plot_histograms(layer_counts, attention.BIN_EDGES, [f"layer {i}" for i in range(num_layers)],
                          f"{name}: encoder self-attention weights, all heads, {len(sentences)} sentences",
                          os.path.join(analysis_dir, "attention_histograms_layers.png"))
    head_counts = attention.weight_histograms(sentences, layer)
    head_titles = [f"head {h}" + (" (parse)" if parse == (layer, h) else "") for h in range(len(head_counts))]
    plots.plot_histograms(head_counts, attention.BIN_EDGES, head_titles,
                          f"{name}: encoder layer {layer}, per head, {len(sentences)} sentences",
                          os.path.join(analysis_dir, f"attention_histograms_layer{layer}_heads.png"))
    shown = sentences[FLAGS.heatmap_sentence]
    maps_path = os.path.join(analysis_dir, f"attention_maps_sentence{FLAGS.heatmap_sentence}.png")
    title = f"{name}: encoder self-attention, sentence {FLAGS.heatmap_sentence} (rows attend to columns)"
    plots.plot_attention_maps(shown.layers, shown.tokens, maps_path, highlight=parse, title=title)
    return {
        "model": name, "checkpoint": trained.checkpoint, "source": FLAGS.analyze_from_file,
        "sentences": len(sentences), "parse_head": list(parse) if parse else None,
        "bin_edges": attention.BIN_EDGES.tolist(),
        "layer_histograms": layer_counts.tolist(),
        "head_histograms": {"layer": layer, "counts": head_counts.tolist()},
        "attention_maps": {"sentence": FLAGS.heatmap_sentence, "tokens": list(shown.tokens),
                           "layers": [np.round(probs, 5).tolist() for probs in shown.layers]},
    }


def analyze_lengths(analysis_dir):
    """BLEU difference by source length; returns its numbers."""
    missing = [f"--{name}" for name in _LENGTH_FLAGS if not getattr(FLAGS, name)]
    if missing:
        raise common.UsageError(f"BLEU by source length needs {', '.join(missing)} as well")
    try:
        edges = [int(edge) for edge in FLAGS.length_buckets]
        length_buckets.bucket_bounds(edges)
    except ValueError as error:
        raise common.UsageError(f"--length_buckets={','.join(FLAGS.length_buckets)}: {error}") from None
    sources = decode_inputs.read_sources(FLAGS.length_source_file)
    references = translation.read_segments(FLAGS.length_references)
    outputs = {}
    for flag in ("length_baseline", "length_system"):
        outputs[flag] = translation.read_segments(getattr(FLAGS, flag))
        translation.check_aligned(outputs[flag], references, getattr(FLAGS, flag), FLAGS.length_references)
    if len(sources) != len(references):
        raise InputError(FLAGS.length_source_file, None,
                         f"has {len(sources)} sentences but the references {FLAGS.length_references} "
                         f"have {len(references)}")
    buckets = length_buckets.bleu_by_source_length(
        [len(entry.tokens) for entry in sources], outputs["length_baseline"], outputs["length_system"],
        references, edges)
    baseline, system = (os.path.basename(FLAGS.length_baseline), os.path.basename(FLAGS.length_system))
    plots.plot_length_buckets([b.label for b in buckets], [b.difference for b in buckets],
                              [b.sentences for b in buckets], baseline, system,
                              os.path.join(analysis_dir, "bleu_by_source_length.png"))
    return {"baseline": FLAGS.length_baseline, "system": FLAGS.length_system,
            "references": FLAGS.length_references, "buckets": [b.as_dict() for b in buckets]}


def analyze_ngram_precisions(analysis_dir):
    """N-gram precision by order of each system and its change over the baseline; returns the numbers."""
    missing = [f"--{name}" for name in _NGRAM_FLAGS if not getattr(FLAGS, name)]
    if missing:
        raise common.UsageError(f"n-gram precision changes need {', '.join(missing)} as well")
    paths = [FLAGS.ngram_baseline, *FLAGS.ngram_systems]
    names = FLAGS.ngram_names or [os.path.basename(path) for path in paths]
    if len(names) != len(paths) or len(set(names)) != len(names):
        raise common.UsageError(f"--ngram_names needs {len(paths)} different names (the baseline's, "
                                f"then one per --ngram_systems), got {','.join(names)}")
    tokenize = scoring_flags.checked_tokenize()
    references = translation.read_segments(FLAGS.ngram_references)
    if not references:
        raise InputError(FLAGS.ngram_references, None, "file is empty (no reference segment)")
    outputs = {}
    for name, path in zip(names, paths):
        outputs[name] = translation.read_segments(path)
        translation.check_aligned(outputs[name], references, path, FLAGS.ngram_references)
    baseline, *systems = names
    report = ngram_precision.precision_changes(
        outputs[baseline], {name: outputs[name] for name in systems}, references,
        FLAGS.ngram_max_order, tokenize, FLAGS.lowercase)
    plots.plot_precision_changes(report["orders"], {name: report["systems"][name]["differences"]
                                                    for name in systems}, baseline,
                                 os.path.join(analysis_dir, "ngram_precision_changes.png"))
    return {"references": FLAGS.ngram_references, "baseline_name": baseline,
            "files": dict(zip(names, paths)), **report}


def analyze_phrase_levels():
    """Mean phrases per level of each dependency rule; returns the numbers."""
    trees = list(read_conllu(FLAGS.phrase_levels_from))
    if not trees:
        raise InputError(FLAGS.phrase_levels_from, None, "has no sentence")
    report = {"file": FLAGS.phrase_levels_from, "sentences": len(trees),
              "mean_words": round(float(np.mean([len(tree) for tree in trees])), 3),
              "mean_phrases_per_level": {}}
    for rule in dependency_phrases.RULES:
        counts = dependency_phrases.phrases_per_level(trees, FLAGS.phrase_levels, rule)
        report["mean_phrases_per_level"][rule] = np.round(counts.mean(axis=0), 3).tolist()
    return report


def main(argv):
    if len(argv) > 1:
        raise common.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    common.require("analysis_dir")
    wants_lengths = any(getattr(FLAGS, name) for name in _LENGTH_FLAGS)
    wants_ngrams = any(getattr(FLAGS, name) for name in _NGRAM_FLAGS)
    if not (FLAGS.analyze_from_file or wants_lengths or wants_ngrams or FLAGS.phrase_levels_from):
        raise common.UsageError("nothing to analyse: give --analyze_from_file (attention), the "
                                "--length_* files (BLEU by source length), the --ngram_* files "
                                "(n-gram precision changes) or --phrase_levels_from (MG-SA "
                                "phrase levels)")
    if os.path.exists(FLAGS.analysis_dir) and not os.path.isdir(FLAGS.analysis_dir):
        raise common.UsageError(f"--analysis_dir={FLAGS.analysis_dir} is a file, not a directory")
    os.makedirs(FLAGS.analysis_dir, exist_ok=True)
    report = {}
    if FLAGS.analyze_from_file:
        report["attention"] = analyze_attention(FLAGS.analysis_dir)
    if wants_lengths:
        report["bleu_by_source_length"] = analyze_lengths(FLAGS.analysis_dir)
    if wants_ngrams:
        report["ngram_precision_changes"] = analyze_ngram_precisions(FLAGS.analysis_dir)
    if FLAGS.phrase_levels_from:
        report["phrase_levels"] = analyze_phrase_levels()
    write_json(os.path.join(FLAGS.analysis_dir, "analysis.json"), report)
    for name in sorted(os.listdir(FLAGS.analysis_dir)):
        if name.endswith((".png", ".json")):
            print(os.path.join(FLAGS.analysis_dir, name))


def entry_point():
    """The program's `main` and the errors it reports as one line (`common.run`'s arguments)."""
    return main, (InputError, CheckpointError, run_directory.RunDirectoryError)


def run():
    """Runs the program on `sys.argv` in a process that has imported this module already.

    `bin/analyze` and `syntax-t2t-analyze` start at `analyze_flags.run`,
    which parses the command line before this module is imported.
    """
    main_function, user_errors = entry_point()
    common.run(main_function, extra_user_errors=user_errors)
