"""MultiHeadAttention, its terms and the label-bias kernels against naive per-pair references.

Written in numpy and `keras.ops`: the module runs under every Keras backend
(TensorFlow, and JAX without TensorFlow), and where a backend differentiates
or compiles in its own way the few helpers below pick that way.
"""

import keras
import numpy as np
import pytest
from keras import ops

from syntax_t2t.backend.gradients import value_and_gradients
from syntax_t2t.layers import attention_cache, label_bias, masks
from syntax_t2t.layers.attention import MultiHeadAttention
from syntax_t2t.layers.attention_terms import (AttentionTerm, BiaffineHead, LabelBias,
                                               ParentScaledHeads, ParseHead, PhraseHeads,
                                               SpecializedHeads)

pytestmark = pytest.mark.backends

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
    return {w.path.split("/")[-1]: np.asarray(ops.convert_to_numpy(w), np.float64)
            for w in layer.weights}


def numpy(tensor):
    return ops.convert_to_numpy(tensor)


def input_gradients(function, inputs):
    """`function(*inputs)` (a scalar) and its gradients with respect to every input."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        inputs = [tf.convert_to_tensor(value) for value in inputs]
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            value = function(*inputs)
        return value, [tf.convert_to_tensor(g) for g in tape.gradient(value, inputs)]
    if backend == "jax":
        import jax

        return jax.value_and_grad(lambda values: function(*values))(list(inputs))
    pytest.skip(f"no gradients on the {backend} backend")


def compiled(function):
    """`function` compiled by XLA the backend's way."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(function, jit_compile=True)
    if backend == "jax":
        import jax

        return jax.jit(function)
    pytest.skip(f"no XLA on the {backend} backend")


class Bound:
    """The layer with fixed keyword arguments, called as a model (`value_and_gradients`)."""

    def __init__(self, layer, **kwargs):
        self.layer, self.kwargs = layer, kwargs

    @property
    def trainable_variables(self):
        return self.layer.trainable_variables

    @property
    def non_trainable_variables(self):
        return self.layer.non_trainable_variables

    def __call__(self, inputs, training=False):
        return self.layer(inputs, training=training, **self.kwargs)


def naive_attention(layer, x, labels=None, mask=None, spec_inputs=None):
    """Thesis eq. 3.3 written per head and pair, with Shaw et al.'s value biases."""
    w = weights_of(layer)
    label_bias = layer.term(LabelBias) or LabelBias({})
    spec_heads = layer.term(SpecializedHeads).heads if layer.term(SpecializedHeads) else ()
    labels = {name: np.broadcast_to(labels[name], (x.shape[0], x.shape[1], x.shape[1]))
              for name in label_bias.label_vocab_sizes} if labels else {}
    regular = [h for h in range(layer.num_heads) if h not in spec_heads]
    batch, length, _ = x.shape
    out = np.zeros((batch, length, w["output_kernel"].shape[-1]))
    probs = np.zeros((batch, layer.num_heads, length, length))
    for b in range(batch):
        for h in range(layer.num_heads):
            if h in spec_heads:
                s = spec_heads.index(h)
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
                    for name in label_bias.label_vocab_sizes:
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
                    for name in label_bias.value_bias_labels:
                        value += w[f"{name}_value_embeddings"][labels[name][b, i, j]]
                    context += a[i, j] * value
                out[b, i] += context @ w["output_kernel"][h]
    return out, probs


def make_layer(*terms, **kwargs):
    layer = MultiHeadAttention(H, D_K, terms=terms, **kwargs)
    layer.build((None, None, WIDTH), term_inputs_shape={"spec_inputs": (None, None, D_SPEC)})
    return layer


def randomize(layer, rng):
    """Label tables start as Glorot noise; make every weight clearly non-zero."""
    for weight in layer.weights:
        weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))


# ---------------------------------------------------------------------------
# The label-bias kernels.


@pytest.mark.parametrize("num_labels", [3, 40])
@pytest.mark.parametrize("traced", [False, True])
def test_label_logits_equal_per_pair_dot_products(rng, num_labels, traced):
    queries = rng.normal(size=(B, S, H, D_K)).astype("float32")
    table = rng.normal(size=(num_labels, D_K)).astype("float32")
    labels = rng.integers(0, num_labels, (B, S, S + 2)).astype("int32")
    if not traced:
        got = numpy(label_bias.label_logits(queries, [table], [labels]))
    elif keras.backend.backend() == "tensorflow":  # shapes unknown when traced, as in a train step
        import tensorflow as tf

        logits = tf.function(label_bias.label_logits, input_signature=[
            tf.TensorSpec([None, None, H, D_K]), [tf.TensorSpec([num_labels, D_K])],
            [tf.TensorSpec([None, None, None], tf.int32)]])
        got = numpy(logits(queries, [table], [labels]))
    else:
        got = numpy(compiled(label_bias.label_logits)(queries, [table], [labels]))
    assert got.shape == (B, H, S, S + 2)
    for b, h, i, j in np.ndindex(*got.shape):
        expected = queries[b, i, h] @ table[labels[b, i, j]]
        assert got[b, h, i, j] == pytest.approx(expected, rel=1e-5, abs=1e-5)


def test_label_logits_and_gradients_of_two_kinds_equal_those_of_per_pair_embeddings(rng):
    queries = rng.normal(size=(B, S, H, D_K)).astype("float32")
    table = rng.normal(size=(9, D_K)).astype("float32")
    labels = rng.integers(0, 9, (B, S, S)).astype("int32")
    weights = rng.normal(size=(B, H, S, S)).astype("float32")

    other_table = rng.normal(size=(4, D_K)).astype("float32")
    other_labels = rng.integers(0, 4, (B, S, S)).astype("int32")

    def naive(queries, tables, labels):  # the thesis's [B, Sq, Sk, d] embeddings
        return sum(ops.einsum("bqhd,bqkd->bhqk", queries, ops.take(table, ids, axis=0))
                   for table, ids in zip(tables, labels))

    results = []
    for logits in (label_bias.label_logits, naive):
        values = numpy(logits(queries, [table, other_table], [labels, other_labels]))

        def loss(queries, table, other_table, logits=logits):
            return ops.sum(weights * logits(queries, [table, other_table],
                                            [labels, other_labels]))

        _, gradients = input_gradients(loss, [queries, table, other_table])
        results.append([values] + [numpy(g) for g in gradients])
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_label_values_equal_per_pair_sums(rng):
    probs = rng.random((B, H, S, S + 2)).astype("float32")
    table = rng.normal(size=(7, D_K)).astype("float32")
    labels = rng.integers(0, 7, (B, S, S + 2))
    got = numpy(label_bias.label_values(probs, table, labels))
    assert got.shape == (B, S, H, D_K)
    for b, i, h in np.ndindex(B, S, H):
        expected = sum(probs[b, h, i, j] * table[labels[b, i, j]] for j in range(S + 2))
        np.testing.assert_allclose(got[b, i, h], expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# The layer against the naive reference.


@pytest.mark.parametrize("terms", [  # made per test: a term belongs to one layer
    lambda: (),
    lambda: (LabelBias({"tree": 7}),),
    lambda: (LabelBias(LABELS, ["relative"]),),
    lambda: (SpecializedHeads([2, 0]), LabelBias(LABELS)),
    lambda: (SpecializedHeads([0, 1, 2]),),
], ids=["plain", "tree", "values", "spec_and_labels", "all_spec"])
def test_layer_equals_naive_reference(rng, terms):
    layer = make_layer(*terms())
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    spec = rng.normal(size=(B, S, D_SPEC)).astype("float32")
    labels = random_labels(rng)
    ids = np.array([[5, 6, 7, 1, 0], [5, 6, 7, 8, 1]])
    mask = np.broadcast_to(numpy(masks.key_padding_mask(ids)), (B, S, S))
    out, details = layer(x, attention_mask=mask,
                         term_inputs={"labels": labels, "spec_inputs": spec},
                         return_probs=True)
    expected_out, expected_probs = naive_attention(layer, x, labels, mask, spec)
    np.testing.assert_allclose(details["probs"], expected_probs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out, expected_out, rtol=1e-4, atol=1e-4)


def test_zero_label_embeddings_give_plain_attention(rng):
    biased = make_layer(LabelBias(LABELS, ["relative", "tree"]))
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
    got, _ = biased(x, term_inputs={"labels": random_labels(rng)})
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    # ... and non-zero embeddings do change the result.
    biased.term(LabelBias).key_tables["tree"].assign(rng.normal(size=(7, D_K)).astype("float32"))
    changed, _ = biased(x, term_inputs={"labels": random_labels(rng)})
    assert np.abs(changed - expected).max() > 1e-3


def test_padding_does_not_change_real_positions(rng):
    layer = make_layer(SpecializedHeads([1]), LabelBias(LABELS, ["tree"]))
    randomize(layer, rng)
    real, padded = 4, 7
    x = rng.normal(size=(1, padded, WIDTH)).astype("float32")
    spec = rng.normal(size=(1, padded, D_SPEC)).astype("float32")
    labels = random_labels(rng, batch=1, length=padded)
    short_labels = {"relative": labels["relative"][:real, :real],
                    "tree": labels["tree"][:, :real, :real]}
    short, _ = layer(x[:, :real], term_inputs={"labels": short_labels,
                                               "spec_inputs": spec[:, :real]})
    ids = np.array([[4, 5, 6, 1, 0, 0, 0]])
    long, _ = layer(x, term_inputs={"labels": labels, "spec_inputs": spec},
                    attention_mask=masks.key_padding_mask(ids))
    np.testing.assert_allclose(long[:, :real], short, rtol=1e-5, atol=1e-5)


def test_causal_mask_hides_the_future(rng):
    layer = make_layer(LabelBias({"relative": 5}))
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    changed = x.copy()
    changed[:, 3:] += 1.0
    labels = {"relative": numpy(masks.causal_mask(S)[0]).astype("int32")}
    first, _ = layer(x, attention_mask=masks.causal_mask(S), term_inputs={"labels": labels})
    second, _ = layer(changed, attention_mask=masks.causal_mask(S),
                      term_inputs={"labels": labels})
    np.testing.assert_allclose(first[:, :3], second[:, :3], rtol=1e-6, atol=1e-6)
    assert np.abs(first[:, 3:] - second[:, 3:]).max() > 1e-3


def test_specialised_head_looks_only_at_tags(rng):
    layer = make_layer(SpecializedHeads([1]))
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    tags = rng.normal(size=(B, S, D_SPEC)).astype("float32")
    _, base = layer(x, term_inputs={"spec_inputs": tags}, return_probs=True)
    _, new_tokens = layer(x + rng.normal(size=x.shape).astype("float32"),
                          term_inputs={"spec_inputs": tags}, return_probs=True)
    new_inputs = {"spec_inputs": tags + rng.normal(size=tags.shape).astype("float32")}
    _, new_tags = layer(x, term_inputs=new_inputs, return_probs=True)
    np.testing.assert_allclose(new_tokens["probs"][:, 1], base["probs"][:, 1], atol=1e-6)
    assert np.abs(new_tokens["probs"][:, 0] - base["probs"][:, 0]).max() > 1e-3
    assert np.abs(new_tags["probs"][:, 1] - base["probs"][:, 1]).max() > 1e-3
    np.testing.assert_allclose(new_tags["probs"][:, 0], base["probs"][:, 0], atol=1e-6)


def test_parse_head_returns_that_heads_masked_logits(rng):
    layer = make_layer(ParseHead(2), LabelBias({"tree": 7}))
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    ids = np.array([[3, 5, 6, 1, 0], [3, 5, 6, 7, 1]])
    _, details = layer(x, attention_mask=masks.key_padding_mask(ids),
                       term_inputs={"labels": random_labels(rng)}, return_probs=True)
    head_logits = details["head_logits"]
    assert keras.backend.standardize_dtype(head_logits.dtype) == "float32"
    assert head_logits.shape == (B, S, S)
    np.testing.assert_allclose(ops.softmax(head_logits), details["probs"][:, 2], atol=1e-6)
    assert (numpy(head_logits)[0, :, 4] < -1e8).all()


# ---------------------------------------------------------------------------
# Decoding caches.


def test_incremental_self_attention_equals_full_causal(rng):
    layer = make_layer(LabelBias({"relative": 5}, ["relative"]))
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    full, _ = layer(x, attention_mask=masks.causal_mask(S),
                    term_inputs={"labels": {"relative": _relative(S, S, 0)}})
    cache = (np.zeros([B, H, S, D_K], "float32"), np.zeros([B, H, S, D_K], "float32"))
    for step in range(S):
        out, details = layer(
            x[:, step:step + 1], attention_mask=masks.causal_mask(1, S, step),
            term_inputs={"labels": {"relative": _relative(1, S, step)}}, cache=cache,
            cache_update_index=step)
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
    cache = rng.normal(size=(3, 2, 7, 4)).astype("float32")
    for count in (1, 2):  # one position (decoding) is a select, more a slice update
        new = rng.normal(size=(3, 2, count, 4)).astype("float32")
        expected = cache.copy()
        expected[:, :, 4:4 + count] = new
        np.testing.assert_array_equal(numpy(attention_cache.write_at(cache, 4, new)), expected)
        # Traced, with the position a traced scalar as in a decoding loop.
        written = compiled(attention_cache.write_at)(cache, np.int32(4), new)
        np.testing.assert_array_equal(numpy(written), expected)
        keys, values = attention_cache.write((cache, cache + 1), 4, new, new - 1)
        np.testing.assert_array_equal(numpy(keys), expected)
        expected_values = cache + 1
        expected_values[:, :, 4:4 + count] = new - 1
        np.testing.assert_array_equal(numpy(values), expected_values)


# ---------------------------------------------------------------------------
# Configuration, errors, precision, XLA.


def test_get_config_round_trip(rng):
    layer = make_layer(SpecializedHeads([2]), ParseHead(0), LabelBias(LABELS, ["tree"]),
                       dropout=0.1, name="attention")
    clone = MultiHeadAttention.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    assert [type(term) for term in clone.terms] == [SpecializedHeads, ParseHead, LabelBias]
    assert all(a is not b for a, b in zip(clone.terms, layer.terms))
    clone.build((None, None, WIDTH), term_inputs_shape={"spec_inputs": (None, None, D_SPEC)})
    clone.set_weights(layer.get_weights())
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    inputs = {"labels": random_labels(rng),
              "spec_inputs": rng.normal(size=(B, S, D_SPEC)).astype("float32")}
    np.testing.assert_array_equal(clone(x, term_inputs=inputs)[0],
                                  layer(x, term_inputs=inputs)[0])


def test_clear_errors(rng):
    with pytest.raises(ValueError, match="head 3 does not exist"):
        MultiHeadAttention(H, D_K, terms=[SpecializedHeads([3])])
    with pytest.raises(ValueError, match="not in label_vocab_sizes"):
        MultiHeadAttention(H, D_K, terms=[LabelBias({}, ["relative"])])
    with pytest.raises(ValueError, match="head 1 cannot be both a specialised head and a "
                                         "specialised head"):
        MultiHeadAttention(H, D_K, terms=[SpecializedHeads([1]), SpecializedHeads([1, 2])])
    shared = SpecializedHeads([0])
    layer = make_layer(LabelBias(LABELS), shared)
    with pytest.raises(ValueError, match="already belongs to attention layer"):
        MultiHeadAttention(H, D_K, terms=[shared])
    with pytest.raises(TypeError, match="expected an AttentionTerm"):
        MultiHeadAttention(H, D_K, terms=[("spec", [0])])
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    with pytest.raises(ValueError, match=r"needs labels \['tree'\]"):
        layer(x, term_inputs={"labels": {"relative": random_labels(rng)["relative"]},
                              "spec_inputs": np.zeros((B, S, D_SPEC), "float32")})
    with pytest.raises(ValueError, match=r"specialised heads \[0\] but got no spec_inputs"):
        layer(x, term_inputs={"labels": random_labels(rng)})
    with pytest.raises(ValueError, match="specialised heads need self-attention, got a memory"):
        layer(x, x, term_inputs={"labels": random_labels(rng), "spec_inputs": x})


def squares_and_parse_logits(_, outputs):
    out, details = outputs
    return {"total": ops.sum(ops.cast(out, "float32") ** 2) + ops.sum(details["head_logits"])}


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("heads", ["spec_parent", "biaffine_phrase"])
def test_mixed_precision_forward_and_backward(rng, policy, heads):
    if heads == "spec_parent":
        terms = [SpecializedHeads([1]), ParseHead(0), ParentScaledHeads([2])]
        inputs = dict(spec_inputs=rng.normal(size=(B, S, D_SPEC)).astype("float32"),
                      parents=rng.uniform(0, S - 1, (B, S)).astype("float32"))
    else:
        terms = [ParseHead(0), BiaffineHead(0), PhraseHeads([1], [1])]
        inputs = dict(phrase_memory=rng.normal(size=(B, 2, S, WIDTH)).astype("float32"),
                      phrase_mask=rng.random((B, 2, S)) < 0.8)
    layer = MultiHeadAttention(H, D_K, terms=terms + [LabelBias(LABELS, ["tree"])],
                               dtype=policy)
    layer.build((None, None, WIDTH), term_inputs_shape={"spec_inputs": (None, None, D_SPEC)})
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    bound = Bound(layer, term_inputs=dict(labels=random_labels(rng), **inputs),
                  return_probs=True)
    (out, details), _, gradients = value_and_gradients(
        bound, squares_and_parse_logits, x, training=True)
    dtype = keras.backend.standardize_dtype
    assert dtype(out.dtype) == layer.compute_dtype != "float32"
    assert dtype(details["probs"].dtype) == dtype(details["head_logits"].dtype) == "float32"
    assert all(w.dtype == "float32" for w in layer.weights)
    assert len(gradients) == len(layer.trainable_weights)
    assert all(g is not None and np.isfinite(numpy(g)).all() for g in gradients)
    assert all(np.abs(numpy(g)).max() > 0 for g in gradients)


def test_xla_forward_and_backward_equal_eager(rng):
    layer = make_layer(SpecializedHeads([0]), ParseHead(1),
                       LabelBias(LABELS, ["relative", "tree"]))
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    spec = rng.normal(size=(B, S, D_SPEC)).astype("float32")
    labels = {k: v.astype("int32") for k, v in random_labels(rng).items()}
    mask = masks.key_padding_mask(np.array([[4, 4, 4, 1, 0], [4, 4, 4, 4, 1]]))

    def loss(_, outputs):
        out, details = outputs
        parse_log_probs = ops.log_softmax(details["head_logits"])
        return {"total": ops.sum(out ** 2) + ops.sum(parse_log_probs)}

    def step(x, spec, labels):
        bound = Bound(layer, attention_mask=mask,
                      term_inputs={"labels": labels, "spec_inputs": spec})
        (out, _), _, gradients = value_and_gradients(bound, loss, x)
        return out, gradients

    eager_out, eager_gradients = step(x, spec, labels)
    xla_out, xla_gradients = compiled(step)(x, spec, labels)
    np.testing.assert_allclose(numpy(xla_out), numpy(eager_out), rtol=1e-4, atol=1e-4)
    assert len(xla_gradients) == len(eager_gradients) == len(layer.trainable_weights)
    for xla_gradient, eager_gradient in zip(xla_gradients, eager_gradients):
        np.testing.assert_allclose(numpy(xla_gradient), numpy(eager_gradient),
                                   rtol=1e-3, atol=1e-3)


def test_dropout_only_in_training(rng):
    layer = make_layer(dropout=0.5)
    randomize(layer, rng)
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    np.testing.assert_array_equal(layer(x)[0], layer(x, training=False)[0])
    assert np.abs(layer(x, training=True)[0] - layer(x)[0]).max() > 1e-3




# ---------------------------------------------------------------------------
# A new head kind is a new term: the core needs no change.


@keras.saving.register_keras_serializable(package="syntax_t2t_tests")
class LocalWindow(AttentionTerm):
    """Heads that see only keys within `width` positions of the query (a mask hook)."""

    kind = "local"

    def __init__(self, heads, width):
        super().__init__()
        self._heads, self.width = tuple(heads), int(width)

    @property
    def heads(self):
        return self._heads

    def mask(self, call, mask):
        length = ops.shape(call.query)[1]
        positions = ops.arange(length)
        near = ops.abs(positions[:, None] - positions[None, :]) <= self.width
        local = np.array([h in self._heads for h in range(self.layer.num_heads)])
        window = ops.where(local[None, :, None, None], near[None, None], True)
        return window if mask is None else ops.logical_and(mask, window)

    def get_config(self):
        return {"heads": list(self._heads), "width": self.width}


def test_a_term_of_its_own_changes_its_heads_only_and_round_trips(rng):
    plain = make_layer()
    randomize(plain, rng)
    local = make_layer(LocalWindow([1], 1))
    local.set_weights(plain.get_weights())
    x = rng.normal(size=(B, S, WIDTH)).astype("float32")
    _, expected = plain(x, return_probs=True)
    _, got = local(x, return_probs=True)
    probs, expected = numpy(got["probs"]), numpy(expected["probs"])
    far = np.abs(np.arange(S)[:, None] - np.arange(S)[None, :]) > 1
    assert probs[:, 1][:, far].max() < 1e-6 and expected[:, 1][:, far].max() > 1e-3
    # Within the window: plain attention renormalised over the near keys.
    near = np.where(far, 0.0, expected[:, 1])
    np.testing.assert_allclose(probs[:, 1], near / near.sum(-1, keepdims=True), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(probs[:, [0, 2]], expected[:, [0, 2]], rtol=1e-6, atol=1e-7)
    clone = MultiHeadAttention.from_config(local.get_config())
    assert isinstance(clone.terms[0], LocalWindow) and clone.terms[0].width == 1
