"""The report's four figures as PNG files, drawn from evaluation.report's rows: main results, repair success by
round, first failing stage of the failed runs, latency distribution.

Each figure is a matplotlib `Figure` on its own Agg canvas, never created through pyplot: nothing switches the
process-wide backend for other code, and no figure is kept in pyplot's registry, so nothing stays open once the
PNG is saved. Every figure is drawn even when its data is missing, with a note saying so, so a report never fails
on an empty or partial run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

Row = Mapping[str, Any]
MAIN_METRICS = (("tsr", "TSR ↑"), ("edr", "EDR ↑"), ("svr", "SVR ↓"), ("hr", "HR ↓"))
LATENCY_PARTS = (("llm_sec", "LLM", "tab:blue"), ("non_llm_sec", "non-LLM", "tab:orange"))
DPI = 120
MAX_WIDTH_IN = 24.0  # beyond this the PNG is unreadable at page width anyway


def _labels(rows: Sequence[Row]) -> list[str]:
    """Method names, with the model under each when the rows span several models."""
    several_models = len({row["model"] for row in rows}) > 1
    return [f"{row['method']}\n({row['model']})" if several_models else row["method"] for row in rows]


def _new(items: int, title: str, height: float = 4.8) -> tuple[Figure, Axes]:
    """A figure wide enough for `items` groups along x, on an Agg canvas of its own."""
    figure = Figure(figsize=(min(max(6.5, 0.8 * items + 3.0), MAX_WIDTH_IN), height), layout="constrained")
    FigureCanvasAgg(figure)
    axis = figure.add_subplot()
    axis.set_title(title)
    return figure, axis


def _note(axis: Axes, note: str) -> None:
    """An empty chart that says why it is empty."""
    axis.text(0.5, 0.5, note, ha="center", va="center", transform=axis.transAxes, color="dimgray", fontsize=12)
    axis.set_xticks([])
    axis.set_yticks([])


def _method_ticks(axis: Axes, rows: Sequence[Row]) -> None:
    axis.set_xticks(np.arange(len(rows)), _labels(rows), rotation=30, ha="right", fontsize=8)


def _save(figure: Figure, path: Path) -> Path:
    figure.savefig(path, dpi=DPI)
    return path


def main_results(rows: Sequence[Row], path: Path) -> Path:
    """Grouped bars of TSR, EDR, SVR and HR (%) per (method, model); an undefined metric is marked n/a."""
    figure, axis = _new(len(rows), "Main results")
    if not rows:
        _note(axis, "no runs")
        return _save(figure, path)
    x = np.arange(len(rows))
    width = 0.8 / len(MAIN_METRICS)
    for index, (key, name) in enumerate(MAIN_METRICS):
        positions = x + (index - (len(MAIN_METRICS) - 1) / 2) * width
        values = [row[key] for row in rows]
        axis.bar(positions, [np.nan if v is None else 100 * v for v in values], width, label=name)
        for position, value in zip(positions, values):
            if value is None:
                axis.text(position, 1, "n/a", rotation=90, ha="center", va="bottom", fontsize=6, color="dimgray")
    _method_ticks(axis, rows)
    axis.set_ylabel("% of runs")
    axis.set_ylim(0, 118)  # headroom above 100 for the legend
    axis.set_yticks(range(0, 101, 20))
    axis.grid(axis="y", alpha=0.3)
    axis.legend(ncol=len(MAIN_METRICS), loc="upper center", fontsize=8, frameon=False)
    return _save(figure, path)


def repair_by_round(rounds: Sequence[int], rows: Sequence[Row], path: Path) -> Path:
    """Cumulative repair success RSR@r (%) against the round r, one line per method that repaired."""
    figure, axis = _new(len(rounds), "Repair success by round")
    if not rows:
        _note(axis, "no run needed a repair")
        return _save(figure, path)
    for label, row in zip(_labels(rows), rows):
        values = [row["by_round"].get(r) for r in rounds]
        axis.plot(
            rounds, [np.nan if v is None else 100 * v for v in values], marker="o", label=label.replace("\n", " ")
        )
    axis.set_xticks(list(rounds))
    axis.set_xlabel("repair round r")
    axis.set_ylabel("repaired by round r (% of runs that needed repair)")
    axis.set_ylim(0, 105)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    return _save(figure, path)


def failure_stage(rows: Sequence[Row], stages: Sequence[str], path: Path) -> Path:
    """Stacked bars per (method, model): the share of its failed runs whose first failing stage is each stage."""
    figure, axis = _new(len(rows), "First failing stage of the failed runs")
    if not any(row["failed"] for row in rows):
        _note(axis, "no failed run" if rows else "no runs")
        return _save(figure, path)
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    colours = matplotlib.colormaps["tab10"]
    for index, stage in enumerate(stages):  # colour by stage position, so a stage keeps its colour across reports
        shares = np.array([100 * (row["shares"][stage] or 0.0) for row in rows])
        if shares.any():
            axis.bar(x, shares, 0.6, bottom=bottom, label=stage, color=colours(index % colours.N))
            bottom += shares
    for position, row in zip(x, rows):
        if row["failed"]:
            axis.text(position, 101, f"n={row['failed']}", ha="center", va="bottom", fontsize=7)
        else:
            axis.text(position, 2, "no failed run", rotation=90, ha="center", va="bottom", fontsize=7, color="dimgray")
    _method_ticks(axis, rows)
    axis.set_ylabel("% of failed runs")
    axis.set_ylim(0, 110)
    axis.legend(title="first failing stage", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(figure, path)


def latency(rows: Sequence[Row], path: Path) -> Path:
    """Box plots of the per-run LLM and non-LLM seconds, side by side per (method, model)."""
    figure, axis = _new(len(rows), "Latency per run")
    if not rows:
        _note(axis, "no runs")
        return _save(figure, path)
    x = np.arange(len(rows))
    for offset, (key, _, colour) in zip((-0.2, 0.2), LATENCY_PARTS):
        boxes = axis.boxplot(
            [row[key] for row in rows],
            positions=x + offset,
            widths=0.35,
            patch_artist=True,
            showfliers=False,
            medianprops={"color": "black"},
        )
        for box in boxes["boxes"]:
            box.set_facecolor(colour)
    _method_ticks(axis, rows)
    axis.set_xlim(-0.6, len(rows) - 0.4)
    axis.set_yscale("symlog", linthresh=0.1)  # runs range from milliseconds (no LLM) to minutes
    axis.set_ylim(bottom=0)  # seconds are never negative; symlog would otherwise mirror the axis below 0
    axis.set_ylabel("seconds per run (linear below 0.1 s, log above)")
    axis.grid(axis="y", alpha=0.3)
    axis.legend(handles=[Patch(color=colour, label=name) for _, name, colour in LATENCY_PARTS], fontsize=8)
    return _save(figure, path)
