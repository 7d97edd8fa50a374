"""One line on each hyper-parameter of the registered sets: what `--print_hparams` shows.

The table is the one place describing parameters; `tests/test_hparams_descriptions.py`
checks that every parameter of every registered set has a line here (and that
no line outlives its parameter). Defaults and the sets' reasons for them stay
with the sets (`hparams/transformer.py`, `hparams/tree2seq.py`).
"""

from syntax_t2t.hparams import format_literal

DESCRIPTIONS = {
    # Architecture.
    "hidden_size": "Width of the model's states (d_model; the LSTM size of tree2seq).",
    "filter_size": "Width of the Transformer's feed-forward layers.",
    "num_heads": "Attention heads per layer.",
    "num_encoder_layers": "Encoder layers (stacked sequential LSTMs for tree2seq).",
    "num_decoder_layers": "Decoder layers.",
    "embedding_size": "Width of tree2seq's word embeddings.",
    "position_encoding": "Absolute positions added to embeddings: sinusoid or none.",
    "shared_embedding_and_softmax_weights": "Tie the target embedding and the softmax weights.",
    "tree_binarization": "How tree2seq binarises phrases: head, right or left.",
    "reverse_source": "anmt: read the source words in reverse order (Sutskever et al.).",
    # Regularisation and the loss.
    "layer_prepostprocess_dropout": "Dropout on each sublayer's output and the embeddings.",
    "attention_dropout": "Dropout on attention weights.",
    "relu_dropout": "Dropout inside the feed-forward layers.",
    "label_smoothing": "Probability mass spread over the vocabulary in the target loss.",
    "softmax": "tree2seq's output layer in training: blackout (sampled) or full.",
    "blackout_samples": "Negative samples K of BlackOut.",
    "blackout_beta": "BlackOut's sampling exponent beta on unigram frequencies.",
    "loss_normalization": "tree2seq's loss: sentence (summed per sentence) or token (mean).",
    "init_scale": "Weights initialised uniformly in [-init_scale, init_scale] (tree2seq).",
    "forget_bias": "Initial bias of the LSTM forget gates.",
    # Optimisation.
    "optimizer": "Optimiser: adam, sgd (see syntax_t2t/training/optimizers.py).",
    "adam_beta1": "Adam's beta_1.",
    "adam_beta2": "Adam's beta_2.",
    "adam_epsilon": "Adam's epsilon.",
    "learning_rate": "Learning rate (Transformers: the scale of the warm-up/rsqrt schedule).",
    "learning_rate_warmup_steps": "Optimizer steps of linear learning-rate warm-up.",
    "learning_rate_halving": "Halve the learning rate whenever the dev loss gets worse (tree2seq).",
    "clip_grad_norm": "Clip gradients to this global norm; 0 = no clipping.",
    "update_freq": "Sum the gradients of this many batches before each optimizer step.",
    # Batching.
    "batch_size": "Tokens per batch (padding included; --max_tokens sets it).",
    "max_length": "Longest training example in tokens; longer ones are dropped.",
    "min_length_bucket": "Shortest length bucket of the batcher.",
    "length_bucket_step": "Ratio between consecutive length buckets.",
    # Relative positions and label biases.
    "max_relative_position": "Clip of relative positions (Shaw et al.); 0 = none.",
    "relative_value_bias": "Add relative/label embeddings to the values too, not only the keys.",
    "tree_value_bias": "Add the tree labels' embeddings to the values too, not only the keys.",
    "max_tree_distance": "Clip of TreeDistance labels (thesis 3.1.2).",
    "max_traversal_length": "Longest TreeTraversal path label (thesis 3.1.3).",
    # Specialised and parse heads.
    "pos": "Tag predicted by SpecPOS heads: upos or xpos.",
    "spec_layer": "Encoder layer of the specialised heads.",
    "spec_heads": "Indices of the specialised heads.",
    "parse_layer": "Encoder layer of the parse head.",
    "parse_head": "Index of the parse head in parse_layer.",
    "parse_loss_weight": "Weight of the parse loss added to the translation loss.",
    "parse_loss": "Parse loss form: logits (CE of the head's attention) or attention (the "
                  "thesis code's).",
    "parse_label_smoothing": "Parse-loss label smoothing; None = 0 for logits, 0.1 for attention.",
    # Pascal, SISA, Sennrich and Haddow.
    "source_word_positions": "Read word boundaries of subword problems from src_word_position.",
    "pascal_layer": "Encoder layer of Pascal's heads.",
    "pascal_weighting": "Pascal's parent weights: gaussian, or parent_only (Table 7b).",
    "pascal_heads": "Pascal heads: the first this many of pascal_layer.",
    "pascal_variance": "Variance sigma^2 of Pascal's Gaussian around the parent middle.",
    "parent_ignoring": "Probability q of ignoring a word's parent in training (Pascal).",
    "sisa_layer": "Encoder layer of SISA's bi-affine head.",
    "sisa_head": "Index of SISA's head in sisa_layer.",
    "sisa_size": "Width of SISA's bi-affine projections; 0 = the head size.",
    "sisa_loss_weight": "Weight of SISA's parent loss.",
    "sh_factors": "Source factors of Sennrich and Haddow: lemma, upos, xpos, deprel, subword_tag.",
    "sh_factor_sizes": "Embedding width of each source factor.",
    # MG-SA and NSD.
    "phrase_structure": "Source phrases of MG-SA and NSD: dependency or bracketed.",
    "mgsa_layers": "Encoder layers with MG-SA phrase heads.",
    "mgsa_partition": "How MG-SA forms phrases: ngram or syntactic.",
    "mgsa_ngram_sizes": "N-gram size of each group of MG-SA phrase heads.",
    "mgsa_levels": "Tree levels K of syntactic MG-SA phrases.",
    "mgsa_word_heads": "MG-SA heads that attend to words; 0 = a quarter of num_heads.",
    "mgsa_composition": "How a phrase's words are composed: max, attention or lstm.",
    "mgsa_interaction": "Phrase interaction: none, lstm or on_lstm.",
    "mgsa_chunk_size": "ON-LSTM neurons per master-gate value.",
    "mgsa_tag_loss_weight": "Weight of MG-SA's phrase-tag loss; 0 = no supervision.",
    "mgsa_tag_loss_reduction": "L_tag summed per target token (sum, the paper's) or a mean.",
    "mgsa_dependency_phrases": "Dependency phrases: right_first (the paper's Figure 1) or "
                               "projection (flat).",
    "nsd_side": "Where NSD's syntactic distances are used: source, target or both.",
    "nsd_distance": "Distance kind: lca_height, common_ancestors, relative or dependency.",
    "nsd_max_distance": "Distances clipped at +-k.",
    "nsd_input": "NSD as input: none, concat, sum or linear.",
    "nsd_embedding_size": "Distance-embedding width with concat; 0 = hidden_size // 8.",
    "nsd_positional_encoding": "Add NSD's syntactic positional encoding.",
    "nsd_spe_sigma": "Longest period sigma of the syntactic positional encoding.",
    "nsd_output": "Predict the distances from the encoder or decoder states.",
    "nsd_distance_loss": "With nsd_output: add the distance loss L_dist.",
    "nsd_loss_weight": "Weight of NSD's distance losses.",
    "nsd_distance_loss_reduction": "L_dist summed per target token (sum) or averaged (mean).",
    "nsd_entropy_loss_reduction": "L_ent_dist summed per target token (sum) or averaged (mean).",
}


def describe(hparams) -> str:
    """The hparams as `name=value  # description` lines (as `--hparams` takes them), by name.

    Args:
        hparams: a `syntax_t2t.hparams.HParams`; a parameter without a line
            in `DESCRIPTIONS` (a user's own) is shown as undescribed.
    """
    settings = {name: f"{name}={format_literal(value)}" for name, value in hparams.values().items()}
    width = max(map(len, settings.values()), default=0)
    return "\n".join(f"{setting:<{width}}  # {DESCRIPTIONS.get(name, '(no description)')}"
                     for name, setting in sorted(settings.items()))
