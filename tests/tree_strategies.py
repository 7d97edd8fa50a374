"""Hypothesis strategies shared by the tree tests: dependency heads and constituency trees."""

from hypothesis import strategies as st

from syntax_t2t.data.constituency import ConstituencyTree


@st.composite
def dependency_heads(draw, max_tokens=12):
    """Heads (1-based, 0 = ROOT) of a random dependency tree of 1 to `max_tokens` tokens.

    In a random order, each token attaches to ROOT or to a token placed
    before it: that never closes a cycle, ROOT may get several dependents
    and the tree may be non-projective.
    """
    n = draw(st.integers(1, max_tokens))
    order = draw(st.permutations(range(1, n + 1)))
    heads = [0] * n
    for rank, token in enumerate(order):
        heads[token - 1] = draw(st.sampled_from([0, *order[:rank]]))
    return heads


@st.composite
def constituency_trees(draw, max_tokens=12, heads=False):
    """Random trees: spans split recursively; some groups stay flat, some get unary chains.

    Args:
        max_tokens: the longest sentence drawn.
        heads: also draw a head token per constituent (or none for all of
            them); any token of a constituent may be its head.
    """
    n = draw(st.integers(1, max_tokens))
    spans, pending = [(0, n)], [(0, n)]
    while pending:
        start, end = pending.pop()
        if end - start < 2:
            continue
        cuts = sorted(draw(st.sets(st.integers(start + 1, end - 1), min_size=1)))
        bounds = [start, *cuts, end]
        for a, b in zip(bounds, bounds[1:]):
            if draw(st.booleans()):
                spans.extend([(a, b)] * draw(st.integers(1, 2)))
                pending.append((a, b))
    labels = [draw(st.sampled_from(["NP", "VP", "PP", "S"])) for _ in spans]
    head_tokens = None
    if heads:
        with_heads = draw(st.booleans())
        head_tokens = [draw(st.integers(s, e - 1)) if with_heads else -1 for s, e in spans]
    tokens, tags = [f"w{i}" for i in range(n)], [f"T{i}" for i in range(n)]
    return ConstituencyTree.from_spans(tokens, spans, labels, tags=tags, head_tokens=head_tokens)
