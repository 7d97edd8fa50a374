"""The terms of `MultiHeadAttention`: each syntax variant of attention in its own file.

`base.py` says what a term is (its hooks and the order the core calls them
in); each other module is one term. Importing the package registers every
term for `MultiHeadAttention`'s config round trip.
"""

from syntax_t2t.layers.attention_terms.base import (AttentionCall, AttentionTerm,
                                                    deserialize_term, serialize_term)
from syntax_t2t.layers.attention_terms.biaffine_head import BiaffineHead
from syntax_t2t.layers.attention_terms.label_bias import LabelBias
from syntax_t2t.layers.attention_terms.parent_scaled_heads import ParentScaledHeads
from syntax_t2t.layers.attention_terms.parse_head import ParseHead
from syntax_t2t.layers.attention_terms.phrase_heads import PhraseHeads
from syntax_t2t.layers.attention_terms.specialized_heads import SpecializedHeads

__all__ = [
    "AttentionCall",
    "AttentionTerm",
    "BiaffineHead",
    "LabelBias",
    "ParentScaledHeads",
    "ParseHead",
    "PhraseHeads",
    "SpecializedHeads",
    "deserialize_term",
    "serialize_term",
]
