"""Hparams sets for Multi30k: on a CPU (the one `docs/results.md` reports), and the pre-registered size.

`transformer_small` (256/1024, 3+3 layers) trains Multi30k at a few hundred
target tokens/s on 2 CPU cores: one epoch would take most of an hour. This
set halves the width, which brings a run of several epochs into about an hour
there; Multi30k's 29,000 sentences also want the larger dropout of small-data
Transformers (0.2 rather than 0.1).

    bin/train --problem=multi30k_syntax_cs_en --model=dep_parse \\
        --hparams_set=transformer_multi30k_cpu --hparams=parse_layer=1 ...

`transformer_multi30k_256` is the size docs/preregistration.md fixes for the
confirmatory experiment (on a GPU): `transformer_small`'s width 256, 4 heads
of 64, filter 1024, 3+3 layers, with this set's small-data dropout.
"""

from syntax_t2t.hparams_sets.transformer import transformer_small
from syntax_t2t import registry


@registry.register_hparams
def transformer_multi30k_cpu():
    """`transformer_small` at width 128 (filter 512), dropout 0.2, 1,000 warm-up steps."""
    hparams = transformer_small()
    hparams.override(dict(
        hidden_size=128, filter_size=512, num_heads=4,
        layer_prepostprocess_dropout=0.2, attention_dropout=0.1, relu_dropout=0.1,
        batch_size=2048, max_length=80, learning_rate_warmup_steps=1000, learning_rate=0.1))
    return hparams


@registry.register_hparams
def transformer_multi30k_256():
    """`transformer_small` (256/1024, 4 heads of 64, 3+3 layers), dropout 0.2, 4,096-token batches."""
    hparams = transformer_small()
    hparams.override(dict(
        layer_prepostprocess_dropout=0.2, attention_dropout=0.1, relu_dropout=0.1,
        batch_size=4096, max_length=80, learning_rate_warmup_steps=2000, learning_rate=0.1))
    return hparams
