"""The report's gallery of the worst cases: executes judged unsafe, executes at a wrong place and executes that relax
a stated constraint, each drawn as a map (the method's route beside the gold route, over the sample's world).

Reads the results folder's traces (the decisions) and the split file its runs read (the worlds and gold routes); a
folder without them (a report over records alone) gets no gallery and a line that says why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from drawing import Marker, decision_routes, map_svg
from evaluation.judge import SINGLE_MEMBER, member_label
from evaluation.metrics import run_violations
from evaluation.records import EXECUTE, RunRecord
from evaluation.runner import samples_file
from evaluation.store import read_sample, read_trace, run_key
from tools.contract import stable_hash
from tools.world import parse_world

GALLERY_DIR = "gallery"
PER_CATEGORY = 6
CATEGORIES: tuple[tuple[str, str, Callable[[RunRecord], bool]], ...] = (
    ("unsafe", "executes judged unsafe", lambda r: r.status == EXECUTE and bool(run_violations(r))),
    ("wrong place", "executes at a wrong place", lambda r: r.status == EXECUTE and r.right_place is False),
    ("relaxed", "executes that relax a stated constraint", lambda r: r.status == EXECUTE and r.stated_kept is False),
)


def _file_name(key: str) -> str:
    """A file name for a run key: readable, and with the key's hash so two keys never share one."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key) + f"-{stable_hash(key)[:8]}.svg"


def _tracks(decision: dict[str, Any]) -> dict[str | None, list[list[float]]]:
    """The flown waypoints by the judge's member label ("t1:uav_01"); a one-UAV decision's under None, and under the
    label the judge gives it on a fleet sample ("mission:uav_03")."""
    team = decision.get("team") if isinstance(decision.get("team"), list) else []
    members = {member_label(m.get("subtask_id"), m.get("uav_id")): m.get("waypoints") or [] for m in team}
    route = decision.get("waypoints") or []
    return {**members, None: route, member_label(SINGLE_MEMBER, decision.get("uav_id")): route}


def _markers(violations: list[dict[str, Any]], tracks: dict[str | None, list[list[float]]]) -> list[Marker]:
    """Each timed violation the judge found, at its route's position at that time (a team: its member's)."""
    markers = []
    for violation in violations:
        t = violation.get("time_sec")
        track = np.asarray(tracks.get(violation.get("member")) or [], dtype=float).reshape(-1, 4)
        if t is None or len(track) == 0:
            continue
        x, y, z = (float(np.interp(t, track[:, 3], track[:, axis])) for axis in range(3))
        markers.append(
            Marker(
                x=x,
                y=y,
                z=z,
                time_sec=float(t),
                rule=violation.get("rule"),
                entity=violation.get("entity"),
                label=str(violation.get("detail") or ""),
            )
        )
    return markers


def _draw(out_dir: Path, record: RunRecord, folder: Path) -> Path | None:
    key = run_key(record.method, record.model, record.sample_id, record.repeat, record.variant)
    trace = read_trace(out_dir, key)
    sample = read_sample(samples_file(out_dir), record.sample_id)
    if trace is None or sample is None:
        return None
    decision, gold = trace.get("decision") or {}, sample.get("gold_decision") or {}
    flown = decision_routes(decision, record.method, "solid")  # a team: each member's
    if not flown:
        return None
    routes = [*flown, *decision_routes(gold, "gold", "dashed")]
    violated = f" · violated {', '.join(record.judged_violations)}" if record.judged_violations else ""
    title = f"{record.sample_id} · {record.method} / {record.model}{violated}"
    path = folder / _file_name(key)
    markers = _markers((trace.get("judgement") or {}).get("violations") or [], _tracks(decision))
    path.write_text(map_svg(parse_world(sample["world"]), routes, markers, title=title), encoding="utf-8")
    return path


def gallery_section(records: Sequence[RunRecord], out_dir: Path) -> str:
    """The markdown of the gallery (written beside report.md, maps under gallery/)."""
    lines = ["\n## Worst cases\n\n"]
    if not (out_dir / "config.json").exists():
        return "".join([*lines, "_no gallery: this folder holds no bench run (no config.json)_\n"])
    folder = out_dir / GALLERY_DIR
    folder.mkdir(exist_ok=True)
    for name, title, wanted in CATEGORIES:
        cases = sorted((r for r in records if wanted(r)), key=lambda r: (r.method, r.model, r.sample_id, r.repeat))
        lines.append(f"### {title[0].upper()}{title[1:]} ({len(cases)})\n\n")
        if not cases:
            lines.append(f"_none ({name})_\n\n")
        for record in cases[:PER_CATEGORY]:
            drawn = _draw(out_dir, record, folder)
            caption = f"{record.sample_id}: {record.method} / {record.model}"
            lines.append(f"![{caption}]({GALLERY_DIR}/{drawn.name})\n\n" if drawn else f"- {caption} (no trace)\n")
        if len(cases) > PER_CATEGORY:
            lines.append(f"_and {len(cases) - PER_CATEGORY} more_\n\n")
    return "".join(lines)
