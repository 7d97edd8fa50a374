"""Exporting trained models for serving (`bin/export`).

| module | what it owns |
|---|---|
| `exportable.py` | which models each format can hold, and the reason when not |
| `to_saved_model.py` | a TensorFlow SavedModel: token strings in, translations and scores out |
| `to_ctranslate2.py` | a CTranslate2 model through its specification API |
"""
