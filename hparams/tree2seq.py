"""tree2seq hparams sets (Eriguchi et al. 2016, Section 4.2).

The paper trains the mean sentence log-likelihood (eq. 9) with plain SGD from
a learning rate of 1.0, halved whenever
the development loss gets worse, mini-batches of 128 sentences, gradient
norms clipped to 3.0, weights uniform in [-0.1, 0.1], forget-gate biases 1.0,
zero softmax weights and biases, and BlackOut with beta = 0.4. The small
data set uses 256-dimensional embeddings and states with K = 500 or 2,000
samples; the large one 512-dimensional embeddings, d in {512, 768, 1024} and
K = 2,500. Batches here count tokens (`batch_size`, padding included):
4,096 tokens hold about 128 sentences of the paper's length (at most 50
words).

    bin/train --problem=pud_syntax_cs_en --model=tree2seq \\
        --hparams_set=tree2seq_small --output_dir=runs/tree2seq
    bin/decode ... --decode_hparams=beam_size=20,length_model=true

`--hparams=softmax=full` trains with the full softmax (Table 3's
"Softmax" row), `tree_binarization=right` or `left` binarises phrases
without heads.

Table 3's baseline, the sequential attentional model (`--model=anmt`,
`models/anmt.py`), reads the same sets; `reverse_source=true` reverses its
input words. `anmt_small` and `anmt_small_reversed` are its rows at K = 500,
`--hparams=blackout_samples=2000` the rows at K = 2,000:

    bin/train --problem=pud_syntax_cs_en --model=anmt \\
        --hparams_set=anmt_small_reversed --output_dir=runs/anmt_reversed
"""

from syntax_t2t import registry
from syntax_t2t.hparams import HParams


@registry.register_hparams
def tree2seq_base():
    """The large-data model with d = 512 (Table 6): 512/512, K = 2,500."""
    return HParams(
        # Architecture.
        embedding_size=512,
        hidden_size=512,
        num_encoder_layers=1,  # stacked sequential LSTMs; the paper has one
        tree_binarization="head",  # "head", "right" or "left" (syntax_t2t.data.binary_tree)
        reverse_source=False,  # anmt only: read the source words in reverse order
        # Output layer: "blackout" in training (full softmax at inference) or "full".
        softmax="blackout",
        blackout_samples=2500,
        blackout_beta=0.4,
        label_smoothing=0.0,  # only with softmax=full
        # The objective: "sentence" = eq. 9, each sentence's summed loss,
        # averaged over the batch's sentences; "token" = mean per token.
        loss_normalization="sentence",
        # Initialisation.
        init_scale=0.1,
        forget_bias=1.0,
        # Optimisation: plain SGD, halved when the dev loss gets worse.
        optimizer="sgd",
        learning_rate=1.0,
        learning_rate_halving=True,
        clip_grad_norm=3.0,
        update_freq=1,  # batches whose gradients are summed per optimizer step
        # Batching: batch_size counts tokens including padding.
        batch_size=4096,
        max_length=64,
        min_length_bucket=8,
        length_bucket_step=1.1,
    )


@registry.register_hparams
def tree2seq_small():
    """The small-data model (Table 3): 256-dimensional embeddings and states, K = 500."""
    hparams = tree2seq_base()
    hparams.override(dict(embedding_size=256, hidden_size=256, blackout_samples=500))
    return hparams


@registry.register_hparams
def tree2seq_tiny():
    """The same model sized for tests and demos on 2 CPU cores."""
    hparams = tree2seq_base()
    hparams.override(dict(embedding_size=32, hidden_size=32, blackout_samples=64,
                          batch_size=512, max_length=32))
    return hparams


@registry.register_hparams
def anmt_small():
    """Table 3's ANMT baseline (`--model=anmt`) on the small data: tree2seq_small's sizes, K = 500."""
    return tree2seq_small()


@registry.register_hparams
def anmt_small_reversed():
    """Table 3's "+ reverse input" row: anmt_small reading the source words in reverse order."""
    hparams = anmt_small()
    hparams.set("reverse_source", True)
    return hparams
