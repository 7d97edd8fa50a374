"""Figures of training runs and experiment grids (matplotlib, Agg backend).

* `plot_learning_curve`: one run's dev BLEU, dev translation loss and parse
  UAS against the step, from its `validation.json`;
* `plot_learning_curves`: the same panels with one line per run, for a grid;
* `plot_system_scores`: test BLEU per system, one dot per seed and the mean.
"""

from typing import Optional, Sequence

import numpy as np

from syntax_t2t.evaluation.plots import _save, plt

#: (results key, axis label) of the panels, drawn when any evaluation has the key.
PANELS = (("bleu", "dev BLEU"), ("loss/nmt", "dev translation loss"),
          ("uas", "dev UAS of the parse head"))


def _panels(runs):
    present = [(key, label) for key, label in PANELS
               if any(key in entry for evaluations in runs.values() for entry in evaluations)]
    if not present:
        raise ValueError("no evaluation holds BLEU, a dev loss or UAS")
    return present


#: Line styles of a system's runs (its seeds), in the order of their names.
SEED_STYLES = ("-", "--", ":", "-.")


def _styles(names, systems):
    """`{run name: (colour, line style)}`: a colour per system, a line style per run of it.

    More systems than the default cycle's ten colours take tab20's (its ten
    dark shades first, then the light ones), so that no two systems of a
    grid share one.
    """
    systems = systems or {}
    groups = {}
    for name in sorted(names):
        groups.setdefault(systems.get(name, name), []).append(name)
    if len(groups) <= 10:
        palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    else:
        shades = plt.get_cmap("tab20").colors
        palette = list(shades[0::2]) + list(shades[1::2])
    return {name: (palette[index % len(palette)], SEED_STYLES[rank % len(SEED_STYLES)])
            for index, group in enumerate(groups) for rank, name in enumerate(groups[group])}


def plot_learning_curves(runs: dict, path, title: str = "",
                         best_steps: Optional[dict] = None,
                         systems: Optional[dict] = None) -> None:
    """One panel per metric, one line per run.

    Args:
        runs: `{run name: [evaluation dicts with "step" and metric keys]}`.
        path: the PNG to write.
        title: the figure's title.
        best_steps: `{run name: step}`, the step of the checkpoint kept as
            best, ringed on each of the run's lines.
        systems: `{run name: system}`: a system's runs (its seeds) share a
            colour and differ in line style. Without it every run is a
            system of its own.

    Raises:
        ValueError: no evaluation has any of the plotted metrics.
    """
    panels = _panels(runs)
    best_steps = best_steps or {}
    # Constrained layout: with tight panels one panel's y label ran into the
    # tick labels of the panel left of it.
    figure, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.4), squeeze=False,
                                layout="constrained")
    # The same colour and style for a run in every panel, though a panel may
    # lack some runs (no parse UAS line for a model without a parse head).
    styles = _styles(runs, systems)
    handles = {}
    for axis, (key, label) in zip(axes[0], panels):
        for name, evaluations in sorted(runs.items()):
            points = [(entry["step"], entry[key]) for entry in evaluations if key in entry]
            if not points:
                continue
            colour, style = styles[name]
            steps, values = zip(*points)
            handles[name], = axis.plot(steps, values, marker=".", markersize=4, label=name,
                                       color=colour, linestyle=style, linewidth=1.2)
            if best_steps.get(name) in steps:
                # A ring on the line, not a vertical rule: a dozen rules hide the curves.
                axis.plot([best_steps[name]], [values[steps.index(best_steps[name])]],
                          marker="o", markersize=8, fillstyle="none", color=colour,
                          linestyle="none")
        axis.set_xlabel("step")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
    if len(runs) > 1:
        # Beside the panels: inside one, a grid's legend covers its curves.
        axes[0][-1].legend([handles[name] for name in sorted(handles)], sorted(handles),
                           fontsize="x-small", loc="upper left", bbox_to_anchor=(1.02, 1.0))
    if title:
        figure.suptitle(title)
    _save(figure, path)


def plot_learning_curve(evaluations: Sequence[dict], path, best_step: Optional[int] = None) -> None:
    """One run's learning curve, the best checkpoint's step marked."""
    plot_learning_curves({"run": evaluations}, path, best_steps={"run": best_step})


def plot_system_scores(scores: dict, path, metric: str = "BLEU") -> None:
    """One row per system: each seed's score as a dot, the mean as a bar.

    Args:
        scores: `{system: [score per seed]}`, in the order to draw.
        path: the PNG to write.
        metric: the axis label.
    """
    names = list(scores)
    figure, axis = plt.subplots(figsize=(6, 0.45 * len(names) + 1.2))
    for row, name in enumerate(names):
        values = np.asarray(scores[name], dtype=float)
        axis.barh(row, values.mean(), color="#9ecae1", height=0.6)
        axis.plot(values, np.full(len(values), row), "o", color="#08519c", markersize=4)
    axis.set_yticks(range(len(names)))
    axis.set_yticklabels(names)
    axis.invert_yaxis()
    axis.set_xlabel(f"test {metric} (bar: mean over seeds; dots: seeds)")
    lowest = min(min(values) for values in scores.values())
    axis.set_xlim(left=max(0.0, lowest - 5))
    axis.grid(axis="x", alpha=0.3)
    _save(figure, path)
