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
