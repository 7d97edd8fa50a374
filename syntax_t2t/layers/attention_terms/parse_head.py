"""A parse head (thesis 4.1-4.2), as an attention term: one head's logits, returned.

A model reads row i of the head's attention as the distribution of token i's
syntactic head and trains the logits against gold heads; the term only
hands them out, masked and float32, as `details["head_logits"]`.
"""

import keras
from keras import ops

from syntax_t2t.backend import Tensor
from syntax_t2t.layers.attention_terms.base import AttentionCall, AttentionTerm


@keras.saving.register_keras_serializable(package="syntax_t2t")
class ParseHead(AttentionTerm):
    """Returns the masked float32 logits of one head as `details["head_logits"]` [B, Sq, Sk].

    Args:
        head: the head whose logits are returned.
    """

    kind = "parse"

    def __init__(self, head: int):
        super().__init__()
        self.head = int(head)

    @property
    def heads(self) -> tuple:
        return (self.head,)

    def describe(self) -> str:
        return f"parse head {self.head}"

    def report(self, call: AttentionCall, logits: Tensor, probs: Tensor, details: dict) -> None:
        head_logits = logits[:, self.head]
        shape = call.grouped_query_shape
        details["head_logits"] = (head_logits if shape is None else ops.reshape(
            head_logits, (shape[0], shape[1], -1)))

    def get_config(self) -> dict:
        return {"head": self.head}
