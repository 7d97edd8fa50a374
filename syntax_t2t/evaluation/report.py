"""Evaluation results as a human-readable table and as JSON."""

import json
import math
import os
from typing import Any, Sequence, Union

from syntax_t2t import io_utils

PathLike = Union[str, os.PathLike]


def _cell(value: Any, decimals: int) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.{decimals}f}"
    return str(value)


def format_table(header: Sequence[str], rows: Sequence[Sequence[Any]], decimals: int = 2) -> str:
    """A plain-text table: left-aligned text, right-aligned numbers, `-` for None.

    Args:
        header: column titles.
        rows: one sequence of cells per row, as long as `header`.
        decimals: digits after the point for floats.

    Returns:
        The table, lines joined by newlines, without a trailing newline.
    """
    cells = [[str(h) for h in header]] + [[_cell(v, decimals) for v in row] for row in rows]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows)
               for i in range(len(header))]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]

    def render(line):
        parts = [text.rjust(width) if right else text.ljust(width)
                 for text, width, right in zip(line, widths, numeric)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([render(cells[0]), rule] + [render(line) for line in cells[1:]])


def write_json(path: PathLike, data: Any) -> None:
    """Writes `data` as indented, key-sorted JSON, atomically."""
    io_utils.atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
