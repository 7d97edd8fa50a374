"""C&H: Currey and Heafield (2019)'s multi-task translation and source parsing.

A plain Transformer (`--model=transformer`) learns two tasks from one
problem. For every training pair of a base problem, it sees

    <translate> w_1 ... w_n <translate>   ->  the translation
    <parse> w_1 ... w_n <parse>           ->  the linearised parse of the source

the task tag standing before and after the source. The two kinds of examples
are mixed and shuffled (a seeded shuffle buffer of `mix_buffer_size`
examples over the training split; the training pipeline shuffles again).
The dev and test splits hold translation examples only, and decoding adds
the translation tag to every sentence it is given, so `bin/decode` and
`bin/evaluate` are used as for any problem.

The parse is a bracketed constituency parse where one is given (a file of
Penn-style trees per split in `tmp_dir`, named by `constituency_pattern`,
e.g. `synthetic_syntax_reorder.train.trees`, one tree per source sentence in
order, read by `syntax_t2t.data.bracketed`), and otherwise the bracketed
dependency linearisation of the source tree; both are described in
`syntax_t2t.data.linearize`. Words are left out of the parse unless
`linearization_words` is set.

Registered variants: `<base>_currey_heafield` for the problems below; they
take the base problem's vocabulary options (a joint subword vocabulary for
the `_subword` bases, as the Pascal paper's C&H baseline).
"""

import random
from typing import Iterable, Iterator, Optional

from syntax_t2t.problems.common import find_file
from syntax_t2t.problems.pud import PudSyntaxDeCs
from syntax_t2t.problems.subword import (CzengSyntaxSubword, De2csSyntaxSubword, PudSyntaxDeCsSubword,
                              SyntheticSyntaxReorderSubword)
from syntax_t2t.problems.synthetic import SyntheticSyntaxReorder
from syntax_t2t import registry
from syntax_t2t.data import linearize
from syntax_t2t.data.bracketed import read_bracketed
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.errors import InputError
from syntax_t2t.problem import TRAIN, Problem, RawDataError

TRANSLATE, PARSE = "translate", "parse"
TASK_TAGS = {TRANSLATE: "<translate>", PARSE: "<parse>"}
# Options a variant takes from its base problem unless it sets its own.
_BASE_VOCABULARY_OPTIONS = ("vocab_size", "subwords", "subword_vocab_size", "num_shards")


class TaskSource(list):
    """The source words of one example, and the task asked of them.

    A plain token list everywhere (vocabularies, the raw dev and test
    copies); `CurreyHeafield.encode_source` adds the task's tags.
    """

    def __init__(self, words: Iterable[str], task: str):
        super().__init__(words)
        if task not in TASK_TAGS:
            raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASK_TAGS)}")
        self.task = task


def tagged(source, task: str = TRANSLATE) -> list[str]:
    """`[tag] + words + [tag]`; the task of a `TaskSource` wins over `task`."""
    task = getattr(source, "task", task)
    words = source.tokens if isinstance(source, DependencyTree) else list(source)
    return [TASK_TAGS[task], *words, TASK_TAGS[task]]


def shuffled(items: Iterable, buffer_size: int, rng: random.Random) -> Iterator:
    """A buffered shuffle: memory for `buffer_size` items, the same order for the same `rng`."""
    buffer = []
    for item in items:
        if len(buffer) < buffer_size:
            buffer.append(item)
            continue
        index = rng.randrange(buffer_size)
        yield buffer[index]
        buffer[index] = item
    rng.shuffle(buffer)
    yield from buffer


class CurreyHeafield(Problem):
    """Translation and source parsing over a base problem (module docstring).

    Subclasses set `base_problem`. Options: `base_options` (passed to the
    base problem), `linearization_words`, `constituency_pattern` (formatted
    with `problem`, the base problem's name, and `split`) and
    `mix_buffer_size`.
    """

    base_problem: Optional[type] = None
    has_source_trees = False
    #: Options passed to the base problem.
    base_options: Optional[dict] = None
    #: Keep the words in the linearised parses (left out by default).
    linearization_words = False
    #: File of bracketed source trees, formatted with `problem` (the base's name) and `split`.
    constituency_pattern = "{problem}.{split}.trees"
    #: Examples in the seeded shuffle buffer that mixes translation and parsing.
    mix_buffer_size = 100_000

    option_names = Problem.option_names + (
        "base_options", "linearization_words", "constituency_pattern", "mix_buffer_size")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        base = cls.__dict__.get("base_problem")
        if base is not None:
            for option in _BASE_VOCABULARY_OPTIONS:
                if option not in cls.__dict__:
                    setattr(cls, option, getattr(base, option))

    def __init__(self, **options):
        super().__init__(**options)
        if self.base_problem is None:
            raise TypeError(f"{type(self).__name__} names no base_problem")
        if self.mix_buffer_size < 1:
            raise ValueError(f"{self.name}: mix_buffer_size must be positive, "
                             f"got {self.mix_buffer_size}")

    def base(self) -> Problem:
        """The base problem, with `base_options`."""
        return self.base_problem(**(self.base_options or {}))

    def constituency_path(self, tmp_dir: str, split: str) -> Optional[str]:
        """The split's bracketed trees in `tmp_dir` (plain or `.gz`), or None."""
        name = self.constituency_pattern.format(problem=self.base().name, split=split)
        return find_file(tmp_dir, (name, name + ".gz")) if tmp_dir else None

    def generate_samples(self, tmp_dir, split, skip) -> Iterator[tuple[TaskSource, list[str]]]:
        """The base problem's pairs as translation examples, plus parse examples in training."""
        pairs = self._task_pairs(tmp_dir, split, skip)
        if split != TRAIN:
            return pairs
        rng = random.Random(f"{self.random_seed}-{split}-mix")
        return shuffled(pairs, self.mix_buffer_size, rng)

    def _task_pairs(self, tmp_dir, split, skip):
        base = self.base()
        path = self.constituency_path(tmp_dir, split) if split == TRAIN else None
        trees = iter(read_bracketed(path)) if path else None
        for number, (source, target) in enumerate(base.generate_samples(tmp_dir, split, skip), 1):
            words = list(source.tokens if isinstance(source, DependencyTree) else source)
            yield TaskSource(words, TRANSLATE), list(
                target.tokens if isinstance(target, DependencyTree) else target)
            if split == TRAIN:
                parse = self._parse_tokens(source, words, trees, path, number, base.name)
                yield TaskSource(words, PARSE), parse
        if trees is not None and next(trees, None) is not None:
            raise InputError(path, None, f"holds more trees than the {split} split of "
                                         f"{base.name} has sentences")

    def _parse_tokens(self, source, words, trees, path, number, base_name) -> list[str]:
        if trees is not None:
            tree = next(trees, None)
            if tree is None:
                raise InputError(path, None, f"has fewer trees than the training split of "
                                             f"{base_name}: sentence {number} has none")
            if list(tree.tokens) != words:
                raise InputError(path, None, f"tree {number} has the words {list(tree.tokens)} but "
                                             f"training sentence {number} is {words}")
            return linearize.constituency_tokens(tree, self.linearization_words)
        if not isinstance(source, DependencyTree):
            raise RawDataError(
                f"{self.name}: {base_name} has no source trees; give bracketed trees as "
                f"{self.constituency_pattern.format(problem=base_name, split=TRAIN)}")
        return linearize.dependency_tokens(source, self.linearization_words)

    def vocabulary_counts(self, samples):
        """Counts the tagged sources, so that both task tags are words of the vocabulary."""
        return super().vocabulary_counts(
            (tagged(source), target) for source, target in samples)

    def encode_source(self, source):
        """`inputs` of the tagged source; plain sentences (decoding) get the translation tag."""
        return super().encode_source(tagged(source))


@registry.register_problem
class SyntheticSyntaxReorderCurreyHeafield(CurreyHeafield):
    """C&H over `synthetic_syntax_reorder`."""

    base_problem = SyntheticSyntaxReorder


@registry.register_problem
class SyntheticSyntaxReorderSubwordCurreyHeafield(CurreyHeafield):
    """C&H over `synthetic_syntax_reorder_subword`."""

    base_problem = SyntheticSyntaxReorderSubword


@registry.register_problem
class PudSyntaxDeCsCurreyHeafield(CurreyHeafield):
    """C&H over `pud_syntax_de_cs`."""

    base_problem = PudSyntaxDeCs


@registry.register_problem
class PudSyntaxDeCsSubwordCurreyHeafield(CurreyHeafield):
    """C&H over `pud_syntax_de_cs_subword`."""

    base_problem = PudSyntaxDeCsSubword


@registry.register_problem
class De2csSyntaxSubwordCurreyHeafield(CurreyHeafield):
    """C&H over `de2cs_syntax_subword`."""

    base_problem = De2csSyntaxSubword


@registry.register_problem
class CzengSyntaxSubwordCurreyHeafield(CurreyHeafield):
    """C&H over `czeng_syntax_subword`."""

    base_problem = CzengSyntaxSubword
