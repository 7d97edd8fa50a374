"""Word boundaries of subword sources, as the Pascal-paper models read them.

Problems with the `subwords` option store `src_word_position`: for every
source subword the 1-based position of the word it belongs to, 0 for none
(see `syntax_t2t.problem`). Their `src_heads` are the SISA heads over
subwords (`data/subword_syntax.first_subword_heads`): every subword depends on
the first subword of its head word, so a model needs the word positions to
find a word's other subwords (Pascal's middles, SISA's root targets, S&H's
subword tags). With the hparam `source_word_positions` off, every token with
a head is a word of its own, as on word-level problems.
"""

from typing import Any, Optional

from keras import ops

from syntax_t2t.models.contract import Tensor
from syntax_t2t.models.transformer import PAD_ID, Features, fit_length

WORD_POSITION = "src_word_position"


def with_word_positions(model: Any) -> None:
    """Adds `src_word_position` to an instance's feature sets when its hparams read it."""
    if model.hparams.source_word_positions:
        model.train_features = type(model).train_features | {WORD_POSITION}
        model.decode_features = type(model).decode_features | {WORD_POSITION}


def word_positions(model: Any, features: Features, length: Any) -> Optional[Tensor]:
    """`src_word_position` fitted to `length` tokens, or None when the model does not read it.

    Args:
        model: a model whose hparams have `source_word_positions`.
        features: the batch.
        length: S, the number of source tokens (without a `<ROOT>` prefix):
            a Python int or a scalar tensor (`fit_length`).

    Returns:
        int32 [B, S] (0 = no word) or None.

    Raises:
        KeyError: the hparam is on but the batch lacks the feature.
    """
    if not model.hparams.source_word_positions:
        return None
    if WORD_POSITION not in features:
        raise KeyError(f"model {type(model).__name__} reads {WORD_POSITION!r} "
                       f"(source_word_positions=true), but the batch has {sorted(features)}; "
                       f"generate the problem with subwords or set source_word_positions=false")
    return fit_length(features[WORD_POSITION], length, PAD_ID)


def first_positions(words: Tensor) -> Tensor:
    """For every token, the 0-based position of the first token of its word.

    Args:
        words: int [B, S], 1-based word of each token, 0 = none.

    Returns:
        int32 [B, S]; a token without a word gets its own position.
    """
    words = ops.cast(words, "int32")
    length = ops.shape(words)[1]
    indices = ops.arange(length, dtype="int32")
    same_word = ops.logical_and(ops.equal(words[:, :, None], words[:, None, :]),
                                words[:, :, None] > 0)
    # The first position of the word: the smallest index with the same word.
    candidates = ops.where(same_word, indices[None, None, :], length)
    first = ops.min(candidates, axis=-1)
    return ops.where(words > 0, first, indices[None, :])
