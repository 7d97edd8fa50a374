"""MultiHeadAttention and the label-bias kernels against naive per-pair references."""

import numpy as np
import pytest
import tensorflow as tf

from syntax_t2t.layers import label_bias, masks
from syntax_t2t.layers.attention import MultiHeadAttention

B, S, H, D_K, D_SPEC = 2, 5, 3, 4, 6
WIDTH = H * D_K
LABELS = {"relative": 5, "tree": 7}


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def random_labels(rng, batch=B, length=S):
    return {"relative": rng.integers(0, LABELS["relative"], (length, length)),
            "tree": rng.integers(0, LABELS["tree"], (batch, length, length))}


def weights_of(layer):
    return {w.path.split("/")[-1]: np.asarray(w.numpy(), np.float64) for w in layer.weights}


def naive_attention(layer, x, labels=None, mask=None, spec_inputs=None):
    """Thesis eq. 3.3 written per head and pair, with Shaw et al.'s value biases."""
    w = weights_of(layer)
    labels = {name: np.broadcast_to(labels[name], (x.shape[0], x.shape[1], x.shape[1]))
              for name in layer.label_vocab_sizes} if labels else {}
    regular = [h for h in range(layer.num_heads) if h not in layer.spec_heads]
    batch, length, _ = x.shape
    out = np.zeros((batch, length, w["output_kernel"].shape[-1]))
    probs = np.zeros((batch, layer.num_heads, length, length))
    for b in range(batch):
        for h in range(layer.num_heads):
            if h in layer.spec_heads:
                s = layer.spec_heads.index(h)
                q = spec_inputs[b] @ w["spec_query_kernel"][:, s]
                k = spec_inputs[b] @ w["spec_key_kernel"][:, s]
            else:
                r = regular.index(h)
                q = x[b] @ w["query_kernel"][:, r]
                k = x[b] @ w["key_kernel"][:, r]
            v = x[b] @ w["value_kernel"][:, h]
            logits = np.zeros((length, length))
            for i in range(length):
                for j in range(length):
                    key = k[j].copy()
                    for name in layer.label_vocab_sizes:
                        key += w[f"{name}_key_embeddings"][labels[name][b, i, j]]
                    logits[i, j] = q[i] @ key / np.sqrt(layer.key_dim)
                    if mask is not None and not mask[b, i, j]:
                        logits[i, j] = -1e9
            a = np.exp(logits - logits.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            probs[b, h] = a
            for i in range(length):
                context = np.zeros(layer.key_dim)
                for j in range(length):
                    value = v[j].copy()
                    for name in layer.value_bias_labels:
                        value += w[f"{name}_value_embeddings"][labels[name][b, i, j]]
                    context += a[i, j] * value
                out[b, i] += context @ w["output_kernel"][h]
    return out, probs


def make_layer(**kwargs):
    layer = MultiHeadAttention(H, D_K, **kwargs)
    spec = (None, None, D_SPEC) if kwargs.get("spec_heads") else None
    layer.build((None, None, WIDTH), spec_inputs_shape=spec)
    return layer


def randomize(layer, rng):
    """Label tables start as Glorot noise; make every weight clearly non-zero."""
    for weight in layer.weights:
        weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))


# ---------------------------------------------------------------------------
# The label-bias kernels.


@pytest.mark.parametrize("num_labels", [3, 40])
@pytest.mark.parametrize("static_shapes", [True, False])
def test_label_logits_equal_per_pair_dot_products(rng, num_labels, static_shapes):
    queries = rng.normal(size=(B, S, H, D_K)).astype("float32")
    table = rng.normal(size=(num_labels, D_K)).astype("float32")
    labels = rng.integers(0, num_labels, (B, S, S + 2)).astype("int32")
    if static_shapes:
        got = label_bias.label_logits(queries, [table], [labels]).numpy()
    else:  # shapes unknown when traced, as in a train step
        logits = tf.function(label_bias.label_logits, input_signature=[
            tf.TensorSpec([None, None, H, D_K]), [tf.TensorSpec([num_labels, D_K])],
            [tf.TensorSpec([None, None, None], tf.int32)]])
        got = logits(queries, [table], [labels]).numpy()
    assert got.shape == (B, H, S, S + 2)
    for b, h, i, j in np.ndindex(*got.shape):
        expected = queries[b, i, h] @ table[labels[b, i, j]]
        assert got[b, h, i, j] == pytest.approx(expected, rel=1e-5, abs=1e-5)


def test_label_logits_and_gradients_of_two_kinds_equal_those_of_per_pair_embeddings(rng):
    queries = tf.constant(rng.normal(size=(B, S, H, D_K)), tf.float32)
    table = tf.constant(rng.normal(size=(9, D_K)), tf.float32)
    labels = tf.constant(rng.integers(0, 9, (B, S, S)), tf.int32)
    weights = tf.constant(rng.normal(size=(B, H, S, S)), tf.float32)

    other_table = tf.constant(rng.normal(size=(4, D_K)), tf.float32)
    other_labels = tf.constant(rng.integers(0, 4, (B, S, S)), tf.int32)

    def naive(queries, tables, labels):  # the thesis's [B, Sq, Sk, d] embeddings
        return sum(tf.einsum("bqhd,bqkd->bhqk", queries, tf.gather(table, ids))
                   for table, ids in zip(tables, labels))

    gradients = []
    for logits in (label_bias.label_logits, naive):
        with tf.GradientTape() as tape:
            tape.watch([queries, table, other_table])
            values = logits(queries, [table, other_table], [labels, other_labels])
            loss = tf.reduce_sum(weights * values)
        gradients.append([values.numpy()] + [
            tf.convert_to_tensor(g).numpy()
            for g in tape.gradient(loss, [queries, table, other_table])])
    for got, expected in zip(*gradients):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_label_values_equal_per_pair_sums(rng):
    probs = rng.random((B, H, S, S + 2)).astype("float32")
    table = rng.normal(size=(7, D_K)).astype("float32")
    labels = rng.integers(0, 7, (B, S, S + 2))
    got = label_bias.label_values(probs, table, labels).numpy()
    assert got.shape == (B, S, H, D_K)
    for b, i, h in np.ndindex(B, S, H):
        expected = sum(probs[b, h, i, j] * table[labels[b, i, j]] for j in range(S + 2))
        np.testing.assert_allclose(got[b, i, h], expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# The layer against the naive reference.


@pytest.mark.parametrize("config", [
    {},
    {"label_vocab_sizes": {"tree": 7}},
    {"label_vocab_sizes": LABELS, "value_bias_labels": ["relative"]},
    {"label_vocab_sizes": LABELS, "spec_heads": [2, 0]},
    {"spec_heads": [0, 1, 2]},
])
def test_layer_equals_naive_reference(rng, config):
    layer = make_layer(**config)
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    spec = rng.normal(size=(B, S, D_SPEC)).astype("float32")
    labels = random_labels(rng)
    ids = np.array([[5, 6, 7, 1, 0], [5, 6, 7, 8, 1]])
    mask = np.broadcast_to(masks.key_padding_mask(ids).numpy(), (B, S, S))
    out, details = layer(x, attention_mask=mask, labels=labels,
                         spec_inputs=spec if config.get("spec_heads") else None,
                         return_probs=True)
    expected_out, expected_probs = naive_attention(layer, x, labels, mask, spec)
    np.testing.assert_allclose(details["probs"], expected_probs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out, expected_out, rtol=1e-4, atol=1e-4)


def test_zero_label_embeddings_give_plain_attention(rng):
    biased = make_layer(label_vocab_sizes=LABELS, value_bias_labels=["relative", "tree"])
    plain = make_layer()
    randomize(plain, rng)
    for weight in biased.weights:
        name = weight.path.split("/")[-1]
        if name.endswith("_embeddings"):
            weight.assign(np.zeros(weight.shape, "float32"))
        else:
            weight.assign(getattr(plain, name))
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    expected, _ = plain(x)
    got, _ = biased(x, labels=random_labels(rng))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # ... and non-zero embeddings do change the result.
    biased.key_label_tables["tree"].assign(rng.normal(size=(7, D_K)).astype("float32"))
    changed, _ = biased(x, labels=random_labels(rng))
    assert np.abs(changed - expected).max() > 1e-3


def test_padding_does_not_change_real_positions(rng):
    layer = make_layer(label_vocab_sizes=LABELS, value_bias_labels=["tree"], spec_heads=[1])
    randomize(layer, rng)
    real, padded = 4, 7
    x = rng.normal(size=(1, padded, WIDTH)).astype("float32")
    spec = rng.normal(size=(1, padded, D_SPEC)).astype("float32")
    labels = random_labels(rng, batch=1, length=padded)
    short_labels = {"relative": labels["relative"][:real, :real],
                    "tree": labels["tree"][:, :real, :real]}
    short, _ = layer(x[:, :real], labels=short_labels, spec_inputs=spec[:, :real])
    ids = np.array([[4, 5, 6, 1, 0, 0, 0]])
    long, _ = layer(x, labels=labels, spec_inputs=spec, attention_mask=masks.key_padding_mask(ids))
    np.testing.assert_allclose(long[:, :real], short, rtol=1e-5, atol=1e-5)


def test_causal_mask_hides_the_future(rng):
    layer = make_layer(label_vocab_sizes={"relative": 5})
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    changed = x.copy()
    changed[:, 3:] += 1.0
    labels = {"relative": masks.causal_mask(S)[0].numpy().astype("int32")}
    first, _ = layer(x, attention_mask=masks.causal_mask(S), labels=labels)
    second, _ = layer(changed, attention_mask=masks.causal_mask(S), labels=labels)
    np.testing.assert_allclose(first[:, :3], second[:, :3], rtol=1e-6, atol=1e-6)
    assert np.abs(first[:, 3:] - second[:, 3:]).max() > 1e-3


def test_specialised_head_looks_only_at_tags(rng):
    layer = make_layer(spec_heads=[1])
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    tags = rng.normal(size=(B, S, D_SPEC)).astype("float32")
    _, base = layer(x, spec_inputs=tags, return_probs=True)
    _, new_tokens = layer(x + rng.normal(size=x.shape).astype("float32"), spec_inputs=tags,
                          return_probs=True)
    _, new_tags = layer(x, spec_inputs=tags + rng.normal(size=tags.shape).astype("float32"),
                        return_probs=True)
    np.testing.assert_allclose(new_tokens["probs"][:, 1], base["probs"][:, 1], atol=1e-6)
    assert np.abs(new_tokens["probs"][:, 0] - base["probs"][:, 0]).max() > 1e-3
    assert np.abs(new_tags["probs"][:, 1] - base["probs"][:, 1]).max() > 1e-3
    np.testing.assert_allclose(new_tags["probs"][:, 0], base["probs"][:, 0], atol=1e-6)


def test_parse_head_returns_that_heads_masked_logits(rng):
    layer = make_layer(parse_head=2, label_vocab_sizes={"tree": 7})
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    ids = np.array([[3, 5, 6, 1, 0], [3, 5, 6, 7, 1]])
    _, details = layer(x, attention_mask=masks.key_padding_mask(ids),
                       labels=random_labels(rng), return_probs=True)
    head_logits = details["head_logits"]
    assert head_logits.dtype == tf.float32 and head_logits.shape == (B, S, S)
    np.testing.assert_allclose(tf.nn.softmax(head_logits), details["probs"][:, 2], atol=1e-6)
    assert (head_logits.numpy()[0, :, 4] < -1e8).all()


# ---------------------------------------------------------------------------
# Decoding caches.


def test_incremental_self_attention_equals_full_causal(rng):
    layer = make_layer(label_vocab_sizes={"relative": 5}, value_bias_labels=["relative"])
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    full, _ = layer(x, attention_mask=masks.causal_mask(S),
                    labels={"relative": _relative(S, S, 0)})
    cache = (tf.zeros([B, H, S, D_K]), tf.zeros([B, H, S, D_K]))
    for step in range(S):
        out, details = layer(
            x[:, step:step + 1], attention_mask=masks.causal_mask(1, S, step),
            labels={"relative": _relative(1, S, step)}, cache=cache, cache_update_index=step)
        cache = details["cache"]
        np.testing.assert_allclose(out[:, 0], full[:, step], rtol=1e-5, atol=1e-5)


def _relative(query_length, key_length, offset):
    from syntax_t2t.layers.tree_labels import relative_position_labels
    return relative_position_labels(query_length, key_length, 2, offset)


def test_precomputed_memory_equals_memory(rng):
    layer = MultiHeadAttention(H, D_K)
    layer.build((None, None, WIDTH), (None, None, 10))
    randomize(layer, rng)
    query = rng.normal(size=(B, 3, WIDTH)).astype("float32")
    memory = rng.normal(size=(B, S, 10)).astype("float32")
    mask = masks.key_padding_mask(np.array([[4, 4, 1, 0, 0], [4, 4, 4, 4, 1]]))
    direct, _ = layer(query, memory, attention_mask=mask)
    cached, _ = layer(query, attention_mask=mask, cache=layer.keys_and_values(memory))
    np.testing.assert_allclose(cached, direct, rtol=1e-6, atol=1e-6)
    keys, _ = layer.keys_and_values(memory)
    with pytest.raises(ValueError, match=r"a \(keys, values\) pair"):
        layer(query, attention_mask=mask, cache=keys)


def test_cache_write_puts_the_new_rows_at_the_position_and_nothing_else(rng):
    from syntax_t2t.layers.attention import _write_at
    cache = rng.normal(size=(3, 2, 7, 4)).astype("float32")
    for count in (1, 2):  # one position (decoding) is broadcast, more are padded
        new = rng.normal(size=(3, 2, count, 4)).astype("float32")
        written = _write_at(tf.constant(cache), 4, tf.constant(new)).numpy()
        expected = cache.copy()
        expected[:, :, 4:4 + count] = new
        np.testing.assert_array_equal(written, expected)


# ---------------------------------------------------------------------------
# Configuration, errors, precision, XLA.


def test_get_config_round_trip(rng):
    layer = make_layer(label_vocab_sizes=LABELS, value_bias_labels=["tree"], spec_heads=[2],
                       parse_head=0, dropout=0.1, name="attention")
    clone = MultiHeadAttention.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    clone.build((None, None, WIDTH), spec_inputs_shape=(None, None, D_SPEC))
    clone.set_weights(layer.get_weights())
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    spec = rng.normal(size=(B, S, D_SPEC)).astype("float32")
    labels = random_labels(rng)
    np.testing.assert_array_equal(clone(x, labels=labels, spec_inputs=spec)[0],
                                  layer(x, labels=labels, spec_inputs=spec)[0])


def test_clear_errors(rng):
    with pytest.raises(ValueError, match="head 3 does not exist"):
        MultiHeadAttention(H, D_K, spec_heads=[3])
    with pytest.raises(ValueError, match="not in label_vocab_sizes"):
        MultiHeadAttention(H, D_K, value_bias_labels=["relative"])
    layer = make_layer(label_vocab_sizes=LABELS, spec_heads=[0])
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    with pytest.raises(ValueError, match=r"needs labels \['tree'\]"):
        layer(x, labels={"relative": random_labels(rng)["relative"]},
              spec_inputs=np.zeros((B, S, D_SPEC), "float32"))
    with pytest.raises(ValueError, match="got no spec_inputs"):
        layer(x, labels=random_labels(rng))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_forward_and_backward(rng, policy):
    layer = MultiHeadAttention(H, D_K, label_vocab_sizes=LABELS, value_bias_labels=["tree"],
                               spec_heads=[1], parse_head=0, dtype=policy)
    layer.build((None, None, WIDTH), spec_inputs_shape=(None, None, D_SPEC))
    x = tf.constant(rng.normal(size=(B, S, WIDTH)), tf.float32)
    spec = tf.constant(rng.normal(size=(B, S, D_SPEC)), tf.float32)
    labels = random_labels(rng)
    with tf.GradientTape() as tape:
        out, details = layer(x, labels=labels, spec_inputs=spec, return_probs=True,
                             training=True)
        loss = tf.reduce_sum(tf.cast(out, tf.float32) ** 2) + tf.reduce_sum(details["head_logits"])
    assert out.dtype == layer.compute_dtype
    assert details["probs"].dtype == tf.float32 and details["head_logits"].dtype == tf.float32
    assert all(w.dtype == "float32" for w in layer.weights)
    gradients = tape.gradient(loss, layer.trainable_weights)
    assert all(g is not None and np.isfinite(g.numpy()).all() for g in gradients)
    assert all(np.abs(g.numpy()).max() > 0 for g in gradients)


def test_xla_forward_and_backward_equal_eager(rng):
    layer = make_layer(label_vocab_sizes=LABELS, value_bias_labels=["relative", "tree"],
                       spec_heads=[0], parse_head=1)
    randomize(layer, rng)
    x = tf.constant(rng.normal(size=(B, S, WIDTH)), tf.float32)
    spec = tf.constant(rng.normal(size=(B, S, D_SPEC)), tf.float32)
    labels = {k: tf.constant(v, tf.int32) for k, v in random_labels(rng).items()}
    mask = masks.key_padding_mask(tf.constant([[4, 4, 4, 1, 0], [4, 4, 4, 4, 1]]))

    def step(x, spec, labels):
        with tf.GradientTape() as tape:
            out, details = layer(x, attention_mask=mask, labels=labels, spec_inputs=spec)
            parse_log_probs = tf.nn.log_softmax(details["head_logits"])
            loss = tf.reduce_sum(out ** 2) + tf.reduce_sum(parse_log_probs)
        return out, tape.gradient(loss, layer.trainable_weights)

    eager_out, eager_gradients = step(x, spec, labels)
    xla_out, xla_gradients = tf.function(step, jit_compile=True)(x, spec, labels)
    np.testing.assert_allclose(xla_out, eager_out, rtol=1e-4, atol=1e-4)
    for xla_gradient, eager_gradient in zip(xla_gradients, eager_gradients):
        np.testing.assert_allclose(tf.convert_to_tensor(xla_gradient),
                                   tf.convert_to_tensor(eager_gradient), rtol=1e-3, atol=1e-3)


def test_dropout_only_in_training(rng):
    layer = make_layer(dropout=0.5)
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    np.testing.assert_array_equal(layer(x)[0], layer(x, training=False)[0])
    assert np.abs(layer(x, training=True)[0] - layer(x)[0]).max() > 1e-3


