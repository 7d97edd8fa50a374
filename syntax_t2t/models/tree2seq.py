"""Tree-to-sequence attentional NMT (Eriguchi, Hashimoto and Tsuruoka 2016).

Encoder. A sequential LSTM reads the source words and `<EOS>` (eq. 1, 4;
`num_encoder_layers` stacked LSTMs, one in the paper). A binary Tree-LSTM
(`syntax_t2t.layers.tree_lstm`, eq. 10-11) then builds the n - 1 phrases of
the source's binary phrase structure bottom-up, its leaves being the
sequential LSTM's (h, c) of the n words.

Trees. The source trees are dependency trees (`src_heads`); each is turned
into its phrase structure "every head with its projection"
(`syntax_t2t.data.dependency_phrases.phrase_structure_from_dependencies`: heads
made projective by lifting, one phrase per token with dependents) and
binarised by the rule `tree_binarization` of
`syntax_t2t.data.binary_tree.binarize`, "head" by default: each phrase's
head first absorbs its right dependents, nearest first, then its left ones,
nearest first. That needs Python, so the model declares the trees as
`derived_features` (`src_tree_left`, `src_tree_right`, `src_tree_level`,
the level-order encoding of `batch_binary_trees` over the batch's padded
length, -1 padded): the trainer computes them in the input pipeline and the
decoder for every batch it pads. Trees are cached by their heads, so an
epoch after the first costs a dictionary look-up per sentence. A sentence
without a parse (all heads -1) has no phrases and a zero root.

Decoder. Its first state s_1 is another Tree-LSTM unit over the last
sequential state (at `<EOS>`) and the root phrase (eq. 12; the root is zero
for a sentence without a parse). s_1 predicts y_1 itself; every later state
is an LSTM step on the previous target word and the previous attentional
state (input feeding, eq. 14):

    s_j = LSTM([E y_{j-1}; s~_{j-1}], s_{j-1})                  (j > 1)
    alpha_j = softmax over the n + 1 sequential states (words and <EOS>)
              and the n - 1 phrase states of (h_i . s_j)          (eq. 5, 13)
    d_j = sum_i alpha_j(i) h_i
    s~_j = tanh(W_d [s_j; d_j] + b_d)                             (eq. 7)
    p(y_j | y_<j, x) = softmax(W_s s~_j + b_s)                    (eq. 8)

Output. `softmax="blackout"` trains the output layer with BlackOut (Ji et
al. 2016; `blackout_samples` K, `blackout_beta`), `softmax="full"` with the
full softmax and `label_smoothing`; inference and evaluation always use the
full softmax. The training objective (`"total"`, the criterion
`criteria/tree2seq.py`) is eq. 9's with
`loss_normalization="sentence"`: the mean over the batch's sentences of
each sentence's summed token losses, the scale for which the paper's SGD
learning rate of 1.0 is meant; `"token"` averages over tokens instead.
`"nmt"` is always the mean per target token, as for the other models.
Training details are hparams (`hparams/tree2seq.py`): every
weight uniform in [-init_scale, init_scale] except the biases (0), the
LSTM and Tree-LSTM forget-gate biases (`forget_bias`, 1.0), and the softmax
weights (0), as in the paper's Section 4.2.

Decoding follows `syntax_t2t.decoding.fast_decode`: `encode` once,
`decoder_memory` (the attended states, their mask and s_1, tiled per beam),
and `decode_step`, whose cache is the decoder state (h, c, s~).
"""

import functools
from typing import Any, Mapping

import keras
import numpy as np
from keras import ops

from syntax_t2t import registry
from syntax_t2t.backend.loops import scan_states
from syntax_t2t.data import binary_tree
from syntax_t2t.data.dependency_phrases import phrase_structure_from_dependencies
from syntax_t2t.data.derived_features import DerivedFeatures, require_derived
from syntax_t2t.data.tree import DependencyTree, TreeError
from syntax_t2t.hparams import HParamsError
from syntax_t2t.layers.blackout import BlackOut
from syntax_t2t.layers.tree_lstm import BinaryTreeLSTM, BinaryTreeLSTMCell, root_states
from syntax_t2t.models.hparams_model import HParamsModel
from syntax_t2t.models.transformer import fit_length, shift_right

PAD_ID = 0
SOFTMAXES = ("blackout", "full")
LOSS_NORMALIZATIONS = ("sentence", "token")
TREE_FEATURES = ("src_tree_left", "src_tree_right", "src_tree_level")
_TREE_CACHE_SIZE = 1 << 17
# The masked score of a padding position: float32's lowest, finite so that
# softmax over a row of padding only (never attended) stays finite.
_MASKED_SCORE = float(np.finfo(np.float32).min)


@functools.lru_cache(maxsize=_TREE_CACHE_SIZE)
def _binary_tree(heads: tuple[int, ...], rule: str) -> binary_tree.BinaryTree:
    tree = DependencyTree.from_heads(("_",) * len(heads), np.array(heads, np.int32))
    return binary_tree.binarize(phrase_structure_from_dependencies(tree), rule)


def source_tree_arrays(src_heads: np.ndarray, rule: str = "head") -> tuple[np.ndarray, ...]:
    """The binary phrase structures of a batch's source trees (module docstring).

    Args:
        src_heads: int [B, L]: 1-based heads, 0 = ROOT, -1 after each
            sentence's words (`docs/design.md`); a row of -1 is a sentence
            without a parse.
        rule: the binarisation rule of `binary_tree.binarize`.

    Returns:
        `(left, right, level)`, int32 [B, L]: the arrays of
        `binary_tree.batch_binary_trees` over L positions (leaves 0..L-1,
        phrase slot k is node L + k), with one more column of -1.

    Raises:
        ValueError: a row whose heads are not a tree, or have a gap.
    """
    heads = np.asarray(src_heads, dtype=np.int64)
    batch_size, length = heads.shape
    arrays = [np.full((batch_size, length), binary_tree.PAD_NODE, np.int32) for _ in TREE_FEATURES]
    rows, trees = [], []
    for row, row_heads in enumerate(heads):
        num_words = int(np.sum(row_heads >= 0))
        if np.any(row_heads[num_words:] >= 0):
            raise ValueError(f"src_heads row {row}: heads must come first, then -1 padding; got "
                             f"{row_heads.tolist()}")
        if num_words == 0:
            continue
        try:
            trees.append(_binary_tree(tuple(row_heads[:num_words].tolist()), rule))
        except TreeError as error:
            raise ValueError(f"src_heads row {row}: {error}") from None
        rows.append(row)
    if trees:
        batched = binary_tree.batch_binary_trees(trees, length)
        for array, key in zip(arrays, ("tree_left", "tree_right", "tree_level")):
            array[rows, :length - 1] = batched[key]
    return tuple(arrays)


def _forget_bias_initializer(units, forget_bias):
    """A Keras LSTM bias (gates i, f, c, o) of zeros with the forget gate at `forget_bias`."""
    def initializer(shape, dtype=None):
        return ops.concatenate([ops.zeros([units], dtype),
                                ops.full([units], float(forget_bias), dtype),
                                ops.zeros([2 * units], dtype)], axis=0)
    return initializer


def _masked_lstm(cell, inputs, mask):
    """Runs an LSTM cell over a right-padded sequence.

    Args:
        cell: a `keras.layers.LSTMCell`.
        inputs: [B, S, E].
        mask: bool [B, S], True for tokens.

    Returns:
        `(h, c)`, each [B, S, d]; at padding the state of the last token is
        carried on, so `h[:, -1]`, `c[:, -1]` are the final state.
    """
    zeros = ops.zeros((ops.shape(inputs)[0], cell.units), cell.compute_dtype)

    def step(state, elements):
        x, keep = elements
        _, (h, c) = cell(x, list(state))
        keep = keep[:, None]
        return ops.where(keep, h, state[0]), ops.where(keep, c, state[1])

    h, c = scan_states(step, (zeros, zeros),
                       (ops.transpose(inputs, [1, 0, 2]), ops.transpose(mask)))
    return ops.transpose(h, [1, 0, 2]), ops.transpose(c, [1, 0, 2])


@registry.register_model("tree2seq")
class Tree2Seq(HParamsModel):
    """The tree-to-sequence attentional model (module docstring).

    Args:
        hparams: an `HParams` with the names of `hparams/tree2seq.py`.
        vocab_sizes: the problem's vocabulary sizes (`inputs`, `targets`).
        **kwargs: `keras.Model` arguments.

    Raises:
        HParamsError: an unknown softmax or binarisation rule, or a size out of range.
        KeyError: `vocab_sizes` lacks `inputs` or `targets`.
    """

    train_features = frozenset({"inputs", "targets", "src_heads"})
    decode_features = frozenset({"inputs", "src_heads"})
    decode_start_id = PAD_ID
    criterion = "tree2seq"
    #: Whether the encoder has the tree part (`models/anmt.py` is the model without).
    uses_trees = True

    def __init__(self, hparams, vocab_sizes: Mapping[str, int], **kwargs):
        super().__init__(**kwargs)
        self.hparams = hparams.copy()
        self.vocab_sizes = {str(k): int(v) for k, v in dict(vocab_sizes).items()}
        self.check_hparams()
        hp = self.hparams
        hidden = hp.hidden_size
        uniform = keras.initializers.RandomUniform(-hp.init_scale, hp.init_scale)
        self.derived_features = DerivedFeatures(
            ("src_heads",), TREE_FEATURES,
            functools.partial(source_tree_arrays, rule=hp.tree_binarization)) if self.uses_trees else None

        def lstm_cell(name):
            return keras.layers.LSTMCell(
                hidden, kernel_initializer=uniform, recurrent_initializer=uniform,
                bias_initializer=_forget_bias_initializer(hidden, hp.forget_bias),
                unit_forget_bias=False, name=name)

        self.source_embedding = keras.layers.Embedding(
            self.vocab_size("inputs"), hp.embedding_size, embeddings_initializer=uniform,
            name="source_embedding")
        self.encoder_cells = [lstm_cell(f"encoder_lstm_{i}") for i in range(hp.num_encoder_layers)]
        if self.uses_trees:
            self.tree_lstm = BinaryTreeLSTM(hidden, kernel_initializer=uniform,
                                            forget_bias=hp.forget_bias, name="tree_lstm")
            self.decoder_initializer = BinaryTreeLSTMCell(
                hidden, kernel_initializer=uniform, forget_bias=hp.forget_bias,
                name="decoder_initializer")
        self.target_embedding = keras.layers.Embedding(
            self.vocab_size("targets"), hp.embedding_size, embeddings_initializer=uniform,
            name="target_embedding")
        self.decoder_cell = lstm_cell("decoder_lstm")
        self.attention_output = keras.layers.Dense(hidden, activation="tanh",
                                                   kernel_initializer=uniform,
                                                   name="attention_output")
        self.output_layer = BlackOut(self.vocab_size("targets"), hp.blackout_samples,
                                     beta=hp.blackout_beta, kernel_initializer="zeros",
                                     name="softmax")
        self._build_layers()

    # ----------------------------------------------------------------- setup

    def check_hparams(self):
        """Raises `HParamsError` for values the model cannot use."""
        hp = self.hparams
        if hp.softmax not in SOFTMAXES:
            raise HParamsError(f"softmax={hp.softmax!r}: expected one of {', '.join(SOFTMAXES)}")
        if hp.tree_binarization not in binary_tree.RULES:
            raise HParamsError(f"tree_binarization={hp.tree_binarization!r}: expected one of "
                               f"{', '.join(binary_tree.RULES)}")
        for name in ("hidden_size", "embedding_size", "num_encoder_layers", "blackout_samples"):
            if hp.get(name) < 1:
                raise HParamsError(f"{name}={hp.get(name)} must be at least 1")
        if not 0.0 <= hp.blackout_beta <= 1.0:
            raise HParamsError(f"blackout_beta={hp.blackout_beta} must lie in [0, 1]")
        if hp.loss_normalization not in LOSS_NORMALIZATIONS:
            raise HParamsError(f"loss_normalization={hp.loss_normalization!r}: expected one of "
                               f"{', '.join(LOSS_NORMALIZATIONS)}")
        if not hp.init_scale > 0:
            raise HParamsError(f"init_scale={hp.init_scale} must be positive")
        if self.uses_trees and hp.get("reverse_source", False):
            raise HParamsError("reverse_source=true: the tree encoder reads the words in their "
                               "order (their leaves); only the sequential model anmt reverses")

    def _build_layers(self):
        """Creates every weight now: their shapes depend on hparams only."""
        hp = self.hparams
        hidden, embedding = hp.hidden_size, hp.embedding_size
        self.source_embedding.build((None, None))
        for i, cell in enumerate(self.encoder_cells):
            cell.build((None, embedding if i == 0 else hidden))
        if self.uses_trees:
            self.tree_lstm.build()
            self.decoder_initializer.build()
        self.target_embedding.build((None, None))
        self.decoder_cell.build((None, embedding + hidden))
        self.attention_output.build((None, 2 * hidden))
        self.output_layer.build((None, hidden))
        self.built = True

    def parse_head(self, layer_index):
        """No encoder layer has a parse head (the decoding CLI asks)."""
        return None

    # ------------------------------------------------------------- encoding

    def source_trees(self, features: Mapping[str, Any], num_leaves: Any) -> tuple[Any, Any, Any]:
        """The batch's trees, renumbered for `num_leaves` leaf positions: int32 [B, num_leaves] x 3.

        Raises:
            KeyError: the batch lacks the derived tree features.
        """
        require_derived(features, TREE_FEATURES, type(self).__name__, ("src_heads",))
        left, right, level = (ops.cast(features[key], "int32") for key in TREE_FEATURES)
        # The arrays number phrase slot k as node L + k for their own length L.
        positions = ops.shape(left)[1]

        def renumbered(children):
            return ops.where(children >= positions, children - positions + num_leaves, children)

        return (fit_length(renumbered(left), num_leaves, binary_tree.PAD_NODE),
                fit_length(renumbered(right), num_leaves, binary_tree.PAD_NODE),
                fit_length(level, num_leaves, binary_tree.PAD_NODE))

    def encode_sequence(self, inputs):
        """The sequential LSTMs over `inputs` int [B, S] (eq. 1, 4).

        Returns:
            `(h, c, token_mask)`: h and c [B, S, d] (at padding the last
            token's state carried on), token_mask bool [B, S].
        """
        token_mask = ops.not_equal(inputs, PAD_ID)
        states = self.source_embedding(inputs)
        memory_cells = None
        for cell in self.encoder_cells:
            states, memory_cells = _masked_lstm(cell, states, token_mask)
        return states, memory_cells, token_mask

    def encode(self, features: Mapping[str, Any], training: bool = False) -> dict:
        """Runs the sequential and the tree encoder.

        Args:
            features: the batch: `inputs`, `src_heads` and the derived tree features.
            training: unused (the model has no dropout); kept for the models contract.

        Returns:
            dict with `"outputs"` [B, 2S, d] (the S sequential states, then
            the S phrase slots), `"padding_mask"` bool [B, 2S] (True for
            tokens and phrases), and the decoder's first state
            `"initial_h"`, `"initial_c"` [B, d] (eq. 12).
        """
        inputs = ops.cast(features["inputs"], "int32")
        length = ops.shape(inputs)[1]
        states, memory_cells, token_mask = self.encode_sequence(inputs)
        left, right, level = self.source_trees(features, length)
        phrase_h, phrase_c = self.tree_lstm(states, memory_cells, left, right, level)
        heads = ops.cast(features["src_heads"], "int32")
        num_leaves = ops.sum(ops.cast(heads >= 0, "int32"), axis=1)
        root_h = root_states(states, phrase_h, left, num_leaves)
        root_c = root_states(memory_cells, phrase_c, left, num_leaves)
        initial_h, initial_c = self.decoder_initializer(states[:, -1], memory_cells[:, -1],
                                                        root_h, root_c)
        token_states = states * ops.cast(token_mask, states.dtype)[:, :, None]
        return {"outputs": ops.concatenate([token_states, phrase_h], axis=1),
                "padding_mask": ops.concatenate([token_mask, left >= 0], axis=1),
                "initial_h": initial_h, "initial_c": initial_c}

    # ------------------------------------------------------------- decoding

    def decoder_memory(self, encoded: Mapping[str, Any], beam_size: int = 1) -> dict:
        """What every decoding step reads but never changes, one row per hypothesis.

        Args:
            encoded: from `encode`.
            beam_size: hypotheses per sentence; each sentence's rows are
                repeated that many times (sentence-major, as the search's).

        Returns:
            dict with `"states"` [B * beam, M, d], `"padding_mask"` bool
            [B * beam, M] and the first decoder state `"initial_h"`,
            `"initial_c"` [B * beam, d].
        """
        memory = {"states": encoded["outputs"], "padding_mask": encoded["padding_mask"],
                  "initial_h": encoded["initial_h"], "initial_c": encoded["initial_c"]}
        if beam_size == 1:
            return memory
        return {key: ops.repeat(value, beam_size, axis=0) for key, value in memory.items()}

    def initial_decoder_cache(self, batch_size: Any, max_length: Any,
                              in_place: bool = False) -> dict:
        """The decoder state before step 0: zeros `"h"`, `"c"`, `"feed"` [B, d].

        Step 0 replaces h and c by s_1 from the memory; `max_length` and
        `in_place` are unused (the state does not grow, and each step makes
        a new one).
        """
        zeros = ops.zeros((batch_size, self.hparams.hidden_size), self.compute_dtype)
        return {"h": zeros, "c": zeros, "feed": zeros}

    def _decoder_state(self, ids, step, cache, memory, training=False):
        """One decoder step without the softmax: the new `(h, c, feed)` (module docstring)."""
        inputs = ops.concatenate(
            [self.target_embedding(ops.cast(ids, "int32")), cache["feed"]], axis=-1)
        _, (h, c) = self.decoder_cell(inputs, [cache["h"], cache["c"]], training=training)
        first = ops.equal(step, 0)
        h = ops.where(first, ops.cast(memory["initial_h"], h.dtype), h)
        c = ops.where(first, ops.cast(memory["initial_c"], c.dtype), c)
        states = memory["states"]
        scores = ops.cast(ops.einsum("bd,bmd->bm", h, ops.cast(states, h.dtype)), "float32")
        scores = ops.where(memory["padding_mask"], scores, _MASKED_SCORE)
        weights = ops.softmax(scores, axis=-1)
        context = ops.einsum("bm,bmd->bd", ops.cast(weights, states.dtype), states)
        feed = self.attention_output(ops.concatenate([h, ops.cast(context, h.dtype)], axis=-1))
        return {"h": h, "c": c, "feed": feed}

    def decode_step(self, ids, step, cache: dict, memory: Mapping[str, Any],
                    training: bool = False) -> tuple[Any, dict]:
        """Logits of target position `step` given the previous token.

        Args:
            ids: int32 [B], the token at position `step - 1` (`decode_start_id`
                at step 0, where it is not read).
            step: int32 scalar, the position being predicted.
            cache: from `initial_decoder_cache` or the previous step.
            memory: from `decoder_memory`.
            training: passed to the layers.

        Returns:
            `(logits float32 [B, V], cache)`.
        """
        cache = self._decoder_state(ids, step, cache, memory, training)
        return self.output_layer.logits(cache["feed"]), cache

    def decoder_outputs(self, targets, encoded: Mapping[str, Any], training: bool = False):
        """Teacher-forced attentional states s~ [B, T, d] for `targets` [B, T]."""
        decoder_ids = shift_right(targets)
        memory = self.decoder_memory(encoded)
        initial = self.initial_decoder_cache(ops.shape(decoder_ids)[0], None)

        def step(cache, elements):
            ids, position = elements
            return self._decoder_state(ids, position, cache, memory, training)

        positions = ops.arange(ops.shape(decoder_ids)[1], dtype="int32")
        states = scan_states(step, initial, (ops.transpose(decoder_ids), positions))
        return ops.transpose(states["feed"], [1, 0, 2])

    # ------------------------------------------------------ training interface

    def call(self, features: Mapping[str, Any], training: bool = False) -> dict:
        """Teacher-forced forward pass.

        Returns:
            dict with `"logits"` float32 [B, T, V] (the full softmax's) and,
            when training with BlackOut, `"softmax_inputs"` [B, T, d], the
            states its criterion (`criteria/tree2seq.py`) samples the BlackOut
            loss from.
        """
        encoded = self.encode(features, training=training)
        outputs = self.decoder_outputs(features["targets"], encoded, training=training)
        result = {"logits": self.output_layer.logits(outputs)}
        if training and self.hparams.softmax == "blackout":
            result["softmax_inputs"] = outputs
        return result
