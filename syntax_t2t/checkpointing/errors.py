"""What can be wrong with a checkpoint: missing, not fitting the model, damaged."""


class CheckpointError(ValueError):
    """A checkpoint that is missing or does not fit the model."""


class CheckpointMismatchError(CheckpointError):
    """A checkpoint does not fit the model and optimizer it is restored into."""


class CorruptCheckpointError(CheckpointError):
    """A checkpoint whose files cannot be read (truncated, damaged, incomplete)."""


class NeedsTensorFlowError(CheckpointError):
    """A checkpoint in TensorFlow's own format where TensorFlow is not installed."""
