"""Parse trees written as token sequences, the targets of a "parse the source" task.

Currey and Heafield (2019) train one Transformer to translate and to output
the linearised parse of its source. Two linearisations are given here; each
token is a vocabulary word of the target side.

Constituency trees (`constituency_tokens`), as Currey and Heafield's
bracketed parses: an opening token `(LABEL` per constituent, its children
left to right, then a closing `)`. Part-of-speech preterminals are not
written. By default the words are left out too, as the Pascal paper's
public implementation does for its C&H baseline:

    (S (NP (DT The) (NN monkey)) (VP (VBZ eats) (NP (DT a) (NN banana))))
    ->  (S (NP ) (VP (NP ) ) )
    ->  (S (NP The monkey ) (VP eats (NP a banana ) ) )      with words

Dependency trees (`dependency_tokens`), for data without constituency
parses: every token opens a bracket labelled with its dependency relation,
`(nsubj`, holding its left dependents, the token itself, its right
dependents, then `)`; dependents of ROOT follow each other at the top. The
token is its word, or its UPOS tag when words are left out, so that the head
of every bracket stays visible:

    The monkey eats a banana, heads [2, 3, 0, 5, 3]
    ->  (root (nsubj (det DET ) NOUN ) VERB (obj (det DET ) NOUN ) )
    ->  (root (nsubj (det The ) monkey ) eats (obj (det a ) banana ) )  with words

Dependents are ordered by position on each side of their head, so a
projective tree is written in sentence order and `read_dependency_tokens`
recovers it; a non-projective tree is written in its (lifted) tree order.
"""

from typing import Sequence

import numpy as np

from syntax_t2t.data.constituency import ConstituencyTree
from syntax_t2t.data.tree import DependencyTree

CLOSE = ")"
OPEN_PREFIX = "("


def constituency_tokens(tree: ConstituencyTree, words: bool = False) -> list[str]:
    """The bracketed linearisation of a constituency tree (module docstring).

    Args:
        tree: the tree.
        words: also write the words (preterminals are never written).

    Returns:
        The tokens, e.g. `["(S", "(NP", ")", "(VP", ")", ")"]`.
    """
    tokens = []

    def write(constituent: int) -> None:
        tokens.append(OPEN_PREFIX + tree.labels[constituent])
        for child in tree.children(constituent):
            if not child.is_token:
                write(child.index)
            elif words:
                tokens.append(tree.tokens[child.index])
        tokens.append(CLOSE)

    write(0)
    return tokens


def dependency_tokens(tree: DependencyTree, words: bool = False) -> list[str]:
    """The bracketed linearisation of a dependency tree (module docstring).

    Args:
        tree: the tree.
        words: write each token's word; otherwise its UPOS tag.

    Returns:
        The tokens, e.g. `["(root", "(nsubj", "NOUN", ")", "VERB", ")"]`.
    """
    heads = np.asarray(tree.heads)
    dependents = [[] for _ in range(len(tree) + 1)]
    for position, head in enumerate(heads, start=1):
        dependents[int(head)].append(position)
    shown = tree.tokens if words else tree.upos
    tokens = []

    def write(node: int) -> None:
        tokens.append(OPEN_PREFIX + tree.labels[node - 1])
        for child in dependents[node]:
            if child < node:
                write(child)
        tokens.append(shown[node - 1])
        for child in dependents[node]:
            if child > node:
                write(child)
        tokens.append(CLOSE)

    for root_dependent in dependents[0]:
        write(root_dependent)
    return tokens


def read_dependency_tokens(tokens: Sequence[str]) -> tuple[list[str], list[int], list[str]]:
    """Reads a dependency linearisation back (e.g. a model's parse output).

    Args:
        tokens: what `dependency_tokens` writes.

    Returns:
        `(shown, heads, labels)` in the order the tokens are written: the
        word (or tag) of each token, its 1-based head in that order (0 =
        ROOT) and its label. For a projective tree that order is the
        sentence order, so this inverts `dependency_tokens`.

    Raises:
        ValueError: for brackets that do not nest, a bracket without exactly
            one token of its own, or a token outside every bracket.
    """
    shown, heads, labels = [], [], []
    stack = []  # [label, 1-based position of the bracket's token or None, dependents]
    for index, token in enumerate(tokens):
        if token.startswith(OPEN_PREFIX) and len(token) > 1:
            stack.append([token[1:], None, []])
        elif token == CLOSE:
            if not stack:
                raise ValueError(f"token {index}: ')' closes no bracket")
            label, position, bracket_dependents = stack.pop()
            if position is None:
                raise ValueError(f"token {index}: the bracket ({label} closes without a token")
            for dependent in bracket_dependents:
                heads[dependent - 1] = position
            labels[position - 1] = label
            if stack:
                stack[-1][2].append(position)
            else:
                heads[position - 1] = 0
        else:
            if not stack:
                raise ValueError(f"token {index}: {token!r} is outside every bracket")
            if stack[-1][1] is not None:
                raise ValueError(f"token {index}: {token!r} is a second token in the bracket "
                                 f"({stack[-1][0]}")
            shown.append(token)
            heads.append(-1)
            labels.append("")
            stack[-1][1] = len(shown)
    if stack:
        raise ValueError(f"{len(stack)} bracket(s) left open at the end")
    return shown, heads, labels
