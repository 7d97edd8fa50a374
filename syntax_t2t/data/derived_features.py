"""Batch features a model derives from other batch features with NumPy, on the host.

Models whose inputs need Python to compute (the binary trees of tree2seq,
MG-SA's syntactic partitions, NSD's constituency distances) declare them as
`DerivedFeatures`. The model never computes them itself: the trainer adds
them to every batch inside the `tf.data` pipeline (`add_to`, on the
pipeline's threads rather than in the compiled step) and the decoder to
every batch it pads (`compute`). This module stays free of TensorFlow at
import time, so that models can be built under any Keras backend.
"""

import dataclasses
from typing import Callable, Mapping, Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class DerivedFeatures:
    """Batch features a model computes from other batch features with NumPy.

    Attributes:
        source_keys: the batch features `function` reads, in argument order.
        keys: the features it returns, in result order.
        function: `(*sources) -> tuple of arrays`, one per key: int32 [B, S]
            arrays from int32 [B, S] ones (the batch's padded length S).
    """

    source_keys: tuple[str, ...]
    keys: tuple[str, ...]
    function: Callable[..., Sequence[np.ndarray]]

    def compute(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The derived features of a batch of NumPy arrays."""
        values = self.function(*(np.asarray(batch[key], np.int32) for key in self.source_keys))
        if len(values) != len(self.keys):
            raise ValueError(f"derived features {self.keys}: the function returned {len(values)} "
                             f"arrays, expected {len(self.keys)}")
        return {key: np.asarray(value, np.int32) for key, value in zip(self.keys, values)}

    def add_to(self, dataset):
        """`dataset` (a `tf.data.Dataset`)'s batches with the derived features added."""
        # tf.data is TensorFlow's: imported here so that models need no TensorFlow.
        import tensorflow as tf

        def add(batch):
            sources = [tf.cast(batch[key], tf.int32) for key in self.source_keys]
            values = tf.numpy_function(
                lambda *arrays: tuple(self.compute(dict(zip(self.source_keys, arrays))).values()),
                sources, [tf.int32] * len(self.keys), stateful=False)
            derived = dict(batch)
            for key, value in zip(self.keys, values):
                value.set_shape(sources[0].shape)
                derived[key] = value
            return derived
        return dataset.map(add, num_parallel_calls=tf.data.AUTOTUNE)


def require_derived(features: Mapping[str, object], keys: Sequence[str], model_name: str,
                    sources: Sequence[str], attribute: str = "derived_features") -> None:
    """Raises a `KeyError` that says how to add the derived `keys` a batch lacks.

    Args:
        features: the batch a model was called with.
        keys: the derived features the model reads from it.
        model_name: names the model in the message.
        sources: the batch features they are derived from.
        attribute: the model's `DerivedFeatures` attribute that computes them.
    """
    missing = [key for key in keys if key not in features]
    if missing:
        raise KeyError(
            f"model {model_name} needs the batch features {', '.join(missing)}, which its "
            f"`{attribute}` compute from {', '.join(sources)} on the host (the trainer and the "
            f"decoder add them; elsewhere use `batch.update(model.{attribute}.compute(batch))`)")


def decoding_derived_features(model: object) -> DerivedFeatures | None:
    """The features `model` derives on the host for decoding, or None.

    The models contract (`models/contract.py`) gives every model
    `decode_derived_features`: what training derives (`derived_features`)
    unless the training derivations read targets (NSD's target distances).
    """
    return model.decode_derived_features


def with_derived_features(model: object, batch: Mapping[str, np.ndarray]) -> dict:
    """A padded NumPy decoding batch plus the features `model` derives from it."""
    derived = decoding_derived_features(model)
    batch = dict(batch)
    if derived is not None:
        batch.update(derived.compute(batch))
    return batch
