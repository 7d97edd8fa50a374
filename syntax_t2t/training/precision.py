"""Numeric precision and XLA: resolving `auto`, and scoping the Keras policy.

`auto` picks what pays off on the hardware at hand: on a GPU, mixed precision
(bfloat16 where the GPU computes it natively, compute capability 8.0 and up,
otherwise float16 with loss scaling) and XLA compilation; on a CPU, plain
float32 without XLA, since neither gains anything there.

TensorFlow is imported only where `auto` asks it for the GPUs, so that the
JAX step can scope the same dtype policies. Keras is imported where it is
used: the flag definitions that take their choices from here
(`cli/train_flags.py`, `cli/decode_flags.py`) answer `--help` without
loading Keras and its backend.
"""

import contextlib
from typing import Any, Iterator, Optional, Sequence

PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
XLA_CHOICES = ("auto", "true", "false")

# Ampere (8.0) and later compute bfloat16 natively.
_BFLOAT16_COMPUTE_CAPABILITY = (8, 0)


def _gpu_compute_capabilities():
    import keras

    if keras.backend.backend() == "jax":
        return _jax_gpu_compute_capabilities()
    import tensorflow as tf

    capabilities = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        capabilities.append(tuple(details.get("compute_capability", (0, 0))))
    return capabilities


def _jax_gpu_compute_capabilities():
    import jax

    capabilities = []
    for device in jax.devices():
        if device.platform != "gpu":
            continue
        # CUDA devices report it as "8.0"; others (ROCm) leave it out.
        text = str(getattr(device, "compute_capability", "0.0"))
        major, _, minor = text.partition(".")
        capabilities.append((int(major or 0), int(minor or 0)))
    return capabilities


def resolve_precision(choice: str,
                      gpu_compute_capabilities: Optional[Sequence[Any]] = None) -> str:
    """The Keras dtype policy name for a `--mixed_precision` value.

    Args:
        choice: one of `PRECISIONS`.
        gpu_compute_capabilities: (major, minor) of each GPU; by default those
            of the GPUs TensorFlow sees. An empty list means CPU only.

    Returns:
        "float32", "mixed_float16" or "mixed_bfloat16".

    Raises:
        ValueError: `choice` is not one of `PRECISIONS`.
    """
    if choice not in PRECISIONS:
        raise ValueError(f"--mixed_precision={choice!r}: expected one of {', '.join(PRECISIONS)}")
    if choice != "auto":
        return choice
    if gpu_compute_capabilities is None:
        gpu_compute_capabilities = _gpu_compute_capabilities()
    if not gpu_compute_capabilities:
        return "float32"
    if min(gpu_compute_capabilities) >= _BFLOAT16_COMPUTE_CAPABILITY:
        return "mixed_bfloat16"
    return "mixed_float16"


def resolve_xla(choice: str, has_gpu: Optional[bool] = None) -> bool:
    """Whether to compile the train step with XLA, for an `--xla` value.

    Args:
        choice: one of `XLA_CHOICES`.
        has_gpu: whether a GPU is used; by default whether TensorFlow sees one.

    Returns:
        A bool.

    Raises:
        ValueError: `choice` is not one of `XLA_CHOICES`.
    """
    if choice not in XLA_CHOICES:
        raise ValueError(f"--xla={choice!r}: expected one of {', '.join(XLA_CHOICES)}")
    if choice != "auto":
        return choice == "true"
    if has_gpu is None:
        import keras

        if keras.backend.backend() == "jax":
            # JAX compiles everything with XLA: there is nothing to turn off.
            return True
        import tensorflow as tf

        has_gpu = bool(tf.config.list_physical_devices("GPU"))
    return has_gpu


def needs_loss_scaling(policy_name: str) -> bool:
    """float16 has too few exponent bits for small gradients; bfloat16 does not."""
    return policy_name == "mixed_float16"


@contextlib.contextmanager
def dtype_policy(policy_name: str) -> Iterator[None]:
    """Sets the global Keras dtype policy inside the block, restoring it after.

    Layers fix their policy when they are constructed, so building the model
    inside this block is enough; code that runs later in the same process
    (tests, decoding) keeps its own policy.
    """
    import keras

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy_name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
