"""The benchmark harness behind `bin/bench` (see docs/performance.md).

| module | measures |
|---|---|
| `batches.py` | fixed `synthetic_syntax_reorder` batches of one padded length |
| `measure.py` | interleaved repetitions, medians and spread, peak resident memory |
| `training_throughput.py` | training step time and tokens/s of every model against `transformer` |
| `scaling.py` | step time and memory against source length |
| `decoding_speed.py` | cached and uncached greedy and beam decoding |
| `ctranslate2_peer.py` | CTranslate2 (float32, int8) decoding the same batch with the same weights |
| `torch_peer.py` | a same-shape PyTorch `nn.Transformer` training step |
| `mst_speed.py` | MST parse decoding time per sentence length |
| `flops.py` | analytic FLOPs per step and the measured peak matmul rate (MFU) |
| `report.py` | the targets, the table, JSON and the bar chart |
| `datagen_speed.py` | `--datagen`: datagen examples/s with 1 and 2 workers, spaCy parsing sentences/s, datagen peak memory |
"""
