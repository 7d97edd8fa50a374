"""An hparams set for Multi30k on a CPU, the one `docs/results.md` reports.

`transformer_small` (256/1024, 3+3 layers) trains Multi30k at a few hundred
target tokens/s on 2 CPU cores: one epoch would take most of an hour. This
set halves the width, which brings a run of several epochs into about an hour
there; Multi30k's 29,000 sentences also want the larger dropout of small-data
Transformers (0.2 rather than 0.1).

    bin/train --problem=multi30k_syntax_cs_en --model=dep_parse \\
        --hparams_set=transformer_multi30k_cpu --hparams=parse_layer=1 ...
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
