"""Constituency (phrase-structure) trees over the tokens of one sentence.

A `ConstituencyTree` stores its constituents as half-open token spans in
pre-order; the words are its leaves. Part-of-speech preterminals are not
constituents: a bracket whose only child is a word, `(NN talk)`, gives that
word its tag. This is the view that the syntactic distances (Shen et al. 2018;
Gómez-Rodríguez and Vilares 2018), the multi-granularity phrase partitions and
the binary Tree-LSTM encoder all share.

Trees come from Penn-style bracketed text (`data/bracketed.py`) or are
derived from dependency trees (`data/dependency_phrases.py`). Empty elements
(`-NONE-` preterminals such as traces) are removed together with the
constituents they leave empty, and an outermost unary wrapper labelled `""`
(the Penn Treebank's `( (S ...) )`), `ROOT` or `TOP` is dropped, so that
level 1 of every tree holds the sentence's immediate constituents.
"""

import dataclasses
import functools
from typing import TYPE_CHECKING, NamedTuple, Optional, Sequence

import numpy as np

from syntax_t2t.data.tree import UNKNOWN

if TYPE_CHECKING:
    # Only reading and writing bracketed text needs nltk, imported there: the
    # models that derive phrase structures from this module build without it.
    import nltk

EMPTY_ELEMENT = "-NONE-"
ROOT_WRAPPER_LABELS = frozenset({"", "ROOT", "TOP"})
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
    def from_nltk(cls, tree: "nltk.Tree") -> "ConstituencyTree":
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

    def to_nltk(self) -> "nltk.Tree":
        """The tree as an `nltk.Tree`; tagged words become preterminals."""
        import nltk

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
    import nltk

    return isinstance(node, nltk.Tree) and len(node) == 1 and isinstance(node[0], str)


def _from_nltk(tree: "nltk.Tree") -> ConstituencyTree:
    import nltk

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
