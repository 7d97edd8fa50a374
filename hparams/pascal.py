"""The Pascal paper's settings (Bugliarello and Okazaki 2020, Table 2) as hparams sets.

All models of the paper are base Transformers trained as in Vaswani et al.
(2017): Adam, 8,000 warm-up steps up to a peak learning rate of 0.0007,
label smoothing 0.1, 32K-token batches, on joint subword vocabularies (the
`*_subword` problems). Small corpora (NC11, WMT18 En-Tr) use dropout 0.3 and
20,000 steps, large ones 100,000 steps; decoding uses beams of 4 and length
penalty 0.6. Per corpus, Table 2 gives Adam's beta_2, the number of Pascal
heads and the parent-ignoring probability q:

    set                   corpus         beta_2  Pascal heads  q
    pascal_nc11_en_de     NC11 En-De     0.997   2             0.4
    pascal_nc11_de_en     NC11 De-En     0.997   8             0.0
    pascal_wmt18_en_tr    WMT18 En-Tr    0.98    7             0.3
    pascal_wmt16_en_de    WMT16 En-De    0.98    5             0.0
    pascal_wmt17_en_de    WMT17 En-De    0.997   7             0.3
    pascal_wat_en_ja      WAT En-Ja      0.997   7             0.0

The baselines of Tables 3 and 4 train with the same set and another
`--model` (`transformer`, `sennrich_haddow`, `sisa`, or `transformer` on a
`*_currey_heafield` problem); each model reads only its own hparams.
Every set reads word boundaries from `src_word_position`
(`source_word_positions=true`), so it needs a subword problem.

    bin/train --problem=de2cs_syntax_subword --model=pascal \\
        --hparams_set=pascal_nc11_en_de --train_steps=20000 --output_dir=runs/pascal
    bin/decode ... --decode_hparams=beam_size=4,alpha=0.6

Tables 5 and 7 vary one setting: `--hparams=parent_ignoring=0` (Table 5
without parent ignoring), `--hparams=pascal_layer=<0..5>` (Table 7a),
`--hparams=pascal_variance=<1,4,9,16,25>` (Table 7b), and Table 7b's
"parent-only" row is `pascal_weighting=parent_only`, registered for its two
corpora as `pascal_nc11_en_de_parent_only` and `pascal_nc11_de_en_parent_only`.
"""

from syntax_t2t.hparams_sets.transformer import transformer_base
from syntax_t2t import registry

# The schedule peaks at learning_rate * (hidden_size * warmup_steps) ** -0.5:
# 0.0007 for hidden_size 512 and 8,000 warm-up steps.
PEAK_LEARNING_RATE = 0.0007
WARMUP_STEPS = 8000


def _pascal_set(adam_beta2, pascal_heads, parent_ignoring, small):
    hparams = transformer_base()
    hparams.override(dict(
        learning_rate=PEAK_LEARNING_RATE * (hparams.hidden_size * WARMUP_STEPS) ** 0.5,
        learning_rate_warmup_steps=WARMUP_STEPS,
        adam_beta1=0.9,
        adam_beta2=adam_beta2,
        label_smoothing=0.1,
        batch_size=32768,
        layer_prepostprocess_dropout=0.3 if small else 0.1,
        source_word_positions=True,
        pascal_layer=0,
        pascal_heads=pascal_heads,
        pascal_variance=1.0,
        parent_ignoring=parent_ignoring,
    ))
    return hparams


@registry.register_hparams
def pascal_nc11_en_de():
    """Table 2, NC11 En-De: beta_2 0.997, 2 Pascal heads, q = 0.4; dropout 0.3."""
    return _pascal_set(0.997, 2, 0.4, small=True)


@registry.register_hparams
def pascal_nc11_de_en():
    """Table 2, NC11 De-En: beta_2 0.997, 8 Pascal heads, q = 0; dropout 0.3."""
    return _pascal_set(0.997, 8, 0.0, small=True)


@registry.register_hparams
def pascal_wmt18_en_tr():
    """Table 2, WMT18 En-Tr: beta_2 0.98, 7 Pascal heads, q = 0.3; dropout 0.3."""
    return _pascal_set(0.98, 7, 0.3, small=True)


@registry.register_hparams
def pascal_wmt16_en_de():
    """Table 2, WMT16 En-De: beta_2 0.98, 5 Pascal heads, q = 0."""
    return _pascal_set(0.98, 5, 0.0, small=False)


@registry.register_hparams
def pascal_wmt17_en_de():
    """Table 2, WMT17 En-De: beta_2 0.997, 7 Pascal heads, q = 0.3."""
    return _pascal_set(0.997, 7, 0.3, small=False)


@registry.register_hparams
def pascal_wat_en_ja():
    """Table 2, WAT En-Ja: beta_2 0.997, 7 Pascal heads, q = 0."""
    return _pascal_set(0.997, 7, 0.0, small=False)


@registry.register_hparams
def pascal_nc11_en_de_parent_only():
    """Table 7b, "parent-only" on NC11 En-De: D is 1 on the parent word's subwords, else 0."""
    hparams = pascal_nc11_en_de()
    hparams.set("pascal_weighting", "parent_only")
    return hparams


@registry.register_hparams
def pascal_nc11_de_en_parent_only():
    """Table 7b, "parent-only" on NC11 De-En: D is 1 on the parent word's subwords, else 0."""
    hparams = pascal_nc11_de_en()
    hparams.set("pascal_weighting", "parent_only")
    return hparams
