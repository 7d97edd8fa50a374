"""Control trees: the parser's tree of a sentence replaced by one that carries no syntax.

A syntax system that beats its baseline may owe the gain to the tree or to
any extra pairwise term the tree feeds. Training the same system on trees
that know nothing about the sentence tells the two apart. `tree_source`
names where a sentence's tree comes from:

* `parser`: the parser's (or the treebank's) tree, unchanged;
* `random`: a projective tree drawn uniformly from all projective trees of
  the sentence's length with one word attached to ROOT, seeded by the
  sentence and a seed, so every datagen, decode and rerun gives a sentence
  the same tree;
* `chain_next`: every word's head is the next word, the last word the root;
* `chain_previous`: every word's head is the previous word, the first word
  the root.

A control keeps the words, lemmas and tags (they describe words, not the
tree) and replaces the labels by UD's uninformative `dep` (`root` on the
root): labels that describe the parser's arcs would leak the parser's
syntax into a model that reads labels.

Uniform sampling. A projective tree with one root has a unique Eisner
derivation from complete spans (a head and all its descendants on one side)
and incomplete spans (an arc and the words between its ends), so counting
the derivations of every span width counts the trees, and choosing each
split in proportion to the number of trees it leaves draws every tree with
the same probability. The counts depend on span widths only, so one table
serves every sentence.
"""

import functools
import hashlib
import random
from typing import Sequence

import numpy as np

from syntax_t2t.data.tree import DependencyTree

PARSER = "parser"
RANDOM = "random"
CHAIN_NEXT = "chain_next"
CHAIN_PREVIOUS = "chain_previous"
TREE_SOURCES = (PARSER, RANDOM, CHAIN_NEXT, CHAIN_PREVIOUS)
#: The labels of a control tree's arcs (UD's unspecified dependency and its root).
CONTROL_LABEL = "dep"
ROOT_LABEL = "root"


def check_tree_source(tree_source: str) -> None:
    """Raises `ValueError` unless `tree_source` is one of `TREE_SOURCES`."""
    if tree_source not in TREE_SOURCES:
        raise ValueError(f"tree_source={tree_source!r}: expected one of {', '.join(TREE_SOURCES)}")


@functools.lru_cache(maxsize=None)
def _span_counts(width: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """`(complete, incomplete)` derivation counts of every span width 0..`width`.

    `complete[w]`: the ways a head can govern the `w` words on one side of it
    (a complete span of width w); `incomplete[w]`: the ways an arc of length
    w can hold the words between its ends. Both are the same on either side.
    """
    complete, incomplete = [1], [0]
    for w in range(1, width + 1):
        # An arc h -> d of length w: h's side up to a split point m, then d's
        # other side from m + 1.
        incomplete.append(sum(complete[a] * complete[w - 1 - a] for a in range(w)))
        # h's outermost dependent d at distance b, and d's complete span beyond it.
        complete.append(sum(incomplete[b] * complete[w - b] for b in range(1, w + 1)))
    return tuple(complete), tuple(incomplete)


def count_projective_trees(length: int) -> int:
    """The number of projective dependency trees of `length` words with one word on ROOT."""
    if length < 1:
        raise ValueError(f"a tree needs at least one word, got length {length}")
    complete, _ = _span_counts(length)
    return sum(complete[root - 1] * complete[length - root] for root in range(1, length + 1))


def _choose(rng: random.Random, weights: Sequence[int]) -> int:
    """An index drawn with probability proportional to exact integer `weights`."""
    draw = rng.randrange(sum(weights))
    for index, weight in enumerate(weights):
        if draw < weight:
            return index
        draw -= weight
    raise AssertionError("unreachable: the draw is below the total")


def random_projective_heads(length: int, rng: random.Random) -> np.ndarray:
    """Heads (1-based, 0 = ROOT) of a uniformly drawn projective tree with one root word.

    Args:
        length: the number of words, >= 1.
        rng: the generator every choice is drawn from.

    Returns:
        int32 [length].
    """
    if length < 1:
        raise ValueError(f"a tree needs at least one word, got length {length}")
    complete, incomplete = _span_counts(length)
    heads = np.zeros(length, dtype=np.int32)
    root = 1 + _choose(rng, [complete[r - 1] * complete[length - r] for r in range(1, length + 1)])
    # A stack, not recursion: a sentence of a few hundred words would pass
    # Python's recursion limit. Items: ("complete" | "incomplete", head, end),
    # the span running from `head` to `end` on either side.
    stack = [("complete", root, 1), ("complete", root, length)]
    while stack:
        kind, head, end = stack.pop()
        step = 1 if end > head else -1
        width = abs(end - head)
        if kind == "complete":
            if width == 0:
                continue
            # The outermost dependent at distance b: an incomplete span to it,
            # its own complete span out to `end`.
            b = 1 + _choose(rng, [incomplete[b] * complete[width - b] for b in range(1, width + 1)])
            dependent = head + step * b
            heads[dependent - 1] = head
            stack += [("incomplete", head, dependent), ("complete", dependent, end)]
        else:
            # Arc head -> end: head's span reaches a words inward, the dependent's the rest.
            a = _choose(rng, [complete[a] * complete[width - 1 - a] for a in range(width)])
            stack += [("complete", head, head + step * a),
                      ("complete", end, head + step * (a + 1))]
    return heads


def chain_heads(length: int, direction: str) -> np.ndarray:
    """Heads of a chain: each word on the next (`chain_next`) or previous (`chain_previous`) word."""
    positions = np.arange(1, length + 1, dtype=np.int32)
    if direction == CHAIN_NEXT:
        heads = positions + 1
        heads[-1] = 0
    elif direction == CHAIN_PREVIOUS:
        heads = positions - 1
    else:
        raise ValueError(f"direction={direction!r}: expected {CHAIN_NEXT} or {CHAIN_PREVIOUS}")
    return heads


def sentence_seed(tokens: Sequence[str], seed: int) -> int:
    """A stable seed of a sentence: the same words and seed give it on every machine and run.

    Python's `hash` of a string changes between processes, so the words are
    hashed with SHA-256.
    """
    text = f"{seed}\n" + "\t".join(tokens)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def control_heads(tokens: Sequence[str], tree_source: str, seed: int) -> np.ndarray:
    """The heads `tree_source` gives a sentence of `tokens` (not for `parser`)."""
    check_tree_source(tree_source)
    if tree_source == RANDOM:
        return random_projective_heads(len(tokens), random.Random(sentence_seed(tokens, seed)))
    if tree_source in (CHAIN_NEXT, CHAIN_PREVIOUS):
        return chain_heads(len(tokens), tree_source)
    raise ValueError("the parser's trees are not a control: keep the tree")


def control_tree(tree: DependencyTree, tree_source: str, seed: int) -> DependencyTree:
    """`tree` with its heads and labels replaced as `tree_source` says (see the module docstring).

    Args:
        tree: the parser's tree of a sentence.
        tree_source: one of `TREE_SOURCES`; `parser` returns `tree` itself.
        seed: with `random`, the seed mixed into each sentence's seed.

    Returns:
        A tree of the same words, tags and comments.
    """
    check_tree_source(tree_source)
    if tree_source == PARSER:
        return tree
    heads = control_heads(tree.tokens, tree_source, seed)
    labels = tuple(ROOT_LABEL if head == 0 else CONTROL_LABEL for head in heads)
    return DependencyTree(tokens=tree.tokens, heads=heads, labels=labels, lemmas=tree.lemmas,
                          upos=tree.upos, xpos=tree.xpos, comments=tree.comments)
