"""The thesis's analysis figures as PNG files (matplotlib, Agg backend, no display needed).

* `plot_histograms`: attention-weight histograms without the [0, 0.1) bin,
  one panel per layer (Figure 6.1) or per head of one layer (Figure 6.2);
* `plot_attention_maps`: the attention of one sentence, a heatmap per layer
  and head, the parse head framed (Figure 6.3);
* `plot_length_buckets`: the BLEU difference of two systems per
  source-length bucket (Bugliarello & Okazaki 2020, Figure 3);
* `plot_precision_changes`: the change in n-gram precision per order of
  each system over a baseline (Hao et al. 2019, Figure 2).

Every figure is written atomically.
"""

import io
import os
from typing import Optional, Sequence, Union

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from syntax_t2t import io_utils  # noqa: E402

PathLike = Union[str, os.PathLike]


def _save(figure, path: PathLike) -> None:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    with io_utils.atomic_write(path, "wb") as stream:
        stream.write(buffer.getvalue())


def plot_histograms(counts: np.ndarray, bin_edges: np.ndarray, panel_titles: Sequence[str], title: str,
                    path: PathLike) -> None:
    """One bar chart per row of `counts`, without the first bin.

    Bars show the share of all weights of the panel (the removed bin
    included), so panels with sharper attention show taller bars on the
    right.

    Args:
        counts: [panels, bins] counts of attention weights.
        bin_edges: the bins' edges, [bins + 1].
        panel_titles: a title per panel ("layer 0", "head 3", ...).
        title: the figure's title.
        path: the PNG to write.
    """
    panels = len(counts)
    columns = min(panels, 4)
    rows = -(-panels // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.4 * rows), squeeze=False,
                                sharey=True)
    left, widths = bin_edges[1:-1], np.diff(bin_edges)[1:]
    for index, axis in enumerate(axes.flat):
        if index >= panels:
            axis.set_visible(False)
            continue
        share = counts[index, 1:] / max(counts[index].sum(), 1)
        axis.bar(left, share, width=widths, align="edge", color="#4c72b0", edgecolor="white")
        axis.set_title(panel_titles[index], fontsize=10)
        axis.set_xlim(bin_edges[1], bin_edges[-1])
        axis.set_xticks(bin_edges[1::2])
        if index % columns == 0:
            axis.set_ylabel("share of weights")
        if index >= panels - columns:
            axis.set_xlabel("attention weight")
    figure.suptitle(title + "  (bin [0, 0.1) removed)", fontsize=11)
    figure.tight_layout()
    _save(figure, path)


def plot_attention_maps(layers: Sequence[np.ndarray], tokens: Sequence[str], path: PathLike,
                        highlight: Optional[tuple[int, int]] = None, title: str = "") -> None:
    """Heatmaps of one sentence's attention: rows are layers, columns heads.

    Args:
        layers: per layer a [heads, n, n] array (row = attending position).
        tokens: the n position labels.
        path: the PNG to write.
        highlight: (layer, head) to frame, e.g. the parse head.
        title: the figure's title.
    """
    num_layers, num_heads = len(layers), layers[0].shape[0]
    size = max(1.6, 0.16 * len(tokens))
    figure, axes = plt.subplots(num_layers, num_heads, figsize=(size * num_heads, size * num_layers),
                                squeeze=False)
    label_size = max(4, min(8, 160 // max(len(tokens), 1)))
    for layer, probabilities in enumerate(layers):
        for head in range(num_heads):
            axis = axes[layer, head]
            axis.imshow(probabilities[head], cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
            axis.set_xticks([])
            axis.set_yticks([])
            if layer == 0:
                axis.set_title(f"head {head}", fontsize=9)
            if head == 0:
                axis.set_ylabel(f"layer {layer}", fontsize=9)
            if layer == num_layers - 1:
                axis.set_xticks(range(len(tokens)))
                axis.set_xticklabels(tokens, rotation=90, fontsize=label_size)
            if head == 0:
                axis.set_yticks(range(len(tokens)))
                axis.set_yticklabels(tokens, fontsize=label_size)
            if highlight == (layer, head):
                for spine in axis.spines.values():
                    spine.set_edgecolor("red")
                    spine.set_linewidth(3)
    figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    _save(figure, path)


def plot_length_buckets(labels: Sequence[str], differences: Sequence[float], counts: Sequence[int],
                        baseline: str, system: str, path: PathLike) -> None:
    """Bars of BLEU(system) - BLEU(baseline) per source-length bucket.

    Args:
        labels: bucket labels ("1-10", ...).
        differences: the BLEU difference of each bucket.
        counts: sentences per bucket, written under the labels.
        baseline, system: the systems' names.
        path: the PNG to write.
    """
    figure, axis = plt.subplots(figsize=(1.0 + 0.9 * len(labels), 3.4))
    colors = ["#55a868" if d >= 0 else "#c44e52" for d in differences]
    axis.bar(range(len(labels)), differences, color=colors)
    axis.axhline(0.0, color="black", linewidth=0.8)
    axis.set_xticks(range(len(labels)))
    axis.set_xticklabels([f"{label}\n({count})" for label, count in zip(labels, counts)], fontsize=9)
    axis.set_xlabel("source length in words (sentences)")
    axis.set_ylabel(f"BLEU {system} − {baseline}")
    axis.set_title(f"BLEU difference by source length: {system} vs {baseline}", fontsize=11)
    figure.tight_layout()
    _save(figure, path)


def plot_precision_changes(orders: Sequence[int], differences: dict[str, Sequence[float]], baseline: str,
                           path: PathLike) -> None:
    """Grouped bars of precision(system) - precision(baseline) per n-gram order.

    Args:
        orders: the n-gram orders (1, 2, ...).
        differences: `{system: [difference per order]}`.
        baseline: the baseline's name.
        path: the PNG to write.
    """
    names = list(differences)
    width = 0.8 / max(len(names), 1)
    figure, axis = plt.subplots(figsize=(1.5 + 0.5 * len(orders) * max(len(names), 2), 3.4))
    for index, name in enumerate(names):
        offsets = np.arange(len(orders)) - 0.4 + width * (index + 0.5)
        axis.bar(offsets, differences[name], width=width, label=name)
    axis.axhline(0.0, color="black", linewidth=0.8)
    axis.set_xticks(range(len(orders)))
    axis.set_xticklabels([f"{order}-gram" for order in orders])
    axis.set_ylabel(f"precision − {baseline} (points)")
    axis.set_title(f"Change in n-gram precision over {baseline}", fontsize=11)
    axis.legend(fontsize=8)
    figure.tight_layout()
    _save(figure, path)
