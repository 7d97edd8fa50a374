"""Choosing the `tf.distribute` strategy of a training run.

Data parallelism is TensorFlow's own: `MirroredStrategy` for the GPUs of one
host, `MultiWorkerMirroredStrategy` for several hosts (configured, as usual,
by the `TF_CONFIG` environment variable). `auto` picks the multi-worker
strategy when `TF_CONFIG` names more than one task, mirroring when the host
has several GPUs, and the default (single-device) strategy otherwise.

TensorFlow is imported by the functions that make strategies, so that
`bin/train` reads `DISTRIBUTIONS` without it on other backends.
"""

import json
import os
import tempfile
from typing import Any, Mapping, Optional

DISTRIBUTIONS = ("auto", "none", "mirrored", "multi_worker")


class DistributionError(ValueError):
    """A strategy this host cannot provide."""


def cluster_size(environ: Optional[Mapping[str, str]] = None) -> int:
    """The number of tasks `TF_CONFIG` names (1 when it is unset).

    Raises:
        ValueError: `TF_CONFIG` is not a JSON object.
    """
    environ = os.environ if environ is None else environ
    text = environ.get("TF_CONFIG", "").strip()
    if not text:
        return 1
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON: {error}") from error
    if not isinstance(config, dict):
        raise ValueError("TF_CONFIG must be a JSON object with 'cluster' and 'task'")
    cluster = config.get("cluster", {})
    return max(1, sum(len(tasks) for tasks in cluster.values()))


def _mirrored_devices():
    import tensorflow as tf

    # Every GPU; without GPUs, every logical CPU device (one per core
    # configured with tf.config.set_logical_device_configuration), which
    # is how the mirrored path is exercised on a CPU-only machine.
    gpus = tf.config.list_logical_devices("GPU")
    devices = gpus or tf.config.list_logical_devices("CPU")
    return [device.name for device in devices]


def make_strategy(choice: str, num_devices: Optional[int] = None) -> Any:
    """The strategy for a `--distribution` value.

    Args:
        choice: one of `DISTRIBUTIONS`.
        num_devices: with "mirrored", mirror over only the first this many
            devices (T2T's `--worker_gpu`); default all.

    Returns:
        A `tf.distribute.Strategy`.

    Raises:
        ValueError: unknown `choice`.
        DistributionError: fewer devices than `num_devices`.
    """
    import tensorflow as tf

    if choice not in DISTRIBUTIONS:
        raise ValueError(f"--distribution={choice!r}: expected one of {', '.join(DISTRIBUTIONS)}")
    if choice == "auto":
        if cluster_size() > 1:
            choice = "multi_worker"
        elif len(tf.config.list_logical_devices("GPU")) > 1:
            choice = "mirrored"
        else:
            choice = "none"
    if choice == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if choice == "mirrored":
        devices = _mirrored_devices()
        if num_devices is not None:
            if num_devices > len(devices):
                raise DistributionError(f"{num_devices} devices asked for (--worker_gpu), but this host "
                                 f"has {len(devices)}: {', '.join(devices)}")
            devices = devices[:num_devices]
        return tf.distribute.MirroredStrategy(devices=devices)
    return tf.distribute.get_strategy()


def is_chief(strategy: Any) -> bool:
    """Whether this task writes the run's files (summaries, hparams, checkpoints).

    In a multi-worker cluster that is the `chief` task, or worker 0 when the
    cluster has no chief; every other strategy has a single task.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


def writable_directory(strategy: Any, directory: str) -> str:
    """Where this task saves checkpoints.

    Every worker of a multi-worker strategy takes part in saving (the
    variables are collectively synchronised), but only the chief's copy is
    kept: the others write to a temporary directory.
    """
    if is_chief(strategy):
        return directory
    resolver = strategy.cluster_resolver
    return tempfile.mkdtemp(prefix=f"{resolver.task_type}_{resolver.task_id}_checkpoints_")
