"""The bench's precision part: which settings it compares, and each one's MFU.

A setting is a Keras dtype policy with or without XLA; float32 comes first
and the others' step times are taken relative to it. Under JAX every step is
XLA-compiled, so only the policies differ there. MFU is taken against the
matmul rate of the setting's compute dtype (bfloat16 for mixed_bfloat16),
measured in the same run (`flops.policies_mfu`).
"""

from __future__ import annotations

from typing import Any, MutableMapping

from syntax_t2t.benchmarks import flops
from syntax_t2t.hparams import HParams
from syntax_t2t.training import precision


def compared_settings(mixed_precision: str, xla: str, backend: str) -> dict:
    """`{name: (policy, jit_compile)}` to compare, float32 first; {} when float32 is alone.

    Args:
        mixed_precision: a `--mixed_precision` value (auto asks the backend for GPUs).
        xla: an `--xla` value (ignored off TensorFlow: always on).
        backend: the Keras backend.
    """
    policy_name = precision.resolve_precision(mixed_precision)
    if backend != "tensorflow":
        if policy_name == "float32":
            return {}
        return {"float32": ("float32", True), policy_name: (policy_name, True)}
    jit_compile = precision.resolve_xla(xla)
    compared = {"float32": ("float32", False)}
    if policy_name != "float32":
        compared[policy_name] = (policy_name, False)
    if jit_compile:
        compared["float32 + XLA"] = ("float32", True)
        if policy_name != "float32":
            compared[f"{policy_name} + XLA"] = (policy_name, True)
    return compared if len(compared) > 1 else {}


def add_efficiency(results: MutableMapping[str, Any], compared: dict, hparams: HParams,
                   target_vocab_size: int, length: int, matmul_size: int) -> None:
    """Adds `precision_mfu` and `peak_flops_by_dtype` to `results["efficiency"]`.

    Reuses the training part's float32 rate (`efficiency["peak_flops"]`, same
    matmul size) and measures the other dtypes now.
    """
    efficiency = results.setdefault("efficiency", {})
    step_flops = flops.training_step_flops(hparams, target_vocab_size,
                                           results["settings"]["sentences"], length, length)
    rates = efficiency.setdefault("peak_flops_by_dtype", {})
    if "peak_flops" in efficiency:
        rates.setdefault("float32", efficiency["peak_flops"])
    efficiency["precision_mfu"] = flops.policies_mfu(
        step_flops, {name: (policy_name, results["precision"][name]["step_time"]["median"])
                     for name, (policy_name, _) in compared.items()}, matmul_size, rates)
    efficiency.setdefault("step_flops", step_flops)
    efficiency.setdefault("matmul_size", matmul_size)
