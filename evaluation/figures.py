"""The report's figures (matplotlib, Agg backend, PNG): main results, repair success by round, first failing stage
per method, latency distribution. Every figure is drawn even without data (with a note), so a report never fails
on an empty run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display on a headless machine

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402

from evaluation.metrics import failure_attribution, repair_success_by_round  # noqa: E402
from evaluation.records import STAGES, RunRecord  # noqa: E402
from evaluation.statistics import group_by  # noqa: E402

MAIN_METRICS = (("tsr", "TSR"), ("edr", "EDR"), ("svr", "SVR"), ("hr", "HR"))


def _label(method: str, model: str) -> str:
    return f"{method}\n({model})"


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _empty(axis: Any, note: str) -> None:
    axis.text(0.5, 0.5, note, ha="center", va="center", transform=axis.transAxes)
    axis.set_xticks([])
    axis.set_yticks([])


def main_results(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    figure, axis = plt.subplots(figsize=(max(6.0, 0.9 * len(rows) + 2), 4.5))
    if not rows:
        _empty(axis, "no runs")
        return _save(figure, path)
    x = np.arange(len(rows))
    width = 0.8 / len(MAIN_METRICS)
    for i, (key, name) in enumerate(MAIN_METRICS):
        values = [100 * (row[key] or 0.0) for row in rows]
        axis.bar(x + (i - 1.5) * width, values, width, label=name)
    axis.set_xticks(x, [_label(r["method"], r["model"]) for r in rows], rotation=60, ha="right", fontsize=7)
    axis.set_ylabel("%")
    axis.set_ylim(0, 100)
    axis.set_title("Main results (judged)")
    axis.legend(ncol=4, fontsize=8)
    return _save(figure, path)


def repair_by_round(records: Sequence[RunRecord], path: Path) -> Path:
    figure, axis = plt.subplots(figsize=(6, 4))
    drawn = 0
    for (method, model), group in group_by(records, lambda r: (r.method, r.model)).items():
        by_round = {k: v for k, v in repair_success_by_round(group).items() if v is not None}
        if by_round:
            axis.plot(list(by_round), [100 * v for v in by_round.values()], marker="o", label=f"{method} ({model})")
            drawn += 1
    if not drawn:
        _empty(axis, "no run needed a repair")
    else:
        axis.set_xlabel("repair round r")
        axis.set_ylabel("repair success by round r (%)")
        axis.set_ylim(0, 100)
        axis.legend(fontsize=7)
    axis.set_title("Repair success by round")
    return _save(figure, path)


def failure_stage(records: Sequence[RunRecord], path: Path) -> Path:
    groups = group_by(records, lambda r: (r.method, r.model))
    figure, axis = plt.subplots(figsize=(max(6.0, 0.9 * len(groups) + 2), 4.5))
    shares = {key: failure_attribution(group)["shares"] for key, group in groups.items()}
    if not any(v for s in shares.values() for v in s.values()):
        _empty(axis, "no failed run")
        axis.set_title("First failing stage")
        return _save(figure, path)
    x = np.arange(len(groups))
    bottom = np.zeros(len(groups))
    for stage in (*STAGES, "unattributed"):
        values = np.array([100 * (s.get(stage) or 0.0) for s in shares.values()])
        if values.any():
            axis.bar(x, values, 0.6, bottom=bottom, label=stage)
            bottom += values
    axis.set_xticks(x, [_label(*key) for key in groups], rotation=60, ha="right", fontsize=7)
    axis.set_ylabel("share of failed runs (%)")
    axis.set_title("First failing stage")
    axis.legend(fontsize=7)
    return _save(figure, path)


def latency(records: Sequence[RunRecord], path: Path) -> Path:
    groups = group_by(records, lambda r: (r.method, r.model))
    figure, axis = plt.subplots(figsize=(max(6.0, 0.9 * len(groups) + 2), 4.5))
    if not groups:
        _empty(axis, "no runs")
        return _save(figure, path)
    x = np.arange(len(groups))
    for offset, (name, field) in ((-0.18, ("LLM", "llm_latency_sec")), (0.18, ("non-LLM", "tool_latency_sec"))):
        data = [[getattr(r, field) for r in group] for group in groups.values()]
        parts = axis.boxplot(data, positions=x + offset, widths=0.3, patch_artist=True, showfliers=False)
        colour = "tab:blue" if name == "LLM" else "tab:orange"
        for box in parts["boxes"]:
            box.set_facecolor(colour)
        axis.plot([], [], color=colour, linewidth=6, label=name)
    axis.set_xticks(x, [_label(*key) for key in groups], rotation=60, ha="right", fontsize=7)
    axis.set_ylabel("seconds per run")
    axis.set_yscale("symlog", linthresh=0.1)
    axis.set_title("Latency per run: LLM and non-LLM time")
    axis.legend(fontsize=8)
    return _save(figure, path)


def draw_all(records: Sequence[RunRecord], main_rows: Sequence[dict[str, Any]], out: Path) -> list[tuple[str, Path]]:
    return [
        ("Main results", main_results(main_rows, out / "main_results.png")),
        ("Repair success by round", repair_by_round(records, out / "repair_by_round.png")),
        ("First failing stage per method", failure_stage(records, out / "failure_stage.png")),
        ("Latency distribution", latency(records, out / "latency.png")),
    ]
