"""Data parallelism on the JAX backend: `keras.distribution.DataParallel`.

    distribution = jax_distribution.make_distribution("mirrored", num_devices=2)
    keras.distribution.set_distribution(distribution)  # before the model is built
    state = jax_distribution.replicate(step.initial_state(), distribution)
    state, report = step(state, jax_distribution.shard_batch(batch, distribution))

What `bin/train`'s `--distribution` (and T2T's `--worker_gpu`) means under
`KERAS_BACKEND=jax`, where `tf.distribute` does not exist:

* `mirrored`: a `DataParallel` over the host's first `num_devices` devices
  of JAX's default platform (the GPUs when there are, else the CPUs); all of
  them by default. One device is no distribution at all (None).
* `multi_worker`: `keras.distribution.initialize` (JAX's
  `jax.distributed.initialize`), then a `DataParallel` over every device of
  every process. Keras reads the three variables of `MULTI_HOST_ENVIRONMENT`;
  this module insists on all three, so that a missing coordinator is named
  here rather than met as a hang.
* `auto`: `mirrored` over all local devices when the default platform is an
  accelerator with several of them, else one device (as TensorFlow's `auto`
  mirrors over several GPUs only).

The variables are created replicated (the distribution is set before the
model is built), the step's state is replicated with them, and each batch is
sharded along its first axis; `jax.jit` then partitions the step itself
(GSPMD): each device runs the forward and backward pass on its rows and the
gradient sums meet in an all-reduce. The loss is the same function of the
global batch as on one device (a token-weighted mean over all its rows), so
the update is the same up to the order of the float sums.

Every process reads the whole global stream (the seeded input pipeline gives
each the same batches) and hands each of its devices the device's rows
(`jax.make_array_from_callback`): the batch shapes then agree across
processes although the token-budget batches vary in size.

Import it only under the JAX backend: it imports `jax`.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Optional

import jax
import keras
import numpy as np

#: What `keras.distribution.initialize` reads when called without arguments
#: (keras/src/distribution/distribution_lib.py): the comma-separated
#: addresses of the processes (JAX needs only the first, the coordinator's
#: `host:port`, which process 0 listens on), their number, and this
#: process's index (0 is the coordinator).
MULTI_HOST_ENVIRONMENT = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES",
                          "KERAS_DISTRIBUTION_PROCESS_ID")

CHOICES = ("auto", "none", "mirrored", "multi_worker")


class JaxDistributionError(ValueError):
    """A distribution this host or its environment cannot provide."""


def _default_platform_devices() -> list:
    return jax.local_devices()


def local_data_parallel(num_devices: Optional[int] = None,
                        devices: Optional[list] = None) -> Optional[Any]:
    """A `DataParallel` over this host's first `num_devices` devices (all by default).

    Args:
        num_devices: how many (T2T's `--worker_gpu`); None takes them all.
        devices: the host's devices (`jax.local_devices()` by default).

    Returns:
        A `keras.distribution.DataParallel`, or None when it would hold one device.

    Raises:
        JaxDistributionError: fewer devices than `num_devices`.
    """
    devices = _default_platform_devices() if devices is None else list(devices)
    if num_devices is not None:
        if num_devices > len(devices):
            platform = devices[0].platform if devices else "no"
            raise JaxDistributionError(
                f"{num_devices} devices asked for (--worker_gpu/--distribution=mirrored), but "
                f"this host has {len(devices)} {platform} device(s) that JAX sees: "
                f"{', '.join(str(device) for device in devices)}")
        devices = devices[:num_devices]
    if len(devices) <= 1:
        return None
    return keras.distribution.DataParallel(
        devices=[f"{device.platform}:{device.id}" for device in devices])


def multi_host_settings(environ: Optional[Mapping[str, str]] = None) -> tuple[str, int, int]:
    """The coordinator address(es), process count and process id from the environment.

    Raises:
        JaxDistributionError: a variable of `MULTI_HOST_ENVIRONMENT` is
            missing or malformed.
    """
    environ = os.environ if environ is None else environ
    missing = [name for name in MULTI_HOST_ENVIRONMENT if not environ.get(name, "").strip()]
    if missing:
        raise JaxDistributionError(
            f"--distribution=multi_worker under KERAS_BACKEND=jax needs {', '.join(missing)} "
            f"(keras.distribution.initialize: the coordinator's host:port, the number of "
            f"processes and this process's id, 0 on the coordinator)")
    addresses = environ["KERAS_DISTRIBUTION_JOB_ADDRESSES"].strip()
    try:
        count = int(environ["KERAS_DISTRIBUTION_NUM_PROCESSES"])
        index = int(environ["KERAS_DISTRIBUTION_PROCESS_ID"])
    except ValueError as error:
        raise JaxDistributionError(f"KERAS_DISTRIBUTION_NUM_PROCESSES and "
                                   f"KERAS_DISTRIBUTION_PROCESS_ID must be integers: "
                                   f"{error}") from None
    if count < 1 or not 0 <= index < count:
        raise JaxDistributionError(f"KERAS_DISTRIBUTION_PROCESS_ID={index} must be in "
                                   f"[0, KERAS_DISTRIBUTION_NUM_PROCESSES={count})")
    listed = [address for address in addresses.split(",") if address.strip()]
    if len(listed) > 1 and len(listed) != count:
        raise JaxDistributionError(f"KERAS_DISTRIBUTION_JOB_ADDRESSES lists {len(listed)} "
                                   f"addresses for {count} processes")
    if any(":" not in address for address in listed):
        raise JaxDistributionError(f"KERAS_DISTRIBUTION_JOB_ADDRESSES={addresses!r}: each "
                                   f"address is host:port")
    return addresses, count, index


def make_distribution(choice: str, num_devices: Optional[int] = None,
                      environ: Optional[Mapping[str, str]] = None,
                      initialize: Callable[..., None] = keras.distribution.initialize,
                      devices: Optional[list] = None) -> Optional[Any]:
    """The `keras.distribution` for a `--distribution` value, or None for one device.

    Args:
        choice: one of `CHOICES`.
        num_devices: with "mirrored", this many local devices (`--worker_gpu`).
        environ: the environment "multi_worker" reads (`os.environ` by default).
        initialize: joins the processes (`keras.distribution.initialize`);
            called with the settings of `multi_host_settings`.
        devices: the host's devices (`jax.local_devices()` by default).

    Raises:
        ValueError: unknown `choice`.
        JaxDistributionError: see `local_data_parallel` and `multi_host_settings`.
    """
    if choice not in CHOICES:
        raise ValueError(f"--distribution={choice!r}: expected one of {', '.join(CHOICES)}")
    if choice == "none":
        return None
    if choice == "multi_worker":
        addresses, count, index = multi_host_settings(environ)
        initialize(addresses, count, index)
        # After initialize, jax.devices() lists every process's devices.
        return keras.distribution.DataParallel(
            devices=[f"{device.platform}:{device.id}" for device in jax.devices()])
    if choice == "auto":
        local = _default_platform_devices() if devices is None else list(devices)
        if len(local) > 1 and local[0].platform != "cpu":
            return local_data_parallel(devices=local)
        return None
    return local_data_parallel(num_devices, devices)


def device_count(distribution: Any) -> int:
    """How many devices share a batch."""
    return int(distribution.device_mesh.devices.size)


def replicate(tree: Any, distribution: Any) -> Any:
    """`tree`'s arrays with a copy on every device of the distribution (the step's state)."""
    sharding = jax.sharding.NamedSharding(distribution.device_mesh.backend_mesh,
                                          jax.sharding.PartitionSpec())
    return jax.device_put(tree, sharding)


def shard_batch(batch: Mapping[str, Any], distribution: Any) -> dict[str, Any]:
    """The global batch split along its first axis over the distribution's devices.

    Raises:
        ValueError: a feature's rows are not a multiple of the devices (the
            input pipeline pads them: `NumpyDataset(row_multiple=...)`).
    """
    count = device_count(distribution)
    sharded = {}
    for name, value in batch.items():
        array = np.asarray(value)
        if array.ndim == 0 or array.shape[0] % count:
            raise ValueError(f"feature {name!r} of shape {array.shape}: data parallelism over "
                             f"{count} devices needs a batch of a multiple of {count} rows "
                             f"(pad it with all-padding rows)")
        layout = distribution.get_data_layout(array.shape).backend_layout
        sharded[name] = jax.make_array_from_callback(
            array.shape, layout, lambda index, array=array: array[index])
    return sharded


def is_chief() -> bool:
    """Whether this process writes the run's files (process 0 of a multi-host run)."""
    return jax.process_index() == 0
