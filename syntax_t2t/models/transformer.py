"""The Transformer of T2T 1.5.6 as used in the thesis, and the base of every syntax model.

Semantics follow `transformer_base` (thesis 5.2): separate source and target
vocabularies; embeddings scaled by sqrt(D) with padding embedded as zeros;
the target embedding shared with the softmax; T2T's sinusoidal positions
(switchable off); pre-layer-norm blocks with dropout-residual
post-processing and a final layer norm on the encoder and decoder outputs;
label smoothing 0.1. Relative positions (Shaw et al.) are on in encoder and
decoder self-attention whenever `max_relative_position > 0`, as with T2T's
`dot_product_relative` self-attention, so any model combines with them.
Their value embeddings (Shaw et al.; always on in T2T 1.5.6's
`dot_product_attention_relative`, which trained the thesis's relative
baseline) come with `relative_value_bias=true`, which `transformer_relative`
sets; the thesis's eq. 3.2-3.3 write the key term only. `tree_value_bias=true`
gives the source-tree labels (`tree_label_vocab_sizes`) value embeddings too.
T2T's learned "target space" vector added to every encoder input is left
out: it is a constant bias with one target language.

The syntax models subclass this one and override a few hooks:
`tree_label_vocab_sizes` / `source_labels` (key biases from trees),
`parse_head` (parse heads), `encoder_attention_terms` (the attention terms
of each encoder layer, `layers/attention_terms/`: specialised heads,
Pascal's parent-scaled heads, SISA's bi-affine head, MG-SA's phrase heads)
with `spec_inputs` / `source_parents` / `encoder_attention_inputs` (what
those terms read), `source_embedding_size` / `embed_source` (factored
source embeddings), `target_embedding_size` / `decoder_states` /
`decoder_step_states` (decoder inputs of one's own: NSD's target
distances), `encoder_layer_class` / `encoder_layer_options` /
`encoder_layer_inputs` (another encoder block, its arguments and the
batch-derived inputs it takes: MG-SA's phrase partitions),
`supervised_head` (a head trained against a gold); and the contract's
class attributes (`contract.py`): `train_features`, `decode_features`,
`prefix_root`, `criterion` (the losses, `syntax_t2t/criteria/`).

Decoding: `encode` once, `decoder_memory` once (the encoder-decoder keys and
values, the same for every beam), then `decode_step` per position with a
fixed-size self-attention cache from `initial_decoder_cache`; this is the
`symbols_to_logits_fn(ids, step, cache)` of `syntax_t2t.decoding`.
"""

from typing import Any, Mapping, Optional, Sequence

import keras
from keras import ops

from syntax_t2t import registry
from syntax_t2t.hparams import HParams, HParamsError
from syntax_t2t.layers import attention_cache, masks, tree_labels
from syntax_t2t.layers.attention_terms import AttentionTerm, LabelBias, ParseHead
from syntax_t2t.layers.decoder_layer import TransformerDecoderLayer
from syntax_t2t.layers.embedding import TokenEmbedding
from syntax_t2t.layers.encoder_layer import TransformerEncoderLayer
from syntax_t2t.layers.position_encoding import SinusoidalPositionEncoding
from syntax_t2t.models.contract import Features, Tensor
from syntax_t2t.models.hparams_model import HParamsModel

PAD_ID, EOS_ID = 0, 1
POSITION_ENCODINGS = ("sinusoid", "none")
RELATIVE = "relative"


def fit_length(values: Tensor, length: Any, pad_value: int) -> Tensor:
    """Pads with `pad_value` or cuts the last axis of [B, S'] to `length`.

    Args:
        values: int [B, S'].
        length: the wanted S, a Python int or (TensorFlow graphs) a scalar
            tensor such as an `ops.shape` entry.
        pad_value: the id of the added positions.

    Returns:
        int32 [B, S].
    """
    values = ops.cast(values, "int32")
    # `length` positions always suffice, and their number is static wherever
    # `length` is: JAX pads only by static widths, and `length - S'` may be
    # negative.
    values = ops.pad(values, [[0, 0], [0, length]], constant_values=pad_value)
    return values[:, :length]


def shift_right(targets: Tensor) -> Tensor:
    """Decoder inputs for teacher forcing: `[0, y_1, .., y_{T-1}]` (T2T's shift_right)."""
    targets = ops.cast(targets, "int32")
    return ops.pad(targets, [[0, 0], [1, 0]])[:, :-1]


@registry.register_model("transformer")
class Transformer(HParamsModel):
    """Encoder-decoder Transformer (Vaswani et al. 2017) with T2T's choices.

    Args:
        hparams: an `HParams` with the names of `hparams/transformer.py`;
            the model keeps a copy.
        vocab_sizes: the problem's vocabulary sizes, `{"inputs": .., "targets":
            .., "deprel": .., "upos": .., "xpos": ..}`; each model reads the
            ones it uses.
        **kwargs: `keras.Model` arguments (name, ...).

    Raises:
        HParamsError: an hparam is out of range (a layer or head that does
            not exist, an unknown position encoding, ...).
        KeyError: `vocab_sizes` lacks a vocabulary the model needs.
    """

    #: The id fed to `decode_step` at step 0 (targets are shifted right with padding).
    decode_start_id = PAD_ID

    def __init__(self, hparams: HParams, vocab_sizes: Mapping[str, int], **kwargs):
        super().__init__(**kwargs)
        self.hparams = hparams.copy()
        self.vocab_sizes = {str(k): int(v) for k, v in dict(vocab_sizes).items()}
        self.check_hparams()
        hp = self.hparams
        hidden = hp.hidden_size
        self.key_dim = hidden // hp.num_heads
        self.source_embedding = TokenEmbedding(
            self.vocab_size("inputs"), self.source_embedding_size(), name="source_embedding")
        self.target_embedding = TokenEmbedding(
            self.vocab_size("targets"), self.target_embedding_size(), name="target_embedding")
        self.softmax_embedding = (
            self.target_embedding if hp.shared_embedding_and_softmax_weights
            else TokenEmbedding(self.vocab_size("targets"), hidden, scale=False, name="softmax"))
        self.position_encoding = (
            SinusoidalPositionEncoding(name="position_encoding")
            if self.position_encoding_name() == "sinusoid" else None)
        self.embedding_dropout = keras.layers.Dropout(hp.layer_prepostprocess_dropout)

        relative = self.relative_label_vocab_sizes()
        tree = self.tree_label_vocab_sizes()
        relative_values = list(relative) if hp.relative_value_bias else []
        # Runs saved before tree value biases existed had none.
        tree_values = list(tree) if hp.get("tree_value_bias", False) else []
        block = dict(hidden_size=hidden, filter_size=hp.filter_size, num_heads=hp.num_heads,
                     attention_dropout=hp.attention_dropout, relu_dropout=hp.relu_dropout,
                     residual_dropout=hp.layer_prepostprocess_dropout)
        encoder_labels, decoder_labels = {**relative, **tree}, relative

        def label_biases(sizes, values):
            return [LabelBias(sizes, values)] if sizes else []

        # The label biases come last: their tables are made after the other
        # terms' weights, in the order (and so with the seeds) they always were.
        self.encoder_layers = [
            self.encoder_layer_class(i)(
                attention_terms=(self.encoder_attention_terms(i)
                                 + label_biases(encoder_labels, relative_values + tree_values)),
                name=f"encoder_layer_{i}", **block, **self.encoder_layer_options(i))
            for i in range(hp.num_encoder_layers)]
        self.encoder_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="encoder_norm")
        self.decoder_layers = [
            TransformerDecoderLayer(
                self_attention_terms=label_biases(decoder_labels, relative_values),
                name=f"decoder_layer_{i}", **block)
            for i in range(hp.num_decoder_layers)]
        self.decoder_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="decoder_norm")
        self._build_layers()

    # ----------------------------------------------------------------- setup

    def check_hparams(self) -> None:
        """Raises `HParamsError` for values the model cannot use."""
        hp = self.hparams
        if hp.hidden_size % hp.num_heads:
            raise HParamsError(f"hidden_size={hp.hidden_size} is not divisible by "
                               f"num_heads={hp.num_heads}")
        if self.position_encoding_name() not in POSITION_ENCODINGS:
            raise HParamsError(f"position_encoding={hp.position_encoding!r}: expected one of "
                               f"{', '.join(POSITION_ENCODINGS)}")
        if hp.max_relative_position < 0:
            raise HParamsError(f"max_relative_position={hp.max_relative_position} must be "
                               f">= 0 (0 = no relative positions)")

    def position_encoding_name(self) -> str:
        """`hparams.position_encoding`, reading `None` as "none".

        `--hparams=position_encoding=none` parses the literal `none` as None.
        """
        return self.hparams.position_encoding or "none"

    def check_encoder_position(self, layer_name: str, layer: int, head_name: str,
                               heads: Sequence[int]) -> None:
        """Checks that encoder `layer` and every head in `heads` exist."""
        hp = self.hparams
        if not 0 <= layer < hp.num_encoder_layers:
            raise HParamsError(f"{layer_name}={layer}: the encoder has layers 0 .. "
                               f"{hp.num_encoder_layers - 1}")
        for head in heads:
            if not 0 <= head < hp.num_heads:
                raise HParamsError(f"{head_name}={head}: the layers have heads 0 .. "
                                   f"{hp.num_heads - 1}")

    def _build_layers(self):
        """Creates every weight now: their shapes depend on hparams only."""
        hidden = self.hparams.hidden_size
        sequence = (None, None, hidden)
        self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        if self.softmax_embedding is not self.target_embedding:
            self.softmax_embedding.build((None, None))
        for layer in self.encoder_layers:
            # Terms that project an input of their own (specialised heads'
            # `spec_inputs`) get it at the model width.
            layer.build(sequence, attention_inputs_shape={"spec_inputs": sequence})
        for layer in self.decoder_layers:
            layer.build(sequence, sequence)
        self.encoder_norm.build(sequence)
        self.decoder_norm.build(sequence)
        self.built = True

    # ----------------------------------------------------------------- hooks

    def relative_label_vocab_sizes(self) -> dict:
        """`{"relative": 2k + 1}` when relative positions are on, else `{}`."""
        k = self.hparams.max_relative_position
        return {RELATIVE: tree_labels.relative_position_label_count(k)} if k > 0 else {}

    def tree_label_vocab_sizes(self) -> dict:
        """Label kinds derived from source trees, `{name: L}` (none here)."""
        return {}

    def source_labels(self, features: Features, source_ids: Tensor) -> dict:
        """Label ids for the encoder's self-attention biases.

        Args:
            features: the batch.
            source_ids: int32 [B, S'] as the encoder sees them.

        Returns:
            `{name: int32 [B, S', S'] or [S', S']}` for every kind in the
            encoder's label vocabularies.
        """
        k = self.hparams.max_relative_position
        if k <= 0:
            return {}
        length = ops.shape(source_ids)[1]
        return {RELATIVE: tree_labels.relative_position_labels(length, length, k)}

    def spec_inputs(self, features: Features, source_ids: Tensor) -> Optional[Tensor]:
        """[B, S', D] the specialised heads' queries and keys come from (None here)."""
        return None

    def parse_head(self, layer_index: int) -> Optional[int]:
        """The parse head of encoder layer `layer_index`, or None (none here)."""
        return None

    def encoder_attention_terms(self, layer_index: int) -> list[AttentionTerm]:
        """New `AttentionTerm`s of encoder layer `layer_index`'s self-attention.

        Here a `ParseHead` where `parse_head(layer_index)` names one;
        subclasses add theirs to this list. The model appends the label
        biases (relative positions, `tree_label_vocab_sizes`) itself.
        """
        head = self.parse_head(layer_index)
        return [] if head is None else [ParseHead(head)]

    def encoder_attention_inputs(self, features: Features, source_ids: Tensor) -> dict:
        """What the encoder's attention terms read, by name (`MultiHeadAttention`'s `term_inputs`).

        Here `"labels"` (`source_labels`), `"spec_inputs"` (`spec_inputs`)
        and `"parents"` (`source_parents`), where not None; each layer gets
        the entries its terms read.
        """
        inputs = {"labels": self.source_labels(features, source_ids),
                  "spec_inputs": self.spec_inputs(features, source_ids),
                  "parents": self.source_parents(features, source_ids)}
        return {name: value for name, value in inputs.items() if value is not None}

    def encoder_layer_class(self, layer_index: int) -> type:
        """The block class of encoder layer `layer_index` (`TransformerEncoderLayer` here).

        It is built with the arguments of `TransformerEncoderLayer` plus
        `encoder_layer_options(layer_index)`; its `extra_inputs` name the
        entries of `encoder_layer_inputs` its `call` takes, its
        `extra_outputs` the details `encode` collects (one list per name).
        """
        return TransformerEncoderLayer

    def encoder_layer_options(self, layer_index: int) -> dict:
        """Further arguments of encoder layer `layer_index`'s block class ({} here)."""
        return {}

    def encoder_layer_inputs(self, features: Features, source_ids: Tensor) -> dict:
        """`{name: tensor}` inputs for encoder blocks with `extra_inputs` ({} here)."""
        return {}

    def source_parents(self, features: Features, source_ids: Tensor) -> Optional[Tensor]:
        """float32 [B, S'] parent positions for parent-scaled heads (None here)."""
        return None

    def source_embedding_size(self) -> int:
        """Width of the source token embedding (the model width here)."""
        return self.hparams.hidden_size

    def target_embedding_size(self) -> int:
        """Width of the target token embedding (the model width here)."""
        return self.hparams.hidden_size

    def embed_source(self, features: Features, source_ids: Tensor, training: bool) -> Tensor:
        """The encoder's input [B, S', D]: token embeddings, positions, dropout."""
        return self._embed(self.source_embedding, source_ids, 0, training)

    # ------------------------------------------------------------- encoding

    def source_heads(self, features: Features, source_ids: Tensor) -> Tensor:
        """`src_heads` fitted to the words of `source_ids`: int32 [B, S], -1 = no word.

        Raises:
            KeyError: the batch has no `src_heads`.
        """
        if "src_heads" not in features:
            raise KeyError(f"model {type(self).__name__} needs the batch feature 'src_heads' "
                           f"(source trees); the batch has {sorted(features)}")
        length = ops.shape(source_ids)[1] - (1 if self.prefix_root else 0)
        return fit_length(features["src_heads"], length, -1)

    def _embed(self, embedding, ids, start, training):
        x = embedding(ids)
        if self.position_encoding is not None:
            x = self.position_encoding(x, start=start)
        return self.embedding_dropout(x, training=training)

    def encode(self, features: Features, training: bool = False,
               return_attention: bool = False) -> dict:
        """Runs the encoder.

        Args:
            features: the batch; at least `decode_features`.
            training: applies dropout.
            return_attention: also return every layer's self-attention.

        Returns:
            dict with `"outputs"` [B, S', D] (compute dtype), `"padding_mask"`
            bool [B, S']; `"attention"`, a list of float32 [B, H, S', S'] per
            layer, with `return_attention`; `"parse_logits"` float32
            [B, S', S'] for models with a parse head.
        """
        source_ids = self.source_ids(features)
        x = self.embed_source(features, source_ids, training)
        attention_mask = masks.key_padding_mask(source_ids)
        attention_inputs = self.encoder_attention_inputs(features, source_ids)
        layer_inputs = self.encoder_layer_inputs(features, source_ids)
        encoded = {}
        attention = []
        for layer in self.encoder_layers:
            reads = layer.self_attention.input_names
            x, details = layer(
                x, attention_mask=attention_mask,
                attention_inputs={name: value for name, value in attention_inputs.items()
                                  if name in reads},
                return_probs=return_attention, training=training,
                **{name: layer_inputs[name] for name in getattr(layer, "extra_inputs", ())})
            for name in getattr(layer, "extra_outputs", ()):
                encoded.setdefault(name, []).append(details[name])
            if return_attention:
                attention.append(details["probs"])
            if "head_logits" in details:
                encoded[self.head_logits_key] = details["head_logits"]
        encoded["outputs"] = self.encoder_norm(x)
        encoded["padding_mask"] = masks.padding_mask(source_ids)
        if return_attention:
            encoded["attention"] = attention
        return encoded

    # ------------------------------------------------------------- decoding

    def _target_labels(self, query_length, key_length, query_offset):
        k = self.hparams.max_relative_position
        if k <= 0:
            return {}
        return {RELATIVE: tree_labels.relative_position_labels(
            query_length, key_length, k, query_offset)}

    def output_logits(self, decoder_outputs: Tensor) -> Tensor:
        """float32 [..., V] from decoder outputs [..., D]."""
        return self.softmax_embedding.logits(decoder_outputs)

    def decode(self, targets: Tensor, encoded: Mapping[str, Any], training: bool = False) -> Tensor:
        """Teacher-forced decoder: logits float32 [B, T, V] for `targets` [B, T]."""
        x = self._embed(self.target_embedding, shift_right(targets), 0, training)
        return self.output_logits(self.decoder_states(x, encoded, training=training))

    def decoder_states(self, x: Tensor, encoded: Mapping[str, Any],
                       training: bool = False) -> Tensor:
        """Teacher-forced decoder outputs [B, T, D] (final layer norm applied).

        Args:
            x: the decoder's input [B, T, D] (embedded, shifted-right targets).
            encoded: from `encode`.
            training: applies dropout.
        """
        length = ops.shape(x)[1]
        causal = masks.causal_mask(length)
        memory_mask = encoded["padding_mask"][:, None, :]
        labels = self._target_labels(length, length, 0)
        for layer in self.decoder_layers:
            x, _ = layer(x, encoded["outputs"], self_attention_mask=causal,
                         memory_mask=memory_mask, labels=labels, training=training)
        return self.decoder_norm(x)

    def decoder_memory(self, encoded: Mapping[str, Any], beam_size: int = 1) -> dict:
        """What every decoding step reads but never changes.

        Args:
            encoded: from `encode`.
            beam_size: hypotheses per sentence that the decoding steps will
                run. Unused: the memory stays one row per sentence, and the
                cross-attention stacks the queries of a sentence's
                hypotheses on it (`MultiHeadAttention`) rather than read a
                copy per beam.

        Returns:
            dict with `"padding_mask"` bool [B, S'] and `"cross_attention"`, a
            list of (keys, values) pairs of [B, H, S', d] per decoder layer.
        """
        return {"padding_mask": encoded["padding_mask"],
                "cross_attention": [layer.memory_cache(encoded["outputs"])
                                    for layer in self.decoder_layers]}

    def initial_decoder_cache(self, batch_size: Any, max_length: Any,
                              in_place: bool = False) -> dict:
        """Empty self-attention caches for `max_length` decoding steps.

        Args:
            batch_size: rows (sentences times beams).
            max_length: positions of each cache.
            in_place: make `InPlaceCache`s, which `decode_step` writes in
                place (`syntax_t2t.layers.attention_cache`): only for a
                loop that owns them and never reads a cache it has passed
                to a step; not under XLA.

        Returns:
            `{"self_attention": [(keys, values) per layer]}`, zeros
            [B, H, max_length, d] in the compute dtype.
        """
        shape = [batch_size, self.hparams.num_heads, max_length, self.key_dim]
        if in_place:
            return {"self_attention": [attention_cache.empty_in_place_cache(
                shape, self.compute_dtype) for _ in self.decoder_layers]}
        return {"self_attention": [(ops.zeros(shape, self.compute_dtype),
                                    ops.zeros(shape, self.compute_dtype))
                                   for _ in self.decoder_layers]}

    def decode_step(self, ids: Tensor, step: Any, cache: dict, memory: Mapping[str, Any],
                    training: bool = False) -> tuple:
        """Logits of target position `step` given the previous token.

        Args:
            ids: int32 [B], the token at position `step - 1` of the output
                (`decode_start_id` at step 0).
            step: int32 scalar, the position being predicted.
            cache: from `initial_decoder_cache` or the previous step.
            memory: from `decoder_memory`.
            training: applies dropout.

        Returns:
            `(logits float32 [B, V], cache)` with this step's keys and values
            written into the cache.
        """
        ids = ops.cast(ids, "int32")[:, None]
        x = self._embed(self.target_embedding, ids, step, training)
        states, cache = self.decoder_step_states(x, step, cache, memory, training=training)
        return self.output_logits(states)[:, 0], cache

    def decoder_step_states(self, x: Tensor, step: Any, cache: dict, memory: Mapping[str, Any],
                            training: bool = False) -> tuple:
        """One incremental decoder step on an embedded input.

        Args:
            x: the decoder's input [B, 1, D] at position `step`.
            step, cache, memory, training: as in `decode_step`.

        Returns:
            `(states [B, 1, D], cache)`: the decoder output (final layer norm
            applied) and the cache with this step's keys and values written;
            other cache entries (a subclass's) are passed through.
        """
        max_length = ops.shape(cache["self_attention"][0][0])[2]
        causal = masks.causal_mask(1, max_length, step)
        labels = self._target_labels(1, max_length, step)
        memory_mask = memory["padding_mask"][:, None, :]
        new_caches = []
        for layer, layer_cache, memory_cache in zip(
                self.decoder_layers, cache["self_attention"], memory["cross_attention"]):
            x, details = layer(x, self_attention_mask=causal, memory_mask=memory_mask,
                               labels=labels, self_attention_cache=layer_cache,
                               cache_update_index=step, memory_cache=memory_cache,
                               training=training)
            new_caches.append(details["self_attention_cache"])
        return self.decoder_norm(x), dict(cache, self_attention=new_caches)

    # ------------------------------------------------------ training interface

    def call(self, features: Features, training: bool = False,
             return_attention: bool = False) -> dict:
        """Teacher-forced forward pass.

        Args:
            features: the batch; at least `train_features` (parse models run
                without gold heads too, then only the loss needs them).
            training: applies dropout.
            return_attention: also return every encoder layer's self-attention.

        Returns:
            dict with `"logits"` float32 [B, T, V]; `"parse_logits"` float32
            [B, S', S'] for parse models; `"attention"` (list of float32
            [B, H, S', S']) with `return_attention`.
        """
        encoded = self.encode(features, training=training, return_attention=return_attention)
        outputs = {"logits": self.decode(features["targets"], encoded, training=training)}
        for key in (self.head_logits_key, "attention"):
            if key in encoded:
                outputs[key] = encoded[key]
        return outputs
