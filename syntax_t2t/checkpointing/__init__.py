"""Checkpoints that every Keras backend writes and reads, and TensorFlow's of earlier runs.

Training (`training/checkpoints.py`: the optimizer, the step, the input
position) and decoding, averaging and export (a model's weights alone) both
build on this room; it knows Keras variables and files, nothing of the
project's models. One module per piece:

* `directory_format`: `ckpt-<step>/` with `arrays.npz` and `manifest.json`
  (sizes and SHA-256 of every file, written last), written atomically;
* `variables`: the names under which weights, optimizer variables and the
  dropout generators' states are saved;
* `discovery`: a directory's checkpoints, found from their files, and what
  killed saves left (the only things ever deleted);
* `weights`: a model's weights alone, read from either format, restored
  with a check both ways, or saved;
* `tf_format`: TensorFlow's format of earlier runs and the `tf.data`
  iterator's position; it imports TensorFlow, so it is imported only where
  one of those is met;
* `errors`: what can be wrong with a checkpoint.
"""
