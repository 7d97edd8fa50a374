"""Evaluation and analysis: translation and parsing scores, attention statistics, plots.

| module | what it owns |
|---|---|
| `translation.py` | sacreBLEU BLEU and chrF, paired bootstrap resampling |
| `attachment.py` | UAS, LAS, diagonal-parse precision |
| `length_buckets.py` | BLEU of two systems by source-sentence length |
| `attention.py` | encoder self-attention of a model, weight histograms |
| `plots.py` | the analysis figures as PNG |
| `report.py` | tables and JSON output |
"""
