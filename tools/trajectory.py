"""4D trajectories: waypoints (x, y, z, t) in metres and seconds, and their 1 Hz resampling."""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, Field

from tools.world import TimedWaypoints


class Trajectory(BaseModel):
    """Any JSON object with a `waypoints` list of [x, y, z, t] (so a plan_route output is accepted as is)."""

    waypoints: TimedWaypoints = Field(min_length=1)
    uav_id: str | None = None

    @property
    def duration_sec(self) -> float:
        return self.waypoints[-1][3] - self.waypoints[0][3]

    def array(self) -> np.ndarray:
        return np.asarray(self.waypoints, dtype=float).reshape(-1, 4)

    def sample(self, dt: float = 1.0) -> np.ndarray:
        """Positions at t0, t0 + dt, ... up to and including the last waypoint: an (n, 4) array."""
        return resample(self.array(), dt)


def resample(waypoints: np.ndarray, dt: float = 1.0) -> np.ndarray:
    t = waypoints[:, 3]
    t0, t1 = float(t[0]), float(t[-1])
    steps = int(math.floor((t1 - t0) / dt + 1e-9))
    times = t0 + dt * np.arange(steps + 1)
    if times[-1] < t1 - 1e-9:
        times = np.append(times, t1)
    return np.column_stack([positions(waypoints, times), times])


def interpolation_knots(waypoints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(times, xyz) of a 4D track with strictly increasing times, as np.interp needs them: a hover (repeated t)
    keeps its last position."""
    t = waypoints[:, 3]
    keep = np.append(np.diff(t) > 0, True)
    return t[keep], waypoints[keep, :3]


def positions(waypoints: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(n, 3) interpolated x, y, z of a 4D track at `times` (held at its ends outside them)."""
    t, xyz = interpolation_knots(waypoints)
    return np.column_stack([np.interp(times, t, xyz[:, i]) for i in range(3)])


def path_length(points: np.ndarray) -> float:
    return float(np.linalg.norm(np.diff(points[:, :3], axis=0), axis=1).sum()) if len(points) > 1 else 0.0


# The whole flight runs from the ground to the ground: a route starts with the vertical take-off over its first
# point, from the surface the UAV stands on there (the ground, 0 m AGL, or the roof of the building a rooftop pad is
# on), and ends with the vertical landing over its last. PX4's default automatic vertical speeds
# (MPC_Z_V_AUTO_UP, MPC_Z_V_AUTO_DN): a plan that assumes them is one a stock autopilot flies on time.
GROUND_M = 0.0
TAKEOFF_CLIMB_MPS = 3.0
LANDING_DESCENT_MPS = 1.5
_SAME_XY_M = 1e-6


class FlightPhases(BaseModel):
    """Where a track's take-off climb ends and its landing descent begins (waypoint indices and times). The
    altitude band (R3's floor) applies en route, between the two; a track that starts or ends in the air (an
    older plan, another operator's traffic) has no such leg: its index is its first / last waypoint."""

    takeoff_end: int = Field(description="index of the waypoint at the top of the take-off climb (0: none)")
    landing_start: int = Field(description="index of the waypoint at the top of the landing descent (last: none)")
    takeoff_end_sec: float
    landing_start_sec: float

    @property
    def has_takeoff(self) -> bool:
        return self.takeoff_end > 0

    def has_landing(self, count: int) -> bool:
        return self.landing_start < count - 1

    @property
    def en_route(self) -> slice:
        """The waypoints from the top of the climb to the start of the descent, as a slice of the track."""
        return slice(self.takeoff_end, self.landing_start + 1)


def vertical_legs_sec(cruise_m: float, surface_m: float = GROUND_M) -> float:
    """The take-off climb from `surface_m` to `cruise_m` and the landing descent back, in seconds."""
    height = max(cruise_m - surface_m, 0.0)
    return height / TAKEOFF_CLIMB_MPS + height / LANDING_DESCENT_MPS


def _vertical(low: np.ndarray, high: np.ndarray) -> bool:
    """A straight climb from `low` to `high` (or a descent from `high` to `low`) over one point."""
    return high[2] > low[2] and float(np.hypot(*(high[:2] - low[:2]))) <= _SAME_XY_M


def flight_phases(waypoints: np.ndarray | list[list[float]]) -> FlightPhases:
    """A track takes off when its first move is straight up, and lands when its last is straight down."""
    points = np.asarray(waypoints, dtype=float).reshape(-1, 4)
    last = len(points) - 1
    takeoff = 1 if last >= 1 and _vertical(points[0], points[1]) else 0
    landing = last - 1 if last - 1 >= takeoff and _vertical(points[last], points[last - 1]) else last
    return FlightPhases(
        takeoff_end=takeoff,
        landing_start=landing,
        takeoff_end_sec=float(points[takeoff, 3]),
        landing_start_sec=float(points[landing, 3]),
    )


def ground_to_ground(
    points: np.ndarray, depart_time_sec: float, start_surface_m: float = GROUND_M, end_surface_m: float = GROUND_M
) -> np.ndarray:
    """(n, 4) cruise points, timed from the top of the climb (0 there) -> (n + 2, 4) track: the take-off climb
    from the surface under the first point (the ground, or a rooftop pad's roof), the cruise, and the landing
    descent to the surface under the last."""
    first, last = points[0], points[-1]
    climb = max(first[2] - start_surface_m, 0.0) / TAKEOFF_CLIMB_MPS
    descent = max(last[2] - end_surface_m, 0.0) / LANDING_DESCENT_MPS
    cruise = points.copy()
    cruise[:, 3] += depart_time_sec + climb
    takeoff = np.array([[first[0], first[1], start_surface_m, depart_time_sec]])
    landing = np.array([[last[0], last[1], end_surface_m, cruise[-1, 3] + descent]])
    return np.concatenate([takeoff, cruise, landing])
