"""Evaluation and analysis: translation and parsing scores, attention statistics, plots.

| module | what it owns |
|---|---|
| `translation.py` | sacreBLEU BLEU and chrF, paired bootstrap resampling |
| `attachment.py` | UAS, LAS, diagonal-parse precision |
| `length_buckets.py` | BLEU of two systems by source-sentence length |
| `ngram_precision.py` | corpus n-gram precision by order and its change between systems (MG-SA Figure 2) |
| `ribes.py` | RIBES on sacreBLEU's tokens |
| `attention.py` | encoder self-attention of a model, weight histograms |
| `plots.py` | the analysis figures as PNG |
| `report.py` | tables and JSON output |
"""
