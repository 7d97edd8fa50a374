"""Phrase structure derived from dependency trees, for problems without constituency trees.

`phrase_structure_from_dependencies`: every head with its projection is a phrase.

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

  (VERBP (PRON She) (VERB saw) (NOUNP (DET the) (NOUN cat)) (PUNCT .))
"""

import numpy as np

from syntax_t2t.data import features
from syntax_t2t.data.constituency import ConstituencyTree, NO_HEAD
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


def phrase_structure_from_dependencies(tree: DependencyTree) -> ConstituencyTree:
    """Derives the phrase structure "each head with its projection".

    See the module docstring for the exact rule.

    Args:
        tree: a dependency tree, projective or not.

    Returns:
        A `ConstituencyTree` whose constituents record their head tokens and
        whose tags are the UPOS tags.
    """
    heads = projectivize_heads(tree.heads)
    n = len(tree)
    ancestors = features.ancestor_matrix(heads)[1:, 1:]  # tokens only: (i, k) is k dominating i
    num_dependents = np.bincount(heads, minlength=n + 1)
    root_dependents = int(num_dependents[0])
    phrase_heads = [
        t for t in range(n) if num_dependents[t + 1] > 0 or (heads[t] == 0 and root_dependents == 1)
    ]
    spans, labels = [], []
    for head in phrase_heads:
        members = np.flatnonzero(ancestors[:, head])
        spans.append((int(members[0]), int(members[-1]) + 1))
        labels.append(f"{tree.upos[head]}P")
    if root_dependents > 1:
        spans.insert(0, (0, n))
        labels.insert(0, DEPENDENCY_ROOT_LABEL)
        phrase_heads.insert(0, NO_HEAD)
    return ConstituencyTree.from_spans(tree.tokens, spans, labels, tags=tree.upos, head_tokens=phrase_heads)
