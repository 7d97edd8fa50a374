"""Registered experiments for `bin/grid` (see `syntax_t2t/grid/experiment.py`).

* `multi30k_cs_en_syntax`: the head-to-head comparison of docs/results.md,
  Multi30k Czech->English with the source parsed by a parser trained with
  `bin/train_parser` on Czech UD;
* `multi30k_cs_en_syntax_full_budget`: the same, every run trained all
  8,000 steps (continuing its runs with `bin/grid --continue_from`);
* `multi30k_cs_en_pilot`: issue 32's CPU pilot at the record's size, the
  teacher `spacy:cs_core_news_sm`, relative positions + TreeDistance and
  `dep_parse_attention` each on parser trees and on random trees;
* `multi30k_cs_en_relative_syntax`: relative positions with TreeDistance,
  TreeTraversal and SpecDep (the thesis's best configurations), each with
  its random-tree control;
* `multi30k_cs_en_confirmatory`: the pre-registered experiment
  (docs/preregistration.md), 20 seeds a system at width 256 on a GPU, its
  primary test set sealed;
* `synthetic_reorder_smoke`: two systems x two seeds on the embedded
  synthetic problem, a few dozen steps each: the grid's own end-to-end test.
"""

import dataclasses

from syntax_t2t import registry
from syntax_t2t.grid.experiment import Experiment, ParseTest, System, TranslationTest

# Word boundaries: the tree-label models, Pascal and S&H read them on subword
# problems (bin/train warns otherwise).
WORDS = "source_word_positions=true"
#: Relative positions (Shaw et al. 2018) in place of sinusoids: `transformer_relative`,
#: and combined with the tree systems as the thesis's best configurations.
RELATIVE = "max_relative_position=20,position_encoding=none,relative_value_bias=true"
PARSE_ATTENTION = "parse_layer=1,parse_loss=attention"
#: The random-tree control: the same problem generated with `tree_source=random`
#: in a directory of its own beside the parser-tree data.
RANDOM_TREES = dict(data_dir="{data_dir}_random_trees", problem_options="tree_source=random")
#: The thesis's combinations of relative positions with a tree system (issue 32):
#: hparams of the existing models, no model code of their own.
RELATIVE_SYNTAX_SYSTEMS = (
    System("relative_tree_distance", "tree_distance", RELATIVE),
    System("relative_tree_traversal", "tree_traversal", RELATIVE),
    System("relative_spec_dep", "spec_dep", RELATIVE),
)
#: The pre-registered family (docs/preregistration.md): trees against random trees
#: for both syntax systems, each syntax system against its baseline; Holm over 4.
CONTRASTS = (("relative_tree_distance", "relative_tree_distance_random"),
             ("dep_parse_attention", "dep_parse_attention_random"),
             ("relative_tree_distance", "transformer_relative"),
             ("dep_parse_attention", "transformer"))


@registry.register_experiment
def multi30k_cs_en_syntax():
    """Every thesis variant and the Pascal paper's systems on Multi30k cs->en, subwords.

    Subwords, not words: at word level the 29,000 training captions give
    23,589 Czech types, most of them seen once, and the test set and PUD are
    full of unknown words; a joint WordPiece vocabulary of 8,000 pieces
    (`multi30k_syntax_cs_en_subword`) covers every sentence. Parse heads are
    trained on subword heads (each piece depends on its head word's first
    piece) and write one head per word, so UAS compares words.

    `transformer_multi30k_cpu` (width 128, 4 heads, 3+3 layers, dropout 0.2)
    trains at about 1,900 target tokens/s on 2 CPU cores; a run evaluates
    every 500 steps (dev BLEU, greedy, all 1,014 sentences), keeps the best
    checkpoint by dev BLEU and stops after 3 evaluations without improvement
    or at 8,000 steps (about 40 epochs). Seeds: three for `transformer` and
    for the `dep_parse` form that is best on dev; one for the rest. Each run
    is tested at the thesis's alpha 0.6 and at the length penalty its own
    dev (val) translations choose.
    """
    return Experiment(
        problem="multi30k_syntax_cs_en_subword",
        hparams_set="transformer_multi30k_cpu",
        systems=[
            System("transformer", "transformer", seeds=(1, 2, 3)),
            System("dep_parse", "dep_parse", "parse_layer=1,parse_loss=logits"),
            System("dep_parse_w0.1", "dep_parse",
                   "parse_layer=1,parse_loss=logits,parse_loss_weight=0.1"),
            # Seeds 2 and 3 went to the form best on dev once it finished
            # (36.30 against 34.49 for parse_loss=logits; dep_parse_w0.1 was
            # still training, and gets them too should it end above).
            System("dep_parse_attention", "dep_parse", PARSE_ATTENTION, seeds=(1, 2, 3)),
            System("transformer_relative", "transformer", RELATIVE),
            System("diagonal_parse", "diagonal_parse", "parse_layer=1"),
            System("tree_distance", "tree_distance", WORDS),
            System("tree_traversal", "tree_traversal", WORDS),
            System("spec_dep", "spec_dep"),
            System("pascal", "pascal", WORDS),
            System("sennrich_haddow", "sennrich_haddow", WORDS),
            # The control for the winning form, added once dep_parse_attention's
            # seed 1 had finished: the same loss on a head trained to find the
            # previous token. Last in the list, so that the runs already
            # started keep their places in --num_tasks's split.
            System("diagonal_parse_attention", "diagonal_parse",
                   "parse_layer=1,parse_loss=attention"),
        ],
        baseline="transformer",
        seeds=(1,),
        train_steps=8000,
        eval_every=500,
        early_stopping_patience=3,
        best_checkpoint_metric="bleu",
        checkpoint="best",
        decode_hparams="beam_size=4,alpha=0.6",
        # alpha 0.6 is the thesis's; the grid of the hand sweep of docs/results.md §0.
        length_penalties=(0.6, 0.8, 1.0, 1.2, 1.5, 2.0),
        dev_set=TranslationTest("val", source="{data_dir}/{problem}-dev.src.conllu",
                                reference="{tmp_dir}/multi30k/val.en.gz", detokenize=True),
        translation_tests=[TranslationTest(
            "test_2016_flickr", source="{data_dir}/{problem}-test.src.conllu",
            reference="{tmp_dir}/multi30k/test_2016_flickr.en.gz", detokenize=True)],
        parse_tests=[ParseTest("pud_cs", gold="{treebank_dir}/cs_pud-ud-test.conllu.gz")],
        description=(
            "Multi30k Czech→English (29,000 training captions), the Czech side parsed by a "
            "spaCy parser trained with `bin/train_parser` on Czech UD; joint WordPiece "
            "vocabulary of 8,000 pieces. Test: test_2016_flickr, detokenised output against "
            "the raw references; beam 4 at the thesis's alpha 0.6, and at the alpha each run's "
            "val translations choose. Parse heads: UAS on the gold trees of PUD Czech."),
    )


@registry.register_experiment
def multi30k_cs_en_syntax_full_budget():
    """`multi30k_cs_en_syntax` with every run trained all 8,000 steps (no early stopping).

    The control for that experiment's stopping rule: patience 3 at one
    evaluation per 500 steps ended two `transformer` seeds at 4,500 and
    5,000 steps on dips of a noisy dev BLEU, while the `dep_parse_attention`
    seeds trained to 7,500 or more. Here no run stops early, and the tested
    checkpoint is still the best by dev BLEU. Runs that
    `multi30k_cs_en_syntax` trained go on from where they stopped, and the
    others train here from the start:

        bin/grid --experiment=multi30k_cs_en_syntax_full_budget --output_dir=G_full \\
            --continue_from=G ...
    """
    return dataclasses.replace(multi30k_cs_en_syntax(), early_stopping_patience=0)


def _syntax_and_controls(seeds=None):
    """The six systems of issue 32: two baselines, two syntax systems, each on random trees too."""
    return [
        System("transformer", "transformer", seeds=seeds),
        System("transformer_relative", "transformer", RELATIVE, seeds=seeds),
        System("relative_tree_distance", "tree_distance", RELATIVE, seeds=seeds),
        System("relative_tree_distance_random", "tree_distance", RELATIVE, seeds=seeds,
               **RANDOM_TREES),
        System("dep_parse_attention", "dep_parse", PARSE_ATTENTION, seeds=seeds),
        System("dep_parse_attention_random", "dep_parse", PARSE_ATTENTION, seeds=seeds,
               **RANDOM_TREES),
    ]


@registry.register_experiment
def multi30k_cs_en_pilot():
    """Issue 32's CPU pilot: the new teacher, tree controls, relative + TreeDistance; §0's size.

    At the size, budget and test settings of `multi30k_cs_en_syntax_full_budget`
    (docs/results.md §0: width 128, every run 8,000 steps, the best checkpoint
    by dev BLEU, beam 4 at alpha 0.6 and at the dev-chosen alpha,
    test_2016_flickr), so that its figures sit beside §0's. The data is
    parsed by `spacy:cs_core_news_sm`; the random-tree systems train on the
    same data generated with `tree_source=random` in `{data_dir}_random_trees`.
    No system reads word boundaries (`source_word_positions=false` for all:
    the baselines cannot read them). `transformer` and `transformer_relative`
    read no trees: their archived §0 runs of the same seeds are the same runs
    if the new data's inputs and targets are token for token §0's (their
    records, copied into this experiment's archive, are then restored).
    A pilot: it estimates directions and seed spreads for the confirmatory
    experiment; its test set is not the sealed one.
    """
    full_budget = multi30k_cs_en_syntax_full_budget()
    return Experiment(
        problem="multi30k_syntax_cs_en_subword",
        hparams_set="transformer_multi30k_cpu",
        systems=_syntax_and_controls(),
        baseline="transformer",
        seeds=(1, 2, 3),
        train_steps=8000,
        eval_every=500,
        early_stopping_patience=0,
        best_checkpoint_metric="bleu",
        checkpoint="best",
        decode_hparams="beam_size=4,alpha=0.6",
        length_penalties=full_budget.length_penalties,
        dev_set=full_budget.dev_set,
        translation_tests=full_budget.translation_tests,
        parse_tests=[ParseTest("pud_cs", gold="{treebank_dir}/cs_pud-ud-test.conllu.gz",
                               teacher_parser="spacy:cs_core_news_sm")],
        source_word_positions=False,
        contrasts=CONTRASTS,
        description=(
            "Issue 32's pilot on Multi30k Czech→English: the Czech side parsed by "
            "spacy:cs_core_news_sm (UAS 86.12 on gold PUD Czech); relative positions + "
            "TreeDistance and dep_parse_attention, each on the parser's trees and on uniformly "
            "random projective trees of the same sentences (tree_source=random), against "
            "transformer_relative and transformer; §0's size and budget; no system reads word "
            "boundaries. Test: test_2016_flickr, beam 4 at alpha 0.6 and at the dev-chosen "
            "alpha. Parse heads: UAS on the gold trees of PUD Czech."),
    )


@registry.register_experiment
def multi30k_cs_en_relative_syntax():
    """The thesis's best configurations: relative positions with TreeDistance, TreeTraversal, SpecDep.

    Each against `transformer_relative` (the same relative positions without
    syntax) and against its own run on random trees, at the pilot's size,
    budget, data and tests (`multi30k_cs_en_pilot`), no system reading word
    boundaries.
    """
    pilot = multi30k_cs_en_pilot()
    systems = [System("transformer_relative", "transformer", RELATIVE)]
    contrasts = []
    for system in RELATIVE_SYNTAX_SYSTEMS:
        control = dataclasses.replace(system, name=f"{system.name}_random", **RANDOM_TREES)
        systems += [system, control]
        contrasts += [(system.name, control.name), (system.name, "transformer_relative")]
    return dataclasses.replace(
        pilot, systems=systems, baseline="transformer_relative", contrasts=tuple(contrasts),
        description=(
            "The thesis's configurations of relative positions with TreeDistance, TreeTraversal "
            "and SpecDep, each on parser trees (spacy:cs_core_news_sm) and on random trees, "
            "against transformer_relative; otherwise as multi30k_cs_en_pilot."))


@registry.register_experiment
def multi30k_cs_en_confirmatory():
    """The pre-registered experiment of docs/preregistration.md (GPU, 20 seeds a system).

    Six systems at width 256 (4 heads of 64, filter 1024, 3+3 layers,
    `transformer_multi30k_256`), 20 seeds each, 5,000 steps of 4,096-token
    batches each (about 50 epochs) with a checkpoint every 500; the tested
    weights are the average of the last 5 checkpoints (steps 3,000-5,000); beam 4 at alpha 0.6, fixed in advance. Primary test:
    test_2018_flickr, sealed: translated by each run as it finishes, scored
    once, after every run has finished (`grid/seal.py`; amendment 1 of the
    pre-registration); secondary: test_2016_flickr. The four
    pre-registered contrasts are Holm-adjusted as one family.
    """
    return Experiment(
        problem="multi30k_syntax_cs_en_subword",
        hparams_set="transformer_multi30k_256",
        systems=_syntax_and_controls(),
        baseline="transformer",
        seeds=tuple(range(1, 21)),
        train_steps=5000,
        eval_every=500,
        early_stopping_patience=0,
        # Dev loss is cheap to evaluate; it chooses nothing that is tested.
        best_checkpoint_metric="loss",
        checkpoint="average",
        average_checkpoints=5,
        keep_checkpoint_max=5,
        decode_hparams="beam_size=4,alpha=0.6",
        translation_tests=[
            TranslationTest("test_2018_flickr", source="{tmp_dir}/multi30k/test_2018_flickr.cs.gz",
                            reference="{tmp_dir}/multi30k/test_2018_flickr.en.gz",
                            detokenize=True, raw_source=True, sealed=True),
            TranslationTest("test_2016_flickr", source="{data_dir}/{problem}-test.src.conllu",
                            reference="{tmp_dir}/multi30k/test_2016_flickr.en.gz",
                            detokenize=True)],
        parse_tests=[ParseTest("pud_cs", gold="{treebank_dir}/cs_pud-ud-test.conllu.gz",
                               teacher_parser="spacy:cs_core_news_sm")],
        source_word_positions=False,
        contrasts=CONTRASTS,
        description=(
            "The pre-registered experiment (docs/preregistration.md): Multi30k Czech→English, "
            "teacher spacy:cs_core_news_sm; transformer, transformer_relative, relative + "
            "TreeDistance and dep_parse_attention on parser trees and on random trees; 20 seeds a "
            "system at width 256; the average of the last 5 checkpoints; beam 4, alpha 0.6. "
            "Primary test test_2018_flickr (sealed), secondary test_2016_flickr. Four contrasts, "
            "Holm-adjusted."),
    )


@registry.register_experiment
def synthetic_reorder_smoke():
    """`transformer` and `dep_parse`, two seeds each, a few dozen steps on the synthetic problem."""
    return Experiment(
        problem="synthetic_syntax_reorder",
        hparams_set="transformer_tiny",
        systems=[System("transformer", "transformer", "hidden_size=32,filter_size=64"),
                 System("dep_parse", "dep_parse",
                        "hidden_size=32,filter_size=64,parse_layer=0")],
        baseline="transformer",
        seeds=(1, 2),
        train_steps=20,
        eval_every=10,
        early_stopping_patience=0,
        best_checkpoint_metric="bleu",
        eval_bleu_max_sentences=20,
        decode_hparams="beam_size=2,alpha=0.6,extra_length=10",
        length_penalties=(0.6, 1.5),
        dev_set=TranslationTest("dev", source="{data_dir}/{problem}-dev.src.conllu",
                                reference="{data_dir}/{problem}-dev.ref.txt"),
        translation_tests=[TranslationTest(
            "test", source="{data_dir}/{problem}-test.src.conllu",
            reference="{data_dir}/{problem}-test.ref.txt")],
        parse_tests=[ParseTest("test_trees", gold="{data_dir}/{problem}-test.src.conllu")],
    )
