"""Transformer hparams sets: the thesis's `transformer_base` and its relatives.

`transformer_base` follows T2T 1.5.6 as used in the thesis (Section 5.2), with
the thesis's batch of 3,072 tokens. Every syntax-specific hyper-parameter of
the registered models is defined here with its default, so that any of them
can be overridden with `--hparams`; a model reads only the ones it uses.
"""

from syntax_t2t import registry
from syntax_t2t.hparams import HParams


@registry.register_hparams
def transformer_base():
    """Thesis Section 5.2: 6+6 layers, 512/2048, 8 heads, batch 3,072 tokens."""
    hparams = HParams(
        # Architecture.
        hidden_size=512,
        filter_size=2048,
        num_heads=8,
        num_encoder_layers=6,
        num_decoder_layers=6,
        position_encoding="sinusoid",  # "sinusoid" or "none"
        shared_embedding_and_softmax_weights=True,
        # Regularisation.
        layer_prepostprocess_dropout=0.1,
        attention_dropout=0.1,
        relu_dropout=0.1,
        label_smoothing=0.1,
        # Optimisation (T2T's noam-style schedule: linear warm-up, then
        # reciprocal square root decay, scaled by hidden_size ** -0.5).
        optimizer="adam",
        adam_beta1=0.9,
        adam_beta2=0.997,
        adam_epsilon=1e-9,
        learning_rate=0.2,
        learning_rate_warmup_steps=8000,
        clip_grad_norm=0.0,  # 0 = no clipping
        update_freq=1,  # batches whose gradients are summed per optimizer step (fairseq's name)
        # Batching: batch_size counts tokens including padding.
        batch_size=3072,
        max_length=256,
        min_length_bucket=8,
        length_bucket_step=1.1,
        # Key (and optional value) biases from label embeddings (thesis 3.1).
        max_relative_position=0,  # 0 = no relative positions; Shaw et al. use 20
        relative_value_bias=False,  # relative-position value embeddings (T2T 1.5.6: on)
        tree_value_bias=False,  # value embeddings for the tree labels too
        max_tree_distance=20,  # TreeDistance (thesis 3.1.2): 5 or 20
        max_traversal_length=10,  # TreeTraversal (thesis 3.1.3)
        # Specialised heads (thesis 3.2).
        pos="xpos",  # tag used by SpecPOS: "upos" or "xpos"
        spec_layer=0,
        spec_heads=[0],
        # Parse heads (thesis 4.1-4.2).
        parse_layer=1,
        parse_head=0,
        parse_loss_weight=1.0,
        # What the parse head's cross-entropy is taken of (criteria/head_supervision.py
        # `parse_loss`): "logits" (the head's attention distribution, as the
        # thesis's text says) or "attention" (softmax of the attention
        # probabilities, as the code matching the thesis's names trains it).
        # Also SISA's loss form.
        parse_loss="logits",
        # ------------------------------------------------------------------
        # Pascal and its baselines (Bugliarello and Okazaki 2020); the
        # seed's per-corpus settings are the sets of `hparams/pascal.py`.
        # Subword problems (`subwords` option) give `src_word_position`;
        # with this on, Pascal, SISA and S&H read word boundaries from it.
        source_word_positions=False,
        # Pascal: heads 0 .. pascal_heads - 1 of encoder layer pascal_layer
        # scale their scores by N(j | parent middle, pascal_variance).
        pascal_layer=0,
        pascal_heads=2,  # Table 2: 2 to 8 of 8
        pascal_variance=1.0,  # sigma^2 (Table 7b)
        # "gaussian" (eq. 6) or "parent_only" (Table 7b: D is 1 on the parent
        # word's subwords, 0 elsewhere; layers/parent_scaling.py).
        pascal_weighting="gaussian",
        parent_ignoring=0.0,  # q: a row of D is set to 1 with probability q (training)
        # SISA (Strubell et al. 2018): a bi-affine head supervised with parents.
        sisa_layer=0,
        sisa_head=0,
        sisa_size=0,  # width of the bi-affine projections; 0 = the head size
        sisa_loss_weight=1.0,
        # S&H (Sennrich and Haddow 2016): source factor embeddings
        # concatenated to a narrower word embedding; factors are lemma, upos,
        # xpos, deprel and subword_tag. The seed's variant: deprel of size 10.
        sh_factors=["deprel"],
        sh_factor_sizes=[10],
        # ------------------------------------------------------------------
        # The source phrase structure of MG-SA and NSD's d_S, d_G, d_R:
        # "dependency" (each head with its projection, from src_heads) or
        # "bracketed" (the data's bracketed trees, src_const_*).
        phrase_structure="dependency",
        # MG-SA (Hao et al. 2019): phrase heads in encoder layers mgsa_layers.
        mgsa_layers=[0],  # the seed's best: the bottom layer only
        mgsa_partition="syntactic",  # "ngram" or "syntactic"
        mgsa_ngram_sizes=[2, 3, 4],  # one granularity per group of phrase heads
        mgsa_levels=3,  # K: syntactic phrases of tree levels 1..K
        # Phrases from src_heads (data/dependency_phrases.py): "right_first" (a head
        # takes its right dependents, then its left ones: the seed's Figure 1) or
        # "projection" (each head with its projection, flat).
        mgsa_dependency_phrases="right_first",
        mgsa_word_heads=0,  # word heads (the first ones); 0 = a quarter of num_heads
        mgsa_composition="attention",  # "max", "attention" (the seed's default) or "lstm"
        mgsa_interaction="none",  # phrase interaction: "none", "lstm" or "on_lstm"
        mgsa_chunk_size=8,  # ON-LSTM neurons per master-gate value
        mgsa_tag_loss_weight=0.001,  # lambda of the phrase-tag loss; 0 = no supervision
        # L_tag summed over phrases per target token ("sum": eq. 12 as T2T normalises
        # it) or averaged over phrases ("mean"); criteria/reduction.py.
        mgsa_tag_loss_reduction="sum",
        # ------------------------------------------------------------------
        # NSD (Ma et al. 2019): neural syntactic distances.
        nsd_side="source",  # "source", "target" (needs target trees) or "both"
        nsd_distance="dependency",  # "lca_height" (d_S), "common_ancestors" (d_G),
        # "relative" (d_R) or "dependency" (d_D)
        nsd_max_distance=20,  # distances clipped at +-k (2k + 1 embedding ids)
        nsd_input="sum",  # NSD as input: "none", "concat", "sum" or "linear" (eq. 8-10)
        nsd_embedding_size=0,  # distance-embedding width with "concat"; 0 = hidden_size // 8
        nsd_positional_encoding=False,  # syntactic positional encoding (eq. 15-16)
        nsd_spe_sigma=40.0,  # sigma_SPE, the longest period of the syntactic encoding
        nsd_output=False,  # predict the NSD from the encoder / decoder states (eq. 11)
        nsd_distance_loss=True,  # with nsd_output: add L_dist (eq. 19) to L_ent_dist (eq. 20)
        nsd_loss_weight=1.0,  # weight of L_dist + L_ent_dist (the seed: 1)
        # "sum": eq. 19-20's sums per target token, as OpenNMT normalised eq. 17;
        # "mean": averages over words (and word pairs); criteria/reduction.py.
        nsd_entropy_loss_reduction="sum",
        nsd_distance_loss_reduction="sum",
    )
    # Label smoothing of the parse loss; None = the form's default (0 for
    # "logits", T2T's 0.1 for "attention").
    hparams.define("parse_label_smoothing", None, "float")
    return hparams


@registry.register_hparams
def transformer_relative():
    """Shaw et al. relative positions (max 20) on keys and values, no sinusoidal positions.

    T2T 1.5.6's `dot_product_attention_relative`, with which the thesis
    trained its relative baseline, adds the embeddings to keys and values.
    """
    hparams = transformer_base()
    hparams.max_relative_position = 20
    hparams.relative_value_bias = True
    hparams.position_encoding = "none"
    return hparams


@registry.register_hparams
def transformer_small():
    """`transformer_base` at 256/1024, 4 heads, 3+3 layers (about 10M parameters): CPU experiments of a day."""
    hparams = transformer_base()
    hparams.override(dict(
        hidden_size=256, filter_size=1024, num_heads=4,
        num_encoder_layers=3, num_decoder_layers=3,
        batch_size=2048, learning_rate_warmup_steps=2000, learning_rate=0.05))
    return hparams


@registry.register_hparams
def transformer_cpu():
    """`transformer_small` at 128/512, dropout 0.2, 1,000 warm-up steps: a run of about an hour on 2 CPU cores.

    Half `transformer_small`'s width makes each step about four times
    cheaper, so that a few epochs of a 30k-sentence corpus fit into an hour
    on 2 cores; corpora that small also want the larger dropout of
    small-data Transformers (0.2 rather than 0.1). The README's CPU recipe.
    """
    hparams = transformer_small()
    hparams.override(dict(
        hidden_size=128, filter_size=512, num_heads=4,
        layer_prepostprocess_dropout=0.2, attention_dropout=0.1, relu_dropout=0.1,
        batch_size=2048, max_length=80, learning_rate_warmup_steps=1000, learning_rate=0.1))
    return hparams


@registry.register_hparams
def transformer_tiny():
    """`transformer_base` at 64/256, 4 heads, 2+2 layers: tests, the demo and quick runs on 2 CPU cores."""
    hparams = transformer_base()
    hparams.override(dict(
        hidden_size=64, filter_size=256, num_heads=4,
        num_encoder_layers=2, num_decoder_layers=2,
        batch_size=1024, max_length=64,
        learning_rate_warmup_steps=200, learning_rate=0.1))
    return hparams
