"""Boolean attention masks (True = may attend), broadcastable to [B, Sq, Sk]."""

import tensorflow as tf

PAD_ID = 0


def padding_mask(ids):
    """Which positions hold a token (design.md: id 0 is padding).

    Args:
        ids: int [B, S].

    Returns:
        bool [B, S].
    """
    return tf.not_equal(ids, PAD_ID)


def key_padding_mask(ids):
    """Mask that hides padded keys from every query.

    Args:
        ids: int [B, Sk].

    Returns:
        bool [B, 1, Sk].
    """
    return padding_mask(ids)[:, None, :]


def causal_mask(query_length, key_length=None, query_offset=0):
    """Mask that lets query i see keys 0 .. i + offset only.

    Args:
        query_length: Sq.
        key_length: Sk, by default Sq.
        query_offset: position of the first query among the keys (the
            decoding step when keys come from a cache).

    Returns:
        bool [1, Sq, Sk].
    """
    key_length = query_length if key_length is None else key_length
    queries = tf.range(query_length, dtype=tf.int32) + tf.cast(query_offset, tf.int32)
    keys = tf.range(key_length, dtype=tf.int32)
    return (keys[None, :] <= queries[:, None])[None]
