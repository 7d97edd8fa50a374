"""What `bin/grid` runs: an experiment of systems, seeds, a training budget and test sets.

An experiment is registered like an hparams set, by a function returning an
`Experiment`:

    @registry.register_experiment
    def multi30k_cs_en_syntax():
        return Experiment(
            problem="multi30k_syntax_cs_en_subword", hparams_set="transformer_multi30k_cpu",
            systems=[System("transformer", "transformer"),
                     System("dep_parse", "dep_parse", hparams="parse_layer=1")],
            seeds=[1, 2, 3], baseline="transformer", ...)

Paths of test files may name `{data_dir}`, `{tmp_dir}`, `{problem}` and
`{treebank_dir}` (a directory of gold treebanks such as UD's PUD), which
`bin/grid` fills from its flags.

A system may train on other data of the same problem (`System.data_dir`,
e.g. the problem generated with `tree_source=random` for a tree control);
`System.problem_options` says what that data must have been generated
with, and `bin/grid` checks it before anything trains. Every system is
tested on the same test files: a control system's problem replaces the
trees of what it decodes as it replaced those of its training data.

The rules of a fair comparison are part of the experiment and checked
here: `source_word_positions` (one word-boundary rule for every system)
and `contrasts` (the comparisons the report tests, Holm-adjusted together).
A test set marked `sealed` is translated by each run and scored once, when
every run has finished (`grid/seal.py`).
"""

import dataclasses
from typing import Optional, Sequence

from syntax_t2t import registry
from syntax_t2t.decoding.decode_hparams import decode_hparams
from syntax_t2t.evaluation.length_buckets import bucket_bounds
from syntax_t2t.hparams import HParamsError, parse_overrides

CHECKPOINT_CHOICES = ("best", "last", "average")


class ExperimentError(ValueError):
    """An experiment that cannot run: an unknown system, model or hparams set, a bad setting."""


@dataclasses.dataclass(frozen=True)
class System:
    """One system of the comparison.

    Attributes:
        name: its name in the results (also its run directory).
        model: a registered model.
        hparams: overrides of the experiment's hparams set, `--hparams` syntax.
        hparams_set: another hparams set than the experiment's (None = the experiment's).
        seeds: the seeds of this system (None = the experiment's).
        data_dir: where its data is, a template like the test files' (e.g.
            `{data_dir}_random_trees`); None = `{data_dir}`.
        problem_options: `--problem_options` the data in `data_dir` must have
            been generated with (e.g. `tree_source=random`).
    """

    name: str
    model: str
    hparams: str = ""
    hparams_set: Optional[str] = None
    seeds: Optional[tuple] = None
    data_dir: Optional[str] = None
    problem_options: str = ""


@dataclasses.dataclass(frozen=True)
class TranslationTest:
    """A test set scored with BLEU and chrF.

    Attributes:
        name: e.g. `test_2016_flickr`.
        source: what `bin/decode` reads (CoNLL-U for models that need trees).
        reference: the reference translations, raw (untokenised) where the
            problem tokenised its targets: then the output is detokenised.
        detokenize: decode with `--detokenize` (problems that tokenised raw
            targets, such as Multi30k).
        raw_source: `source` is raw text, which the grid parses once with the
            parser the data was built with (`bin/parse`), so that every system
            reads the words (and trees) its training data had.
        sealed: translated by each run but scored once, after every run of
            the experiment has finished, and never again under other settings
            (`grid/seal.py`).
    """

    name: str
    source: str
    reference: str
    detokenize: bool = False
    raw_source: bool = False
    sealed: bool = False


@dataclasses.dataclass(frozen=True)
class ParseTest:
    """Gold trees on which the parse heads are scored (UAS/LAS), beside the teacher parser.

    Attributes:
        name: e.g. `pud_cs`.
        gold: a CoNLL-U file of gold trees.
        teacher_parser: a `--parser` spec whose parse of the gold words is
            scored too (None = the parser the problem's data was built with,
            when it recorded one).
        length_edges: the report also gives UAS within groups of gold
            sentences of 1..e1, e1+1..e2, ... words and a last open group.
    """

    name: str
    gold: str
    teacher_parser: Optional[str] = None
    length_edges: Sequence[int] = (9, 19, 29, 39)


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A head-to-head comparison (see the module docstring).

    Attributes:
        problem: the registered problem all systems train on.
        hparams_set: the registered hparams set of every system (unless a
            system names its own).
        systems: the systems compared.
        baseline: the name of the system the others are compared with.
        seeds: the training seeds of every system (unless a system names its own).
        train_steps: the most steps a run trains (its budget).
        eval_every: steps between dev evaluations (also checkpoint saves).
        early_stopping_patience: evaluations without improvement before a
            run stops (0 = train the whole budget).
        best_checkpoint_metric: `bleu`, `loss` or `uas` (see `bin/train`).
        checkpoint: which weights are tested: `best` (by the metric), `last`,
            or `average` (of the last `average_checkpoints` checkpoints).
        average_checkpoints: how many checkpoints `average` averages.
        decode_hparams: the test decoding's settings.
        length_penalties: candidate length-penalty exponents (`alpha`) to
            choose from on `dev_set`; when given, each run is also tested
            with the alpha that its own dev translations score best with
            (`grid/length_penalty.py`), beside the fixed `decode_hparams`.
        dev_set: the dev set that chooses among `length_penalties`.
        translation_tests: the test sets scored with BLEU.
        parse_tests: gold trees for the parse heads.
        eval_bleu_max_sentences: dev sentences decoded per evaluation (0 = all).
        keep_checkpoint_max: checkpoints kept per run.
        source_word_positions: the experiment's word-boundary rule: every
            system's hparams set `source_word_positions` to this value, and
            with True every model reads them; None = no rule (the
            experiments before issue 32).
        contrasts: `(system, reference system)` pairs the report tests,
            Holm-adjusted as one family; empty = every system against the
            baseline.
        description: one paragraph for the report.
    """

    problem: str
    hparams_set: str
    systems: Sequence[System]
    baseline: str
    seeds: Sequence[int] = (1,)
    train_steps: int = 10_000
    eval_every: int = 500
    early_stopping_patience: int = 3
    best_checkpoint_metric: str = "bleu"
    checkpoint: str = "best"
    average_checkpoints: int = 5
    decode_hparams: str = "beam_size=4,alpha=0.6"
    length_penalties: Sequence[float] = ()
    dev_set: Optional[TranslationTest] = None
    translation_tests: Sequence[TranslationTest] = ()
    parse_tests: Sequence[ParseTest] = ()
    eval_bleu_max_sentences: int = 0
    keep_checkpoint_max: int = 5
    source_word_positions: Optional[bool] = None
    contrasts: Sequence[tuple] = ()
    description: str = ""

    def system(self, name):
        for system in self.systems:
            if system.name == name:
                return system
        raise ExperimentError(f"no system {name!r}; the experiment has "
                              f"{', '.join(s.name for s in self.systems)}")

    def seeds_of(self, system):
        return tuple(system.seeds if system.seeds is not None else self.seeds)

    def hparams_set_of(self, system):
        return system.hparams_set or self.hparams_set

    def comparisons(self):
        """The `(system, reference)` pairs the report tests (`contrasts`, else each vs the baseline)."""
        if self.contrasts:
            return [tuple(pair) for pair in self.contrasts]
        return [(system.name, self.baseline) for system in self.systems
                if system.name != self.baseline]

    def open_tests(self):
        """The translation tests that are not sealed (decoded by each run as it finishes)."""
        return [test for test in self.translation_tests if not test.sealed]

    def sealed_tests(self):
        return [test for test in self.translation_tests if test.sealed]


def check(experiment, name, vocab_sizes=None):
    """Raises `ExperimentError` naming `name` and the entry for anything that cannot run.

    Checks that the problem, every model and hparams set is registered, every
    override is a parameter of its set with a value of the right type, names
    are unique and the baseline exists; with the problem's `vocab_sizes`,
    also builds each model, which checks its hparams (layers and heads that
    exist, known options).
    """
    def fail(message):
        raise ExperimentError(f"experiment {name}: {message}")

    if experiment.problem not in registry.problems:
        fail(f"unknown problem {experiment.problem!r}")
    names = [system.name for system in experiment.systems]
    if len(set(names)) != len(names):
        fail(f"system names are not unique: {', '.join(names)}")
    if experiment.baseline not in names:
        fail(f"the baseline {experiment.baseline!r} is not one of its systems ({', '.join(names)})")
    if experiment.checkpoint not in CHECKPOINT_CHOICES:
        fail(f"checkpoint={experiment.checkpoint!r}: expected one of "
             f"{', '.join(CHECKPOINT_CHOICES)}")
    if experiment.eval_every < 1 or experiment.train_steps < experiment.eval_every:
        fail(f"train_steps={experiment.train_steps} and eval_every={experiment.eval_every} must "
             f"satisfy 1 <= eval_every <= train_steps")
    try:
        decode_hparams(experiment.decode_hparams)
    except HParamsError as error:
        fail(f"decode_hparams={experiment.decode_hparams!r}: {error}")
    if experiment.length_penalties:
        alphas = list(experiment.length_penalties)
        if experiment.dev_set is None:
            fail("length_penalties are chosen on a dev set, but dev_set is not given")
        if len(set(alphas)) != len(alphas) or any(
                # bool is an int to isinstance; `True` in a list of exponents is a typo.
                isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha < 0
                for alpha in alphas):
            fail(f"length_penalties={tuple(alphas)}: expected distinct numbers >= 0")
        if experiment.dev_set.name in {test.name for test in experiment.translation_tests}:
            fail(f"dev_set {experiment.dev_set.name!r} is also a test set: settings chosen on "
                 f"a set are not tested on it")
    for test in experiment.parse_tests:
        try:
            bucket_bounds(test.length_edges)
        except ValueError as error:
            fail(f"parse test {test.name!r}: {error}")
    for pair in experiment.contrasts:
        if len(pair) != 2 or pair[0] == pair[1] or any(name not in names for name in pair):
            fail(f"contrast {tuple(pair)!r}: expected two different systems of {', '.join(names)}")
    if len({tuple(pair) for pair in experiment.contrasts}) != len(experiment.contrasts):
        fail("a contrast is listed twice")
    if experiment.dev_set is not None and experiment.dev_set.sealed:
        fail(f"dev_set {experiment.dev_set.name!r} is sealed: settings are chosen on it")
    for system in experiment.systems:
        where = f"system {system.name!r}"
        if not system.name or "/" in system.name or system.name.startswith("."):
            fail(f"{where}: a system name must be a plain directory name")
        if system.model not in registry.models:
            fail(f"{where}: unknown model {system.model!r}")
        hparams_set = experiment.hparams_set_of(system)
        if hparams_set not in registry.hparams_sets:
            fail(f"{where}: unknown hparams set {hparams_set!r}")
        if not experiment.seeds_of(system):
            fail(f"{where}: no seeds")
        try:
            parse_overrides(system.hparams)
            hparams = registry.hparams(hparams_set).parse(system.hparams)
            if vocab_sizes is not None:
                registry.model(system.model)(hparams, vocab_sizes)
        except (HParamsError, ValueError, KeyError) as error:
            fail(f"{where}: {error}")
        _check_word_boundaries(experiment, system, hparams, fail)


def _check_word_boundaries(experiment, system, hparams, fail):
    """Fails unless `system` follows the experiment's word-boundary rule.

    A system that reads word boundaries on a subword problem knows where
    words start, which the others do not; a comparison is fair only when all
    or none of its systems read them.
    """
    rule = experiment.source_word_positions
    if rule is None:
        return
    reads = bool(hparams.get("source_word_positions", False))
    if reads != rule:
        fail(f"system {system.name!r}: source_word_positions={str(reads).lower()}, but the "
             f"experiment's word-boundary rule gives every system "
             f"source_word_positions={str(rule).lower()}")
    if rule and not registry.model(system.model).reads_word_positions:
        fail(f"system {system.name!r}: model {system.model!r} does not read word boundaries, so "
             f"the rule source_word_positions=true cannot hold for it; give every system "
             f"source_word_positions=false instead")
