"""Constituency (phrase-structure) trees over the tokens of one sentence.

A `ConstituencyTree` stores its constituents as half-open token spans in
pre-order; the words are its leaves. Part-of-speech preterminals are not
constituents: a bracket whose only child is a word, `(NN talk)`, gives that
word its tag. This is the view that the syntactic distances (Shen et al. 2018;
Gómez-Rodríguez and Vilares 2018), the multi-granularity phrase partitions and
the binary Tree-LSTM encoder all share.

Trees come from two sources:

* Penn-style bracketed text, parsed by `nltk.Tree.fromstring`
  (`parse_bracketed`, `read_bracketed`). Empty elements (`-NONE-`
  preterminals such as traces) are removed together with the constituents
  they leave empty, and an outermost unary wrapper labelled `""` (the Penn
  Treebank's `( (S ...) )`), `ROOT` or `TOP` is dropped, so that level 1 of
  every tree holds the sentence's immediate constituents.
* Dependency trees (`phrase_structure_from_dependencies`), for problems whose
  data has no constituency trees. Every head with its projection is a phrase:

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

import dataclasses
import functools
import os
import re
from typing import Iterator, NamedTuple, Optional, Sequence, Union

import nltk
import numpy as np

from syntax_t2t import io_utils
from syntax_t2t.data import features
from syntax_t2t.data.tree import UNKNOWN, DependencyTree, check_heads
from syntax_t2t.errors import InputError, SkipCounter, raise_or_skip

PathLike = Union[str, os.PathLike]

EMPTY_ELEMENT = "-NONE-"
ROOT_WRAPPER_LABELS = frozenset({"", "ROOT", "TOP"})
DEPENDENCY_ROOT_LABEL = "ROOT"
NO_HEAD = -1


class ConstituencyError(ValueError):
    """A malformed constituency tree; readers add the file and line."""


class Child(NamedTuple):
    """One child of a constituent: a token or another constituent.

    Attributes:
        is_token: whether `index` is a token index (else a constituent index).
        index: 0-based token or constituent index.
    """

    is_token: bool
    index: int


@dataclasses.dataclass(frozen=True, eq=False)
class ConstituencyTree:
    """A phrase-structure tree whose leaves are the tokens of a sentence.

    Attributes:
        tokens: the words, in sentence order.
        spans: read-only int32 [m, 2]; constituent k covers tokens
            `spans[k, 0] <= t < spans[k, 1]`. Constituents are in pre-order:
            constituent 0 is the root and covers the whole sentence, parents
            precede their children and siblings are left to right, i.e. sorted
            by (start, -end), an ancestor before a child with the same span
            (a unary chain).
        labels: the m constituent labels (NP, VP, ...).
        tags: the n part-of-speech tags of the tokens, `"_"` when unknown.
        head_tokens: read-only int32 [m], the 0-based head token of each
            constituent, -1 when unknown (always for bracketed trees).
        parents: read-only int32 [m], the parent constituent, -1 for the root.
        token_parents: read-only int32 [n], the lowest constituent of each
            token.
    """

    tokens: tuple[str, ...]
    spans: np.ndarray
    labels: tuple[str, ...]
    tags: Optional[Sequence[str]] = None
    head_tokens: Optional[np.ndarray] = None
    parents: np.ndarray = dataclasses.field(init=False, repr=False)
    token_parents: np.ndarray = dataclasses.field(init=False, repr=False)

    def __post_init__(self):
        tokens = tuple(self.tokens)
        n = len(tokens)
        if n == 0:
            raise ConstituencyError("a tree needs at least one token, got none")
        spans = np.asarray(self.spans)
        if spans.size == 0:
            raise ConstituencyError("a tree needs at least one constituent, got none")
        if spans.ndim != 2 or spans.shape[1] != 2 or spans.dtype.kind not in "iu":
            raise ConstituencyError(f"spans must be integer pairs [m, 2], got {spans.dtype} {spans.shape}")
        m = spans.shape[0]
        labels = tuple(self.labels)
        tags = (UNKNOWN,) * n if self.tags is None else tuple(self.tags)
        heads = np.full(m, NO_HEAD) if self.head_tokens is None else np.asarray(self.head_tokens)
        for name, values, size in (("labels", labels, m), ("tags", tags, n), ("head_tokens", heads, m)):
            if len(values) != size:
                raise ConstituencyError(f"{name} has {len(values)} entries, expected {size}")
        if heads.size and heads.dtype.kind not in "iu":
            raise ConstituencyError(f"head_tokens must be integers, got {heads.dtype}")
        parents = _check_spans(spans, labels, n)
        known = heads != NO_HEAD
        outside = known & ((heads < spans[:, 0]) | (heads >= spans[:, 1]))
        if np.any(outside):
            k = int(np.flatnonzero(outside)[0])
            raise ConstituencyError(
                f"constituent {k} ({labels[k]}) covers tokens {spans[k, 0]}..{spans[k, 1] - 1} "
                f"but has head token {heads[k]} (head tokens are -1 or inside the span)"
            )
        token_parents = np.zeros(n, dtype=np.int32)
        for k in range(m):  # pre-order: a descendant overwrites its ancestors
            token_parents[spans[k, 0] : spans[k, 1]] = k
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "spans", _read_only(spans))
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "tags", tags)
        object.__setattr__(self, "head_tokens", _read_only(heads))
        object.__setattr__(self, "parents", _read_only(parents))
        object.__setattr__(self, "token_parents", _read_only(token_parents))

    @classmethod
    def from_spans(
        cls,
        tokens: Sequence[str],
        spans,
        labels: Sequence[str],
        tags: Optional[Sequence[str]] = None,
        head_tokens=None,
    ) -> "ConstituencyTree":
        """Builds a tree from constituents given in any order.

        Args:
            tokens: the words.
            spans: (start, end) half-open token spans, one per constituent.
            labels: one label per span.
            tags: the tokens' part-of-speech tags, `"_"` when omitted.
            head_tokens: 0-based head token per span, -1 for unknown.

        Returns:
            The tree, with constituents sorted into pre-order. Equal spans (a
            unary chain) keep their given order, the first being the highest.

        Raises:
            ConstituencyError: if the spans do not form a tree.
        """
        spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        order = np.lexsort((np.arange(len(spans)), -spans[:, 1], spans[:, 0]))
        heads = None if head_tokens is None else np.asarray(head_tokens)[order]
        return cls(
            tokens=tuple(tokens),
            spans=spans[order],
            labels=tuple(labels[k] for k in order),
            tags=tags,
            head_tokens=heads,
        )

    @classmethod
    def from_nltk(cls, tree: nltk.Tree) -> "ConstituencyTree":
        """Converts an `nltk.Tree` as described in the module docstring.

        Raises:
            ConstituencyError: for a bracket without children, a tree without
                words, or a tree that is a lone preterminal.
        """
        return _from_nltk(tree)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def num_constituents(self) -> int:
        """m, the number of constituents."""
        return int(self.spans.shape[0])

    @functools.cached_property
    def depths(self) -> np.ndarray:
        """int32 [m], the depth of each constituent; the root is at 0."""
        depths = np.zeros(self.num_constituents, dtype=np.int32)
        for k in range(1, self.num_constituents):
            depths[k] = depths[self.parents[k]] + 1
        return _read_only(depths)

    @property
    def token_depths(self) -> np.ndarray:
        """int32 [n], the number of constituents that contain each token."""
        return (self.depths[self.token_parents] + 1).astype(np.int32)

    @functools.cached_property
    def _children(self) -> tuple[tuple[Child, ...], ...]:
        starts = [[] for _ in range(self.num_constituents)]
        for k in range(1, self.num_constituents):
            starts[self.parents[k]].append((int(self.spans[k, 0]), Child(False, k)))
        for t, k in enumerate(self.token_parents.tolist()):
            starts[k].append((t, Child(True, t)))
        return tuple(tuple(child for _, child in sorted(items)) for items in starts)

    def children(self, constituent: int) -> tuple[Child, ...]:
        """The children of `constituent`, left to right."""
        return self._children[constituent]

    def to_nltk(self) -> nltk.Tree:
        """The tree as an `nltk.Tree`; tagged words become preterminals."""
        built = [None] * self.num_constituents
        for k in reversed(range(self.num_constituents)):
            parts = []
            for child in self.children(k):
                if not child.is_token:
                    parts.append(built[child.index])
                elif self.tags[child.index] == UNKNOWN:
                    parts.append(self.tokens[child.index])
                else:
                    parts.append(nltk.Tree(self.tags[child.index], [self.tokens[child.index]]))
            built[k] = nltk.Tree(self.labels[k], parts)
        return built[0]

    def to_bracketed(self) -> str:
        """The tree on one line in Penn bracketed notation."""
        return self.to_nltk().pformat(margin=10**9)

    def _key(self):
        return (self.tokens, self.tags, self.labels, self.spans.tobytes(), self.head_tokens.tobytes())

    def __eq__(self, other) -> bool:
        if not isinstance(other, ConstituencyTree):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


def _read_only(array) -> np.ndarray:
    result = np.array(array, dtype=np.int32)
    result.setflags(write=False)
    return result


def _check_spans(spans: np.ndarray, labels: Sequence[str], n: int) -> np.ndarray:
    """Checks that pre-ordered spans form a tree over n tokens; returns the parents."""

    def describe(k: int) -> str:
        return f"constituent {k} ({labels[k]}, tokens {spans[k, 0]}..{spans[k, 1] - 1})"

    if spans[0, 0] != 0 or spans[0, 1] != n:
        raise ConstituencyError(
            f"the first constituent must be the root covering tokens 0..{n - 1}, "
            f"got span [{spans[0, 0]}, {spans[0, 1]})"
        )
    bad = np.flatnonzero((spans[:, 0] < 0) | (spans[:, 1] > n) | (spans[:, 0] >= spans[:, 1]))
    if bad.size:
        k = int(bad[0])
        raise ConstituencyError(
            f"constituent {k} ({labels[k]}) has span [{spans[k, 0]}, {spans[k, 1]}), "
            f"not a non-empty span inside [0, {n})"
        )
    parents = np.full(spans.shape[0], -1, dtype=np.int32)
    open_constituents = [0]
    for k in range(1, spans.shape[0]):
        start, end = spans[k]
        previous = spans[k - 1]
        if (start, -end) < (previous[0], -previous[1]):
            raise ConstituencyError(
                f"{describe(k)} comes after {describe(k - 1)}: constituents must be in pre-order"
            )
        while open_constituents and spans[open_constituents[-1], 1] <= start:
            open_constituents.pop()
        if not open_constituents:
            raise ConstituencyError(f"{describe(k)} lies outside the root")
        parent = open_constituents[-1]
        if end > spans[parent, 1]:
            raise ConstituencyError(f"{describe(k)} crosses {describe(parent)}")
        parents[k] = parent
        open_constituents.append(k)
    return parents


def _is_preterminal(node) -> bool:
    return isinstance(node, nltk.Tree) and len(node) == 1 and isinstance(node[0], str)


def _from_nltk(tree: nltk.Tree) -> ConstituencyTree:
    if not isinstance(tree, nltk.Tree):
        raise ConstituencyError(f"expected a bracketed tree, got the bare word {tree!r}")
    while (
        tree.label() in ROOT_WRAPPER_LABELS
        and len(tree) == 1
        and isinstance(tree[0], nltk.Tree)
        and not _is_preterminal(tree[0])
    ):
        tree = tree[0]
    if _is_preterminal(tree):
        raise ConstituencyError(
            f"the tree is the lone preterminal ({tree.label()} {tree[0]}); "
            "a constituent must stand above the words"
        )
    tokens, tags, spans, labels = [], [], [], []

    def position() -> str:
        return f"after token {len(tokens) - 1} {tokens[-1]!r}" if tokens else "before the first token"

    # Iterative pre-order walk: ("open", node) visits a node, ("close", k)
    # ends constituent k once all its words were seen.
    pending = [("open", tree)]
    while pending:
        action, item = pending.pop()
        if action == "close":
            spans[item][1] = len(tokens)
        elif isinstance(item, str):
            tokens.append(item)
            tags.append(UNKNOWN)
        elif _is_preterminal(item):
            if item.label() != EMPTY_ELEMENT:
                tokens.append(item[0])
                tags.append(item.label() or UNKNOWN)
        elif len(item) == 0:
            raise ConstituencyError(f"the bracket ({item.label()}) has no children ({position()})")
        else:
            spans.append([len(tokens), None])
            labels.append(item.label())
            pending.append(("close", len(spans) - 1))
            pending.extend(("open", child) for child in reversed(item))
    if not tokens:
        raise ConstituencyError("the tree has no words (only empty elements)")
    # Constituents that held only empty elements cover no words: drop them.
    kept = [k for k, (start, end) in enumerate(spans) if end > start]
    return ConstituencyTree(
        tokens=tuple(tokens),
        spans=np.array([spans[k] for k in kept], dtype=np.int64),
        labels=tuple(labels[k] for k in kept),
        tags=tuple(tags),
    )


_NLTK_ERROR_INDEX = re.compile(r"at index (\d+)")


def parse_bracketed(text: str, source_name: str = "<string>", first_line: int = 1) -> ConstituencyTree:
    """Parses one Penn-style bracketed tree held in a string.

    Args:
        text: the tree, e.g. `"(S (NP (NNP Bush)) (VP (VBD spoke)))"`; it may
            span several lines.
        source_name: the name used in error messages in place of a file name.
        first_line: the line number of the first line of `text` in its source.

    Returns:
        The tree, converted as described in the module docstring.

    Raises:
        InputError: naming the source, the line and the problem.
    """
    try:
        tree = nltk.Tree.fromstring(text)
    except ValueError as error:
        message = str(error)
        match = _NLTK_ERROR_INDEX.search(message)
        line = first_line + (text[: int(match.group(1))].count("\n") if match else 0)
        summary = message.split("\n")[0].removeprefix("Tree.read(): ")
        raise InputError(
            source_name, line, f"malformed brackets: {summary}", reason="malformed brackets"
        ) from None
    try:
        return ConstituencyTree.from_nltk(tree)
    except ConstituencyError as error:
        raise InputError(source_name, first_line, f"bad tree: {error}", reason="bad tree") from None


_BRACKET_OR_TEXT = re.compile(r"[()]|[^\s()]+")


def read_bracketed(path: PathLike, skip: Optional[SkipCounter] = None) -> Iterator[ConstituencyTree]:
    """Reads the trees of a plain or gzip file of Penn-style bracketed trees.

    Trees are balanced bracket groups; a tree may span several lines and a
    line may hold several trees (Penn Treebank `.mrg` files and one-tree-per-
    line parser output are both read). Only whitespace may stand between trees.

    Args:
        path: the file.
        skip: under `--skip_bad_examples`, the counter that bad trees are
            recorded in; None raises at the first bad tree.

    Yields:
        One `ConstituencyTree` per bracket group.

    Raises:
        InputError: naming the file, the line and the problem: an unmatched
            `)`, words outside brackets, a tree left open at the end of the
            file, a tree nltk cannot parse, or one that is not a valid tree;
            also when the file holds no tree at all.
    """
    source = os.fspath(path)
    for line_number, text in bracketed_groups(path, skip):
        try:
            yield parse_bracketed(text, source, line_number)
        except InputError as error:
            raise_or_skip(error, skip)


def bracketed_groups(path: PathLike, skip: Optional[SkipCounter] = None) -> Iterator[tuple[int, str]]:
    """The balanced bracket groups of a file, unparsed: `(first line, text)` each.

    One group per tree, so a caller that pairs trees with sentences stays
    aligned when it skips a tree that does not parse. Errors of the file's
    bracket structure are those of `read_bracketed`.
    """
    source = os.fspath(path)
    depth, start_line, pieces, found = 0, 0, [], False
    for line_number, line in io_utils.read_lines(path):
        piece_start = 0
        for match in _BRACKET_OR_TEXT.finditer(line):
            symbol = match.group()
            if depth == 0:
                if symbol == "(":
                    depth, start_line, pieces, piece_start = 1, line_number, [], match.start()
                    found = True
                else:
                    what = "an unmatched ')'" if symbol == ")" else f"the text {symbol!r} outside brackets"
                    message = f"{what} at column {match.start() + 1}"
                    raise_or_skip(InputError(source, line_number, message, reason="bad brackets"), skip)
                continue
            depth += {"(": 1, ")": -1}.get(symbol, 0)
            if depth == 0:
                pieces.append(line[piece_start : match.end()])
                yield start_line, "\n".join(pieces)
        if depth > 0:
            pieces.append(line[piece_start:])
            piece_start = 0
    if depth > 0:
        raise_or_skip(
            InputError(
                source,
                start_line,
                f"the tree starting on this line is not closed at the end of the file "
                f"({depth} bracket(s) open)",
                reason="bad brackets",
            ),
            skip,
        )
    if not found:
        raise InputError(source, None, "no bracketed tree found", reason="no trees")


# ---------------------------------------------------------------------------
# Bracketed trees of sentences whose words are known (the source side of a
# problem), and their storage as per-constituent features.

#: The CoNLL-U comment that holds a sentence's bracketed tree (as stanza writes it).
CONSTITUENCY_COMMENT = "constituency"
#: Penn Treebank escapes of brackets, which cannot stand bare in bracketed text.
PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}


def max_constituents(num_tokens: int) -> int:
    """The most constituents a stored tree of `num_tokens` words may have: 2n + 2.

    A tree without unary chains has at most 2n - 1 constituents; batches
    keep room for 2 (n + 1) (`docs/design.md`, `src_const_*`).
    """
    return 2 * num_tokens + 2


def sentence_tree(text: str, tokens: Sequence[str], source_name: str, line: int) -> ConstituencyTree:
    """Parses the bracketed tree of a sentence whose words are `tokens`.

    The tree's leaves must be the sentence's words, in order (Penn escapes
    such as `-LRB-` match the bracket they stand for); the result carries the
    sentence's own words.

    Args:
        text: the bracketed tree.
        tokens: the sentence's words (e.g. its CoNLL-U syntactic words).
        source_name, line: where `text` is, for error messages.

    Raises:
        InputError: naming `source_name` and `line`: malformed brackets, a
            word mismatch, or more than `max_constituents` constituents.
    """
    tree = parse_bracketed(text, source_name, line)
    words = [PTB_ESCAPES.get(word, word) for word in tree.tokens]
    tokens = tuple(tokens)
    if len(words) != len(tokens):
        raise InputError(source_name, line, f"the bracketed tree has {len(words)} words but the "
                         f"sentence has {len(tokens)}: tree {' '.join(words)!r}, sentence "
                         f"{' '.join(tokens)!r}", reason="tree word mismatch")
    for index, (word, token) in enumerate(zip(words, tokens)):
        if word != token:
            raise InputError(source_name, line, f"word {index + 1} of the bracketed tree is "
                             f"{word!r} but the sentence has {token!r}",
                             reason="tree word mismatch")
    if tree.num_constituents > max_constituents(len(tokens)):
        raise InputError(source_name, line, f"the bracketed tree has {tree.num_constituents} "
                         f"constituents over {len(tokens)} words; at most "
                         f"{max_constituents(len(tokens))} are stored (unary chains?)",
                         reason="too many constituents")
    return ConstituencyTree(tokens=tokens, spans=tree.spans, labels=tree.labels, tags=tree.tags)


def constituent_features(tree: ConstituencyTree) -> tuple[np.ndarray, np.ndarray]:
    """A tree as per-constituent positions: `(starts, ends)`, int32 [m] each.

    Constituent k (pre-order) covers the words `starts[k] .. ends[k]`,
    1-based and inclusive, so 0 can pad. Its label is `tree.labels[k]`.
    """
    return (tree.spans[:, 0] + 1).astype(np.int32), tree.spans[:, 1].astype(np.int32)


def tree_from_constituent_features(starts, ends, labels, num_tokens: int,
                                   tags: Optional[Sequence[str]] = None) -> ConstituencyTree:
    """Rebuilds a tree from `constituent_features` (padding with start 0 is dropped).

    Args:
        starts, ends: int [m'] as `constituent_features` gives them, padded.
        labels: m' labels (any strings).
        num_tokens: n.
        tags: the n word tags, `"_"` when omitted.

    Raises:
        ConstituencyError: the constituents do not form a tree over n words.
    """
    starts, ends = np.asarray(starts), np.asarray(ends)
    kept = np.flatnonzero(starts > 0)
    spans = np.stack([starts[kept] - 1, ends[kept]], axis=1).astype(np.int64)
    return ConstituencyTree(tokens=(UNKNOWN,) * num_tokens, spans=spans,
                            labels=tuple(labels[k] for k in kept), tags=tags)


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
