"""Decoding: search, incremental decoding of models, restored models, dev-set decoding.

| module | what it owns |
|---|---|
| `beam_search.py` | T2T beam search (alive/finished, GNMT length penalty) in a fixed-shape `keras.ops` loop, on every backend |
| `greedy_search.py` | greedy decoding, the beam size 1 case |
| `search.py` | one entry point for both; tiling to beams |
| `length_model.py` | Tree2Seq's length model: training statistics (read without TensorFlow), the table the search adds |
| `fast_decode.py` | a model's incremental decoding: encoder once, key/value caches; forced log-probabilities; compiled by `backend/compile.py`, batches padded to a bounded set of shapes |
| `decode_hparams.py` | `--decode_hparams` (beam_size, alpha, batch_size, extra_length, return_beams, write_beam_scores) |
| `forced_scoring.py` | forced scoring inputs and output (`--score_file`, `--score_reference`) |
| `output_format.py` | the output layouts: best, all beams, n-best lists with scores |
| `streaming.py` | standard input decoded in batches as lines arrive (`--decode_interactive`) |
| `inputs.py` | decoding input files (text, CoNLL-U, CzEng), one entry per sentence |
| `decoder.py` | batches sorted by length, original order restored, results per sentence |
| `parse_heads.py`, `mst.py` | heads from a parse head's scores: argmax or maximum spanning tree (C++ Chu-Liu/Edmonds) |
| `model_loading.py` | a run's model, hparams and checkpoint |
| `encoder_attention.py` | a model's encoder self-attention per sentence, without padding (`bin/analyze`) |
| `dev_translation.py` | dev-set BLEU (and UAS) during training, handed to the trainer's validation by `bin/train` |
"""
