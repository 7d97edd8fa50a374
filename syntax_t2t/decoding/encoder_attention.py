"""Encoder self-attention of a trained model, per sentence (`bin/analyze`, thesis Section 6.3).

`encoder_attention` runs the encoder over source sentences and keeps, per
sentence and layer, the attention probabilities among the positions the
encoder really saw (`<ROOT>` for parse models, the words, `<EOS>`), without
padding. Running a model is decoding's business, so it lives here;
`evaluation.attention.weight_histograms` bins what it returns.
"""

import dataclasses
from typing import Sequence

import keras
import numpy as np

from syntax_t2t.data.derived_features import with_derived_features
from syntax_t2t.decoding.decoder import pad_batch

ROOT_TOKEN, EOS_TOKEN = "<ROOT>", "<EOS>"


@dataclasses.dataclass(frozen=True)
class SentenceAttention:
    """The encoder self-attention of one sentence.

    Attributes:
        tokens: the encoder's positions: `<ROOT>` (parse models), the
            words, `<EOS>`.
        layers: one float32 [heads, n, n] array per encoder layer; row i is
            the distribution of position i's attention over the positions.
    """

    tokens: tuple[str, ...]
    layers: tuple[np.ndarray, ...]


def encoder_attention(model, problem, sources: Sequence, batch_size: int = 32) -> list[SentenceAttention]:
    """The encoder self-attention of every source sentence.

    Args:
        model: a restored model (`encode(..., return_attention=True)`).
        problem: its problem, vocabularies loaded (`encode_source`).
        sources: `DependencyTree`s or token lists, as the model needs them.
        batch_size: sentences per encoder call.

    Returns:
        One `SentenceAttention` per source, in order.
    """
    keys = sorted(model.decode_features)
    prefix = (ROOT_TOKEN,) if model.prefix_root else ()
    results = []
    for start in range(0, len(sources), batch_size):
        chunk = sources[start:start + batch_size]
        encoded = [problem.encode_source(source) for source in chunk]
        # Derived features (MG-SA's partitions, NSD's distances) are the host's to add.
        batch = with_derived_features(model, pad_batch(encoded, keys))
        # convert_to_numpy, not `.numpy()`: JAX arrays have no such method.
        attention = [keras.ops.convert_to_numpy(layer)
                     for layer in model.encode(batch, return_attention=True)["attention"]]
        for row, (source, features) in enumerate(zip(chunk, encoded)):
            words = tuple(getattr(source, "tokens", source))
            size = len(prefix) + len(features["inputs"])
            results.append(SentenceAttention(
                tokens=prefix + words + (EOS_TOKEN,),
                layers=tuple(layer[row, :, :size, :size] for layer in attention)))
    return results
