"""Phrase structure derived from dependency trees, for problems without constituency trees.

`phrase_structure_from_dependencies` has two rules:

* `"projection"`: every head with its projection is a phrase (steps 1-4
  below). Flat: a verb, its subject and its objects are siblings.
* `"right_first"`: as `"projection"`, but a head with dependents on both
  sides projects twice, its right dependents attaching first: the inner
  phrase is the head with its right dependents (X-bar's X': a verb with
  its objects and obliques, i.e. a VP without its subject), the outer one
  adds the left dependents (the subject; a noun's determiner and
  adjectives). This reproduces Figure 1 of MG-SA (Hao et al. 2019) from
  the UD tree of "Bush held a talk with Sharon": level 1 is (Bush)(held a
  talk with Sharon), level 2 (Bush)(held)(a talk)(with Sharon). The rule
  needs no labels (the models see label *ids* only), so it fits languages
  whose heads precede their complements and follow their subjects (SVO:
  English, Czech, Chinese); for a head-final language it is the flat rule.

1. The heads are first made projective by *lifting* (`projectivize_heads`):
   while some arc is non-projective, the shortest one (ties: the leftmost
   dependent) is re-attached to its head's head. The projections of a
   non-projective tree are not contiguous, and the hulls of their spans
   can cross, so neither would form a tree over contiguous spans.
2. Every token with at least one dependent heads the phrase made of itself
   and all its (lifted) descendants, labelled with its UPOS tag and a `P`
   (`NOUNP` for a phrase headed by a NOUN, cf. NP), and records that token
   as the phrase's head.
3. The whole sentence is the root. When the artificial ROOT has one
   dependent, that token's phrase is the root (a one-token sentence is a
   phrase of its own); when it has several (Prague a-layers attach the
   predicate and the final punctuation to it), the root is an extra phrase
   labelled `ROOT`, with no head token.
4. Tokens without dependents are leaves only; their tags are the UPOS tags.

Example, "She saw the cat ." with heads [2, 0, 4, 2, 2]:

  projection:  (VERBP (PRON She) (VERB saw) (NOUNP (DET the) (NOUN cat)) (PUNCT .))
  right_first: (VERBP (PRON She) (VERBP (VERB saw) (NOUNP (DET the) (NOUN cat)) (PUNCT .)))

The two phrases of one head share its label and head token.
"""

import numpy as np

from syntax_t2t.data import features
from syntax_t2t.data.constituency import ConstituencyTree, NO_HEAD
from syntax_t2t.data.phrases import syntactic_partitions
from syntax_t2t.data.tree import DependencyTree, check_heads

DEPENDENCY_ROOT_LABEL = "ROOT"


def non_projective_dependents(heads) -> np.ndarray:
    """The tokens whose incoming arc is non-projective.

    An arc h -> d is projective iff every token strictly between h and d is a
    descendant of h (ROOT is position 0, so arcs from ROOT are projective).

    Args:
        heads: 1-based heads of n tokens, 0 = ROOT.

    Returns:
        int array of the 1-based ids of the dependents of non-projective arcs.
    """
    heads = check_heads(heads)
    ancestors = features.ancestor_matrix(heads)  # (i, k): node k dominates node i
    nodes = np.arange(heads.size + 1)
    dependents = nodes[1:]
    low = np.minimum(heads, dependents)
    high = np.maximum(heads, dependents)
    between = (nodes[None, :] > low[:, None]) & (nodes[None, :] < high[:, None])
    # dominated[d, i]: token i lies below the head of d.
    dominated = ancestors[:, heads].T
    return dependents[np.any(between & ~dominated, axis=1)]


def is_projective(heads) -> bool:
    """Whether every arc of the tree is projective."""
    return non_projective_dependents(heads).size == 0


def projectivize_heads(heads) -> np.ndarray:
    """Makes a dependency tree projective by lifting arcs.

    While some arc is non-projective, the shortest such arc (ties broken by
    the leftmost dependent) is lifted: its dependent is re-attached to the
    head of its head. Arcs from ROOT are always projective, so this ends.

    Args:
        heads: 1-based heads of n tokens, 0 = ROOT.

    Returns:
        int32 [n], the projective heads; equal to `heads` for a projective tree.
    """
    lifted = np.array(check_heads(heads), dtype=np.int32)
    while True:
        dependents = non_projective_dependents(lifted)
        if dependents.size == 0:
            return lifted
        lengths = np.abs(dependents - lifted[dependents - 1])
        dependent = int(dependents[np.argmin(lengths)])  # argmin keeps the leftmost of equal lengths
        head = lifted[dependent - 1]  # never ROOT: arcs from ROOT are projective
        lifted[dependent - 1] = lifted[head - 1]


RULES = ("projection", "right_first")


def phrase_structure_from_dependencies(tree: DependencyTree,
                                       rule: str = "projection") -> ConstituencyTree:
    """Derives a phrase structure from a dependency tree.

    See the module docstring for the exact rules.

    Args:
        tree: a dependency tree, projective or not.
        rule: one of `RULES`.

    Returns:
        A `ConstituencyTree` whose constituents record their head tokens and
        whose tags are the UPOS tags.
    """
    if rule not in RULES:
        raise ValueError(f"dependency phrase rule {rule!r}: expected one of {', '.join(RULES)}")
    heads = projectivize_heads(tree.heads)
    n = len(tree)
    ancestors = features.ancestor_matrix(heads)[1:, 1:]  # tokens only: (i, k) is k dominating i
    num_dependents = np.bincount(heads, minlength=n + 1)
    root_dependents = int(num_dependents[0])
    phrase_heads = [
        t for t in range(n) if num_dependents[t + 1] > 0 or (heads[t] == 0 and root_dependents == 1)
    ]
    spans, span_heads = [], []
    for head in phrase_heads:
        members = np.flatnonzero(ancestors[:, head])
        first, last = int(members[0]), int(members[-1])
        spans.append((first, last + 1))
        span_heads.append(head)
        if rule == "right_first" and first < head < last:
            # The inner phrase: the head and its right dependents (a VP without its subject).
            spans.append((head, last + 1))
            span_heads.append(head)
    labels = [f"{tree.upos[head]}P" for head in span_heads]
    phrase_heads = span_heads
    if root_dependents > 1:
        spans.insert(0, (0, n))
        labels.insert(0, DEPENDENCY_ROOT_LABEL)
        phrase_heads.insert(0, NO_HEAD)
    return ConstituencyTree.from_spans(tree.tokens, spans, labels, tags=tree.upos, head_tokens=phrase_heads)


def phrases_per_level(trees, num_levels: int = 3, rule: str = "projection") -> np.ndarray:
    """How many phrases each of levels 1..K has, per tree (MG-SA's granularities).

    Args:
        trees: `DependencyTree`s.
        num_levels: K.
        rule: one of `RULES`.

    Returns:
        int [len(trees), K].
    """
    counts = [[int(ids.max()) + 1 for ids in syntactic_partitions(
        phrase_structure_from_dependencies(tree, rule), num_levels).phrase_ids] for tree in trees]
    return np.asarray(counts, dtype=np.int64).reshape(-1, num_levels)
