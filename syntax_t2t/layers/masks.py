"""Boolean attention masks (True = may attend), broadcastable to [B, Sq, Sk]."""

from keras import ops

from syntax_t2t.backend import Tensor

PAD_ID = 0


def padding_mask(ids: Tensor) -> Tensor:
    """Which positions hold a token (design.md: id 0 is padding).

    Args:
        ids: int [B, S].

    Returns:
        bool [B, S].
    """
    return ops.not_equal(ids, PAD_ID)


def key_padding_mask(ids: Tensor) -> Tensor:
    """Mask that hides padded keys from every query.

    Args:
        ids: int [B, Sk].

    Returns:
        bool [B, 1, Sk].
    """
    return padding_mask(ids)[:, None, :]


def causal_mask(query_length: Tensor, key_length: Tensor = None,
                query_offset: Tensor = 0) -> Tensor:
    """Mask that lets query i see keys 0 .. i + offset only.

    Args:
        query_length: Sq, an int (or, in TensorFlow graphs, a scalar tensor).
        key_length: Sk, by default Sq.
        query_offset: position of the first query among the keys (the
            decoding step when keys come from a cache).

    Returns:
        bool [1, Sq, Sk].
    """
    key_length = query_length if key_length is None else key_length
    queries = ops.arange(query_length, dtype="int32") + ops.cast(query_offset, "int32")
    keys = ops.arange(key_length, dtype="int32")
    return (keys[None, :] <= queries[:, None])[None]
