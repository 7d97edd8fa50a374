"""NSD: neural syntactic distances of the source and the target (Ma et al. 2019).

Each word gets one integer describing the tree (`nsd_distance`): d_S
(`lca_height`), d_G (`common_ancestors`), d_R (`relative`) on a phrase
structure, or the dependency distance d_D = i - h(i) (`dependency`, the
seed's best). The source phrase structure is derived from `src_heads`
(`data/constituency.py`) or, with `phrase_structure=bracketed`, read from
the data's bracketed trees (`src_const_start`, `src_const_end`); the
target's is derived from `tgt_heads`. Distances are clipped at +-k
(`nsd_max_distance`); their ids are `d + k + 1`, 0 being "no word"
(`<EOS>`, padding, the decoder's start position).

Sides (`nsd_side`): "source", "target" (problems with target trees) or
"both"; every strategy below applies to each chosen side. Strategies,
combinable:

* NSD as input (`nsd_input`, eq. 5-10): a distance embedding e_d combined
  with the word embedding x by `concat` ([x; e_d], x narrower by the width
  of e_d, `nsd_embedding_size`; on the target side only with an unshared
  softmax), `sum` (x + e_d) or `linear` (W [x; e_d] + b). One embedding
  (and combination) per side, E^s_d and E^t_d (eq. 6-7).
* Syntactic positional encoding (`nsd_positional_encoding`, eq. 15-16,
  `layers/syntactic_position.py`), added to the usual encoding.
* NSD as output (`nsd_output`, eq. 11): a softmax over distance ids on each
  encoder state (source) and each decoder state (target: the state that
  predicts word y_t predicts d(y_t)), trained with the distance-aware loss
  (eq. 17-20): `total = L_NMT + nsd_loss_weight * sum over sides of
  (L_ent_dist + L_dist)` (`L_dist` only with `nsd_distance_loss`), the
  model's criterion (`criteria/nsd_distances.py`).
  `nsd_entropy_loss_reduction` and `nsd_distance_loss_reduction` ("sum",
  the seed's balance, or "mean"; see `criteria/reduction.py`) set each
  term's weight against L_NMT.

Target side as input. The decoder input at position t is the previous word
y_{t-1} with its distance d(y_{t-1}) (gold in training, the targets'
distances shifted right like the targets; 0 at t = 0). The distances are
unknown at inference, so target-side input needs `nsd_output` (the seed:
"we use NSDs for both the input and output sequences"): each decoding step
predicts the distance of the word it emits (the most probable id) and
feeds it with that word to the next step. The prediction lives in the
decoding cache (`"nsd_previous"`, int32 [B]), which the beam search
reorders with the hypotheses like the self-attention caches, so every
hypothesis reads its own predicted distances.

d_S, d_G and d_R need Python: the model declares them as `derived_features`
(`data/derived_features.py`), computed on the host: the trainer adds them
inside `tf.data`, the decoder (`decode_derived_features`, the source's only)
to each batch it pads; a batch without them is refused, never completed
inside the model. d_D is computed on the device.
"""

from typing import Any, Mapping

import keras
import numpy as np
from keras import ops

from syntax_t2t import registry
from syntax_t2t.data import syntactic_distance
from syntax_t2t.data.bracketed import tree_from_constituent_features
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.derived_features import DerivedFeatures, require_derived
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers.syntactic_position import SyntacticPositionEncoding
from syntax_t2t.models.contract import check_reduction
from syntax_t2t.models.transformer import Transformer, fit_length, shift_right

DISTANCES = {
    "lca_height": syntactic_distance.lca_heights,
    "common_ancestors": syntactic_distance.common_ancestor_counts,
    "relative": syntactic_distance.relative_common_ancestor_counts,
}
DEPENDENCY = "dependency"
INPUTS = ("none", "concat", "sum", "linear")
SIDES = ("source", "target", "both")
PHRASE_STRUCTURES = ("dependency", "bracketed")
DISTANCE_KEY = "nsd_distances"
TARGET_DISTANCE_KEY = "nsd_target_distances"
#: Decoding-cache entry: the distance id predicted at the previous step, int32 [B].
PREVIOUS_KEY = "nsd_previous"
BRACKET_KEYS = ("src_const_start", "src_const_end")


def constituency_distances(heads: np.ndarray, kind: str, starts: np.ndarray | None = None,
                           ends: np.ndarray | None = None) -> np.ndarray:
    """d_S, d_G or d_R of a batch with NumPy: int32 [B, S], 0 where there is no word.

    Args:
        heads: int [B, S] `src_heads` or `tgt_heads`, -1 = no word.
        kind: a key of `DISTANCES`.
        starts, ends: None to derive each phrase structure from `heads`, or
            int [B, C] `src_const_start` and `src_const_end` (bracketed trees
            over the words of `heads`).
    """
    heads = np.asarray(heads)
    distances = np.zeros(heads.shape, np.int32)
    for row in range(heads.shape[0]):
        n = int(np.sum(heads[row] >= 0))
        if not n:
            continue
        if starts is None:
            tree = DependencyTree.from_heads(["_"] * n, heads[row, :n])
            phrases = phrase_structure_from_dependencies(tree)
        else:
            phrases = tree_from_constituent_features(starts[row], ends[row],
                                                     ["_"] * len(starts[row]), n)
        distances[row, :n] = DISTANCES[kind](phrases)
    return distances


def dependency_distances(heads):
    """d_D = i - h(i) of a batch on the device: int32 [B, S], 0 where there is no word."""
    heads = ops.cast(heads, "int32")
    positions = ops.arange(1, ops.shape(heads)[1] + 1, dtype="int32")[None]
    return ops.where(heads >= 0, positions - heads, 0)


@registry.register_model("nsd")
class NeuralSyntacticDistance(Transformer):
    """Transformer with neural syntactic distances as input, encoding and output."""

    train_features = frozenset({"inputs", "targets", "src_heads"})
    criterion = "syntactic_distances"
    decode_features = frozenset({"inputs", "src_heads"})

    def __init__(self, hparams, vocab_sizes: Mapping[str, int], **kwargs):
        super().__init__(hparams, vocab_sizes, **kwargs)
        hp = self.hparams
        hidden = hp.hidden_size
        num_ids = 2 * hp.nsd_max_distance + 2
        # Instance attributes: the batch keys depend on the sides.
        source_keys = set()
        if self.source_side:
            source_keys = {"src_heads"} | (set(BRACKET_KEYS) if self.reads_brackets else set())
        self.train_features = frozenset({"inputs", "targets"} | source_keys
                                        | ({"tgt_heads"} if self.target_side else set()))
        self.decode_features = frozenset({"inputs"} | source_keys)

        def side_layers(side, prefix):
            if not getattr(self, f"{side}_side"):
                return None, None, None
            embedding = combination = predictor = None
            if self.input_mode != "none":
                width = self.distance_embedding_size() if self.input_mode == "concat" else hidden
                embedding = keras.layers.Embedding(num_ids, width,
                                                   name=f"{prefix}distance_embedding")
                embedding.build((None, None))
            if self.input_mode == "linear":
                combination = keras.layers.Dense(hidden, name=f"{prefix}distance_combination")
                combination.build((None, None, 2 * hidden))
            if hp.nsd_output:
                predictor = keras.layers.Dense(num_ids - 1, name=f"{prefix}distance_predictor")
                predictor.build((None, None, hidden))
            return embedding, combination, predictor

        # The source's layers keep the names they had before target sides.
        (self.distance_embedding, self.input_combination,
         self.distance_predictor) = side_layers("source", "")
        (self.target_distance_embedding, self.target_input_combination,
         self.target_distance_predictor) = side_layers("target", "target_")
        self.syntactic_position = (
            SyntacticPositionEncoding(hp.nsd_max_distance, hp.nsd_spe_sigma,
                                      name="syntactic_position")
            if hp.nsd_positional_encoding else None)

    def check_hparams(self):
        super().check_hparams()
        hp = self.hparams
        if self.side not in SIDES:
            raise HParamsError(f"nsd_side={self.side!r}: expected one of {', '.join(SIDES)}")
        if self.phrase_structure not in PHRASE_STRUCTURES:
            raise HParamsError(f"phrase_structure={self.phrase_structure!r}: expected one of "
                               f"{', '.join(PHRASE_STRUCTURES)}")
        if hp.nsd_distance not in (DEPENDENCY,) + tuple(DISTANCES):
            raise HParamsError(f"nsd_distance={hp.nsd_distance!r}: expected one of "
                               f"{', '.join((DEPENDENCY,) + tuple(DISTANCES))}")
        if self.input_mode not in INPUTS:
            raise HParamsError(f"nsd_input={hp.nsd_input!r}: expected one of {', '.join(INPUTS)}")
        for term, reduction in zip(("entropy", "distance"), self.loss_reductions):
            check_reduction(f"nsd_{term}_loss_reduction", reduction)
        if hp.nsd_max_distance < 1:
            raise HParamsError(f"nsd_max_distance={hp.nsd_max_distance} must be >= 1")
        if self.input_mode == "concat" and not 0 < self.distance_embedding_size() < hp.hidden_size:
            raise HParamsError(f"nsd_embedding_size={hp.nsd_embedding_size} must be between 1 "
                               f"and hidden_size - 1 = {hp.hidden_size - 1} with nsd_input=concat")
        if hp.nsd_positional_encoding and not hp.nsd_spe_sigma > 1:
            raise HParamsError(f"nsd_spe_sigma={hp.nsd_spe_sigma} must exceed 1")
        if self.input_mode == "none" and not hp.nsd_positional_encoding and not hp.nsd_output:
            raise HParamsError("model nsd uses no strategy: set nsd_input, "
                               "nsd_positional_encoding or nsd_output")
        if self.target_side:
            if self.reads_target_distances and not hp.nsd_output:
                raise HParamsError(
                    f"nsd_side={self.side} with nsd_input or nsd_positional_encoding needs "
                    f"nsd_output=true: the decoder reads target distances that only its own "
                    f"predictions give at inference")
            if self.input_mode == "concat" and hp.shared_embedding_and_softmax_weights:
                raise HParamsError(
                    f"nsd_side={self.side} with nsd_input=concat narrows the target embedding, "
                    f"which the softmax shares: set shared_embedding_and_softmax_weights=false")

    @property
    def side(self):
        """`nsd_side`; runs saved before target sides existed are "source"."""
        return self.hparams.get("nsd_side", "source")

    @property
    def loss_reductions(self):
        """(L_ent_dist, L_dist) reductions; runs saved before them averaged ("mean")."""
        return tuple(self.hparams.get(f"nsd_{term}_loss_reduction", "mean")
                     for term in ("entropy", "distance"))

    @property
    def input_mode(self):
        """`nsd_input`, None read as "none"."""
        return self.hparams.nsd_input or "none"

    @property
    def phrase_structure(self):
        """`phrase_structure`; runs saved before bracketed trees existed are "dependency"."""
        return self.hparams.get("phrase_structure", "dependency")

    @property
    def source_side(self):
        """Whether the strategies apply to the source (`nsd_side` source or both)."""
        return self.side in ("source", "both")

    @property
    def target_side(self):
        """Whether the strategies apply to the target (`nsd_side` target or both)."""
        return self.side in ("target", "both")

    @property
    def reads_target_distances(self):
        """Whether the decoder's input holds target distances (input or positional encoding)."""
        hp = self.hparams
        return self.target_side and (self.input_mode != "none"
                                     or bool(hp.nsd_positional_encoding))

    @property
    def reads_brackets(self):
        """Whether source d_S, d_G or d_R come from bracketed trees (`src_const_*`)."""
        hp = self.hparams
        return self.phrase_structure == "bracketed" and hp.nsd_distance != DEPENDENCY

    def distance_embedding_size(self):
        """Width of the distance embedding with `concat`: `nsd_embedding_size` or D / 8."""
        hp = self.hparams
        return hp.nsd_embedding_size or max(1, hp.hidden_size // 8)

    # ------------------------------------------------------------ distances

    def _derivations(self, with_target):
        kind = self.hparams.nsd_distance
        if kind == DEPENDENCY:
            return None
        source_keys, keys = [], []
        if self.source_side:
            source_keys += ["src_heads"] + (list(BRACKET_KEYS) if self.reads_brackets else [])
            keys.append(DISTANCE_KEY)
        if with_target and self.target_side:
            source_keys.append("tgt_heads")
            keys.append(TARGET_DISTANCE_KEY)
        if not keys:
            return None
        source_keys = tuple(source_keys)

        def derive(*arrays):
            batch = dict(zip(source_keys, arrays))
            results = []
            if DISTANCE_KEY in keys:
                results.append(constituency_distances(batch["src_heads"], kind,
                                                      *(batch.get(key) for key in BRACKET_KEYS)))
            if TARGET_DISTANCE_KEY in keys:
                results.append(constituency_distances(batch["tgt_heads"], kind))
            return tuple(results)

        return DerivedFeatures(source_keys, tuple(keys), derive)

    @property
    def derived_features(self) -> DerivedFeatures | None:
        """d_S, d_G or d_R of each side, computed on the host; None for d_D (on the device)."""
        return self._derivations(with_target=True)

    @property
    def decode_derived_features(self) -> DerivedFeatures | None:
        """The source's derived distances only: decoding has no target trees."""
        return self._derivations(with_target=False)

    def _distance_ids(self, heads, distances):
        k = self.hparams.nsd_max_distance
        return ops.where(heads >= 0, ops.clip(distances, -k, k) + k + 1, 0)

    def source_distance_ids(self, features: Mapping[str, Any], length: Any):
        """Distance ids int32 [B, length]: clip(d, -k, k) + k + 1, 0 where there is no word.

        Raises:
            KeyError: the batch lacks `src_heads`, or the derived d_S, d_G or
                d_R (`derived_features` compute them on the host).
        """
        heads = self.source_heads(features, ops.zeros((1, length), "int32"))
        if self.hparams.nsd_distance == DEPENDENCY:
            distances = dependency_distances(heads)
        else:
            sources = ("src_heads",) + (BRACKET_KEYS if self.reads_brackets else ())
            require_derived(features, (DISTANCE_KEY,), type(self).__name__, sources)
            distances = fit_length(features[DISTANCE_KEY], length, 0)
        return self._distance_ids(heads, distances)

    def target_distance_ids(self, features: Mapping[str, Any], length: Any):
        """Gold target distance ids int32 [B, length] (word t of `targets` at t; 0 elsewhere).

        Raises:
            KeyError: the batch has no `tgt_heads` (target trees), or lacks the
                derived d_S, d_G or d_R of the targets.
        """
        if "tgt_heads" not in features:
            raise KeyError(f"nsd_side={self.side} needs the batch feature "
                           f"'tgt_heads' (target trees); the batch has {sorted(features)}")
        heads = fit_length(features["tgt_heads"], length, -1)
        if self.hparams.nsd_distance == DEPENDENCY:
            distances = dependency_distances(heads)
        else:
            require_derived(features, (TARGET_DISTANCE_KEY,), type(self).__name__,
                            ("tgt_heads",))
            distances = fit_length(features[TARGET_DISTANCE_KEY], length, 0)
        return self._distance_ids(heads, distances)

    # ----------------------------------------------------------------- hooks

    def source_embedding_size(self):
        hp = self.hparams
        if self.input_mode == "concat" and self.source_side:
            return hp.hidden_size - self.distance_embedding_size()
        return hp.hidden_size

    def target_embedding_size(self):
        hp = self.hparams
        if self.input_mode == "concat" and self.target_side:
            return hp.hidden_size - self.distance_embedding_size()
        return hp.hidden_size

    def _with_distances(self, x, ids, embedding, combination):
        """Word embeddings x [B, S, D'] combined with distance ids [B, S] (eq. 8-10, 15-16)."""
        hp = self.hparams
        if embedding is not None:
            distances = ops.cast(embedding(ids), x.dtype)
            if self.input_mode == "sum":
                x = x + distances
            else:
                x = ops.concatenate([x, distances], axis=-1)
                if combination is not None:
                    x = combination(x)
        if self.syntactic_position is not None:
            k = hp.nsd_max_distance
            x = self.syntactic_position(x, ids - k - 1, ids > 0)
        return x

    def _positions_and_dropout(self, x, start, training):
        if self.position_encoding is not None:
            x = self.position_encoding(x, start=start)
        return self.embedding_dropout(x, training=training)

    def embed_source(self, features, source_ids, training):
        if not self.source_side:
            return super().embed_source(features, source_ids, training)
        x = self.source_embedding(source_ids)
        if self.distance_embedding is not None or self.syntactic_position is not None:
            ids = self.source_distance_ids(features, ops.shape(source_ids)[1])
            x = self._with_distances(x, ids, self.distance_embedding, self.input_combination)
        return self._positions_and_dropout(x, 0, training)

    def target_states(self, features, encoded, training=False):
        """Teacher-forced decoder states [B, T, D], the inputs carrying gold target distances."""
        decoder_ids = shift_right(features["targets"])
        x = self.target_embedding(decoder_ids)
        if self.reads_target_distances:
            # Position t reads word y_{t-1}, so its distance too.
            ids = shift_right(self.target_distance_ids(features, ops.shape(decoder_ids)[1]))
            x = self._with_distances(x, ids, self.target_distance_embedding,
                                     self.target_input_combination)
        x = self._positions_and_dropout(x, 0, training)
        return self.decoder_states(x, encoded, training=training)

    # ------------------------------------------------------------- decoding

    def initial_decoder_cache(self, batch_size, max_length, in_place=False):
        """The base caches, plus the previous step's predicted distance (0 at step 0)."""
        cache = super().initial_decoder_cache(batch_size, max_length, in_place=in_place)
        if self.reads_target_distances:
            cache[PREVIOUS_KEY] = ops.zeros((batch_size,), "int32")
        return cache

    def decode_step(self, ids, step, cache, memory, training=False):
        """As `Transformer.decode_step`; with target distances as input the step
        reads `cache["nsd_previous"]` with `ids` and stores the distance id it
        predicts for the word it emits (the most probable one) for the next step.
        """
        if not self.reads_target_distances:
            return super().decode_step(ids, step, cache, memory, training=training)
        ids = ops.cast(ids, "int32")[:, None]
        x = self.target_embedding(ids)
        x = self._with_distances(x, cache[PREVIOUS_KEY][:, None], self.target_distance_embedding,
                                 self.target_input_combination)
        x = self._positions_and_dropout(x, step, training)
        states, cache = self.decoder_step_states(x, step, cache, memory, training=training)
        scores = self.target_distance_predictor(states)[:, 0]
        # Class c is distance id c + 1.
        predicted = ops.cast(ops.argmax(scores, axis=-1), "int32") + 1
        return self.output_logits(states)[:, 0], dict(cache, **{PREVIOUS_KEY: predicted})

    # ------------------------------------------------------ training interface

    def call(self, features, training=False, return_attention=False):
        encoded = self.encode(features, training=training, return_attention=return_attention)
        if self.target_side:
            states = self.target_states(features, encoded, training=training)
            outputs = {"logits": self.output_logits(states)}
            if self.target_distance_predictor is not None:
                outputs["nsd_target_logits"] = ops.cast(self.target_distance_predictor(states),
                                                        "float32")
        else:
            outputs = {"logits": self.decode(features["targets"], encoded, training=training)}
        if "attention" in encoded:
            outputs["attention"] = encoded["attention"]
        if self.distance_predictor is not None:
            outputs["nsd_logits"] = ops.cast(self.distance_predictor(encoded["outputs"]),
                                             "float32")
        return outputs
