"""What an attention term is: the hooks `MultiHeadAttention`'s core calls, and what they see.

The core of `MultiHeadAttention` (`layers/attention.py`) projects queries,
keys and values, masks, takes the softmax, applies dropout, keeps the
decoding cache and projects the output. Everything a syntax model changes
about attention is a *term*: an `AttentionTerm` subclass in its own file of
this package, given to the layer in a list. A term may implement any of the
hooks below; the core calls each hook of every term, in list order, at one
fixed point of its computation:

1. `queries_or_keys`: the queries and keys of the heads in
   `query_key_heads` (the core projects those of the other heads);
2. `keys_and_values`: replaces the keys and values of `key_value_heads`
   (after the cache, so they never enter it);
3. `add_to_logits`: a float32 addition to the logits [B, H, Sq, Sk];
4. `scale_logits`: a product with the logits, after every addition;
5. `mask`: changes the boolean mask of some heads, before the softmax;
6. `report`: puts entries into the layer's `details` (logits, ...);
7. `add_to_context`: adds to the per-head context [B, Sq, H, d] before
   the output projection.

Weights are created by `build` on the layer itself (`layer.add_weight`), so
that their paths are the layer's (`.../self_attention/<name>`) whatever the
term; sub-layers and seed generators a term needs are made by `attach` and
handed to the layer, which tracks them. A term instance therefore belongs to
one layer; `get_config` / `from_config` make a fresh one.
"""

import dataclasses
from typing import Any, Mapping, Optional, Sequence

import keras
import numpy as np

from syntax_t2t.backend import Tensor


@dataclasses.dataclass(frozen=True)
class AttentionCall:
    """What the hooks of one `MultiHeadAttention` call may read.

    Attributes:
        query: [B, Sq, D_query] in the compute dtype, the attending sequence.
        inputs: the call's `term_inputs`, by name.
        training: whether the call trains (dropout, random draws).
        token_heads: bool numpy [H]: True for heads whose keys and values are
            the attended tokens' (False where a term supplies its own).
        grouped_query_shape: None, or [B, Sq, ...] when several query rows
            share one precomputed memory row (beam search): tensors then
            have B / g rows of g * Sq queries.
    """

    query: Tensor
    inputs: Mapping[str, Any]
    training: bool
    token_heads: np.ndarray
    grouped_query_shape: Optional[Any] = None


class AttentionTerm:
    """One variant of multi-head attention, applied to some heads of one layer.

    Subclasses set the class attributes, take their own configuration in
    `__init__`, return it from `get_config`, and implement the hooks they
    need (the defaults change nothing). Register each subclass with
    `keras.saving.register_keras_serializable(package="syntax_t2t")` so
    that a layer's config round trip finds it.
    """

    #: How messages name the term's heads ("specialised", "parse", ...).
    kind = "attention term"
    #: The names of the `term_inputs` entries the term reads.
    input_names: tuple = ()
    #: The term needs self-attention: a memory (cross-attention) is refused.
    self_attention_only = False
    #: The term needs the whole attended sequence: a memory or a cache is refused.
    whole_sequence_only = False

    def __init__(self):
        self.layer = None

    # ---------------------------------------------------------- configuration

    @property
    def heads(self) -> tuple:
        """Every head the term applies to (() for all heads alike)."""
        return ()

    @property
    def query_key_heads(self) -> tuple:
        """Heads whose queries and keys `queries_or_keys` gives."""
        return ()

    @property
    def key_value_heads(self) -> tuple:
        """Heads whose keys and values `keys_and_values` replaces."""
        return ()

    def describe(self) -> str:
        """The term in a message, e.g. "specialised heads [0, 2]"."""
        return f"{self.kind} heads {list(self.heads)}"

    def check(self, num_heads: int, where: str) -> None:
        """Raises `ValueError` for a configuration the term cannot run.

        Args:
            num_heads: H of the layer.
            where: the layer, as messages name it.
        """
        for head in self.heads:
            if not 0 <= head < num_heads:
                raise ValueError(f"{where}: head {head} does not exist, "
                                 f"heads are 0 .. {num_heads - 1}")
        if len(set(self.heads)) != len(self.heads):
            raise ValueError(f"{where}: {self.kind} heads {list(self.heads)} repeat a head")

    def check_terms(self, terms: Sequence["AttentionTerm"], where: str) -> None:
        """Raises `ValueError` when the term cannot share its layer with `terms` (all of them)."""

    def check_inputs(self, inputs: Mapping[str, Any], where: str) -> None:
        """Raises `ValueError` when `inputs` (the call's `term_inputs`) lack what the term reads."""
        for name in self.input_names:
            if inputs.get(name) is None:
                raise ValueError(f"{where} has {self.describe()} but got no {name}")

    # -------------------------------------------------------------- lifecycle

    def attach(self, layer: keras.layers.Layer) -> list:
        """Joins `layer`, at its construction.

        Returns:
            The sub-layers and seed generators the term made, which the
            layer tracks (their weights and random states are the layer's).

        Raises:
            ValueError: the term already belongs to a layer.
        """
        if self.layer is not None:
            raise ValueError(f"this {type(self).__name__} already belongs to attention layer "
                             f"{self.layer.name!r}; give each layer its own terms")
        self.layer = layer
        return []

    def build(self, query_shape: Sequence[Any], input_shapes: Mapping[str, Any]) -> None:
        """Creates the term's weights on `self.layer`, inside the layer's `build`.

        Args:
            query_shape: [B, Sq, D_query].
            input_shapes: the shapes of the `term_inputs` entries, by name
                (what the layer was built with).
        """

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "AttentionTerm":
        return cls(**config)

    # ------------------------------------------------------------------ hooks

    def queries_or_keys(self, which: str, source: Tensor, inputs: Mapping[str, Any]) -> Tensor:
        """Queries or keys of `query_key_heads`, [B, S, len(query_key_heads), d].

        Args:
            which: "query" or "key".
            source: [B, S, D] in the compute dtype, the sequence the core
                projects the other heads' queries or keys from.
            inputs: the call's `term_inputs`.
        """
        raise NotImplementedError(f"{type(self).__name__} names query_key_heads "
                                  "but gives no queries_or_keys")

    def keys_and_values(self, call: AttentionCall, keys: Tensor, values: Tensor) -> tuple:
        """`(keys, values)`, each [B, H, Sk, d]: those of `key_value_heads` replaced."""
        return keys, values

    def add_to_logits(self, call: AttentionCall, queries: Tensor, keys: Tensor) -> Optional[Tensor]:
        """A float32 addition to the logits, broadcastable to [B, H, Sq, Sk]; None for none.

        Args:
            call: the call.
            queries: [B, Sq, H, d], already scaled by 1/sqrt(d).
            keys: [B, H, Sk, d].
        """
        return None

    def scale_logits(self, call: AttentionCall, logits: Tensor) -> Tensor:
        """float32 logits [B, H, Sq, Sk], scaled where the term scales them."""
        return logits

    def mask(self, call: AttentionCall, mask: Optional[Tensor]) -> Optional[Tensor]:
        """The boolean mask, changed for the term's heads.

        Args:
            call: the call.
            mask: bool, broadcastable to [B, H, Sq, Sk], True where a query
                may attend to a key; None for no mask.
        """
        return mask

    def report(self, call: AttentionCall, logits: Tensor, probs: Tensor, details: dict) -> None:
        """Adds entries to `details` from the masked float32 logits and the probabilities.

        Args:
            call: the call.
            logits, probs: float32 [B, H, Sq, Sk] (B / g rows of g * Sq
                queries when `call.grouped_query_shape` is set).
            details: the layer's details, changed in place.
        """

    def add_to_context(self, call: AttentionCall, weights: Tensor, context: Tensor) -> Tensor:
        """`context` [B, Sq, H, d] plus the term's part, from the weights [B, H, Sq, Sk].

        The weights are the probabilities after dropout, in the compute
        dtype; a term adds its parts one by one, in its own order.
        """
        return context


def head_indicator(heads: Sequence[int], num_heads: int) -> np.ndarray:
    """bool numpy [H]: True for the heads in `heads`."""
    return np.array([h in heads for h in range(num_heads)])


def serialize_term(term: AttentionTerm) -> dict:
    """A term's config, as `MultiHeadAttention.get_config` stores it."""
    return keras.saving.serialize_keras_object(term)


def deserialize_term(term: Any) -> AttentionTerm:
    """A term from `serialize_term`'s dict (a term passes through).

    Raises:
        TypeError: `term` is neither a term nor a term's config.
    """
    if isinstance(term, AttentionTerm):
        return term
    if isinstance(term, Mapping):
        term = keras.saving.deserialize_keras_object(dict(term), safe_mode=True)
        if isinstance(term, AttentionTerm):
            return term
    raise TypeError(f"expected an AttentionTerm or the config of one, got {type(term).__name__}")
