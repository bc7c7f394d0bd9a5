"""The 4D volumes of an operational intent (ASTM F3548-21): one per leg of the certified trajectory, each holding
the leg plus the simulator's worst-case deviation from it.

A leg from waypoint a (time ta) to b (tb) gets the rectangle round the segment a-b widened by the lateral buffer on
every side, the altitudes of a and b widened by the vertical buffer, and the time span [ta, tb + delay buffer]: the
simulated UAV is never ahead of its plan (it waits, holds and slows, never hurries), and where it flies the plan's
point of plan time s it is at most `lateral_m` sideways and `vertical_m` up or down from it, at most `delay_sec`
after s. So at every simulated second the UAV lies in the volume of the leg it is flying.

A certified trajectory runs from the ground to the ground (tools.trajectory.flight_phases): its first leg is the
vertical take-off climb, its last the landing descent, and their volumes reach down to the ground (lower bound
0 m AGL, never below it: the buffer does not dig into the ground), so the intent holds the whole flight.

A fleet mission's member (`member_volumes`, for its F3548 export and its ledger intent alike) has each leg cut into
time slices of at most MEMBER_SLICE_SEC, one volume each (`part` its slice of the leg): the team planner keeps its
members apart in time, not space, so a whole long leg held for the whole leg would overlap the member flying the same
corridor behind it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import shapely
from pydantic import BaseModel, Field
from shapely.geometry import LineString, Point, Polygon

from tools.catalog import default_registry
from tools.certificate import SafetyCertificate
from tools.trajectory import GROUND_M
from tools.world import World

MARGIN_M = 1.0  # on top of the worst simulated deviation: coordinate rounding and the WGS84 round trip
MARGIN_SEC = 1.0
# A fleet mission's member's slice of a leg, at most this long. The team planner separates members in time: a split
# load's members fly one corridor one behind the other, departing 40-50 s apart (ir/team_execution.py: 3x the minimum
# separation even with either running up to 20 s late). The member ahead holds a slice until the slice's end plus the
# delay buffer; the member behind, the gap later, holds the slice just before it (whose volume touches it) from the
# gap minus one slice after its start: the two share time unless the gap exceeds 2 x slice + delay buffer. The
# members' measured delay buffers are 13-15 s (examples/fleet_requests.jsonl): 2 x 10 + 15 = 35 s < 40 s, a stagger
# step (5 s) to spare; 15 s slices (45 s) overlap split-3's members 40 s apart. Shorter slices only add volumes.
MEMBER_SLICE_SEC = 10.0


class Buffers(BaseModel):
    lateral_m: float = Field(gt=0)
    vertical_m: float = Field(gt=0)
    delay_sec: float = Field(gt=0)
    basis: str = Field(description="where the buffers come from")


class LegVolume(BaseModel):
    """A volume in the world's frame: metres, AGL, seconds on the world's clock."""

    leg: int
    ring: list[tuple[float, float]]
    lower_m: float
    upper_m: float
    t_start: float
    t_end: float
    part: int | None = Field(
        default=None,
        exclude_if=lambda part: part is None,
        description="a fleet mission member's time slice of the leg (member_volumes); None: the whole leg",
    )

    @property
    def label(self) -> str:
        """Its leg, and its slice of that leg where it holds one: unique within an intent ("3", "3.1")."""
        return str(self.leg) if self.part is None else f"{self.leg}.{self.part}"


def simulated_buffers(world: World, certificate: SafetyCertificate) -> Buffers:
    """The worst deviation of the certificate's own stress scenarios (re-run: they are seeded), plus a margin."""
    registry = default_registry()
    worst = {"lateral_m": 0.0, "vertical_m": 0.0, "delay_sec": 0.0}
    flown = {"uav_id": certificate.trajectory.uav_id, "waypoints": certificate.trajectory.waypoints}
    for record in certificate.simulations:
        args = {**certificate.simulation_args, **flown, "seed": record.seed, "stress_level": record.stress_level}
        deviation = (registry.call("simulate_scenario", world, args).result or {}).get("deviation") or {}
        for key in worst:
            worst[key] = max(worst[key], float(deviation.get(key, 0.0)))
    scenarios = ", ".join(f"seed {r.seed} ({r.stress_level})" for r in certificate.simulations) or "none"
    return Buffers(
        lateral_m=round(worst["lateral_m"] + MARGIN_M, 3),
        vertical_m=round(worst["vertical_m"] + MARGIN_M, 3),
        delay_sec=round(worst["delay_sec"] + MARGIN_SEC, 3),
        basis=(
            f"worst deviation over the certified stress scenarios [{scenarios}]: {worst['lateral_m']:g} m sideways, "
            f"{worst['vertical_m']:g} m vertically, {worst['delay_sec']:g} s late; plus {MARGIN_M:g} m and "
            f"{MARGIN_SEC:g} s"
        ),
    )


def leg_volumes(waypoints: list[list[float]], buffers: Buffers) -> list[LegVolume]:
    """One volume per leg, held for the whole leg (a one-UAV intent)."""
    points = np.asarray(waypoints, dtype=float)
    return [_volume(leg, a, b, buffers) for leg, (a, b) in enumerate(zip(points[:-1], points[1:]))]


def member_volumes(waypoints: list[list[float]], buffers: Buffers) -> list[LegVolume]:
    """A fleet mission member's volumes: each leg cut into equal time slices of at most MEMBER_SLICE_SEC (the
    points between them on the leg, where the plan is at those times), one volume per slice; a leg no longer than
    that is one volume, as leg_volumes gives it. Fine enough to show the time separation the team planner built."""
    points = np.asarray(waypoints, dtype=float)
    volumes = []
    for leg, (a, b) in enumerate(zip(points[:-1], points[1:])):
        parts = max(1, math.ceil(float(b[3] - a[3]) / MEMBER_SLICE_SEC))
        if parts == 1:
            volumes.append(_volume(leg, a, b, buffers))
            continue
        cuts = [a + (b - a) * (k / parts) for k in range(parts)] + [b]
        volumes += [_volume(leg, p, q, buffers, part) for part, (p, q) in enumerate(zip(cuts[:-1], cuts[1:]))]
    return volumes


def _volume(leg: int, a: np.ndarray, b: np.ndarray, buffers: Buffers, part: int | None = None) -> LegVolume:
    """The volume of the stretch a-b: its rectangle, altitudes and time span widened by the buffers."""
    return LegVolume(
        leg=leg,
        ring=_leg_rectangle(a[:2], b[:2], buffers.lateral_m),
        lower_m=max(GROUND_M, min(a[2], b[2]) - buffers.vertical_m),
        upper_m=max(a[2], b[2]) + buffers.vertical_m,
        t_start=float(a[3]),
        t_end=float(b[3]) + buffers.delay_sec,
        part=part,
    )


def _leg_rectangle(a: np.ndarray, b: np.ndarray, half_width: float) -> list[tuple[float, float]]:
    """The segment a-b's rectangle, `half_width` beyond it on every side (an axis-aligned square for a hover)."""
    along = b - a
    length = float(np.hypot(*along))
    u = along / length if length > 0 else np.array([1.0, 0.0])
    n = np.array([-u[1], u[0]])
    corners = [a - u * half_width - n * half_width, b + u * half_width - n * half_width]
    corners += [b + u * half_width + n * half_width, a - u * half_width + n * half_width]
    return [(float(x), float(y)) for x, y in corners]


def uncovered_legs(volumes: list[LegVolume], waypoints: list[list[float]]) -> list[str]:
    """Each leg of the trajectory must lie in its volumes at every instant: laterally (shapely's exact covers), in
    altitude (a leg is linear, so its ends bound it) and in time. A leg held in time slices (member_volumes) is
    cut where each slice's volume starts, and each stretch checked against its own slice's volume. Returns what
    fails, empty when all hold."""
    failures = []
    points = np.asarray(waypoints, dtype=float)
    for leg, (a, b) in enumerate(zip(points[:-1], points[1:])):
        held = sorted((v for v in volumes if v.leg == leg), key=lambda v: v.part or 0)
        if not held:
            failures.append(f"leg {leg}: no volume")
            continue
        times = [float(a[3]), *(v.t_start for v in held[1:]), float(b[3])]
        if any(t1 < t0 for t0, t1 in zip(times[:-1], times[1:])):
            failures.append(f"leg {leg}: its slices' volumes do not follow one another within the leg's time")
            continue
        duration = float(b[3] - a[3])
        at = [a + (b - a) * ((t - a[3]) / duration if duration > 0 else 0.0) for t in times]
        at[0], at[-1] = a, b  # the leg's own ends, exactly
        for volume, p, q, t0, t1 in zip(held, at[:-1], at[1:], times[:-1], times[1:]):
            name = f"leg {leg}" if volume.part is None else f"leg {leg} (slice {volume.part})"
            path = LineString([p[:2], q[:2]]) if math.dist(p[:2], q[:2]) > 0 else Point(p[:2])
            if not Polygon(volume.ring).covers(path):
                failures.append(f"{name}: leaves its volume sideways")
            if not (volume.lower_m <= min(p[2], q[2]) and max(p[2], q[2]) <= volume.upper_m):
                failures.append(f"{name}: leaves its volume's altitudes")
            if not (volume.t_start <= t0 and t1 <= volume.t_end):
                failures.append(f"{name}: outside its volume's time span")
    return failures


def overlap_in_time(a: LegVolume, b: LegVolume) -> bool:
    return a.t_start < b.t_end and b.t_start < a.t_end


def overlapping(mine: Sequence[LegVolume], theirs: Sequence[LegVolume]) -> list[tuple[int, int]]:
    """Every (i, j) whose volumes mine[i] and theirs[j] share airspace at some instant: footprints that intersect
    (one index query for all), altitude ranges and time spans that overlap. The one 4D conflict test: the ledger's
    admission and a team's export both use it."""
    if not mine or not theirs:
        return []
    tree = shapely.STRtree([Polygon(v.ring) for v in theirs])
    new_index, old_index = tree.query([Polygon(v.ring) for v in mine], predicate="intersects")
    return [
        (i, j)
        for i, j in zip(new_index.tolist(), old_index.tolist())
        if mine[i].lower_m < theirs[j].upper_m
        and theirs[j].lower_m < mine[i].upper_m
        and overlap_in_time(mine[i], theirs[j])
    ]
