"""The decoding caches' fast paths against the plain ones: the very same numbers.

In-place cache writes (`attention_cache.InPlaceCache`) against the select
write, and cross-attention whose memory has one row per sentence (the
beams' queries grouped on it) against the memory repeated per beam. Both
must leave every decoded id and score bit for bit as it was.

In-place caches are TensorFlow's (`syntax_t2t/backend/inplace_cache.py`);
their tests import TensorFlow themselves and are skipped on other backends.
"""

import keras
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops

from syntax_t2t.layers import attention_cache
from syntax_t2t.layers.attention import MultiHeadAttention

pytestmark = pytest.mark.backends

tensorflow_only = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="in-place caches write with TensorFlow's InplaceUpdate; other backends decode "
           "with plain (keys, values) caches")


@tensorflow_only
@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 4), heads=st.integers(1, 3), length=st.integers(1, 9),
       depth=st.integers(1, 5), data=st.data())
def test_in_place_write_stores_what_the_select_write_stores(batch, heads, length, depth, data):
    import tensorflow as tf

    position = data.draw(st.integers(0, length - 1))
    count = data.draw(st.integers(1, length - position))
    rng = np.random.RandomState(batch * 1000 + length * 10 + depth)
    keys, values = (rng.normal(size=(batch, heads, length, depth)).astype("float32")
                    for _ in range(2))
    new_keys, new_values = (rng.normal(size=(batch, heads, count, depth)).astype("float32")
                            for _ in range(2))
    written = [attention_cache.write_in_place(tf.constant(old), position, tf.constant(new))
               for old, new in ((keys, new_keys), (values, new_values))]
    for old, new, result in zip((keys, values), (new_keys, new_values), written):
        expected = attention_cache.write_at(tf.constant(old), position, tf.constant(new)).numpy()
        np.testing.assert_array_equal(result.numpy(), expected)


@tensorflow_only
def test_in_place_caches_never_share_a_buffer():
    import tensorflow as tf

    # Identical `zeros` may be merged into one tensor by graph optimisation;
    # written in place, two caches would then overwrite each other.
    @tf.function
    def two_caches_written(batch_size):
        caches = [attention_cache.empty_in_place_cache([batch_size, 2, 3, 4], tf.float32)
                  for _ in range(2)]
        return [[attention_cache.write_in_place(part, 1, tf.fill([batch_size, 2, 1, 4], value))
                 for part in cache] for cache, value in zip(caches, (1.0, 2.0))]

    for cache, value in zip(two_caches_written(tf.constant(2)), (1.0, 2.0)):
        for part in cache:
            part = part.numpy()
            np.testing.assert_array_equal(part[:, :, 1], value)
            np.testing.assert_array_equal(np.delete(part, 1, axis=2), 0.0)


@pytest.mark.skipif(keras.backend.backend() == "tensorflow",
                    reason="the refusal of the other backends")
def test_in_place_caches_are_refused_without_tensorflow():
    with pytest.raises(ValueError, match="need the TensorFlow backend.*in_place=False"):
        attention_cache.empty_in_place_cache([1, 2, 3, 4], "float32")


@settings(max_examples=20, deadline=None)
@given(sentences=st.integers(1, 5), beams=st.integers(1, 4), memory_length=st.integers(1, 12),
       heads=st.sampled_from([1, 2, 4]), key_dim=st.sampled_from([4, 16, 64]),
       seed=st.integers(0, 2**16))
def test_grouped_memory_attention_equals_the_memory_repeated_per_beam(
        sentences, beams, memory_length, heads, key_dim, seed):
    rng = np.random.RandomState(seed)
    layer = MultiHeadAttention(heads, key_dim)
    memory = rng.normal(size=(sentences, memory_length, 8)).astype("float32")
    query = rng.normal(size=(sentences * beams, 1, 8)).astype("float32")
    lengths = rng.randint(1, memory_length + 1, size=sentences)
    mask = np.arange(memory_length)[None, None, :] < lengths[:, None, None]
    layer(query, np.repeat(memory, beams, axis=0), attention_mask=np.repeat(mask, beams, axis=0))
    grouped, grouped_details = layer(query, attention_mask=mask,
                                     cache=layer.keys_and_values(memory), return_probs=True)
    repeated, repeated_details = layer(
        query, attention_mask=np.repeat(mask, beams, axis=0),
        cache=layer.keys_and_values(np.repeat(memory, beams, axis=0)), return_probs=True)
    # Equal up to float32 rounding: a matmul may round the last bit differently
    # for a different number of rows (1 ulp, seen with one memory position).
    np.testing.assert_allclose(ops.convert_to_numpy(grouped), ops.convert_to_numpy(repeated),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(grouped_details["probs"]),
                               ops.convert_to_numpy(repeated_details["probs"]), rtol=1e-6, atol=1e-6)


def tiny_transformer(**overrides):
    import tensorflow as tf

    from syntax_t2t import registry
    from syntax_t2t.cli import registration

    registration.import_all()
    hparams = registry.hparams("transformer_tiny")
    hparams.override(dict(hidden_size=32, filter_size=64, num_heads=4, **overrides))
    tf.random.set_seed(3)
    return registry.model("transformer")(hparams, {"inputs": 30, "targets": 40})


@tensorflow_only
def test_in_place_decoding_gives_the_plain_decodings_ids_and_scores():
    import tensorflow as tf

    from syntax_t2t.decoding.fast_decode import decode_batch

    rng = np.random.RandomState(5)
    inputs = rng.randint(4, 30, size=(5, 8)).astype(np.int32)
    inputs[:, -1] = 1
    inputs[1, 4:], inputs[1, 3] = 0, 1  # a shorter sentence
    for overrides in ({}, {"max_relative_position": 3, "position_encoding": "none"}):
        model = tiny_transformer(**overrides)
        for beam_size in (1, 4):
            outputs = [tf.function(lambda features, in_place=in_place: decode_batch(
                model, features, beam_size, alpha=0.6, extra_length=6, in_place_cache=in_place))(
                    {"inputs": tf.constant(inputs)}) for in_place in (False, True)]
            for key in ("ids", "lengths", "scores"):
                np.testing.assert_array_equal(outputs[1][key].numpy(), outputs[0][key].numpy())
