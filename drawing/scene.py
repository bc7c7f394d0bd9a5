"""What a drawing shows, whatever draws it: the routes and counterexample markers, their colours and their labels."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from shapely.geometry import LineString

from tools.world import NoFlyZone, World

# Okabe-Ito colours (told apart with colour-blind vision too), then brown; red is left to no-fly zones.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000", "#8c564b")
NFZ_RED = "#d62728"
SENSITIVE_ORANGE = "#ff7f0e"
CORRIDOR_BLUE = "#9ecae1"
TRAFFIC_GREY = "#7f7f7f"
VIOLATION_RED = "#b00020"

Waypoint = Annotated[list[float], Field(min_length=4, max_length=4, description="x, y, z, t")]
SegmentRow = Annotated[list[float], Field(min_length=2, max_length=4, description="x, y or x, y, z, t")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Route(_Model):
    """One flown or planned route: [x, y, z, t] waypoints in metres and seconds, in the world frame."""

    label: str
    waypoints: list[Waypoint] = Field(default_factory=list)
    uav_id: str | None = None
    style: Literal["solid", "dashed"] = "solid"

    @property
    def legend(self) -> str:
        return f"{self.label} ({self.uav_id})" if self.uav_id else self.label


def decision_routes(decision: Mapping[str, Any], label: str, style: Literal["solid", "dashed"]) -> list[Route]:
    """A decision's routes as drawn: its own route, or each member's of a team (`decision.team`), labelled by
    sub-task and role: "<label> t1 deliver"."""
    team = decision.get("team")
    if isinstance(team, list):
        return [
            Route(
                label=f"{label} {m.get('subtask_id')} {m.get('role')}",
                waypoints=m["waypoints"],
                uav_id=m.get("uav_id"),
                style=style,
            )
            for m in team
            if isinstance(m, Mapping) and m.get("waypoints")
        ]
    if not decision.get("waypoints"):
        return []
    return [Route(label=label, waypoints=decision["waypoints"], uav_id=decision.get("uav_id"), style=style)]


class Marker(_Model):
    """A counterexample (a violated rule) to point at on the map and in the altitude profile."""

    x: float
    y: float
    z: float | None = None
    time_sec: float | None = None
    rule: str | None = Field(default=None, description="e.g. 'R1'")
    robustness: float | None = Field(default=None, description="metres, negative = violated")
    entity: str | None = Field(default=None, description="id of the zone, building, place or track involved")
    segment: list[SegmentRow] = Field(default_factory=list, description="offending waypoints to highlight")
    label: str = ""

    @property
    def text(self) -> str:
        """One line for the map and the tooltip, e.g. 'R1 robustness -12.3 m at t=245 s, nfz_temp_1'."""
        head = " ".join(
            part
            for part in (
                self.rule,
                None if self.robustness is None else f"robustness {num(self.robustness)} m",
                None if self.time_sec is None else f"at t={num(self.time_sec)} s",
            )
            if part
        )
        return ", ".join(part for part in (head, self.entity, self.label) if part) or "violation"


def route_colour(index: int) -> str:
    """The colour of the index-th route of a drawing; the same index always gets the same colour."""
    return PALETTE[index % len(PALETTE)]


def num(value: float, decimals: int = 1) -> str:
    """A number rounded for display and for SVG coordinates: '12.3', '245' (no '.0', no '-0')."""
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def nice_floor(value: float) -> float:
    """The largest 1, 2 or 5 times a power of ten not above `value` (scale bars, axis tick steps)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return max(step * power for step in (1.0, 2.0, 5.0) if step * power <= value * (1 + 1e-9))


def building_grey(height_m: float, tallest_m: float) -> str:
    """Fill of a building: light grey when low, dark when as tall as the tallest one."""
    level = round(225 - 150 * min(1.0, height_m / tallest_m)) if tallest_m > 0 else 225
    return f"#{level:02x}{level:02x}{level:02x}"


def nfz_label(zone: NoFlyZone) -> str:
    """The zone id with its active window, e.g. 'nfz_temp_1 (t 0–900 s)'."""
    window = zone.active_window
    return zone.id if window is None else f"{zone.id} (t {num(window.start_sec)}–{num(window.end_sec)} s)"


def heading(title: str, time_sec: float | None) -> str:
    """The line over a map: its title and the time it shows, e.g. 'round 2 · t = 300 s'."""
    return " · ".join(part for part in (title, None if time_sec is None else f"t = {num(time_sec)} s") if part)


def position_at(waypoints: Sequence[Sequence[float]], time_sec: float) -> tuple[float, float, float] | None:
    """Where [x, y, z, t] waypoints are at `time_sec`, linearly interpolated; None outside their time span."""
    times = [w[3] for w in waypoints]
    if not times or not times[0] <= time_sec <= times[-1]:
        return None
    x, y, z = (float(np.interp(time_sec, times, [w[c] for w in waypoints])) for c in range(3))
    return x, y, z


def _halfway(rows: Sequence[Sequence[float]]) -> list[float]:
    """The point half-way along rows' horizontal path, with every column (z, t too) interpolated."""
    columns = min(len(row) for row in rows)
    points = np.asarray([row[:columns] for row in rows], dtype=float)
    steps = np.hypot(*np.diff(points[:, :2], axis=0).T) if len(points) > 1 else np.zeros(0)
    travelled = np.concatenate([[0.0], np.cumsum(steps)])
    if travelled[-1] == 0:
        return points[0].tolist()
    return [float(np.interp(travelled[-1] / 2, travelled, points[:, c])) for c in range(columns)]


def _entity_point(world: World, ref: str, time_sec: float | None) -> tuple[float, float, float | None] | None:
    """Where a world element is: a place's or UAV's position, a zone's or building's centroid, a corridor's middle,
    a traffic track's position at `time_sec` (else its middle); None for an unknown id."""
    if ref in world.entity_index or ref in world.uav_index:
        x, y = world.position_of(ref)
        return x, y, None
    area = world.zone_index.get(ref) or next((b for b in world.buildings if b.id == ref), None)
    if area is not None:
        return area.shape.centroid.x, area.shape.centroid.y, None
    if ref in world.corridor_index:
        middle = LineString(world.corridor_index[ref].polyline).interpolate(0.5, normalized=True)
        return middle.x, middle.y, None
    track = next((t for t in world.traffic if t.id == ref), None)
    if track is None:
        return None
    at = position_at(track.waypoints, time_sec) if time_sec is not None else None
    x, y, z, _ = _halfway(track.waypoints) if at is None else (*at, None)
    return x, y, z


def marker_from_counterexample(cx: Mapping[str, Any], world: World) -> Marker | None:
    """A marker for a verifier counterexample: on its offending segment at the violation's time (the segment's middle
    when the time is not known), else at the offending entity; None when neither places it. Keys read: violated_rule, time_sec, robustness,
    offending_segment ([x, y, z, t] or [x, y] rows), offending_entity."""
    rows = [[float(v) for v in row[:4]] for row in cx.get("offending_segment") or [] if len(row) >= 2]
    entity = cx.get("offending_entity") or None
    time_sec = cx.get("time_sec")
    robustness = cx.get("robustness")
    track = np.asarray(rows, dtype=float) if len(rows) > 1 and all(len(row) >= 4 for row in rows) else None
    if track is not None and time_sec is not None and track[0, 3] <= float(time_sec) <= track[-1, 3]:
        # where the route was at the violation's time (the verifier's segment brackets that instant)
        x, y, z = (float(np.interp(float(time_sec), track[:, 3], track[:, axis])) for axis in range(3))
    elif rows:
        middle = _halfway(rows)
        x, y = middle[0], middle[1]
        z = middle[2] if len(middle) > 2 else None
        if time_sec is None and len(middle) > 3:
            time_sec = middle[3]
    else:
        found = _entity_point(world, entity, time_sec) if entity else None
        if found is None:
            return None
        x, y, z = found
    return Marker(
        x=x,
        y=y,
        z=z,
        time_sec=None if time_sec is None else float(time_sec),
        rule=cx.get("violated_rule") or None,
        robustness=None if robustness is None else float(robustness),
        entity=entity,
        segment=rows,
    )
