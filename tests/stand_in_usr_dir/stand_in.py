"""Tiny stand-in models that follow the models contract (`syntax_t2t/models/contract.py`).

Test fixtures for the trainer: small enough to train in seconds on a CPU,
yet real Keras models with embeddings, dropout, a softmax output and (for the
parser) a bilinear head over the `<ROOT>`-prefixed source. Each brings a
criterion of its own, as a user's model with its own loss does. Not part of
the library; `__init__.py` registers them when this directory is a `--usr_dir`.
"""

import keras
from keras import ops

from syntax_t2t.criteria import Criterion
from syntax_t2t.models.contract import ModelContract

ROOT_ID = 3


def masked_cross_entropy(labels, logits, mask):
    """Mean sparse cross-entropy over the positions where `mask` is true."""
    losses = keras.losses.sparse_categorical_crossentropy(
        ops.maximum(labels, 0), logits, from_logits=True)
    mask = ops.cast(mask, "float32")
    return ops.sum(losses * mask) / ops.maximum(ops.sum(mask), 1.0)


class TranslationLoss(Criterion):
    """`"nmt"` = `"total"`: the mean cross-entropy over non-padding targets."""

    def __call__(self, features, outputs):
        targets = features["targets"]
        nmt = masked_cross_entropy(targets, outputs["logits"], ops.not_equal(targets, 0))
        return {"nmt": nmt, "total": nmt}


class TranslationAndParseLoss(TranslationLoss):
    """Adds `"parse"`, the parse head's cross-entropy at the gold heads, weighted into `"total"`."""

    def __call__(self, features, outputs):
        losses = super().__call__(features, outputs)
        heads = features["src_heads"]
        rows = outputs["parse_logits"][:, 1:ops.shape(heads)[1] + 1, :]
        parse = masked_cross_entropy(heads, rows, ops.greater_equal(heads, 0))
        losses["parse"] = parse
        losses["total"] = losses["nmt"] + self.model.parse_loss_weight * parse
        return losses


class StandInTranslator(ModelContract, keras.Model):
    """Predicts each target token from the previous one and the mean source embedding."""

    train_features = frozenset({"inputs", "targets"})
    decode_features = frozenset({"inputs"})
    criterion = TranslationLoss

    def __init__(self, hparams, vocab_sizes, **kwargs):
        super().__init__(**kwargs)
        width = hparams.hidden_size
        self.dropout_rate = hparams.get("layer_prepostprocess_dropout", 0.0)
        # Explicit names fix the weights' paths, which checkpoints are keyed by.
        self.source_embedding = keras.layers.Embedding(vocab_sizes["inputs"], width,
                                                       name="source_embedding")
        self.target_embedding = keras.layers.Embedding(vocab_sizes["targets"], width,
                                                       name="target_embedding")
        # A Python list of layers, as real models hold their layer stacks.
        self.hidden_layers = [keras.layers.Dense(width, activation="relu", name=f"hidden_{i}")
                              for i in range(2)]
        self.dropout = keras.layers.Dropout(self.dropout_rate, name="dropout")
        self.output_layer = keras.layers.Dense(vocab_sizes["targets"], name="output")

    def encode(self, features, training=False):
        inputs = features["inputs"]
        mask = ops.cast(ops.not_equal(inputs, 0), self.compute_dtype)
        states = self.source_embedding(inputs)
        return states, mask

    def call(self, features, training=False):
        states, mask = self.encode(features, training)
        context = ops.sum(states * mask[..., None], axis=1) / ops.maximum(
            ops.sum(mask, axis=1, keepdims=True), 1.0)
        targets = features["targets"]
        shifted = ops.pad(targets[:, :-1], [[0, 0], [1, 0]])
        hidden = self.target_embedding(shifted) + context[:, None, :]
        for layer in self.hidden_layers:
            hidden = hidden + layer(hidden)
        hidden = self.dropout(hidden, training=training)
        return {"logits": ops.cast(self.output_layer(hidden), "float32")}


class StandInParser(StandInTranslator):
    """Adds a bilinear parse head over the `<ROOT>`-prefixed source embeddings."""

    train_features = frozenset({"inputs", "targets", "src_heads"})
    criterion = TranslationAndParseLoss

    def __init__(self, hparams, vocab_sizes, **kwargs):
        super().__init__(hparams, vocab_sizes, **kwargs)
        self.parse_loss_weight = hparams.get("parse_loss_weight", 1.0)
        self.position_embedding = keras.layers.Embedding(hparams.get("max_length", 64) + 2,
                                                         hparams.hidden_size, name="positions")
        self.query = keras.layers.Dense(hparams.hidden_size, name="query")
        self.key = keras.layers.Dense(hparams.hidden_size, name="key")

    def call(self, features, training=False):
        outputs = super().call(features, training)
        inputs = features["inputs"]
        prefixed = ops.pad(inputs, [[0, 0], [1, 0]], constant_values=ROOT_ID)
        positions = ops.arange(ops.shape(prefixed)[1])
        states = self.source_embedding(prefixed) + self.position_embedding(positions)[None]
        scores = ops.einsum("bqd,bkd->bqk", self.query(states), self.key(states))
        scores = ops.cast(scores, "float32") / float(self.query.units) ** 0.5
        # Padding positions cannot be heads.
        is_token = ops.not_equal(prefixed, 0)[:, None, :]
        outputs["parse_logits"] = ops.where(is_token, scores, -1e9)
        return outputs
