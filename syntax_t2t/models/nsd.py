"""NSD: neural syntactic distances of the source sentence (Ma et al. 2019).

Each source word gets one integer describing the tree (`nsd_distance`):
d_S (`lca_height`), d_G (`common_ancestors`), d_R (`relative`) on the phrase
structure derived from `src_heads` (`data/constituency.py`), or the
dependency distance d_D = i - h(i) (`dependency`, the seed's best). Distances
are clipped at +-k (`nsd_max_distance`); their ids are `d + k + 1`, 0 being
"no word" (`<EOS>`, padding).

Strategies, combinable (source side):

* NSD as input (`nsd_input`, eq. 5-10): a distance embedding e_d combined
  with the word embedding x by `concat` ([x; e_d], x narrower by the width
  of e_d, `nsd_embedding_size`), `sum` (x + e_d) or `linear` (W [x; e_d] + b).
* Syntactic positional encoding (`nsd_positional_encoding`, eq. 15-16,
  `layers/syntactic_position.py`), added to the usual encoding.
* NSD as output (`nsd_output`, eq. 11): a softmax over distance ids on each
  encoder state, trained with the distance-aware loss (eq. 17-20):
  `total = L_NMT + nsd_loss_weight * (L_ent_dist + L_dist)` (`L_dist` only
  with `nsd_distance_loss`), see `distance_losses`.

d_S, d_G and d_R need Python: the model declares them as `derived_features`
(the trainer adds them inside `tf.data`) and computes them with
`tf.numpy_function` when a batch lacks them (decoding); d_D is computed on
the device. Target-side NSD (target trees, predicted distances in the beam
state) is not implemented.
"""

import keras
import numpy as np
import tensorflow as tf

from syntax_t2t import registry
from syntax_t2t.data import syntactic_distance
from syntax_t2t.data.constituency import phrase_structure_from_dependencies
from syntax_t2t.data.pipeline import DerivedFeatures
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers.syntactic_position import SyntacticPositionEncoding
from syntax_t2t.models.transformer import Transformer, fit_length

DISTANCES = {
    "lca_height": syntactic_distance.lca_heights,
    "common_ancestors": syntactic_distance.common_ancestor_counts,
    "relative": syntactic_distance.relative_common_ancestor_counts,
}
DEPENDENCY = "dependency"
INPUTS = ("none", "concat", "sum", "linear")
DISTANCE_KEY = "nsd_distances"


def constituency_distances(heads, kind):
    """d_S, d_G or d_R of a batch with NumPy: int32 [B, S], 0 where there is no word.

    Args:
        heads: int [B, S] `src_heads`, -1 = no word.
        kind: a key of `DISTANCES`.
    """
    heads = np.asarray(heads)
    distances = np.zeros(heads.shape, np.int32)
    for row in range(heads.shape[0]):
        n = int(np.sum(heads[row] >= 0))
        if n:
            tree = DependencyTree.from_heads(["_"] * n, heads[row, :n])
            distances[row, :n] = DISTANCES[kind](phrase_structure_from_dependencies(tree))
    return distances


def dependency_distances(heads):
    """d_D = i - h(i) of a batch on the device: int32 [B, S], 0 where there is no word."""
    heads = tf.cast(heads, tf.int32)
    positions = tf.range(1, tf.shape(heads)[1] + 1)[None]
    return tf.where(heads >= 0, positions - heads, 0)


def distance_losses(logits, gold_ids, max_distance):
    """The distance-aware losses of the seed's eq. 19-20 for one side.

    The predicted distance of word i is the expectation of its softmax,
    `d^_i = sum_c p(c | h_i) (c - k - 1)`, which keeps L_dist differentiable.
    Both sums of eq. 19 are averaged: the squared error over words and the
    ranking hinge `[1 - sign(d_i - d_j)(d^_i - d^_j)]_+` over word pairs
    i < j (pairs of equal gold distances have sign 0 and cost 1, as in the
    equation).

    Args:
        logits: float [B, S, 2k + 1] scores of the distance ids 1 .. 2k + 1
            (gold distance d has id d + k + 1).
        gold_ids: int [B, S], 0 = no word.
        max_distance: k.

    Returns:
        `(L_ent_dist, L_dist)`, float32 scalars (L_ent_dist: mean
        cross-entropy over words).
    """
    logits = tf.cast(logits, tf.float32)
    gold_ids = tf.cast(gold_ids, tf.int32)
    words = tf.cast(gold_ids > 0, tf.float32)
    num_words = tf.maximum(tf.reduce_sum(words), 1.0)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        tf.maximum(gold_ids - 1, 0), logits)
    entropy_loss = tf.reduce_sum(cross_entropy * words) / num_words

    values = tf.range(-max_distance, max_distance + 1, dtype=tf.float32)
    predicted = tf.reduce_sum(tf.nn.softmax(logits) * values, axis=-1)  # [B, S]
    gold = tf.cast(gold_ids - max_distance - 1, tf.float32)
    squared = tf.reduce_sum(tf.square(gold - predicted) * words) / num_words
    gold_order = tf.sign(gold[:, :, None] - gold[:, None, :])
    hinge = tf.nn.relu(1.0 - gold_order * (predicted[:, :, None] - predicted[:, None, :]))
    length = tf.shape(gold_ids)[1]
    later = tf.linalg.band_part(tf.ones([length, length]), 0, -1) - tf.eye(length)  # j > i
    pairs = words[:, :, None] * words[:, None, :] * later[None]
    ranking = tf.reduce_sum(hinge * pairs) / tf.maximum(tf.reduce_sum(pairs), 1.0)
    return entropy_loss, squared + ranking


@registry.register_model("nsd")
class NeuralSyntacticDistance(Transformer):
    """Transformer with neural syntactic distances as input, encoding and output."""

    train_features = frozenset({"inputs", "targets", "src_heads"})
    decode_features = frozenset({"inputs", "src_heads"})

    def __init__(self, hparams, vocab_sizes, **kwargs):
        super().__init__(hparams, vocab_sizes, **kwargs)
        hp = self.hparams
        hidden = hp.hidden_size
        num_ids = 2 * hp.nsd_max_distance + 2
        self.distance_embedding = None
        if hp.nsd_input != "none":
            width = self.distance_embedding_size() if hp.nsd_input == "concat" else hidden
            self.distance_embedding = keras.layers.Embedding(num_ids, width,
                                                             name="distance_embedding")
            self.distance_embedding.build((None, None))
        self.input_combination = None
        if hp.nsd_input == "linear":
            self.input_combination = keras.layers.Dense(hidden, name="distance_combination")
            self.input_combination.build((None, None, 2 * hidden))
        self.syntactic_position = (
            SyntacticPositionEncoding(hp.nsd_max_distance, hp.nsd_spe_sigma,
                                      name="syntactic_position")
            if hp.nsd_positional_encoding else None)
        self.distance_predictor = None
        if hp.nsd_output:
            self.distance_predictor = keras.layers.Dense(num_ids - 1, name="distance_predictor")
            self.distance_predictor.build((None, None, hidden))

    def check_hparams(self):
        super().check_hparams()
        hp = self.hparams
        if hp.nsd_distance not in (DEPENDENCY,) + tuple(DISTANCES):
            raise HParamsError(f"nsd_distance={hp.nsd_distance!r}: expected one of "
                               f"{', '.join((DEPENDENCY,) + tuple(DISTANCES))}")
        if (hp.nsd_input or "none") not in INPUTS:
            raise HParamsError(f"nsd_input={hp.nsd_input!r}: expected one of {', '.join(INPUTS)}")
        if hp.nsd_max_distance < 1:
            raise HParamsError(f"nsd_max_distance={hp.nsd_max_distance} must be >= 1")
        if hp.nsd_input == "concat" and not 0 < self.distance_embedding_size() < hp.hidden_size:
            raise HParamsError(f"nsd_embedding_size={hp.nsd_embedding_size} must be between 1 "
                               f"and hidden_size - 1 = {hp.hidden_size - 1} with nsd_input=concat")
        if hp.nsd_positional_encoding and not hp.nsd_spe_sigma > 1:
            raise HParamsError(f"nsd_spe_sigma={hp.nsd_spe_sigma} must exceed 1")
        if hp.nsd_input == "none" and not hp.nsd_positional_encoding and not hp.nsd_output:
            raise HParamsError("model nsd uses no strategy: set nsd_input, "
                               "nsd_positional_encoding or nsd_output")

    def distance_embedding_size(self):
        """Width of the distance embedding with `concat`: `nsd_embedding_size` or D / 8."""
        hp = self.hparams
        return hp.nsd_embedding_size or max(1, hp.hidden_size // 8)

    # ------------------------------------------------------------ distances

    @property
    def derived_features(self):
        """d_S, d_G or d_R as a `tf.data` feature; None for d_D (computed on the device)."""
        kind = self.hparams.nsd_distance
        if kind == DEPENDENCY:
            return None
        return DerivedFeatures(("src_heads",), (DISTANCE_KEY,),
                               lambda heads: (constituency_distances(heads, kind),))

    def source_distance_ids(self, features, length):
        """Distance ids int32 [B, length]: clip(d, -k, k) + k + 1, 0 where there is no word."""
        heads = self.source_heads(features, tf.zeros([1, length], tf.int32))
        kind = self.hparams.nsd_distance
        if kind == DEPENDENCY:
            distances = dependency_distances(heads)
        elif DISTANCE_KEY in features:
            distances = fit_length(features[DISTANCE_KEY], length, 0)
        else:
            distances = tf.numpy_function(lambda h: constituency_distances(h, kind), [heads],
                                          tf.int32, stateful=False)
            distances.set_shape(heads.shape)
        k = self.hparams.nsd_max_distance
        return tf.where(heads >= 0, tf.clip_by_value(distances, -k, k) + k + 1, 0)

    # ----------------------------------------------------------------- hooks

    def source_embedding_size(self):
        hp = self.hparams
        if hp.nsd_input == "concat":
            return hp.hidden_size - self.distance_embedding_size()
        return hp.hidden_size

    def embed_source(self, features, source_ids, training):
        hp = self.hparams
        x = self.source_embedding(source_ids)
        if self.distance_embedding is not None or self.syntactic_position is not None:
            ids = self.source_distance_ids(features, tf.shape(source_ids)[1])
        if self.distance_embedding is not None:
            distances = tf.cast(self.distance_embedding(ids), x.dtype)
            if hp.nsd_input == "sum":
                x = x + distances
            else:
                x = tf.concat([x, distances], axis=-1)
                if self.input_combination is not None:
                    x = self.input_combination(x)
        if self.syntactic_position is not None:
            k = hp.nsd_max_distance
            x = self.syntactic_position(x, ids - k - 1, ids > 0)
        if self.position_encoding is not None:
            x = self.position_encoding(x)
        return self.embedding_dropout(x, training=training)

    # ------------------------------------------------------ training interface

    def call(self, features, training=False, return_attention=False):
        encoded = self.encode(features, training=training, return_attention=return_attention)
        outputs = {"logits": self.decode(features["targets"], encoded, training=training)}
        if "attention" in encoded:
            outputs["attention"] = encoded["attention"]
        if self.distance_predictor is not None:
            outputs["nsd_logits"] = tf.cast(self.distance_predictor(encoded["outputs"]),
                                            tf.float32)
        return outputs

    def compute_losses(self, features, outputs):
        result = super().compute_losses(features, outputs)
        if self.distance_predictor is None:
            return result
        hp = self.hparams
        gold = self.source_distance_ids(features, tf.shape(outputs["nsd_logits"])[1])
        entropy_loss, distance_loss = distance_losses(outputs["nsd_logits"], gold,
                                                      hp.nsd_max_distance)
        result["nsd_entropy"] = entropy_loss
        nsd = entropy_loss
        if hp.nsd_distance_loss:
            result["nsd_distance"] = distance_loss
            nsd += distance_loss
        result["total"] = result["nmt"] + hp.nsd_loss_weight * nsd
        return result
