"""`bin/export --format=ctranslate2`: our Transformer's weights in a CTranslate2 model.

The model is written through CTranslate2's specification API
(`ctranslate2.specs.TransformerSpec`), layer by layer, so that CTranslate2
computes what `bin/decode` computes:

* embeddings scaled by sqrt(D); the decoder starts from a zero vector
  (`start_from_zero_embedding`: our decoder's shifted-in first input is the
  zero embedding of padding), with `<pad>` as its start token;
* our sinusoidal table (sines then cosines, position 0 first) as explicit
  position encodings: CTranslate2's own table starts at position 1;
  models with Shaw relative positions get their key tables (and value
  tables, zeros when the model biases keys only) and no position encodings;
* pre-norm blocks with our layer norms (epsilon 1e-6), projections without
  biases (queries, keys and values fused as CTranslate2 expects), ReLU
  feed-forward layers with biases, final layer norms;
* the softmax tied to the target embedding (or the separate softmax table);
* `<EOS>` appended to every source, and `<ROOT>` put first for models that
  prefix it (`dep_parse`, `diagonal_parse`), so callers pass plain tokens.

Differences that remain are CTranslate2's, not the weights': its beam
search divides scores by `length ** length_penalty`, not by GNMT's
`((5 + length) / 6) ** alpha`, so with alpha > 0 it can rank finished
hypotheses differently; and it ends a hypothesis only where `<EOS>` is
among the best beam of a step's 2 × beam candidates, where T2T's search
takes it from all of them. With `length_penalty=0` (alpha = 0) and
`bin/decode --decode_hparams=alpha=0,eos_candidates=beam`, or greedy
search, outputs equal `bin/decode`'s. Its `max_decoding_length` counts
output tokens as our `source length + 1 + extra_length` does, and its
`min_decoding_length` defaults to 1 where our search may end at once (an
empty translation): pass `min_decoding_length=0` to match.
"""

import numpy as np

from syntax_t2t.data.vocab import EOS, PAD, ROOT, UNK
from syntax_t2t.layers.attention_terms import LabelBias
from syntax_t2t.layers.position_encoding import sinusoidal_signal
from syntax_t2t.models.transformer import RELATIVE

#: Rows of the position table: the longest source or output CTranslate2 can take.
MAX_POSITIONS = 1024


def _numpy(weight):
    return np.asarray(weight.numpy(), dtype=np.float32)


def _set_linear(spec, kernel, bias=None):
    """A [D_in, D_out] kernel as CTranslate2's [D_out, D_in] weight."""
    spec.weight = np.ascontiguousarray(kernel.T)
    if bias is not None:
        spec.bias = bias


def _set_norm(spec, norm):
    spec.gamma, spec.beta = _numpy(norm.gamma), _numpy(norm.beta)


def _projection(kernel):
    """An input kernel [D, H, d] as [D, H * d]."""
    kernel = _numpy(kernel)
    return kernel.reshape(kernel.shape[0], -1)


def _set_attention(spec, attention, self_attention):
    queries, keys, values = (_projection(attention.query_kernel), _projection(attention.key_kernel),
                             _projection(attention.value_kernel))
    output = _numpy(attention.output_kernel)
    if self_attention:
        _set_linear(spec.linear[0], np.concatenate([queries, keys, values], axis=1))
    else:
        _set_linear(spec.linear[0], queries)
        _set_linear(spec.linear[1], np.concatenate([keys, values], axis=1))
    _set_linear(spec.linear[-1], output.reshape(-1, output.shape[-1]))
    if hasattr(spec, "relative_position_keys"):
        label_bias = attention.term(LabelBias)
        key_table = _numpy(label_bias.key_tables[RELATIVE])
        value_table = label_bias.value_tables.get(RELATIVE)
        spec.relative_position_keys = key_table
        spec.relative_position_values = (np.zeros_like(key_table) if value_table is None
                                         else _numpy(value_table))


def _set_feed_forward(spec, norm, feed_forward):
    _set_norm(spec.layer_norm, norm)
    _set_linear(spec.linear_0, _numpy(feed_forward.filter_layer.kernel),
                _numpy(feed_forward.filter_layer.bias))
    _set_linear(spec.linear_1, _numpy(feed_forward.output_layer.kernel),
                _numpy(feed_forward.output_layer.bias))


def transformer_spec(model, vocabularies):
    """The `ctranslate2.specs.TransformerSpec` of `model` (see the module docstring).

    Args:
        model: a model that `exportable.ctranslate2_refusal` accepts.
        vocabularies: the problem's, with `"inputs"` and `"targets"`.
    """
    from ctranslate2.specs import transformer_spec as specs

    hparams = model.hparams
    relative = hparams.max_relative_position > 0
    spec = specs.TransformerSpec.from_config(
        (hparams.num_encoder_layers, hparams.num_decoder_layers), hparams.num_heads,
        with_relative_position=relative, pre_norm=True)
    hidden = hparams.hidden_size
    positions = (np.zeros([MAX_POSITIONS, hidden], np.float32) if model.position_encoding is None
                 else sinusoidal_signal(MAX_POSITIONS, hidden).numpy())

    encoder, decoder = spec.encoder, spec.decoder
    encoder.embeddings[0].weight = _numpy(model.source_embedding.embeddings)
    decoder.embeddings.weight = _numpy(model.target_embedding.embeddings)
    for part in (encoder, decoder):
        part.scale_embeddings = True
        if not relative:
            part.position_encodings.encodings = positions
    decoder.start_from_zero_embedding = True
    _set_linear(decoder.projection, _numpy(model.softmax_embedding.embeddings).T)
    _set_norm(encoder.layer_norm, model.encoder_norm)
    _set_norm(decoder.layer_norm, model.decoder_norm)
    for layer_spec, layer in zip(encoder.layer, model.encoder_layers):
        _set_norm(layer_spec.self_attention.layer_norm, layer.attention_norm)
        _set_attention(layer_spec.self_attention, layer.self_attention, self_attention=True)
        _set_feed_forward(layer_spec.ffn, layer.feed_forward_norm, layer.feed_forward)
    for layer_spec, layer in zip(decoder.layer, model.decoder_layers):
        _set_norm(layer_spec.self_attention.layer_norm, layer.self_attention_norm)
        _set_attention(layer_spec.self_attention, layer.self_attention, self_attention=True)
        _set_norm(layer_spec.attention.layer_norm, layer.cross_attention_norm)
        _set_attention(layer_spec.attention, layer.cross_attention, self_attention=False)
        _set_feed_forward(layer_spec.ffn, layer.feed_forward_norm, layer.feed_forward)

    config = spec.config
    config.layer_norm_epsilon = model.encoder_layers[0].layer_norm_epsilon
    config.unk_token, config.eos_token, config.decoder_start_token = UNK, EOS, PAD
    config.add_source_eos = True
    if model.prefix_root:
        config.bos_token, config.add_source_bos = ROOT, True
    spec.register_source_vocabulary(list(vocabularies["inputs"].tokens))
    spec.register_target_vocabulary(list(vocabularies["targets"].tokens))
    return spec


def export_ctranslate2(model, vocabularies, output_dir, quantization=None):
    """Writes `model` as a CTranslate2 model directory.

    Args:
        model, vocabularies: as `transformer_spec`.
        output_dir: the model directory to write (must not exist yet).
        quantization: None (float32) or a CTranslate2 quantization ("int8", ...).
    """
    import ctranslate2

    spec = transformer_spec(model, vocabularies)

    class _SpecConverter(ctranslate2.converters.Converter):
        def _load(self):
            return spec

    _SpecConverter().convert(output_dir, quantization=quantization)
