"""Which trained models each export format can hold, and why not.

A SavedModel runs our own decoding graph, so it holds any model that
decodes from the token ids of its source (`decode_features` = `inputs`,
nothing computed in NumPy, word vocabularies): the serving signature takes
token strings, and trees, tags or subword segmentation are not in it.

CTranslate2 runs its own Transformer, so the model's inference graph must be
exactly that: token and position embeddings, pre-norm encoder and decoder
blocks of plain multi-head attention and ReLU feed-forward layers (Shaw
relative positions allowed), final layer norms. Training-only extras that
leave that graph alone are fine (the parse heads of `dep_parse` and
`diagonal_parse` are an ordinary head's attention); anything that changes
what an encoder or decoder layer computes is refused.
"""

from typing import Optional

from syntax_t2t.data.derived_features import decoding_derived_features
from syntax_t2t.layers.attention_terms import LabelBias, ParseHead
from syntax_t2t.layers.encoder_layer import TransformerEncoderLayer
from syntax_t2t.models.transformer import RELATIVE, Transformer

#: Transformer methods whose override changes the inference graph.
_GRAPH_METHODS = ("embed_source", "encode", "source_labels", "spec_inputs", "source_parents",
                  "encoder_attention_inputs", "encoder_layer_inputs", "decode", "decoder_states", "decode_step",
                  "decoder_step_states", "decoder_memory", "initial_decoder_cache",
                  "output_logits", "source_embedding_size", "target_embedding_size")


def saved_model_refusal(model, problem, settings) -> Optional[str]:
    """Why `model` cannot be exported as a SavedModel, or None if it can."""
    name = type(model).__name__
    needs = sorted(set(model.decode_features) - {"inputs"})
    if needs:
        return (f"model {name} decodes from {', '.join(needs)} besides the source tokens; the "
                f"serving signature takes token strings only")
    if decoding_derived_features(model) is not None:
        return f"model {name} derives decoding features in NumPy on the host, outside the graph"
    if getattr(problem, "subwords", None):
        return (f"problem {problem.name} splits words into subwords in Python; the serving "
                f"signature looks whole tokens up")
    if settings.length_model:
        return "length_model=true reads training statistics that the export does not hold"
    return None


def ctranslate2_refusal(model) -> Optional[str]:
    """Why `model`'s inference graph is not CTranslate2's Transformer, or None if it is."""
    name = type(model).__name__
    if not isinstance(model, Transformer):
        return f"model {name} is not a Transformer (CTranslate2 runs Transformers only)"
    needs = sorted(set(model.decode_features) - {"inputs"})
    if needs:
        return f"model {name} decodes from {', '.join(needs)} besides the source tokens"
    overridden = [method for method in _GRAPH_METHODS
                  if getattr(type(model), method) is not getattr(Transformer, method)]
    if overridden:
        return (f"model {name} changes the Transformer's inference graph "
                f"({', '.join(overridden)})")
    if model.tree_label_vocab_sizes():
        return (f"model {name} biases attention by tree labels "
                f"({', '.join(sorted(model.tree_label_vocab_sizes()))})")
    for index, layer in enumerate(model.encoder_layers):
        if type(layer) is not TransformerEncoderLayer:
            return f"encoder layer {index} of model {name} is a {type(layer).__name__}"
        # Label biases (relative positions only, by now) and a parse head, which
        # only reports its logits, leave CTranslate2's attention as it is.
        special = [term.describe() for term in layer.self_attention.terms
                   if not isinstance(term, (LabelBias, ParseHead))]
        if special:
            return f"encoder layer {index} of model {name} has {', '.join(special)}"
    hparams = model.hparams
    if hparams.max_relative_position > 0 and model.position_encoding is not None:
        return ("relative positions together with sinusoidal positions: CTranslate2 adds no "
                "position encodings to models with relative positions "
                "(use position_encoding=none, as transformer_relative does)")
    epsilons = {layer.layer_norm_epsilon for layer in model.encoder_layers + model.decoder_layers}
    if len(epsilons) > 1:
        return f"layer norms of different epsilons {sorted(epsilons)}"
    labels = {label for layer in model.decoder_layers for term in layer.self_attention.terms
              if isinstance(term, LabelBias) for label in term.label_vocab_sizes}
    if labels - {RELATIVE}:
        return f"decoder attention biased by labels {sorted(labels - {RELATIVE})}"
    return None
