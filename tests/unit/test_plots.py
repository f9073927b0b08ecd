"""The benchmark charts: a PNG of the right size, with one bar per value given."""

from __future__ import annotations

import argparse
import struct
from pathlib import Path
from typing import Any

import pytest

from ddbkeys._plots import grouped_bars, plot_arguments, save_figures, saved_figures

pytest.importorskip("matplotlib")


def test_grouped_bars_writes_a_png(tmp_path: Path) -> None:
    path = grouped_bars(
        tmp_path / "sub" / "chart.png",
        title="t",
        groups=["a", "b", "c"],
        series={"one": [1.0, 20.0, 300.0], "two": [0.5, None, 3000.0]},
        ylabel="ids/s",
        log=True,
        note="a note",
    )
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (990, 495)  # 7 + 2 (the legend) x 4.5 inches at 110 dpi


def test_bars_match_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.axes import Axes  # noqa: PLC0415

    seen: list[int] = []
    original = Axes.bar

    def counting(self: Axes, x: list[float], *args: Any, **kwargs: Any) -> Any:
        seen.append(len(x))
        return original(self, x, *args, **kwargs)

    monkeypatch.setattr(Axes, "bar", counting)
    grouped_bars(
        tmp_path / "c.png",
        title="t",
        groups=["a", "b"],
        series={"one": [1.0, 2.0], "two": [None, 3.0]},
        ylabel="y",
    )
    assert seen == [2, 1]  # a None value draws no bar


def test_figures_round_trip_and_the_plot_options(tmp_path: Path) -> None:
    figures = {"quick": False, "rows": [{"strategy": "counter", "seed": 314.5}]}
    save_figures(tmp_path / "docs", "chart", figures)
    assert saved_figures(tmp_path / "docs", "chart") == figures
    parser = argparse.ArgumentParser()
    plot_arguments(parser, "chart")
    args = parser.parse_args(["--plot", "out"])
    assert args.plot == Path("out") and args.replot is None
    assert "DIR/chart.png" in parser.format_help()
