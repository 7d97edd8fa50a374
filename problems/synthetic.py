"""`synthetic_syntax_reorder`: an artificial language pair where syntax decides word order.

The problem needs no files, generates in seconds and is small enough to learn
on a CPU, yet translating it means recovering the source tree: the target
is the source translated word by word, then re-ordered by a rule that reads
the tree.

Generative rules
----------------

Lexicon. Each language has a fixed lexicon of pseudo-words (drawn once from
`lexicon_seed`), a few hundred words split over parts of speech:

    UPOS   VERB  NOUN  ADJ  ADV  PRON  DET  ADP  PUNCT
    words    60   120   50   25     8    6   10      1

Every source word has exactly one part of speech and one translation, a
target word of the same part of speech. XPOS refines UPOS by a word class
(`NOUN-1`, `VERB-3`, ...) fixed per word, so it is also a function of the
word.

Trees. A sentence length `L` is drawn uniformly from `[min_length,
max_length]`. The tree starts as one VERB attached to ROOT (`root`); then,
until it has `L` words (the final PUNCT below included) or no slot is
left, a random open slot is filled (weighted by `SLOT_WEIGHTS`).
Slots, by head part of speech, with the label each dependent gets:

    head  dependent          label    at most
    VERB  PRON               nsubj    1
    VERB  NOUN               obj      1
    VERB  ADV                advmod   2
    VERB  VERB               ccomp    1
    NOUN  DET                det      1
    NOUN  ADJ                amod     2
    NOUN  NOUN (with ADP)    nmod     1   (not inside an nmod)
    NOUN  ADP                case     -   (only on nmod nouns, always)
    ADJ   ADV                advmod   1

so the label is a function of the (head, dependent) parts of speech. With
probability `root_punct_probability` a final PUNCT is attached to ROOT as a
second root dependent (`punct`), as in Prague trees.

Source order (SVO, prepositions, modifiers before nouns). Each label has a
rank; negative ranks precede the head, positive follow it, in increasing
rank; dependents of equal rank appear in random order. Subtrees are
contiguous, so the source is projective:

    case -3, det -2, amod -1, nsubj -1, advmod -1 | head | obj +1, nmod +1,
    ccomp +2, punct +3

Target order (SOV, postpositions, modifiers after nouns), again by rank,
equal ranks keeping their source order:

    nsubj -3, ccomp -2, obj -1, nmod -1 | head | advmod +1, amod +1, det +2,
    case +3, punct +3

A source tree is recoverable from the surface: parts of speech follow from
the words, labels from the parts of speech, and the side and rank rules make
the heads a function of the part-of-speech sequence (determiners, adjectives
and prepositions attach to the next noun, pronouns to the next verb, adverbs
to the next adjective or verb, a noun after its own preposition to the noun
before it and any other noun to the verb before it, each verb but the first
to the verb before it; `tests/test_synthetic.py` parses with exactly these
rules). The target order is not a function of the source order: a verb's
subject and adverbs come in random order in the source, while the target
puts the subject first and the adverbs after the verb; the labels decide.
"""

import random
from typing import Iterator, Optional

from syntax_t2t import registry
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.problem import DEV, TEST, TRAIN, Problem, TreeTokens
from syntax_t2t.problem_options import ProblemOptionsError

# Part of speech -> number of words in each language's lexicon.
LEXICON_SIZES = {"VERB": 60, "NOUN": 120, "ADJ": 50, "ADV": 25, "PRON": 8, "DET": 6, "ADP": 10,
                 "PUNCT": 1}
# Word classes per part of speech, the second half of XPOS.
XPOS_CLASSES = {"VERB": 4, "NOUN": 3, "ADJ": 2, "ADV": 2, "PRON": 2, "DET": 2, "ADP": 2,
                "PUNCT": 1}

# (head UPOS, dependent UPOS) -> (label, most dependents of that kind per head).
SLOTS = {
    ("VERB", "PRON"): ("nsubj", 1),
    ("VERB", "NOUN"): ("obj", 1),
    ("VERB", "ADV"): ("advmod", 2),
    ("VERB", "VERB"): ("ccomp", 1),
    ("NOUN", "DET"): ("det", 1),
    ("NOUN", "ADJ"): ("amod", 2),
    ("NOUN", "NOUN"): ("nmod", 1),
    ("ADJ", "ADV"): ("advmod", 1),
}
# How likely each open slot is to be filled next: keeps clauses flat and
# nouns modified, so that long sentences do not become chains of ccomp.
SLOT_WEIGHTS = {"nsubj": 4.0, "obj": 4.0, "advmod": 1.5, "ccomp": 1.0, "det": 2.0, "amod": 1.5,
                "nmod": 1.0}
# Head UPOS -> [(dependent UPOS, label, at most)].
_SLOTS_OF_HEAD = {head: [(dependent, label, most) for (h, dependent), (label, most) in SLOTS.items()
                         if h == head]
                  for head, _ in SLOTS}
LABEL_OF = {pair: label for pair, (label, _) in SLOTS.items()}
LABEL_OF[("NOUN", "ADP")] = "case"
LABEL_OF[("ROOT", "VERB")] = "root"
LABEL_OF[("ROOT", "PUNCT")] = "punct"

SOURCE_RANK = {"case": -3, "det": -2, "amod": -1, "nsubj": -1, "advmod": -1,
               "obj": 1, "nmod": 1, "ccomp": 2, "punct": 3, "root": 0}
TARGET_RANK = {"nsubj": -3, "ccomp": -2, "obj": -1, "nmod": -1,
               "advmod": 1, "amod": 1, "det": 2, "case": 3, "punct": 3, "root": 0}

_SOURCE_LETTERS = ("bdgklmnprstvz", "aeiou")
_TARGET_LETTERS = ("cfhjlmnqrswxy", "aeiouy")


class Lexicon:
    """The two languages' words and the word-by-word translation.

    Args:
        seed: draws the pseudo-words; the same seed gives the same lexicon.
    """

    def __init__(self, seed: int = 0):
        rng = random.Random(f"lexicon-{seed}")
        source_seen, target_seen = set(), set()
        self.words = {}  # UPOS -> list of (source word, target word, xpos)
        for upos, size in LEXICON_SIZES.items():
            entries = []
            for index in range(size):
                if upos == "PUNCT":
                    source, target = ".", "."
                else:
                    syllables = 1 if upos in ("PRON", "DET", "ADP") else 2 + index % 2
                    source = _new_word(rng, _SOURCE_LETTERS, syllables, source_seen)
                    target = _new_word(rng, _TARGET_LETTERS, syllables, target_seen)
                entries.append((source, target, f"{upos}-{index % XPOS_CLASSES[upos] + 1}"))
            self.words[upos] = entries
        self.translation = {source: target for entries in self.words.values()
                            for source, target, _ in entries}

    def draw(self, rng: random.Random, upos: str) -> tuple[str, str]:
        """A random (source word, xpos) of part of speech `upos`."""
        source, _, xpos = rng.choice(self.words[upos])
        return source, xpos


def _new_word(rng, letters, syllables, seen) -> str:
    consonants, vowels = letters
    while True:
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables))
        if syllables == 1:
            word += rng.choice(consonants)
        if word not in seen:
            seen.add(word)
            return word


class _Node:
    __slots__ = ("upos", "label", "head", "children", "word", "xpos", "in_nmod")

    def __init__(self, upos, label, head, in_nmod=False):
        self.upos, self.label, self.head, self.in_nmod = upos, label, head, in_nmod
        self.children = []
        self.word = self.xpos = None


def sample_tree(rng: random.Random, lexicon: Lexicon, length: int,
                root_punct_probability: float) -> DependencyTree:
    """Draws one source tree with about `length` words (see the module docstring)."""
    with_punct = rng.random() < root_punct_probability and length >= 2
    budget = length - 1 if with_punct else length
    nodes = []
    open_slots = []  # [head, dependent UPOS, label, how many more it takes]

    def add(node):
        nodes.append(node)
        for dependent_upos, label, most in _SLOTS_OF_HEAD.get(node.upos, ()):
            if not (label == "nmod" and node.in_nmod):
                open_slots.append([node, dependent_upos, label, most])

    add(_Node("VERB", "root", None))
    while len(nodes) < budget:
        room = budget - len(nodes)
        # An nmod noun brings its ADP: it needs room for two words.
        fitting = [slot for slot in open_slots if slot[2] != "nmod" or room >= 2]
        if not fitting:
            break
        slot = rng.choices(fitting, [SLOT_WEIGHTS[slot[2]] for slot in fitting])[0]
        head, dependent_upos, label, _ = slot
        slot[3] -= 1
        if not slot[3]:
            open_slots.remove(slot)
        child = _Node(dependent_upos, label, head, in_nmod=label == "nmod")
        head.children.append(child)
        add(child)
        if label == "nmod":
            case = _Node("ADP", "case", child)
            child.children.append(case)
            add(case)
    for node in nodes:
        node.word, node.xpos = lexicon.draw(rng, node.upos)

    order = _linearise(nodes[0], lambda node: (SOURCE_RANK[node.label], rng.random()))
    if with_punct:
        punct = _Node("PUNCT", "punct", None)
        punct.word, punct.xpos = lexicon.draw(rng, "PUNCT")
        order.append(punct)
    position = {id(node): index for index, node in enumerate(order, start=1)}
    return DependencyTree(
        tokens=[node.word for node in order],
        heads=[0 if node.head is None else position[id(node.head)] for node in order],
        labels=[node.label for node in order],
        lemmas=[node.word for node in order],
        upos=[node.upos for node in order],
        xpos=[node.xpos for node in order])


def _linearise(node, sort_key) -> list:
    """The nodes of `node`'s subtree in order: dependents sorted by `sort_key`, head at rank 0."""
    before = sorted((c for c in node.children if SOURCE_RANK[c.label] < 0), key=sort_key)
    after = sorted((c for c in node.children if SOURCE_RANK[c.label] > 0), key=sort_key)
    order = []
    for child in before:
        order.extend(_linearise(child, sort_key))
    order.append(node)
    for child in after:
        order.extend(_linearise(child, sort_key))
    return order


def target_order(tree: DependencyTree) -> list[int]:
    """0-based source positions in target order, by the target rank rule.

    Works on any tree whose labels are in `TARGET_RANK`: each head is placed
    among its dependents by rank; equal ranks keep their source order.
    """
    children = [[] for _ in range(len(tree) + 1)]
    for position, head in enumerate(tree.heads, start=1):
        children[int(head)].append(position)

    def place(node) -> list[int]:
        ranked = [(TARGET_RANK[tree.labels[child - 1]], child) for child in children[node]]
        if node:
            ranked.append((0, node))
        order = []
        for rank, position in sorted(ranked):
            order.extend([position - 1] if position == node else place(position))
        return order

    return place(0)


def translate(tree: DependencyTree, lexicon: Lexicon) -> list[str]:
    """The target sentence of a source tree: words translated, re-ordered by `target_order`."""
    return [lexicon.translation[tree.tokens[index]] for index in target_order(tree)]


def target_tree(tree: DependencyTree, lexicon: Lexicon) -> DependencyTree:
    """The target sentence with its tree: the source tree, words translated and re-ordered.

    Each target word depends on the translation of its source word's head,
    with the same label and part of speech (a target word's XPOS is its
    source word's: the translation keeps the word class).
    """
    order = target_order(tree)
    position = {source: target for target, source in enumerate(order, start=1)}
    tokens = [lexicon.translation[tree.tokens[index]] for index in order]
    return DependencyTree(
        tokens=tokens,
        heads=[0 if tree.heads[index] == 0 else position[int(tree.heads[index]) - 1]
               for index in order],
        labels=[tree.labels[index] for index in order],
        lemmas=tokens,
        upos=[tree.upos[index] for index in order],
        xpos=[tree.xpos[index] for index in order])


@registry.register_problem
class SyntheticSyntaxReorder(Problem):
    """An artificial language pair whose target order depends on the source tree.

    See the module docstring for the generative rules. Options (class
    attributes, overridable per instance): `train_size`, `dev_size`,
    `test_size` (sentence pairs per split), `min_length`, `max_length`
    (source words), `root_punct_probability`, `lexicon_seed` (the
    languages) and `random_seed` (the sentences). Targets come with their
    trees (`target_tree`: the source tree re-ordered), for target-side syntax.
    """

    has_target_trees = True
    #: Sentence pairs of the training split.
    train_size = 20_000
    #: Sentence pairs of the dev split.
    dev_size = 500
    #: Sentence pairs of the test split.
    test_size = 500
    #: Fewest source words of a sentence.
    min_length = 3
    #: Most source words of a sentence.
    max_length = 20
    #: Probability that a sentence ends in punctuation attached to its root.
    root_punct_probability = 0.05
    #: Seeds the pseudo-words of both languages (`random_seed` seeds the sentences).
    lexicon_seed = 0
    num_shards = {TRAIN: 2, DEV: 1, TEST: 1}

    option_names = Problem.option_names + (
        "train_size", "dev_size", "test_size", "min_length", "max_length",
        "root_punct_probability", "lexicon_seed")

    def __init__(self, **options):
        super().__init__(**options)
        # Option errors are the user's (one line), not a traceback.
        if not 1 <= self.min_length <= self.max_length:
            raise ProblemOptionsError(
                f"problem options min_length={self.min_length}, max_length={self.max_length} of "
                f"{self.name}: need 1 <= min_length <= max_length")
        if self.train_size < 1:
            raise ProblemOptionsError(f"problem option train_size={self.train_size} of {self.name}: "
                                      f"need at least 1 training sentence")
        self._lexicon: Optional[Lexicon] = None

    @property
    def lexicon(self) -> Lexicon:
        if self._lexicon is None or self._lexicon_seed != self.lexicon_seed:
            self._lexicon, self._lexicon_seed = Lexicon(self.lexicon_seed), self.lexicon_seed
        return self._lexicon

    def split_size(self, split: str) -> int:
        return {TRAIN: self.train_size, DEV: self.dev_size, TEST: self.test_size}[split]

    def generate_samples(self, tmp_dir, split, skip) -> Iterator[tuple[DependencyTree, list[str]]]:
        """Draws the split's pairs (see `generate_records`); `tmp_dir` is unused."""
        return map(self.sample_of_record, self.generate_records(tmp_dir, split, skip))

    def generate_records(self, tmp_dir, split, skip) -> Iterator[int]:
        """One seed per pair, drawn from `random_seed` and the split name.

        A pair depends on its seed alone, so datagen workers draw pairs in
        any order and process and still write the same data.
        """
        rng = random.Random(f"{self.random_seed}-{split}")
        for _ in range(self.split_size(split)):
            yield rng.getrandbits(64)

    def sample_of_record(self, record: int) -> tuple[DependencyTree, TreeTokens]:
        """The pair of a seed of `generate_records`."""
        rng = random.Random(record)
        tree = sample_tree(rng, self.lexicon, rng.randint(self.min_length, self.max_length),
                           self.root_punct_probability)
        return tree, TreeTokens(target_tree(tree, self.lexicon))
