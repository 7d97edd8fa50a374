"""The benchmark's targets, its table, and its JSON and PNG outputs.

`results` is the dict `bin/bench` builds (see `syntax_t2t/cli/bench.py`):
`training`, `torch_peer`, `decoding`, `scaling`, `efficiency`, `mst`, and
optionally `precision`, each present when its part ran; the functions here
only read it, so they can be checked on made-up numbers.
"""

import dataclasses
import json
from typing import Optional

from syntax_t2t import io_utils

#: A syntax-aware variant may take at most this multiple of `transformer`'s step time.
MAX_STEP_TIME_RATIO = 1.10
#: Our `transformer` step must be at least this many times as fast as the PyTorch peer's.
MIN_TORCH_SPEED_RATIO = 1.0
#: Cached beam-4 decoding must be at least this many times as fast as uncached.
MIN_CACHED_SPEEDUP = 5.0
#: Our cached beam-4 decoding must reach this share of CTranslate2 float32's speed.
MIN_CTRANSLATE2_SPEED_RATIO = 0.7
CTRANSLATE2_FLOAT32 = "CTranslate2 float32"
#: MST parse decoding of an 80-word sentence may take at most this many seconds.
MAX_MST_SECONDS_AT_80 = 0.002
#: On a GPU: a mixed_bfloat16 step at least this many times as fast as float32's ...
MIN_BFLOAT16_SPEEDUP = 2.5
#: ... and at least this share of the bfloat16 matmul rate measured in the same run.
MIN_BFLOAT16_MFU = 0.40


@dataclasses.dataclass(frozen=True)
class Target:
    """One target and whether the measurement meets it.

    Attributes:
        name: what is compared.
        measured: the measured value (a ratio).
        bound: the bound it must meet.
        at_most: True if `measured <= bound` is required, else `measured >= bound`.
        cpu_measured: the same ratio of process CPU times, when measured:
            shown beside the verdict (which is the wall-clock one's) to
            judge how much of a miss or a pass is a loaded machine's noise.
    """

    name: str
    measured: float
    bound: float
    at_most: bool
    cpu_measured: Optional[float] = None

    @property
    def holds(self):
        return self.measured <= self.bound if self.at_most else self.measured >= self.bound

    def describe(self):
        relation = "<=" if self.at_most else ">="
        verdict = "holds" if self.holds else "MISSED"
        cpu = "" if self.cpu_measured is None else f" (CPU-time ratio {self.cpu_measured:.2f})"
        return f"{self.name}: {self.measured:.2f} {relation} {self.bound:.2f}  {verdict}{cpu}"

    def as_dict(self):
        return {**dataclasses.asdict(self), "holds": self.holds}


def evaluate_targets(results):
    """The targets of the issue, from the measured results.

    Returns:
        `Target`s: one per syntax-aware thesis variant (step time ratio to
        `transformer` with the same hparams), ours against the PyTorch peer
        (peer step time / ours) when measured, and cached against uncached
        beam-4 decoding and MST parse decoding at 80 words when measured.
    """
    targets = []
    for label, case in results.get("training", {}).get("cases", {}).items():
        if case["thesis_variant"] and case["ratio"] is not None:
            targets.append(Target(f"step time {label} / {case['baseline']}",
                                  case["ratio"]["median"], MAX_STEP_TIME_RATIO, at_most=True,
                                  cpu_measured=_median(case.get("cpu_ratio"))))
    peer = results.get("torch_peer")
    if peer:
        targets.append(Target("speed transformer / torch nn.Transformer (peer step time / ours)",
                              peer["speed_ratio"]["median"], MIN_TORCH_SPEED_RATIO,
                              at_most=False, cpu_measured=_median(peer.get("cpu_speed_ratio"))))
    beam4 = results.get("decoding", {}).get("beam4", {})
    if "speedup" in beam4:
        targets.append(Target(
            f"cached / uncached beam-4 decoding speed at {beam4['output_tokens']} output tokens",
            beam4["speedup"]["median"], MIN_CACHED_SPEEDUP, at_most=False,
            cpu_measured=_median(beam4.get("cpu_speedup"))))
    peer = beam4.get("peers", {}).get(CTRANSLATE2_FLOAT32)
    if peer:
        targets.append(Target(
            f"our cached decoding speed at beam 4 / {CTRANSLATE2_FLOAT32}'s (same weights "
            f"and batch)",
            peer["speed_ratio"]["median"], MIN_CTRANSLATE2_SPEED_RATIO, at_most=False))
    targets += _precision_targets(results)
    mst = results.get("mst", {}).get("80")
    if mst:
        targets.append(Target("MST parse decoding of an 80-word sentence (ms)",
                              1000 * mst["seconds"]["median"], 1000 * MAX_MST_SECONDS_AT_80,
                              at_most=True))
    return targets


def _precision_targets(results):
    """bf16 speed-up over float32 and bf16 MFU, where the precision part timed a bf16 policy."""
    targets = []
    for name, entry in results.get("precision", {}).items():
        if not name.startswith("mixed_bfloat16"):
            continue
        speedup = 1 / entry["ratio"]["median"]
        targets.append(Target(f"speed {name} / float32 (step time float32 / {name})", speedup,
                              MIN_BFLOAT16_SPEEDUP, at_most=False))
        mfu = results.get("efficiency", {}).get("precision_mfu", {}).get(name)
        if mfu is not None:
            targets.append(Target(f"MFU of {name} against the bfloat16 matmul rate (%)",
                                  100 * mfu, 100 * MIN_BFLOAT16_MFU, at_most=False))
    return targets


def _median(summary):
    return None if summary is None else summary["median"]


def _spread(summary):
    return f"±{100 * summary['spread'] / 2:.0f}%"


def _cpu_cell(summary):
    return "" if summary is None else f"{1000 * summary['median']:.0f} {_spread(summary)}"


def other_architectures(results):
    """`[(label, case)]` of the cases timed with a hparams set of their own (not targets)."""
    return [(label, case) for label, case in results.get("training", {}).get("cases", {}).items()
            if case.get("hparams_set")]


def _run_lines(results):
    """Threads, load average and run time, when the results record them."""
    lines = []
    threads = results.get("threads")
    if threads and "tensorflow" not in threads:
        # Another backend: the pool it uses, in words.
        lines.append("Threads: " + "; ".join(f"{name}: {value}" for name, value in threads.items()
                                             if name != "requested")
                     + f" ({results.get('cpu_count', '?')} cores).")
    elif threads:
        tensorflow, torch = threads["tensorflow"], threads["torch"]
        lines.append(f"Threads: TensorFlow intra-op {tensorflow['intra_op']}, inter-op "
                     f"{tensorflow['inter_op']}; PyTorch intra-op {torch['intra_op']}, inter-op "
                     f"{torch['inter_op']}, OpenMP wait policy "
                     f"{torch.get('omp_wait_policy') or 'default'} "
                     f"({results.get('cpu_count', '?')} cores).")
    run = results.get("run")
    if run:
        loads = {part: load for part, load in run["load_average"].items() if load}
        if loads:
            highest = max(load[0] for load in loads.values())
            lines.append(
                "Load average (1, 5, 15 min; other processes share the cores): at start "
                f"{', '.join(f'{v:.1f}' for v in loads.get('start', []))}, at end "
                f"{', '.join(f'{v:.1f}' for v in loads.get('end', []))}; highest 1-min value "
                f"sampled {highest:.1f}.")
        if "seconds" in run:
            parts = ", ".join(f"{part} {seconds:.0f} s"
                              for part, seconds in run["part_seconds"].items())
            lines.append(f"Run time {run['seconds']:.0f} s ({parts}).")
    return lines


def _training_lines(results):
    """The training step table, its notes and MFU."""
    settings = results["settings"]
    lines = ["", "### Training step", "",
             "| model | hparams set | step time (ms) | target tokens/s | × transformer | +% | "
             "CPU time (ms) | × transformer (CPU) | memory (MiB) | parameters | MFU |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    efficiency = results.get("efficiency", {})
    for label, case in results["training"]["cases"].items():
        step = case["step_time"]
        ratio = case["ratio"]["median"] if case["ratio"] else float("nan")
        memory = case["peak_memory_mib"]
        mfu = efficiency.get("mfu", {}).get(label)
        own_set = case.get("hparams_set")
        marker = " †" if own_set else (" *" if case["thesis_variant"] else "")
        hparams_set = own_set or settings["hparams_set"] + (
            " + relative" if case["relative"] else "")
        cpu, cpu_ratio = case.get("cpu_time"), _median(case.get("cpu_ratio"))  # older JSON: none
        lines.append(
            f"| {label}{marker} | {hparams_set} | {1000 * step['median']:.0f} {_spread(step)} | "
            f"{case['tokens_per_second']:.0f} | {ratio:.2f} | {100 * (ratio - 1):+.0f}% | "
            f"{_cpu_cell(cpu)} | "
            f"{'' if cpu_ratio is None else f'{cpu_ratio:.2f}'} | "
            f"{'n/a' if memory is None else f'{memory:.0f}'} | {case['parameters']:,} | "
            f"{'' if mfu is None else f'{100 * mfu:.1f}%'} |")
    for label, reason in results["training"].get("skipped", {}).items():
        lines.append(f"| {label} | skipped: {reason} | | | | | | | | | |")
    lines += ["", "CPU time: the process's CPU seconds (all threads) per step: the work a "
              "step does without the time it waits for a core another process holds; "
              "steadier than wall-clock time on a shared machine, but the targets are judged "
              "on wall-clock time."]
    lines += ["", "Rows marked * are the syntax-aware variants of the thesis: the 1.10× "
              "step-time target applies to them (ratio to `transformer` with the same hparams, "
              "relative positions included)."]
    if other_architectures(results):
        lines[-1] += (" Rows marked † are a different architecture, timed with its own hparams "
                      "set on the same batch: the ratio to `transformer` is shown for scale only "
                      "and is not part of the 1.10× target.")
    if efficiency:
        lines += ["", f"MFU: analytic matmul FLOPs per step ({efficiency['step_flops'] / 1e9:.1f}"
                  f" GFLOP for `transformer`) / step time / the best measured "
                  f"{efficiency['matmul_size']}² float32 matmul rate in this run "
                  f"({efficiency['peak_flops'] / 1e9:.1f} GFLOP/s); shown for `transformer` "
                  f"shapes (syntax terms not counted)."]
    return lines


def format_table(results):
    """The report as Markdown: settings, tables and targets."""
    settings = results["settings"]
    # Older results name no backend: they were all TensorFlow's.
    lines = [f"Measured {results['date']} on {results['machine']}, Keras backend "
             f"{settings.get('backend', 'tensorflow')}.",
             f"hparams set `{settings['hparams_set']}`, {settings['precision']}, XLA "
             f"{'on' if settings['xla'] else 'off'}; training batch {settings['sentences']} x "
             f"{settings['length']} tokens; {settings['repetitions']} interleaved repetitions "
             f"of {settings['steps_per_repetition']} steps after {settings['warmup_steps']} "
             f"warm-up steps; median, ± half the range over repetitions.",
             f"Memory: {results['memory_method']}."]
    lines += _run_lines(results)
    if "training" in results:
        lines += _training_lines(results)
    peer = results.get("torch_peer")
    if peer:
        ours_cpu = results["training"]["cases"].get("transformer", {}).get("cpu_time")
        lines += ["", "### PyTorch peer (same shape and batch)", "",
                  "| | step time (ms) | CPU time (ms) | parameters |", "|---|---|---|---|",
                  f"| transformer (ours) | {1000 * peer['ours']['median']:.0f} "
                  f"{_spread(peer['ours'])} | {_cpu_cell(ours_cpu)} | "
                  f"{peer['our_parameters']:,} |",
                  f"| torch nn.Transformer | {1000 * peer['torch']['median']:.0f} "
                  f"{_spread(peer['torch'])} | {_cpu_cell(peer.get('torch_cpu'))} | "
                  f"{peer['torch_parameters']:,} |"]
    decoding = results.get("decoding")
    if decoding:
        lines += ["", "### Decoding (`transformer`)", "",
                  "| search | kind | sentences/s | tokens/s | cached speed-up | speed-up in CPU "
                  "time | same output |",
                  "|---|---|---|---|---|---|---|"]
        for search, entry in decoding.items():
            # Off TensorFlow only the cached decoder is timed (decoding_speed.py).
            compared = "uncached" in entry
            for kind in ("cached", "uncached") if compared else ("cached",):
                lines.append(
                    f"| {search} ({entry['sentences']} × {entry['output_tokens']} tokens) | "
                    f"{kind} | {entry[kind]['sentences_per_second']:.2f} | "
                    f"{entry[kind]['tokens_per_second']:.0f} | " + (
                        f"{entry['speedup']['median']:.1f}× | "
                        f"{_median(entry.get('cpu_speedup')) or float('nan'):.1f}× | "
                        f"{100 * entry['identical_outputs']:.0f}% |" if compared else
                        "not measured (TensorFlow's reference) | | |"))
        peer_rows = [(search, label, peer) for search, entry in decoding.items()
                     for label, peer in entry.get("peers", {}).items()]
        if peer_rows:
            lines += ["", "### Decoding peers (same weights, batch and output length)", "",
                      "| search | peer | sentences/s | tokens/s | our cached speed / peer's |",
                      "|---|---|---|---|---|"]
            lines += [f"| {search} | {label} | {peer['sentences_per_second']:.2f} | "
                      f"{peer['tokens_per_second']:.0f} | {peer['speed_ratio']['median']:.2f} "
                      f"{_spread(peer['speed_ratio'])} |" for search, label, peer in peer_rows]
    scaling = results.get("scaling")
    if scaling:
        first = next(iter(scaling.values()))
        labels = list(first["cases"])
        label_models = list(first.get("label_seconds", {}))
        lines += ["", "### Step time (ms) and memory (MiB) against source length "
                  f"({settings['batch_tokens']} tokens per batch)", "",
                  "| length | sentences | " + " | ".join(labels) + "".join(
                      f" | {model} labels (ms, share of its step)" for model in label_models)
                  + " |",
                  "|---|---|" + "---|" * (len(labels) + len(label_models))]
        for length, entry in scaling.items():
            cells = []
            for label in labels:
                case = entry["cases"].get(label)
                if case is None:
                    cells.append("n/a")
                    continue
                memory = case["peak_memory_mib"]
                ratio = case["ratio"]["median"] if case["ratio"] else float("nan")
                cells.append(f"{1000 * case['step_time']['median']:.0f} (×{ratio:.2f}), "
                             f"{'n/a' if memory is None else f'{memory:.0f}'} MiB")
            for model in label_models:
                seconds = entry["label_seconds"][model]["median"]
                case = entry["cases"].get(model)
                share = (f", {100 * seconds / case['step_time']['median']:.0f}%" if case else "")
                cells.append(f"{1000 * seconds:.1f}{share}")
            lines.append(f"| {length} | {entry['sentences']} | " + " | ".join(cells) + " |")
    precision = results.get("precision")
    if precision:
        efficiency = results.get("efficiency", {})
        precision_mfu = efficiency.get("precision_mfu", {})
        lines += ["", "### Precision and XLA (`transformer`)", "",
                  "| setting | step time (ms) | × float32 without XLA | MFU |",
                  "|---|---|---|---|"]
        for name, entry in precision.items():
            mfu = precision_mfu.get(name)
            lines.append(f"| {name} | {1000 * entry['step_time']['median']:.0f} "
                         f"{_spread(entry['step_time'])} | {entry['ratio']['median']:.2f} | "
                         f"{'' if mfu is None else f'{100 * mfu:.1f}%'} |")
        if settings.get("backend") == "jax":
            lines += ["", "Under JAX every setting is compiled with XLA: the first row is "
                      "float32 with XLA."]
        if precision_mfu:
            rates = ", ".join(f"{dtype} {rate / 1e12:.2f} TFLOP/s" for dtype, rate in
                              efficiency.get("peak_flops_by_dtype", {}).items())
            lines += ["", f"MFU here: the same analytic FLOPs / step time / the measured "
                      f"matmul rate of the setting's compute dtype in this run ({rates})."]
    mst = results.get("mst")
    if mst:
        lines += ["", "### MST parse decoding (`--parse_decoder=mst`, random head scores)", "",
                  "| words | ms per sentence | sentences |", "|---|---|---|"]
        lines += [f"| {length} | {1000 * entry['seconds']['median']:.3f} "
                  f"{_spread(entry['seconds'])} | {entry['sentences']} |"
                  for length, entry in mst.items()]
    lines += ["", "### Targets", ""]
    lines += [f"- {target.describe()}" for target in evaluate_targets(results)]
    for label, case in other_architectures(results):
        if case["ratio"] is not None:
            lines.append(f"- not a target (different architecture, own hparams set "
                         f"{case['hparams_set']}): step time {label} / {case['baseline']} "
                         f"({settings['hparams_set']}): {case['ratio']['median']:.2f}")
    return "\n".join(lines) + "\n"


def write_json(results, path):
    """Writes `results` with the evaluated targets, atomically."""
    document = dict(results, targets=[target.as_dict() for target in evaluate_targets(results)])
    io_utils.atomic_write_text(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


def write_chart(results, path):
    """A bar chart of training-time increase over `transformer`, as the thesis's Figure 6.4.

    One horizontal bar per model (percent more step time than its
    baseline, written beyond the whisker), whiskers the range over
    repetitions, and a line at the +10% target; colours tell the thesis
    variants, other models and other architectures (own hparams set) apart.
    """
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import patches, pyplot

    cases = [(label, case) for label, case in results["training"]["cases"].items()
             if case["ratio"] is not None and case["model"] != "transformer"]
    increase = [100 * (case["ratio"]["median"] - 1) for _, case in cases]
    low = [100 * (case["ratio"]["median"] - case["ratio"]["low"]) for _, case in cases]
    high = [100 * (case["ratio"]["high"] - case["ratio"]["median"]) for _, case in cases]
    kinds = {"thesis": ("tab:orange", "syntax-aware thesis variant (target applies)"),
             "other": ("tab:blue", "other model, same hparams set"),
             "own": ("tab:gray", "different architecture, own hparams set (not a target)")}

    def kind(case):
        if case.get("hparams_set"):
            return "own"
        return "thesis" if case["thesis_variant"] else "other"

    colours = [kinds[kind(case)][0] for _, case in cases]
    labels = [f"{label} ({case['hparams_set']})" if case.get("hparams_set") else label
              for label, case in cases]
    height = 0.4 * len(cases) + 2.5
    figure, axes = pyplot.subplots(figsize=(8, height))
    positions = range(len(cases))
    axes.barh(positions, increase, xerr=[low, high], color=colours, capsize=3)
    for position, value, below, above in zip(positions, increase, low, high):
        # Beyond the whisker, on the side the bar points to.
        end, offset = (value + above, 4) if value >= 0 else (value - below, -4)
        axes.annotate(f"{value:+.0f}%", (end, position), xytext=(offset, 0),
                      textcoords="offset points", ha="left" if value >= 0 else "right",
                      va="center", fontsize=7)
    axes.margins(x=0.12)
    axes.set_yticks(list(positions), labels)
    axes.invert_yaxis()
    axes.axvline(100 * (MAX_STEP_TIME_RATIO - 1), color="tab:red", linestyle="--",
                 label=f"target +{100 * (MAX_STEP_TIME_RATIO - 1):.0f}%")
    axes.axvline(0, color="black", linewidth=0.8)
    axes.set_xlabel("training step time increase over transformer (%)")
    settings = results["settings"]
    start_load = results.get("run", {}).get("load_average", {}).get("start")
    axes.set_title(f"{settings['hparams_set']}, batch {settings['sentences']} x "
                   f"{settings['length']}, {results['machine']}"
                   + (f", load average {start_load[0]:.1f}" if start_load else ""), fontsize=8)
    handles = [patches.Patch(color=kinds[name][0], label=kinds[name][1])
               for name in kinds if any(kind(case) == name for _, case in cases)]
    # Below the axes, where it hides no bar or label.
    axes.legend(handles=handles + axes.get_legend_handles_labels()[0], loc="upper center",
                bbox_to_anchor=(0.5, -0.6 / (height - 1.6)), ncol=2, fontsize=7)
    figure.tight_layout()
    with io_utils.atomic_write(path, "wb", encoding=None) as stream:
        figure.savefig(stream, format="png", dpi=120, bbox_inches="tight")
    pyplot.close(figure)
