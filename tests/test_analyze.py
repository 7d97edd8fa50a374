"""bin/analyze: attention statistics, BLEU by source length, the plots and their JSON."""

import itertools
import json

import numpy as np
import pytest
import tensorflow as tf
from absl import flags
from absl.testing import flagsaver

from syntax_t2t import registry
from syntax_t2t.cli import analyze, common, registration
from syntax_t2t.data.conllu_reader import format_conllu
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.decoding.encoder_attention import SentenceAttention, encoder_attention
from syntax_t2t.evaluation import attention, length_buckets
from syntax_t2t.training import run_directory
from syntax_t2t.training.checkpoints import model_weights

FLAGS = flags.FLAGS
PROBLEM = "synthetic_syntax_reorder"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_length_buckets_score_each_group_as_its_own_corpus():
    references = ["a b c d", "e f g h", "i j k l m n", "o p q r s t"]
    baseline = ["a b c d", "x y z w", "i j k l m n", "x y z w v u"]
    system = ["a b c d", "e f g h", "x y z w v u", "x y z w v u"]
    buckets = length_buckets.bleu_by_source_length([3, 5, 12, 40], baseline, system, references,
                                                   edges=(5, 20))
    assert [(b.label, b.sentences) for b in buckets] == [("1-5", 2), ("6-20", 1), ("21+", 1)]
    short, middle, long = buckets
    # Short bucket, baseline: one of two 4-word sentences right, so every
    # n-gram precision is 1/2 at equal length: BLEU = 50.
    assert short.baseline_bleu == pytest.approx(50)
    assert short.system_bleu == pytest.approx(100)
    assert middle.baseline_bleu == pytest.approx(100) and middle.system_bleu == pytest.approx(0)
    assert middle.difference == pytest.approx(-100)
    assert long.baseline_bleu == pytest.approx(0) and long.difference == pytest.approx(0)


def test_bucket_edges_must_increase():
    assert length_buckets.bucket_bounds([10, 20]) == [(1, 10), (11, 20), (21, None)]
    with pytest.raises(ValueError, match="positive and increasing"):
        length_buckets.bucket_bounds([20, 10])


def test_histograms_count_weights_per_layer_and_per_head():
    # One sentence, two layers of two heads over 2 positions.
    layer0 = np.array([[[1.0, 0.0], [0.55, 0.45]], [[0.05, 0.95], [0.25, 0.75]]], np.float32)
    layer1 = np.full((2, 2, 2), 0.5, np.float32)
    sentences = [SentenceAttention(("a", "<EOS>"), (layer0, layer1))]
    per_layer = attention.weight_histograms(sentences)
    assert per_layer.shape == (2, 10) and per_layer.sum(axis=1).tolist() == [8, 8]
    # layer 0: 0.0 and 0.05 -> bin 0; 0.25 -> 2; 0.45 -> 4; 0.55 -> 5; 0.75 -> 7; 0.95, 1.0 -> 9
    assert per_layer[0].tolist() == [2, 0, 1, 0, 1, 1, 0, 1, 0, 2]
    assert per_layer[1].tolist() == [0] * 5 + [8] + [0] * 4
    per_head = attention.weight_histograms(sentences, layer=0)
    assert per_head[0].tolist() == [1, 0, 0, 0, 1, 1, 0, 0, 0, 1]
    assert per_head[1].tolist() == [1, 0, 1, 0, 0, 0, 0, 1, 0, 1]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A dep_parse run with random weights and 6 test sentences (CoNLL-U and references)."""
    registration.import_all()
    if not FLAGS.is_parsed():
        FLAGS(["analyze"])
    root = tmp_path_factory.mktemp("analyze")
    problem = registry.problem(PROBLEM)
    problem.generate_data(str(root / "data"), str(root / "raw"), max_examples=100)
    pairs = list(itertools.islice(problem.generate_samples(None, "test", None), 6))
    (root / "test.conllu").write_text(format_conllu([tree for tree, _ in pairs]), encoding="utf-8")
    (root / "test.ref").write_text("".join(" ".join(t) + "\n" for _, t in pairs), encoding="utf-8")
    hparams = registry.hparams("transformer_tiny")
    hparams.override(dict(hidden_size=32, filter_size=64, parse_layer=1, parse_head=2))
    model = registry.model("dep_parse")(hparams, problem.vocab_sizes(str(root / "data")))
    checkpoint = tf.train.Checkpoint(model_weights=model_weights(model))
    tf.train.CheckpointManager(checkpoint, str(root / "dep_parse"), max_to_keep=1,
                               checkpoint_name="ckpt").save(checkpoint_number=1)
    run_directory.write_run_files(str(root / "dep_parse"), hparams, [
        f"--problem={PROBLEM}", "--model=dep_parse", f"--data_dir={root / 'data'}"])
    return root, model, problem, pairs


def test_encoder_attention_covers_root_words_and_eos(run):
    _, model, problem, pairs = run
    sentences = encoder_attention(model, problem, [tree for tree, _ in pairs], batch_size=4)
    assert len(sentences) == 6
    for shown, (tree, _) in zip(sentences, pairs):
        n = len(tree) + 2
        assert shown.tokens == ("<ROOT>",) + tree.tokens + ("<EOS>",)
        assert len(shown.layers) == 2 and all(layer.shape == (4, n, n) for layer in shown.layers)
        # Padding was cut off: each row still sums to 1 over the real positions.
        for layer in shown.layers:
            np.testing.assert_allclose(layer.sum(axis=-1), 1.0, atol=1e-5)


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_cli_writes_every_figure_and_the_numbers(run, tmp_path, capsys):
    root, _, _, pairs = run
    baseline, system = tmp_path / "base.txt", tmp_path / "sys.txt"
    baseline.write_text("".join("x\n" for _ in pairs), encoding="utf-8")
    system.write_text((root / "test.ref").read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "analysis"
    with flagsaver.flagsaver(output_dir=str(root / "dep_parse"), analyze_from_file=str(root / "test.conllu"),
                             analysis_dir=str(out), num_sentences=5, heatmap_sentence=1,
                             length_source_file=str(root / "test.conllu"),
                             length_references=str(root / "test.ref"), length_baseline=str(baseline),
                             length_system=str(system), length_buckets=["6", "12"]):
        analyze.main(["analyze"])
    names = sorted(p.name for p in out.iterdir())
    assert names == ["analysis.json", "attention_histograms_layer1_heads.png",
                     "attention_histograms_layers.png", "attention_maps_sentence1.png",
                     "bleu_by_source_length.png"]
    for name in names[1:]:
        width, height = _png_size(out / name)
        assert width > 200 and height > 150
    report = json.loads((out / "analysis.json").read_text(encoding="utf-8"))
    numbers = report["attention"]
    assert numbers["sentences"] == 5 and numbers["parse_head"] == [1, 2]
    squares = sum((len(tree) + 2) ** 2 for tree, _ in pairs[:5])
    assert [sum(row) for row in numbers["layer_histograms"]] == [4 * squares] * 2
    assert numbers["head_histograms"]["layer"] == 1
    assert [sum(row) for row in numbers["head_histograms"]["counts"]] == [squares] * 4
    assert numbers["attention_maps"]["tokens"] == ["<ROOT>", *pairs[1][0].tokens, "<EOS>"]
    maps = np.array(numbers["attention_maps"]["layers"])
    assert maps.shape == (2, 4, len(pairs[1][0]) + 2, len(pairs[1][0]) + 2)
    buckets = report["bleu_by_source_length"]["buckets"]
    assert sum(b["sentences"] for b in buckets) == 6
    assert all(b["system_bleu"] == pytest.approx(100) for b in buckets)
    assert all(b["difference"] > 0 for b in buckets)
    assert "bleu_by_source_length.png" in capsys.readouterr().out


def test_cli_needs_something_to_analyse(run, tmp_path):
    with flagsaver.flagsaver(analysis_dir=str(tmp_path)):
        with pytest.raises(common.UsageError, match="nothing to analyse"):
            analyze.main(["analyze"])
    with flagsaver.flagsaver(analysis_dir=str(tmp_path), length_baseline="x.txt"):
        message = "needs --length_source_file, --length_references, --length_system"
        with pytest.raises(common.UsageError, match=message):
            analyze.main(["analyze"])


def test_phrase_levels_count_each_rules_phrases(tmp_path):
    # Figure 1's sentence (UD heads) and "She saw the cat .": right_first gives (Bush)(held
    # ...) and (She)(saw the cat .) at level 1; the flat rule (Bush)(held)(a talk)(with
    # Sharon) and (She)(saw)(the cat)(.).
    trees = [DependencyTree.from_heads("Bush held a talk with Sharon".split(), [2, 0, 4, 2, 6, 2]),
             DependencyTree.from_heads("She saw the cat .".split(), [2, 0, 4, 2, 2])]
    conllu = tmp_path / "two.conllu"
    conllu.write_text(format_conllu(trees), encoding="utf-8")
    if not FLAGS.is_parsed():
        FLAGS(["analyze"])
    with flagsaver.flagsaver(analysis_dir=str(tmp_path / "out"), phrase_levels_from=str(conllu),
                             phrase_levels=2):
        analyze.main(["analyze"])
    report = json.loads((tmp_path / "out" / "analysis.json").read_text(encoding="utf-8"))
    levels = report["phrase_levels"]
    assert levels["sentences"] == 2 and levels["mean_words"] == 5.5
    assert levels["mean_phrases_per_level"] == {"projection": [4, 5.5], "right_first": [2, 4]}
