"""`bin/bench --backends=tensorflow,jax`: both Keras backends side by side in one invocation.

The TensorFlow side runs in the calling process and writes the batches
(`--save_batch`); the other side runs `bin/bench` as a subprocess of the JAX
environment's Python (`.venv-jax`, where TensorFlow is not installed) on
those very batches (`--batch_file`), with the same hparams, settings and
repetitions, and the parts that run there. The two are timed one after the
other, not interleaved (they are two processes), so the ratios carry the
machine's drift between the two runs; each side's own ratios (variants to
`transformer`, ours to the PyTorch peer) are interleaved within its run.

`compare` reads both results and gives, per backend, the step time of every
training case, the thesis variants' ratios to `transformer`, MFU, cached
decoding sentences/s and the peers' ratios, and the other backend's time or
speed over TensorFlow's.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Iterable, Mapping, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: The Makefile's JAX environment (`make install-jax`).
DEFAULT_JAX_PYTHON = os.path.join(REPO, ".venv-jax", "bin", "python")
BENCH_SCRIPT = os.path.join(REPO, "bin", "bench")
#: The other sides `--backends` can run, besides the calling TensorFlow process.
OTHER_BACKENDS = ("jax",)


class BackendsError(ValueError):
    """`--backends` cannot run as asked (the message says why)."""


def check_backends(names: Sequence[str], current: str) -> list[str]:
    """The backends to run, the calling one first.

    Raises:
        BackendsError: the caller is not TensorFlow (which makes the
            batches), a backend is unknown or repeated, or only one is given.
    """
    if current != "tensorflow":
        raise BackendsError(f"--backends runs from the TensorFlow environment, which makes the "
                            f"batches; this is KERAS_BACKEND={current}")
    unknown = sorted(set(names) - {current, *OTHER_BACKENDS})
    if unknown:
        raise BackendsError(f"--backends: unknown backend(s) {', '.join(unknown)}; expected "
                            f"tensorflow and {', '.join(OTHER_BACKENDS)}")
    if len(set(names)) != len(names) or len(names) < 2:
        raise BackendsError(f"--backends: name two or more backends once each, got "
                            f"{','.join(names)}")
    return [current] + [name for name in names if name != current]


def jax_python(given: Optional[str]) -> str:
    """The JAX environment's Python: `given`, $SYNTAX_T2T_JAX_PYTHON, or the Makefile's.

    Raises:
        BackendsError: it does not exist.
    """
    python = given or os.environ.get("SYNTAX_T2T_JAX_PYTHON") or DEFAULT_JAX_PYTHON
    if not os.path.exists(python):
        raise BackendsError(f"--jax_python: no Python at {python} (`make install-jax` creates "
                            f".venv-jax; or pass --jax_python=PATH)")
    return python


def has_module(python: str, module: str) -> bool:
    """Whether `module` can be imported in the environment of `python` (without importing it)."""
    done = subprocess.run(
        [python, "-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec("
                       f"{module!r}) is None)"], capture_output=True, timeout=120)
    return done.returncode == 0


def other_side_parts(parts: Iterable[str], runnable: Sequence[str],
                     makes_batches: Sequence[str], python: str) -> list[str]:
    """The parts of this run that the other side can run on the shared batch file.

    The PyTorch peer only where torch is installed there.
    """
    chosen = [part for part in runnable if part in set(parts) and part not in makes_batches]
    if "torch" in chosen and not has_module(python, "torch"):
        chosen.remove("torch")
    return chosen


def forwarded_flags(flag_values, module_name: str, excluded: Sequence[str],
                    shared: Sequence[str] = ("hparams_set", "hparams", "random_seed",
                                             "mixed_precision", "xla")) -> list[str]:
    """`--name=value` of every flag given to this run that the other side takes as well.

    Args:
        flag_values: absl's `FLAGS`.
        module_name: the module that defines the bench's own flags.
        excluded: flags the other side gets its own values of.
        shared: flags of other modules that the bench reads.
    """
    names = [flag.name for flag in flag_values.get_flags_for_module(module_name)]
    names += [name for name in shared if name in flag_values and name not in names]
    return [flag_values[name].serialize() for name in names
            if name not in excluded and flag_values[name].present]


def run_other_side(python: str, backend: str, args: Sequence[str],
                   timeout: float = 6 * 3600) -> dict:
    """Runs `bin/bench args` under `backend` with `python`; returns its results (bench.json).

    Its output goes to this process's, as it comes.

    Raises:
        BackendsError: the run failed (its exit status).
    """
    env = dict(os.environ, KERAS_BACKEND=backend)
    print(f"{backend} side: {python} bin/bench {' '.join(args)}", flush=True)
    done = subprocess.run([python, BENCH_SCRIPT, *args], env=env, timeout=timeout)
    if done.returncode != 0:
        raise BackendsError(f"the {backend} side of --backends failed (exit status "
                            f"{done.returncode}; its output is above)")
    output_dir = next(arg.split("=", 1)[1] for arg in args if arg.startswith("--output_dir="))
    with open(os.path.join(output_dir, "bench.json"), encoding="utf-8") as stream:
        return json.load(stream)


def _median(summary: Optional[Mapping[str, Any]]) -> Optional[float]:
    return None if summary is None else summary["median"]


def _ratio(numerator: Optional[float], denominator: Optional[float]) -> Optional[float]:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _rows(results: Mapping[str, Any]) -> dict:
    """One backend's figures, flat: `{row name: {"value": float, "unit": str}}`."""
    rows = {}
    efficiency = results.get("efficiency", {})
    for label, case in results.get("training", {}).get("cases", {}).items():
        rows[f"training step {label}"] = {"value": case["step_time"]["median"] * 1000,
                                          "unit": "ms", "lower_is_better": True}
        if case.get("thesis_variant") and case.get("ratio"):
            rows[f"step time {label} / {case['baseline']}"] = {
                "value": case["ratio"]["median"], "unit": "×", "lower_is_better": True}
        mfu = efficiency.get("mfu", {}).get(label)
        if mfu is not None:
            rows[f"MFU {label}, training part (float32)"] = {"value": 100 * mfu, "unit": "%",
                                            "lower_is_better": False}
    peer = results.get("torch_peer")
    if peer:
        rows["speed transformer / torch nn.Transformer"] = {
            "value": peer["speed_ratio"]["median"], "unit": "×", "lower_is_better": False}
    for search, entry in results.get("decoding", {}).items():
        rows[f"decoding {search} cached"] = {"value": entry["cached"]["sentences_per_second"],
                                             "unit": "sentences/s", "lower_is_better": False}
        for label, peer in entry.get("peers", {}).items():
            rows[f"decoding {search}: our speed / {label}"] = {
                "value": peer["speed_ratio"]["median"], "unit": "×", "lower_is_better": False}
    for name, entry in results.get("precision", {}).items():
        rows[f"precision {name} step"] = {"value": entry["step_time"]["median"] * 1000,
                                          "unit": "ms", "lower_is_better": True}
        mfu = efficiency.get("precision_mfu", {}).get(name)
        if mfu is not None:
            rows[f"MFU transformer, precision part, {name}"] = {"value": 100 * mfu, "unit": "%",
                                               "lower_is_better": False}
    for length, entry in results.get("mst", {}).items():
        rows[f"MST parse decoding, {length} words"] = {
            "value": entry["seconds"]["median"] * 1000, "unit": "ms", "lower_is_better": True}
    return rows


def compare(by_backend: Mapping[str, Mapping[str, Any]]) -> dict:
    """Every backend's rows and each other backend's ratio to the first's.

    Args:
        by_backend: `{backend: bench results}`, the reference (TensorFlow) first.

    Returns:
        `{"backends": [...], "machines": {backend: machine}, "rows": {row:
        {"unit", "lower_is_better", "values": {backend: value}, "ratios":
        {backend: value / reference value}}}}`; a row one side lacks has
        no value (and no ratio) there.
    """
    backends = list(by_backend)
    reference = backends[0]
    per_backend = {backend: _rows(results) for backend, results in by_backend.items()}
    names = list(per_backend[reference])
    for backend in backends[1:]:
        names += [name for name in per_backend[backend] if name not in names]
    rows = {}
    for name in names:
        found = next(per_backend[backend][name] for backend in backends
                     if name in per_backend[backend])
        values = {backend: per_backend[backend][name]["value"] for backend in backends
                  if name in per_backend[backend]}
        rows[name] = {"unit": found["unit"], "lower_is_better": found["lower_is_better"],
                      "values": values,
                      "ratios": {backend: _ratio(values.get(backend), values.get(reference))
                                 for backend in backends[1:] if backend in values}}
    return {"backends": backends,
            "machines": {backend: results.get("machine") for backend, results in
                         by_backend.items()},
            "dates": {backend: results.get("date") for backend, results in by_backend.items()},
            "rows": rows}


def format_comparison(comparison: Mapping[str, Any]) -> str:
    """The side-by-side table as Markdown."""
    backends = comparison["backends"]
    reference, others = backends[0], backends[1:]
    lines = [f"### Keras backends side by side ({', '.join(backends)})", "",
             f"Measured {comparison['dates'][reference]} on {comparison['machines'][reference]}"
             f", one backend after the other on the same batches; each ratio is the other "
             f"backend's figure / {reference}'s (below 1 is faster for times, slower for "
             f"speeds).", "",
             "| row | unit | " + " | ".join(backends) + "".join(
                 f" | {other} / {reference}" for other in others) + " |",
             "|---|---|" + "---|" * (len(backends) + len(others))]
    for name, row in comparison["rows"].items():
        values = [f"{row['values'][backend]:.2f}" if backend in row["values"] else "n/a"
                  for backend in backends]
        ratios = [f"{row['ratios'][other]:.2f}" if row["ratios"].get(other) is not None
                  else "n/a" for other in others]
        lines.append(f"| {name} | {row['unit']} | " + " | ".join(values + ratios) + " |")
    return "\n".join(lines) + "\n"

