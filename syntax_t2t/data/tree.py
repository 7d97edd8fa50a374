"""The dependency tree of one sentence and its validation.

Heads follow the convention of `docs/design.md`: a tree with `n` tokens has
an int array of `n` heads, 1-based, where `0` names the artificial ROOT. ROOT
may have several dependents (Prague a-layers attach both the predicate and the
final punctuation to it, thesis Table 5.1).
"""

import dataclasses
import types
from typing import Mapping, Optional, Sequence

import numpy as np

UNKNOWN = "_"


class TreeError(ValueError):
    """A malformed dependency tree.

    Messages name 1-based token ids only; readers catch this error and add the
    file and line it came from.
    """


def check_heads(heads, tokens: Optional[Sequence[str]] = None) -> np.ndarray:
    """Checks that `heads` describes a tree rooted in the artificial ROOT.

    Args:
        heads: 1-D integer sequence of length n >= 1; `heads[i - 1]` is the
            head of token `i`, `0` is ROOT.
        tokens: optional word forms, only used to make messages readable.

    Returns:
        The heads as a new read-only int32 array.

    Raises:
        TreeError: if `heads` is empty, not integer, out of `[0, n]`, makes a
            token its own head, or contains a cycle.
    """
    array = np.asarray(heads)
    if array.ndim != 1:
        raise TreeError(f"heads must be one-dimensional, got shape {array.shape}")
    n = array.shape[0]
    if n == 0:
        raise TreeError("a tree needs at least one token, got none")
    if array.dtype.kind not in "iu":
        raise TreeError(f"heads must be integers, got dtype {array.dtype}: {array.tolist()}")

    def name(token_id: int) -> str:
        return f"{token_id} {tokens[token_id - 1]!r}" if tokens is not None else str(token_id)

    out_of_range = np.flatnonzero((array < 0) | (array > n))
    if out_of_range.size:
        token_id = int(out_of_range[0]) + 1
        raise TreeError(
            f"token {name(token_id)} has head {int(array[token_id - 1])}, "
            f"outside [0, {n}] (0 = ROOT)"
        )
    own_head = np.flatnonzero(array == np.arange(1, n + 1))
    if own_head.size:
        raise TreeError(f"token {name(int(own_head[0]) + 1)} is its own head")

    # Pointer jumping: after ceil(log2(n + 1)) squarings every node that
    # reaches ROOT points at it; the rest hang on a cycle.
    parent = np.concatenate([[0], array]).astype(np.int64)
    jumped = parent
    for _ in range(int(np.ceil(np.log2(n + 1))) + 1):
        jumped = jumped[jumped]
    stuck = np.flatnonzero(jumped != 0)
    if stuck.size:
        node, seen = int(stuck[0]), []
        while node not in seen:
            seen.append(node)
            node = int(parent[node])
        cycle = seen[seen.index(node):]
        start = cycle.index(min(cycle))
        cycle = cycle[start:] + cycle[:start]
        path = " -> ".join(name(t) for t in cycle + cycle[:1])
        raise TreeError(f"heads contain a cycle: {path} (each arrow points to the head)")

    result = array.astype(np.int32)
    result.setflags(write=False)
    return result


@dataclasses.dataclass(frozen=True, eq=False)
class DependencyTree:
    """One dependency-annotated sentence.

    Attributes:
        tokens: word forms.
        heads: read-only int32 array, 1-based heads, 0 = ROOT.
        labels: dependency labels (UD deprels or PDT afuns).
        lemmas: lemmas, `"_"` when unknown.
        upos: universal POS tags, `"_"` when unknown.
        xpos: language-specific tags (PDT positional tags), `"_"` when unknown.
        comments: sentence-level metadata such as `text`, `parallel_id`.
    """

    tokens: tuple[str, ...]
    heads: np.ndarray
    labels: tuple[str, ...]
    lemmas: tuple[str, ...]
    upos: tuple[str, ...]
    xpos: tuple[str, ...]
    comments: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        tokens = tuple(self.tokens)
        object.__setattr__(self, "tokens", tokens)
        for field in ("labels", "lemmas", "upos", "xpos"):
            values = tuple(getattr(self, field))
            if len(values) != len(tokens):
                raise TreeError(
                    f"{field} has {len(values)} entries but there are {len(tokens)} tokens"
                )
            object.__setattr__(self, field, values)
        if np.ndim(self.heads) == 1 and len(self.heads) != len(tokens):
            raise TreeError(
                f"heads has {len(self.heads)} entries but there are {len(tokens)} tokens"
            )
        object.__setattr__(self, "heads", check_heads(self.heads, tokens))
        object.__setattr__(self, "comments", types.MappingProxyType(dict(self.comments)))

    @classmethod
    def from_heads(
        cls,
        tokens: Sequence[str],
        heads,
        labels: Optional[Sequence[str]] = None,
        lemmas: Optional[Sequence[str]] = None,
        upos: Optional[Sequence[str]] = None,
        xpos: Optional[Sequence[str]] = None,
        comments: Optional[Mapping[str, str]] = None,
    ) -> "DependencyTree":
        """Builds a tree, filling every omitted annotation with `"_"`."""
        unknown = (UNKNOWN,) * len(tokens)
        return cls(
            tokens=tuple(tokens),
            heads=heads,
            labels=unknown if labels is None else labels,
            lemmas=unknown if lemmas is None else lemmas,
            upos=unknown if upos is None else upos,
            xpos=unknown if xpos is None else xpos,
            comments={} if comments is None else comments,
        )

    def __reduce__(self):
        # `comments` is a read-only view, which pickle cannot copy: rebuild
        # from a plain dict (datagen workers exchange trees by pickle).
        return (type(self), (self.tokens, self.heads, self.labels, self.lemmas, self.upos,
                             self.xpos, dict(self.comments)))

    def __len__(self) -> int:
        return len(self.tokens)

    def _key(self):
        return (
            self.tokens,
            tuple(self.heads.tolist()),
            self.labels,
            self.lemmas,
            self.upos,
            self.xpos,
            tuple(sorted(self.comments.items())),
        )

    def __eq__(self, other) -> bool:
        if not isinstance(other, DependencyTree):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())
