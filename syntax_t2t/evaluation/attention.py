"""The histograms of encoder self-attention weights of thesis Section 6.3.

`weight_histograms` bins the attention probabilities of sentences (as
`decoding.encoder_attention.encoder_attention` returns them) as Figures 6.1
and 6.2 do: all heads of a layer together, or each head alone, in bins of
width 0.1.
"""

from typing import Optional, Protocol, Sequence

import numpy as np

BIN_EDGES = np.linspace(0.0, 1.0, 11)


class SentenceLayers(Protocol):
    """One sentence's attention: a float [heads, n, n] array per encoder layer."""

    layers: tuple[np.ndarray, ...]


def weight_histograms(sentences: Sequence[SentenceLayers], layer: Optional[int] = None) -> np.ndarray:
    """Counts of attention weights in the bins `BIN_EDGES` ([0, 0.1), ..., [0.9, 1.0]).

    Args:
        sentences: from `decoding.encoder_attention.encoder_attention`.
        layer: None: one histogram per layer over all its heads (Figure
            6.1); an index: one histogram per head of that layer (Figure 6.2).

    Returns:
        int64 [layers or heads, 10].
    """
    if layer is None:
        num_layers = len(sentences[0].layers)
        return np.stack([
            np.histogram(np.concatenate([s.layers[i].ravel() for s in sentences]), BIN_EDGES)[0]
            for i in range(num_layers)])
    num_heads = sentences[0].layers[layer].shape[0]
    return np.stack([
        np.histogram(np.concatenate([s.layers[layer][h].ravel() for s in sentences]), BIN_EDGES)[0]
        for h in range(num_heads)])
