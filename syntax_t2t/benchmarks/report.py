"""The benchmark's targets, its table, and its JSON and PNG outputs.

`results` is the dict `bin/bench` builds (see `syntax_t2t/cli/bench.py`):
`training`, `torch_peer`, `decoding`, `scaling`, `efficiency`, and
optionally `precision`; the functions here only read it, so they can be
checked on made-up numbers.
"""

import dataclasses
import json

from syntax_t2t import io_utils

#: A syntax-aware variant may take at most this multiple of `transformer`'s step time.
MAX_STEP_TIME_RATIO = 1.10
#: Our `transformer` step must be at least this many times as fast as the PyTorch peer's.
MIN_TORCH_SPEED_RATIO = 1.0
#: Cached beam-4 decoding must be at least this many times as fast as uncached.
MIN_CACHED_SPEEDUP = 5.0


@dataclasses.dataclass(frozen=True)
class Target:
    """One target and whether the measurement meets it.

    Attributes:
        name: what is compared.
        measured: the measured value (a ratio).
        bound: the bound it must meet.
        at_most: True if `measured <= bound` is required, else `measured >= bound`.
    """

    name: str
    measured: float
    bound: float
    at_most: bool

    @property
    def holds(self):
        return self.measured <= self.bound if self.at_most else self.measured >= self.bound

    def describe(self):
        relation = "<=" if self.at_most else ">="
        verdict = "holds" if self.holds else "MISSED"
        return f"{self.name}: {self.measured:.2f} {relation} {self.bound:.2f}  {verdict}"

    def as_dict(self):
        return {**dataclasses.asdict(self), "holds": self.holds}


def evaluate_targets(results):
    """The targets of the issue, from the measured results.

    Returns:
        `Target`s: one per syntax-aware thesis variant (step time ratio to
        `transformer` with the same hparams), ours against the PyTorch peer
        (peer step time / ours) when measured, and cached against uncached
        beam-4 decoding when measured.
    """
    targets = []
    for label, case in results["training"]["cases"].items():
        if case["thesis_variant"] and case["ratio"] is not None:
            targets.append(Target(f"step time {label} / {case['baseline']}",
                                  case["ratio"]["median"], MAX_STEP_TIME_RATIO, at_most=True))
    peer = results.get("torch_peer")
    if peer:
        targets.append(Target("speed transformer / torch nn.Transformer (peer step time / ours)",
                              peer["speed_ratio"]["median"], MIN_TORCH_SPEED_RATIO,
                              at_most=False))
    beam4 = results.get("decoding", {}).get("beam4")
    if beam4:
        targets.append(Target(
            f"cached / uncached beam-4 decoding speed at {beam4['output_tokens']} output tokens",
            beam4["speedup"]["median"], MIN_CACHED_SPEEDUP, at_most=False))
    return targets


def _spread(summary):
    return f"±{100 * summary['spread'] / 2:.0f}%"


def format_table(results):
    """The report as Markdown: settings, tables and targets."""
    settings = results["settings"]
    lines = [f"Measured {results['date']} on {results['machine']}.",
             f"hparams set `{settings['hparams_set']}`, {settings['precision']}, XLA "
             f"{'on' if settings['xla'] else 'off'}; training batch {settings['sentences']} x "
             f"{settings['length']} tokens; {settings['repetitions']} interleaved repetitions "
             f"of {settings['steps_per_repetition']} steps after {settings['warmup_steps']} "
             f"warm-up steps; median, ± half the range over repetitions.",
             f"Memory: {results['memory_method']}.", "",
             "### Training step", "",
             "| model | step time (ms) | target tokens/s | × transformer | +% | memory (MiB) | "
             "parameters | MFU |",
             "|---|---|---|---|---|---|---|---|"]
    efficiency = results.get("efficiency", {})
    for label, case in results["training"]["cases"].items():
        step = case["step_time"]
        ratio = case["ratio"]["median"] if case["ratio"] else float("nan")
        memory = case["peak_memory_mib"]
        mfu = efficiency.get("mfu", {}).get(label)
        lines.append(
            f"| {label} | {1000 * step['median']:.0f} {_spread(step)} | "
            f"{case['tokens_per_second']:.0f} | {ratio:.2f} | {100 * (ratio - 1):+.0f}% | "
            f"{'n/a' if memory is None else f'{memory:.0f}'} | {case['parameters']:,} | "
            f"{'' if mfu is None else f'{100 * mfu:.1f}%'} |")
    for label, reason in results["training"].get("skipped", {}).items():
        lines.append(f"| {label} | skipped: {reason} | | | | | | |")
    if efficiency:
        lines += ["", f"MFU: analytic matmul FLOPs per step ({efficiency['step_flops'] / 1e9:.1f}"
                  f" GFLOP for `transformer`) / step time / the best measured "
                  f"{efficiency['matmul_size']}² float32 matmul rate in this run "
                  f"({efficiency['peak_flops'] / 1e9:.1f} GFLOP/s); shown for `transformer` "
                  f"shapes (syntax terms not counted)."]
    peer = results.get("torch_peer")
    if peer:
        lines += ["", "### PyTorch peer (same shape and batch)", "",
                  "| | step time (ms) | parameters |", "|---|---|---|",
                  f"| transformer (ours) | {1000 * peer['ours']['median']:.0f} "
                  f"{_spread(peer['ours'])} | {peer['our_parameters']:,} |",
                  f"| torch nn.Transformer | {1000 * peer['torch']['median']:.0f} "
                  f"{_spread(peer['torch'])} | {peer['torch_parameters']:,} |"]
    decoding = results.get("decoding")
    if decoding:
        lines += ["", "### Decoding (`transformer`)", "",
                  "| search | kind | sentences/s | tokens/s | cached speed-up | same output |",
                  "|---|---|---|---|---|---|"]
        for search, entry in decoding.items():
            for kind in ("cached", "uncached"):
                lines.append(
                    f"| {search} ({entry['sentences']} × {entry['output_tokens']} tokens) | "
                    f"{kind} | {entry[kind]['sentences_per_second']:.2f} | "
                    f"{entry[kind]['tokens_per_second']:.0f} | "
                    f"{entry['speedup']['median']:.1f}× | {100 * entry['identical_outputs']:.0f}% |")
    scaling = results.get("scaling")
    if scaling:
        labels = list(next(iter(scaling.values()))["cases"])
        lines += ["", "### Step time (ms) and memory (MiB) against source length "
                  f"({settings['batch_tokens']} tokens per batch)", "",
                  "| length | sentences | " + " | ".join(labels) + " |",
                  "|---|---|" + "---|" * len(labels)]
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
            lines.append(f"| {length} | {entry['sentences']} | " + " | ".join(cells) + " |")
    precision = results.get("precision")
    if precision:
        lines += ["", "### Precision and XLA (`transformer`)", "",
                  "| setting | step time (ms) | × float32 without XLA |", "|---|---|---|"]
        for name, entry in precision.items():
            lines.append(f"| {name} | {1000 * entry['step_time']['median']:.0f} "
                         f"{_spread(entry['step_time'])} | {entry['ratio']['median']:.2f} |")
    lines += ["", "### Targets", ""]
    lines += [f"- {target.describe()}" for target in evaluate_targets(results)]
    return "\n".join(lines) + "\n"


def write_json(results, path):
    """Writes `results` with the evaluated targets, atomically."""
    document = dict(results, targets=[target.as_dict() for target in evaluate_targets(results)])
    io_utils.atomic_write_text(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


def write_chart(results, path):
    """A bar chart of training-time increase over `transformer`, as the thesis's Figure 6.4.

    One horizontal bar per model (percent more step time than its
    baseline), whiskers the range over repetitions, and a line at the +10%
    target.
    """
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    cases = [(label, case) for label, case in results["training"]["cases"].items()
             if case["ratio"] is not None and case["model"] != "transformer"]
    labels = [label for label, _ in cases]
    increase = [100 * (case["ratio"]["median"] - 1) for _, case in cases]
    low = [100 * (case["ratio"]["median"] - case["ratio"]["low"]) for _, case in cases]
    high = [100 * (case["ratio"]["high"] - case["ratio"]["median"]) for _, case in cases]
    colours = ["tab:orange" if case["thesis_variant"] else "tab:blue" for _, case in cases]
    figure, axes = pyplot.subplots(figsize=(8, 0.4 * len(cases) + 1.5))
    positions = range(len(cases))
    axes.barh(positions, increase, xerr=[low, high], color=colours, capsize=3)
    axes.set_yticks(list(positions), labels)
    axes.invert_yaxis()
    axes.axvline(100 * (MAX_STEP_TIME_RATIO - 1), color="tab:red", linestyle="--",
                 label=f"target +{100 * (MAX_STEP_TIME_RATIO - 1):.0f}%")
    axes.axvline(0, color="black", linewidth=0.8)
    axes.set_xlabel("training step time increase over transformer (%)")
    settings = results["settings"]
    axes.set_title(f"{settings['hparams_set']}, batch {settings['sentences']} x "
                   f"{settings['length']}, {results['machine']}", fontsize=8)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    with io_utils.atomic_write(path, "wb", encoding=None) as stream:
        figure.savefig(stream, format="png", dpi=120)
    pyplot.close(figure)
