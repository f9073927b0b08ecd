"""Charts of benchmark results: grouped bars as PNG (needs the ``plots`` extra: matplotlib)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


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
