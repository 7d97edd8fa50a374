"""Saving and resuming training state: model weights, optimizer and step counter.

Layout of a checkpoint (`ckpt-<step>`, written by `tf.train.CheckpointManager`,
which keeps the newest `keep_checkpoint_max`):

* `model_weights/<weight path>`: every weight of the model, keyed by its
  Keras path (`encoder_layer_0/self_attention/query_kernel`, ...). Keras 3
  keeps layers held in Python lists (the encoder and decoder stacks) out of
  TensorFlow's dependency graph, so `tf.train.Checkpoint(model=model)` would
  silently save only the top-level layers; the paths are fixed by the layer
  names, so they also identify a weight in another process. Decoding reads
  only this part.
* `optimizer`: the Keras optimizer as TensorFlow tracks it (iteration count,
  Adam's moments, the loss scale under float16).
* `step`: the global step.

The model and the optimizer must be built before `restore_latest` so that
every saved value finds its variable at once; the restore then checks that
nothing was left over on either side, so a checkpoint of another model is an
error rather than a partially initialised network.
"""

import collections

import tensorflow as tf
from absl import logging

CHECKPOINT_PREFIX = "ckpt"


class CheckpointMismatchError(ValueError):
    """A checkpoint does not fit the model and optimizer it is restored into."""


def model_weights(model):
    """`{weight path: variable}` of every weight of a built Keras model.

    Raises:
        ValueError: two weights share a path (layers with the same name under
            one parent), so they could not be told apart in a checkpoint.
    """
    weights = model.weights
    paths = collections.Counter(weight.path for weight in weights)
    shared = sorted(path for path, count in paths.items() if count > 1)
    if shared:
        raise ValueError(f"model {type(model).__name__} has several weights with the path(s) "
                         f"{', '.join(shared)}; give its layers distinct names")
    return {weight.path: weight for weight in weights}


def latest_checkpoint(directory):
    """The path prefix of the newest checkpoint in `directory`, or None."""
    return tf.train.latest_checkpoint(directory)


class TrainingCheckpoint:
    """The checkpointed state of a run.

    Args:
        directory: where the checkpoints live.
        model: a built Keras model.
        optimizer: a built Keras optimizer.
        step: a scalar int64 `tf.Variable`, the global step.
        keep_checkpoint_max: how many of the newest checkpoints to keep.
    """

    def __init__(self, directory, model, optimizer, step, keep_checkpoint_max):
        self.step = step
        self.checkpoint = tf.train.Checkpoint(
            model_weights=model_weights(model), optimizer=optimizer, step=step)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, directory, max_to_keep=keep_checkpoint_max,
            step_counter=step, checkpoint_name=CHECKPOINT_PREFIX)

    @property
    def latest(self):
        """Path prefix of the newest checkpoint, or None."""
        return self.manager.latest_checkpoint

    def restore_latest(self):
        """Restores the newest checkpoint, if any.

        Returns:
            The restored global step, or None when there is no checkpoint.

        Raises:
            CheckpointMismatchError: the checkpoint holds values that match
                no variable or have another shape, or leaves variables
                without a value.
        """
        path = self.latest
        if path is None:
            return None
        try:
            self.checkpoint.restore(path).assert_consumed()
        except (AssertionError, ValueError) as error:
            # ValueError: a saved tensor of another shape; AssertionError:
            # saved values without a variable, or variables without a value.
            raise CheckpointMismatchError(
                f"{path}: the checkpoint does not match this model and optimizer: "
                f"{error}") from error
        step = int(self.step.numpy())
        logging.info("restored %s (step %d)", path, step)
        return step

    def save(self):
        """Writes a checkpoint named after the current step; returns its path."""
        path = self.manager.save(checkpoint_number=self.step)
        logging.info("saved checkpoint %s", path)
        return path
