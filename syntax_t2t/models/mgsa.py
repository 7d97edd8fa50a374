"""MG-SA: multi-granularity self-attention (Hao et al. 2019).

Some heads of the chosen encoder layers (`mgsa_layers`, the bottom one by
default) attend over phrases instead of words: their queries come from the
words, their keys and values from a phrase memory (seed eq. 4-7; see
`layers/phrase_memory.py` and `layers/multi_granularity_encoder_layer.py`).
The first `mgsa_word_heads` heads stay word heads (0: a quarter of the heads,
the seed's setting); the others are split into equal groups, one per
granularity, in order.

Partitions (`mgsa_partition`):

* `"ngram"`: non-overlapping n-grams of sizes `mgsa_ngram_sizes` (the seed:
  2, 3, 4); no trees needed.
* `"syntactic"`: the phrases of levels 1..`mgsa_levels` (the seed: 3) of the
  phrase structure derived from `src_heads` by the rule
  `mgsa_dependency_phrases` (`data/dependency_phrases.py`: "right_first",
  which reproduces the seed's Figure 1, or the flat "projection";
  `data/phrases.py` takes the levels), or, with
  `phrase_structure=bracketed`, of the data's bracketed trees
  (`src_const_start`, `src_const_end`, `src_const_label`; see
  `syntax_t2t.problem`).

Syntactic partitions need Python, so the model declares them as
`derived_features` (`data/derived_features.py`), computed on the host: the
trainer adds them to each batch inside `tf.data`, the decoder to each batch
it pads; a batch without them is refused, never completed inside the model.
The `<EOS>` position belongs to no phrase.

Phrase-tag supervision (`mgsa_tag_loss_weight`, the seed's lambda = 0.001;
0 turns it off): a softmax layer on the bottom MG-SA layer's composed
syntactic phrases G_x (before the interaction) predicts each phrase's label (seed eq. 9-10). Labels are the
UPOS tag of a single word, or the UPOS tag of a phrase's head with a "P"
mark (NOUNP, a separate id); ids: `upos` for a word, `upos + V_upos` for a
phrase (0 = no phrase). The extra `ROOT` phrase of a tree is its level 0,
never a partition. The loss is the criterion's (`criteria/phrase_tags.py`);
`mgsa_tag_loss_reduction` ("sum", the seed's eq. 12 balance, or "mean";
`criteria/reduction.py`) sets L_tag's weight against the translation loss.
With bracketed trees a constituent's label is its own
(NP, VP: `const` vocabulary ids, `const + V_upos`), a single word's its UPOS.
"""

from typing import Any, Mapping, Sequence

import keras
import numpy as np
from keras import ops

from syntax_t2t import registry
from syntax_t2t.data import phrases as phrase_partitions
from syntax_t2t.data.bracketed import tree_from_constituent_features
from syntax_t2t.data.dependency_phrases import RULES as DEPENDENCY_RULES
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.derived_features import DerivedFeatures, require_derived
from syntax_t2t.data.tree import DependencyTree
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers.attention_terms import AttentionTerm, PhraseHeads
from syntax_t2t.layers.multi_granularity_encoder_layer import MultiGranularityEncoderLayer
from syntax_t2t.layers.phrase_memory import COMPOSITIONS, INTERACTIONS
from syntax_t2t.models.contract import check_reduction
from syntax_t2t.models.transformer import Transformer, fit_length

PARTITIONS = ("ngram", "syntactic")
PHRASE_STRUCTURES = ("dependency", "bracketed")
BRACKET_KEYS = ("src_const_start", "src_const_end", "src_const_label")
PHRASE_KEY = "mgsa_phrases_{}"
TAG_HEAD_KEY = "mgsa_tag_heads_{}"
TAG_KIND_KEY = "mgsa_tag_kinds_{}"


def phrase_head_groups(num_heads: int, word_heads: int,
                       num_granularities: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Which heads attend over phrases, and the granularity of each.

    Args:
        num_heads: H.
        word_heads: how many heads (the first ones) stay word heads; 0 for
            a quarter of H (at least one).
        num_granularities: G.

    Returns:
        `(phrase_heads, granularities)`: heads `word_heads .. H-1` and, for
        each, its group `0 .. G-1` (groups as equal as possible, in order).

    Raises:
        HParamsError: fewer phrase heads than granularities.
    """
    words = word_heads or max(1, num_heads // 4)
    phrase_heads = tuple(range(words, num_heads))
    if len(phrase_heads) < num_granularities:
        raise HParamsError(f"MG-SA: {num_heads} heads with {words} word heads leave "
                           f"{len(phrase_heads)} phrase heads for {num_granularities} "
                           f"granularities; each granularity needs a head")
    granularities = tuple(j * num_granularities // len(phrase_heads)
                          for j in range(len(phrase_heads)))
    return phrase_heads, granularities


def ngram_phrase_ids(source_ids, ngram_sizes: Sequence[int]):
    """Batched n-gram partitions: int32 [B, G, S], -1 for `<EOS>` and padding.

    Args:
        source_ids: int [B, S] token ids, `<EOS>` (1) then padding (0).
        ngram_sizes: the n of each granularity.
    """
    source_ids = ops.cast(source_ids, "int32")
    words = source_ids > 1  # neither padding nor <EOS>
    positions = ops.arange(ops.shape(source_ids)[1], dtype="int32")
    ids = ops.stack([positions // n for n in ngram_sizes])[None]  # [1, G, S]
    return ops.where(words[:, None, :], ids, -1)


# Kinds of phrase: none, a single word, a head's projection, a bracketed constituent.
NO_PHRASE, WORD, PROJECTION, CONSTITUENT = 0, 1, 2, 3


def _phrase_head(label):
    """(kind, head position or label id) of a phrase label of a tree whose tags are
    token positions and whose bracketed constituents are labelled `<id>C`."""
    if label.endswith("P"):
        return PROJECTION, int(label[:-1])
    if label.endswith("C"):
        return CONSTITUENT, int(label[:-1])
    return WORD, int(label)


def syntactic_phrase_features(heads: np.ndarray, num_levels: int,
                              starts: np.ndarray | None = None, ends: np.ndarray | None = None,
                              labels: np.ndarray | None = None, *,
                              rule: str = "projection") -> tuple[np.ndarray, ...]:
    """Syntactic partitions of a batch and what each phrase's tag is read from, with NumPy.

    Args:
        heads: int [B, S] `src_heads` (-1 = no word).
        num_levels: K.
        starts, ends, labels: None to derive each phrase structure from
            `heads`, or int [B, C] `src_const_start`, `src_const_end`,
            `src_const_label` (bracketed trees over the words of `heads`).
        rule: the `data/dependency_phrases.py` rule for trees derived from
            `heads`.

    Returns:
        `(phrase_ids, tag_heads, tag_kinds)`, int32 [B, K, S] each: each
        token's phrase per level (-1 = none); in slot p of level k, the
        position of phrase p's head token (-1 for none), or a bracketed
        constituent's label id, and its kind (`NO_PHRASE`, `WORD`,
        `PROJECTION` or `CONSTITUENT`).
    """
    heads = np.asarray(heads)
    label_ids = labels
    batch, length = heads.shape
    phrase_ids = np.full((batch, num_levels, length), phrase_partitions.PAD_PHRASE_ID, np.int32)
    tag_heads = np.full((batch, num_levels, length), -1, np.int32)
    tag_kinds = np.full((batch, num_levels, length), NO_PHRASE, np.int32)
    for row in range(batch):
        n = int(np.sum(heads[row] >= 0))
        if n == 0:
            continue
        # Token positions as tags make every phrase label name its head token.
        positions = [str(t) for t in range(n)]
        if starts is None:
            tree = DependencyTree.from_heads(positions, heads[row, :n], upos=positions)
            phrases = phrase_structure_from_dependencies(tree, rule)
        else:
            phrases = tree_from_constituent_features(
                starts[row], ends[row], [f"{label}C" for label in label_ids[row]], n,
                tags=positions)
        partitions = phrase_partitions.syntactic_partitions(phrases, num_levels)
        phrase_ids[row, :, :n] = partitions.phrase_ids
        for level, labels in enumerate(partitions.phrase_labels):
            kinds, positions = zip(*map(_phrase_head, labels))
            tag_kinds[row, level, :len(labels)] = kinds
            tag_heads[row, level, :len(labels)] = positions
    return phrase_ids, tag_heads, tag_kinds


def phrase_tags(tag_heads, tag_kinds, upos, upos_size: int):
    """Tag ids [B, K, S] of the phrases (see the module docstring); 0 = no phrase.

    Args:
        tag_heads, tag_kinds: from `syntactic_phrase_features`.
        upos: int [B, S] `src_upos` ids.
        upos_size: V_upos.
    """
    tag_heads = ops.cast(tag_heads, "int32")
    tag_kinds = ops.cast(tag_kinds, "int32")
    words = ops.where(tag_kinds == CONSTITUENT, 0, ops.maximum(tag_heads, 0))
    head_tags = ops.take_along_axis(ops.cast(upos, "int32")[:, None, :], words, axis=2)
    return ops.where(tag_kinds == WORD, head_tags,
                     ops.where(tag_kinds == PROJECTION, head_tags + upos_size,
                               ops.where(tag_kinds == CONSTITUENT, tag_heads + upos_size, 0)))


@registry.register_model("mgsa")
class MultiGranularitySelfAttention(Transformer):
    """Transformer whose chosen encoder layers have phrase heads (MG-SA)."""

    train_features = frozenset({"inputs", "targets", "src_heads"})
    decode_features = frozenset({"inputs", "src_heads"})
    criterion = "phrase_tags"

    def __init__(self, hparams, vocab_sizes: Mapping[str, int], **kwargs):
        self._configure(hparams)
        super().__init__(hparams, vocab_sizes, **kwargs)
        self.tag_classifier = None
        if self.uses_tags:
            phrase_labels = (self.vocab_size("const") if self.bracketed
                             else self.vocab_size("upos"))
            self.tag_classifier = keras.layers.Dense(
                self.vocab_size("upos") + phrase_labels, name="phrase_tag_classifier")
            self.tag_classifier.build((None, None, None, self.hparams.hidden_size))

    def _configure(self, hparams):
        """Partition settings (before the layers are built)."""
        self.partition = hparams.mgsa_partition
        if self.partition not in PARTITIONS:
            raise HParamsError(f"mgsa_partition={self.partition!r}: expected one of "
                               f"{', '.join(PARTITIONS)}")
        syntactic = self.partition == "syntactic"
        # Runs saved before bracketed trees existed have no phrase_structure.
        structure = hparams.get("phrase_structure", "dependency")
        if structure not in PHRASE_STRUCTURES:
            raise HParamsError(f"phrase_structure={structure!r}: expected one of "
                               f"{', '.join(PHRASE_STRUCTURES)}")
        self.bracketed = syntactic and structure == "bracketed"
        # Runs saved before the rule existed used the flat "projection" rule.
        self.dependency_rule = hparams.get("mgsa_dependency_phrases", "projection")
        if self.dependency_rule not in DEPENDENCY_RULES:
            raise HParamsError(f"mgsa_dependency_phrases={self.dependency_rule!r}: expected one "
                               f"of {', '.join(DEPENDENCY_RULES)}")
        self.num_granularities = hparams.mgsa_levels if syntactic else len(hparams.mgsa_ngram_sizes)
        if self.num_granularities < 1:
            raise HParamsError("MG-SA needs at least one granularity (mgsa_levels or "
                               "mgsa_ngram_sizes)")
        if not syntactic and min(hparams.mgsa_ngram_sizes) < 1:
            raise HParamsError(f"mgsa_ngram_sizes={hparams.mgsa_ngram_sizes}: sizes must be >= 1")
        self.uses_tags = syntactic and hparams.mgsa_tag_loss_weight > 0
        # Runs saved before the reduction existed averaged over phrases.
        self.tag_loss_reduction = hparams.get("mgsa_tag_loss_reduction", "mean")
        check_reduction("mgsa_tag_loss_reduction", self.tag_loss_reduction)
        # Instance attributes: the needed batch keys depend on the partition.
        tree_keys = {"src_heads"} if syntactic else set()
        if self.bracketed:
            tree_keys |= set(BRACKET_KEYS)
        tag_keys = {"src_upos"} if self.uses_tags else set()
        self.train_features = frozenset({"inputs", "targets"} | tree_keys | tag_keys)
        self.decode_features = frozenset({"inputs"} | tree_keys)

    def check_hparams(self):
        super().check_hparams()
        hp = self.hparams
        for layer in hp.mgsa_layers:
            self.check_encoder_position("mgsa_layers", layer, "mgsa_word_heads", ())
        if hp.mgsa_composition not in COMPOSITIONS:
            raise HParamsError(f"mgsa_composition={hp.mgsa_composition!r}: expected one of "
                               f"{', '.join(COMPOSITIONS)}")
        if (hp.mgsa_interaction or "none") not in INTERACTIONS:
            raise HParamsError(f"mgsa_interaction={hp.mgsa_interaction!r}: expected one of "
                               f"{', '.join(INTERACTIONS)}")
        if not 0 <= hp.mgsa_word_heads < hp.num_heads:
            raise HParamsError(f"mgsa_word_heads={hp.mgsa_word_heads}: expected 0 (a quarter) "
                               f"to {hp.num_heads - 1}")
        phrase_head_groups(hp.num_heads, hp.mgsa_word_heads, self.num_granularities)

    # ----------------------------------------------------------------- hooks

    def encoder_layer_class(self, layer_index):
        if layer_index in self.hparams.mgsa_layers:
            return MultiGranularityEncoderLayer
        return super().encoder_layer_class(layer_index)

    def encoder_attention_terms(self, layer_index: int) -> list[AttentionTerm]:
        terms = super().encoder_attention_terms(layer_index)
        if layer_index in self.hparams.mgsa_layers:
            hp = self.hparams
            terms.append(PhraseHeads(*phrase_head_groups(hp.num_heads, hp.mgsa_word_heads,
                                                         self.num_granularities)))
        return terms

    def encoder_layer_options(self, layer_index: int) -> dict:
        options = super().encoder_layer_options(layer_index)
        if layer_index not in self.hparams.mgsa_layers:
            return options
        hp = self.hparams
        return {**options, "num_granularities": self.num_granularities,
                "composition": hp.mgsa_composition, "interaction": hp.mgsa_interaction or "none",
                "chunk_size": hp.mgsa_chunk_size}

    @property
    def derived_features(self) -> DerivedFeatures | None:
        """The syntactic partitions (and tag sources), computed on the host; None for n-grams."""
        if self.partition != "syntactic":
            return None
        return DerivedFeatures(self._tree_keys(), self._derived_keys(), self._derive)

    def _tree_keys(self):
        """The batch keys the phrase structure is read from."""
        return ("src_heads",) + (BRACKET_KEYS if self.bracketed else ())

    def _derived_keys(self):
        levels = range(1, self.num_granularities + 1)
        keys = tuple(PHRASE_KEY.format(k) for k in levels)
        if self.uses_tags:
            keys += tuple(TAG_HEAD_KEY.format(k) for k in levels)
            keys += tuple(TAG_KIND_KEY.format(k) for k in levels)
        return keys

    def _derive(self, heads, *brackets):
        arrays = syntactic_phrase_features(heads, self.num_granularities, *brackets,
                                           rule=self.dependency_rule)
        arrays = arrays if self.uses_tags else arrays[:1]
        return tuple(array[:, k] for array in arrays for k in range(self.num_granularities))

    def syntactic_features(self, features: Mapping[str, Any], length: Any) -> tuple[Any, ...]:
        """The batch's `syntactic_phrase_features`, fitted to `length`: [B, K, length] each.

        Raises:
            KeyError: the batch lacks the derived features (`derived_features`
                compute them on the host; the model never does).
        """
        keys = self._derived_keys()
        require_derived(features, keys, type(self).__name__, self._tree_keys())
        levels = self.num_granularities
        pads = [-1] * (2 * levels) + [NO_PHRASE] * levels
        rows = [fit_length(features[key], length, pad) for key, pad in zip(keys, pads)]
        return tuple(ops.stack(rows[i:i + levels], axis=1) for i in range(0, len(rows), levels))

    def encoder_layer_inputs(self, features, source_ids):
        if self.partition == "ngram":
            return {"phrase_ids": ngram_phrase_ids(source_ids, self.hparams.mgsa_ngram_sizes)}
        return {"phrase_ids": self.syntactic_features(features, ops.shape(source_ids)[1])[0]}

    # ------------------------------------------------------ training interface

    def call(self, features, training=False, return_attention=False):
        encoded = self.encode(features, training=training, return_attention=return_attention)
        outputs = {"logits": self.decode(features["targets"], encoded, training=training)}
        if "attention" in encoded:
            outputs["attention"] = encoded["attention"]
        if self.tag_classifier is not None:
            # G_x, the memory right after composition (seed eq. 9-10), not
            # the interaction's output H_g: the tag loss trains the composition.
            bottom = encoded["phrase_composition"][0]
            outputs["phrase_tag_logits"] = ops.cast(self.tag_classifier(bottom), "float32")
        return outputs
