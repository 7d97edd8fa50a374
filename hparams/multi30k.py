"""Hparams sets for Multi30k: on a CPU (the one `docs/results.md` reports), and the pre-registered size.

`transformer_small` (256/1024, 3+3 layers) trains Multi30k at a few hundred
target tokens/s on 2 CPU cores: one epoch would take most of an hour.
`transformer_multi30k_cpu` is `transformer_cpu` (half the width, dropout
0.2), the set docs/results.md's CPU runs name.

    bin/train --problem=multi30k_syntax_cs_en --model=dep_parse \\
        --hparams_set=transformer_multi30k_cpu --hparams=parse_layer=1 ...

`transformer_multi30k_256` is the size docs/preregistration.md fixes for the
confirmatory experiment (on a GPU): `transformer_small`'s width 256, 4 heads
of 64, filter 1024, 3+3 layers, with this set's small-data dropout.
"""

from syntax_t2t.hparams_sets.transformer import transformer_cpu, transformer_small
from syntax_t2t import registry


@registry.register_hparams
def transformer_multi30k_cpu():
    """`transformer_cpu` under the name docs/results.md's runs recorded: width 128, dropout 0.2."""
    return transformer_cpu()


@registry.register_hparams
def transformer_multi30k_256():
    """`transformer_small` (256/1024, 4 heads of 64, 3+3 layers), dropout 0.2, 4,096-token batches."""
    hparams = transformer_small()
    hparams.override(dict(
        layer_prepostprocess_dropout=0.2, attention_dropout=0.1, relu_dropout=0.1,
        batch_size=4096, max_length=80, learning_rate_warmup_steps=2000, learning_rate=0.1))
    return hparams
