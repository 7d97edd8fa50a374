"""Datagen orchestration: a problem's samples written as vocabularies, TFRecord shards and records.

It stands above `data/` (the schema, trees, vocabularies, the tf.data
serialisation) and `parsing/` (parsers and their cache), and below the
`Problem` class, whose `generate_data` calls it: datagen works on any object
with the `Problem` interface and imports no problem.

| module | what it owns |
|---|---|
| `writer.py` | `generate_data`: the vocabulary pass and the shard pass, workers, T2T tasks, atomic renames |
| `beam_pipeline.py` | `bin/datagen_beam`'s shard pass as an Apache Beam pipeline (optional extra `beam`) |
| `records.py` | the JSON records datagen writes (completion, vocabulary, per task) and how they are read back |
| `worker_pool.py` | `ordered_map`: an order-keeping map over forked processes with a bounded window |
"""
