"""Charts of benchmark results: grouped bars as PNG (needs the ``plots`` extra: matplotlib),
and the figures behind each chart saved beside it as JSON, so it can be redrawn unmeasured."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def plot_arguments(parser: argparse.ArgumentParser, chart: str) -> None:
    """Add a benchmark's ``--plot DIR`` and ``--replot DIR`` for the chart ``chart``.png."""
    parser.add_argument(
        "--plot",
        metavar="DIR",
        type=Path,
        help=f"Write {chart}.png (and the figures as .json) into DIR.",
    )
    parser.add_argument(
        "--replot",
        metavar="DIR",
        type=Path,
        help=f"Only redraw DIR/{chart}.png from the figures saved there by --plot.",
    )


def save_figures(folder: Path, chart: str, figures: Mapping[str, Any]) -> None:
    """Write the figures of ``chart`` to ``folder``/``chart``.json."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{chart}.json").write_text(json.dumps(figures, indent=2) + "\n")


def saved_figures(folder: Path, chart: str) -> dict[str, Any]:
    """The figures :func:`save_figures` wrote for ``chart``."""
    figures: dict[str, Any] = json.loads((folder / f"{chart}.json").read_text())
    return figures


def grouped_bars(
    path: Path,
    *,
    title: str,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    ylabel: str,
    log: bool = False,
    note: str = "",
) -> Path:
    """One group of bars per entry of ``groups``, one bar per series (None: no bar), each bar
    labelled with its value. Returns ``path``."""
    import matplotlib  # noqa: PLC0415 - optional, only when a chart is asked for

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    width = 0.8 / max(1, len(series))
    label_inches = 0.085 * max(len(line) for g in groups for line in g.split("\n"))
    per_group = max(label_inches + 0.3, 0.3 * max(1, len(series)))
    fig, ax = plt.subplots(figsize=(min(16.0, max(7.0, len(groups) * per_group) + 2.0), 4.5))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        shown = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        bars = ax.bar([x for x, _ in shown], [v for _, v in shown], width, label=name)
        ax.bar_label(bars, labels=[_label(v) for _, v in shown], fontsize=7, padding=1)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    if note:
        fig.text(0.01, 0.01, note, fontsize=7, color="#555")
    fig.tight_layout(rect=(0, 0.04 if note else 0, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _label(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.1f}"
    return f"{value:.3f}"
