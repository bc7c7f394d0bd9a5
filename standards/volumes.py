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
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, Field
from shapely.geometry import LineString, Point, Polygon

from tools.catalog import default_registry
from tools.certificate import SafetyCertificate
from tools.trajectory import GROUND_M
from tools.world import World

MARGIN_M = 1.0  # on top of the worst simulated deviation: coordinate rounding and the WGS84 round trip
MARGIN_SEC = 1.0


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
    points = np.asarray(waypoints, dtype=float)
    volumes = []
    for leg, (a, b) in enumerate(zip(points[:-1], points[1:])):
        volumes.append(
            LegVolume(
                leg=leg,
                ring=_leg_rectangle(a[:2], b[:2], buffers.lateral_m),
                lower_m=max(GROUND_M, min(a[2], b[2]) - buffers.vertical_m),
                upper_m=max(a[2], b[2]) + buffers.vertical_m,
                t_start=float(a[3]),
                t_end=float(b[3]) + buffers.delay_sec,
            )
        )
    return volumes


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
    """Each leg of the trajectory must lie in its volume at every instant: laterally (shapely's exact covers), in
    altitude (a leg is linear, so its ends bound it) and in time. Returns what fails, empty when all hold."""
    failures = []
    points = np.asarray(waypoints, dtype=float)
    for leg, (a, b) in enumerate(zip(points[:-1], points[1:])):
        volume = next((v for v in volumes if v.leg == leg), None)
        if volume is None:
            failures.append(f"leg {leg}: no volume")
            continue
        path = LineString([a[:2], b[:2]]) if math.dist(a[:2], b[:2]) > 0 else Point(a[:2])
        if not Polygon(volume.ring).covers(path):
            failures.append(f"leg {leg}: leaves its volume sideways")
        if not (volume.lower_m <= min(a[2], b[2]) and max(a[2], b[2]) <= volume.upper_m):
            failures.append(f"leg {leg}: leaves its volume's altitudes")
        if not (volume.t_start <= a[3] and b[3] <= volume.t_end):
            failures.append(f"leg {leg}: outside its volume's time span")
    return failures
