"""The gold of a supervised attention head, in the frame of its logits, and attachment counts.

Three gold kinds (`models/contract.py`'s `GOLD_KINDS`), each an int32
[B, S'] of head positions with -1 for rows that are not scored:

* `"dependency_heads"` (DepParse): the gold tree's heads over the
  `<ROOT>`-prefixed source: token i sits at position i, and its head value
  (0 = ROOT) is already a position; ROOT, `<EOS>` and padding rows get -1.
* `"previous_token"` (DiagonalParse, thesis 4.2): token i's head is
  position i - 1 (token 1's is ROOT); no trees needed.
* `"parents"` (SISA): in the unprefixed source, the first subword of the
  parent word (`models/sisa.parent_targets`).
"""

from typing import Any

from keras import ops

from syntax_t2t.models import word_positions
from syntax_t2t.models.contract import (DEPENDENCY_HEADS, PARENTS, PREVIOUS_TOKEN, Features,
                                        Tensor)
from syntax_t2t.models.sisa import parent_targets
from syntax_t2t.models.transformer import EOS_ID, PAD_ID


def dependency_head_positions(model: Any, features: Features, source_ids: Tensor) -> Tensor:
    """`src_heads` as positions of the `<ROOT>`-prefixed `source_ids` [B, S + 1]; -1 for ROOT."""
    heads = model.source_heads(features, source_ids)
    return ops.pad(heads, [[0, 0], [1, 0]], constant_values=-1)


def previous_token_positions(source_ids: Tensor) -> Tensor:
    """Position p - 1 for each word at position p >= 1 of the `<ROOT>`-prefixed `source_ids`."""
    words = ops.cast(source_ids, "int32")[:, 1:]
    is_word = ops.logical_and(ops.not_equal(words, PAD_ID), ops.not_equal(words, EOS_ID))
    previous = ops.arange(ops.shape(words)[1], dtype="int32")[None, :]
    heads = ops.where(is_word, previous, -1)
    return ops.pad(heads, [[0, 0], [1, 0]], constant_values=-1)


def parent_positions(model: Any, features: Features, source_ids: Tensor) -> Tensor:
    """SISA's gold: the parent's first subword in the unprefixed `source_ids` [B, S]."""
    heads = model.source_heads(features, source_ids)
    words = word_positions.word_positions(model, features, ops.shape(source_ids)[1])
    return parent_targets(heads, words)


def gold_head_positions(model: Any, features: Features) -> Tensor:
    """The gold of `model.supervised_head()`, one position per row of its logits.

    Args:
        model: a model (`models/contract.py`) with a supervised head.
        features: the batch; `src_heads` for the tree golds.

    Returns:
        int32 [B, S'], -1 where a row is not scored.

    Raises:
        ValueError: the model supervises no head.
        KeyError: the batch lacks the tree the gold is read from.
    """
    head = model.supervised_head()
    if head is None:
        raise ValueError(f"model {type(model).__name__} supervises no attention head")
    source_ids = model.source_ids(features)
    if head.gold == DEPENDENCY_HEADS:
        return dependency_head_positions(model, features, source_ids)
    if head.gold == PREVIOUS_TOKEN:
        return previous_token_positions(source_ids)
    if head.gold == PARENTS:
        return parent_positions(model, features, source_ids)
    raise ValueError(f"unknown gold kind {head.gold!r}")


def gold_positions_from_heads(src_heads: Tensor, length: Any) -> Tensor:
    """`src_heads` [B, S] (-1 = no word) as gold positions [B, length] of the prefixed source.

    Word `i` (1-based) sits at position `i`, and its head value is already a
    position; position 0 (ROOT) and positions past the words get -1.
    """
    positions = ops.pad(ops.cast(src_heads, "int32"), [[0, 0], [1, 0]], constant_values=-1)
    # `length` more positions always suffice, and their number is static
    # wherever `length` is (JAX pads by static widths only).
    positions = ops.pad(positions, [[0, 0], [0, length]], constant_values=-1)
    return positions[:, :length]


def attachment_counts(logits: Tensor, gold_positions: Tensor) -> dict[str, Tensor]:
    """Unlabelled attachments: each row's argmax head against its gold head position.

    Args:
        logits: float [B, S', S'], row p scoring the candidate heads of position p.
        gold_positions: int [B, S'], -1 where nothing is scored.

    Returns:
        `{"correct_heads", "words"}`, float32 scalars: UAS = correct / words.
    """
    gold_positions = ops.cast(gold_positions, "int32")
    predicted = ops.cast(ops.argmax(logits, axis=-1), "int32")
    scored = ops.greater_equal(gold_positions, 0)
    correct = ops.logical_and(scored, ops.equal(predicted, gold_positions))
    return {"correct_heads": ops.sum(ops.cast(correct, "float32")),
            "words": ops.sum(ops.cast(scored, "float32"))}
