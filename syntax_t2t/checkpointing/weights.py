"""A model's weights alone: read from a checkpoint of either format, restored, or saved.

Decoding, export, analysis, averaging and the best checkpoint need only the
model's weights (`model_weights/<path>`). A restore is strict both ways:
every weight of the model needs a saved value of its shape, and every saved
weight a variable, so a model built with other hparams (fewer layers, a
smaller vocabulary) is refused, naming what does not fit, instead of
running with part of the checkpoint ignored.
"""

import numpy as np

from syntax_t2t.checkpointing import directory_format, discovery, variables
from syntax_t2t.checkpointing.errors import (CheckpointError, CheckpointMismatchError,
                                             NeedsTensorFlowError)

MODEL_WEIGHTS = "model_weights"


def tensorflow_format(path: str):
    """The `tf_format` module, to read TensorFlow's checkpoint `path`.

    Raises:
        NeedsTensorFlowError: TensorFlow is not installed.
    """
    try:
        from syntax_t2t.checkpointing import tf_format
    except ImportError as error:
        raise NeedsTensorFlowError(
            f"{path} is a checkpoint in TensorFlow's format, which only TensorFlow reads: "
            f"rewrite it with bin/convert_checkpoints where TensorFlow is installed "
            f"({type(error).__name__}: {error})") from error
    return tf_format


def found(path: str) -> discovery.FoundCheckpoint:
    """The checkpoint at `path`.

    Raises:
        CheckpointError: there is none (or its save did not finish).
    """
    checkpoint = discovery.checkpoint_at(path)
    if checkpoint is None:
        raise CheckpointError(f"{path}: {discovery.no_checkpoint_message(path)}")
    return checkpoint


def read_model_weights(path: str, model=None) -> dict[str, np.ndarray]:
    """`{weight path: array}` saved in the checkpoint at `path` (either format).

    Args:
        path: the checkpoint.
        model: the model the weights are for; a TensorFlow checkpoint's
            names then lose the saving model's name where they carry it
            (`variables.relative_names`).

    Raises:
        CheckpointError: no checkpoint there.
        CorruptCheckpointError: a file of it is damaged (named).
        NeedsTensorFlowError: a TensorFlow checkpoint without TensorFlow.
    """
    checkpoint = found(path)
    if checkpoint.format == discovery.DIRECTORY_FORMAT:
        return directory_format.open_checkpoint(checkpoint.path).arrays(MODEL_WEIGHTS)
    saved = tensorflow_format(path).read_part(checkpoint.path, MODEL_WEIGHTS)
    if model is None:
        return saved
    return variables.relative_names(saved, variables.model_weights(model))


def check_fits(model, saved: dict, path: str) -> None:
    """Refuses saved weights that do not fill `model`'s weights one to one.

    Raises:
        CheckpointMismatchError: missing, unused or other-shaped values, named.
    """
    problems = variables.mismatches(variables.model_weights(model), saved, "model weights")
    if problems:
        raise CheckpointMismatchError(
            f"{path}: the checkpoint does not fit model {type(model).__name__} with these "
            f"hparams: " + "; ".join(problems))


def restore_model(model, path: str) -> None:
    """Sets a built model's weights to those saved in the checkpoint at `path`.

    Raises:
        CheckpointMismatchError: the model and the saved weights differ (a
            weight without a value, a value without a weight, another shape).
        CorruptCheckpointError, NeedsTensorFlowError, CheckpointError: as
            `read_model_weights`.
    """
    saved = read_model_weights(path, model)
    check_fits(model, saved, path)
    variables.assign(variables.model_weights(model), saved, "model weights", path)


def save_weights(directory: str, step: int, weights: dict) -> str:
    """Writes `directory/ckpt-<step>` holding `weights` (`{path: array}`) and the step alone.

    Returns:
        The checkpoint's path.
    """
    arrays = {f"{MODEL_WEIGHTS}/{path}": value for path, value in weights.items()}
    return directory_format.write_checkpoint(directory, f"{discovery.CHECKPOINT_PREFIX}-{step}",
                                             step, arrays)


def save_model_weights(model, directory: str, step: int) -> str:
    """Writes `directory/ckpt-<step>` holding the model's weights (and the step) alone."""
    return save_weights(directory, step, variables.values_of(variables.model_weights(model)))
