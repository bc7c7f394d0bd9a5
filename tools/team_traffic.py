"""A fleet mission's members as one another's known traffic (issue 42).

Every member of a team is planned, verified, simulated and certified with the other members' trajectories added to
the world's traffic, so the one rule that separates a UAV from known traffic (R2 in the verifier, the simulator's
separation events) separates the members too: no second separation check exists for teams.

A member is traffic for its whole time in the world, not only while it flies: on the ground at its start position
from t = 0 until it departs, then its flight, then on the ground at its landing point until long after the mission
(`member_track`). Two aircraft that are both on the ground are not a conflict (tools/signals.traffic_separation);
one in the air near a parked member is. Members that land at the same site, or next to a parked member, land at
distinct spots within the arrival tolerance (`landing_slot`, `move_landing`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import shapely

from tools.rules import NEAR_MISS_FACTOR
from tools.world import TrafficTrack, World

PARKED_AFTER_SEC = 86_400.0  # a landed member stays parked this long past its touchdown (far past any mission)
# Landing slots keep at least this x the minimum separation from every parked member: past the simulator's near miss
# (a near miss fails the plan, and a parked member stays where it is whatever the landing one's timing), with room for
# the stress run's drift on the way down.
SLOT_SEPARATION_FACTOR = NEAR_MISS_FACTOR + 0.3
SLOT_PREFERRED_FACTOR = 2.0  # and this much where the tolerance allows
SLOT_DIRECTIONS = 12
SLOT_RADIUS_STEP_M = 1.0
SLOT_EDGE_M = 1.0  # slots stay this far inside the arrival tolerance


def member_track_id(subtask_id: str, uav_id: str | None) -> str:
    """A member's track id: unique in the world (no fleet, entity or zone id holds a colon), and naming the member
    in a counterexample (`deliver_east:uav_05`)."""
    return f"{subtask_id}:{uav_id}"


def parked_waypoints(waypoints: Sequence[Sequence[float]]) -> list[list[float]]:
    """The flight's waypoints with the member's time on the ground around them: at its first point from t = 0 (when
    it departs later) and at its last point until PARKED_AFTER_SEC after touchdown."""
    points = [[float(v) for v in wp] for wp in waypoints]
    if not points:
        return points
    first, last = points[0], points[-1]
    before = [[first[0], first[1], first[2], 0.0]] if first[3] > 0.0 else []
    after = [[last[0], last[1], last[2], last[3] + PARKED_AFTER_SEC]]
    return [*before, *points, *after]


def flight_track(subtask_id: str, uav_id: str | None, waypoints: list[list[float]]) -> TrafficTrack:
    """The member's flight alone, departure to touchdown (what the staggering times the members by)."""
    return TrafficTrack(id=member_track_id(subtask_id, uav_id), waypoints=waypoints)


def member_track(subtask_id: str, uav_id: str | None, waypoints: list[list[float]]) -> TrafficTrack:
    """The member as the others see it: parked at its start, its flight, parked where it landed (the one track every
    gate, the staggering's parked check and check_certificate use)."""
    return TrafficTrack(id=member_track_id(subtask_id, uav_id), waypoints=parked_waypoints(waypoints))


def with_members_as_traffic(world: World, tracks: Iterable[TrafficTrack]) -> World:
    """The world with `tracks` added to its known traffic (the world itself when there are none)."""
    added = list(tracks)
    return world.updated(traffic=[*world.traffic, *added]) if added else world


def slot_clear_m(min_separation_m: float) -> float:
    return SLOT_SEPARATION_FACTOR * min_separation_m


def slot_preferred_m(min_separation_m: float) -> float:
    return SLOT_PREFERRED_FACTOR * min_separation_m


def too_close(xy: Sequence[float], parked: Iterable[Sequence[float]], clear_m: float) -> bool:
    return any(math.hypot(xy[0] - p[0], xy[1] - p[1]) < clear_m for p in parked)


def slot_candidates(
    world: World, site_xy: Sequence[float], *, at_sec: tuple[float, float] = (0.0, math.inf)
) -> list[tuple[float, float]]:
    """The landing spots of a site, nearest its centre first: the centre, then rings SLOT_RADIUS_STEP_M apart
    (SLOT_DIRECTIONS each) up to the arrival tolerance less SLOT_EDGE_M, each on the same surface as the site, inside
    the grid and outside every no-fly zone active during `at_sec`."""
    cx, cy = float(site_xy[0]), float(site_xy[1])
    surface = world.surface_height_m((cx, cy))
    zones = world.active_no_fly_zones(*at_sec)
    reach = world.arrival_tolerance_m - SLOT_EDGE_M
    points = [(cx, cy)]
    for k in range(1, int(math.floor(reach / SLOT_RADIUS_STEP_M + 1e-9)) + 1):
        radius = k * SLOT_RADIUS_STEP_M
        for j in range(SLOT_DIRECTIONS):
            angle = 2.0 * math.pi * j / SLOT_DIRECTIONS
            points.append((round(cx + radius * math.cos(angle), 3), round(cy + radius * math.sin(angle), 3)))
    return [
        (x, y)
        for x, y in points
        if world.grid.contains_xy(x, y)
        and abs(world.surface_height_m((x, y)) - surface) <= 1e-9
        and not any(shapely.covers(zone.shape, shapely.Point(x, y)) for zone in zones)
    ]


def _placed(
    candidates: list[tuple[float, float]], parked: list[Sequence[float]], clear_m: float, later: int
) -> tuple[float, float] | None:
    """The candidate nearest the centre clear of `parked` that leaves room for `later` more landings there (each
    placed the same way in turn)."""
    for slot in candidates:
        if too_close(slot, parked, clear_m):
            continue
        if later == 0 or _placed(candidates, [*parked, slot], clear_m, later - 1) is not None:
            return slot
    return None


def landing_slot(
    world: World,
    site_xy: Sequence[float],
    parked: Sequence[Sequence[float]],
    clear_m: float,
    *,
    preferred_m: float | None = None,
    later: int = 0,
    at_sec: tuple[float, float] = (0.0, math.inf),
) -> tuple[float, float] | None:
    """The landing spot nearest the site's centre (slot_candidates) at least `clear_m` horizontally from every
    `parked` (x, y), and from the spots of `later` members still to land there; `preferred_m` clear where the
    tolerance allows one (then `clear_m`). None when no spot is."""
    candidates = slot_candidates(world, site_xy, at_sec=at_sec)
    for need in dict.fromkeys(n for n in (preferred_m, clear_m) if n is not None and n >= clear_m):
        slot = _placed(candidates, list(parked), need, later)
        if slot is not None:
            return slot
    return None


def final_descent_index(waypoints: Sequence[Sequence[float]]) -> int:
    """The index of the top of the final descent: the first of the trailing waypoints over the landing point."""
    last = waypoints[-1]
    k = len(waypoints) - 1
    while k > 0 and math.hypot(waypoints[k - 1][0] - last[0], waypoints[k - 1][1] - last[1]) < 1e-6:
        k -= 1
    return k


def move_landing(waypoints: Sequence[Sequence[float]], slot: Sequence[float], speed_mps: float) -> list[list[float]]:
    """The route landing at `slot` instead: a level move at the descent's altitude from the top of the final
    descent to over the slot (at `speed_mps`), then the same descent there, every later time shifted by the move."""
    points = [[float(v) for v in wp] for wp in waypoints]
    k = final_descent_index(points)
    top = points[k]
    distance = math.hypot(slot[0] - top[0], slot[1] - top[1])
    if distance < 1e-9:
        return points
    shift = round(distance / max(speed_mps, 1e-6), 3)
    moved = [[float(slot[0]), float(slot[1]), wp[2], round(wp[3] + shift, 3)] for wp in points[k:]]
    return [*points[: k + 1], *moved]
