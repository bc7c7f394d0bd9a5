"""The tests' own geometry for fleet missions: how close two members come over the whole mission, by interpolating
their tracks on a fine grid (not the verifier's or the judge's code)."""

from __future__ import annotations

import numpy as np

from tools.world import World

GRID_STEP_SEC = 0.05


def in_the_world(track: np.ndarray) -> np.ndarray:
    """The track with the member's time on the ground: at its start from t = 0, at its landing point for a day."""
    first, last = track[0], track[-1]
    return np.vstack([[*first[:3], 0.0], track, [*last[:3], last[3] + 86_400.0]])


def closest_approach_in_the_world(first: list[list[float]], second: list[list[float]], world: World) -> float:
    """The least 3D distance between two members over the mission, each parked at its start before it departs and
    at its landing point after it lands, at every moment at least one of the two is in the air (two parked UAVs are
    no conflict); each track interpolated on one fine common time grid."""
    a, b = in_the_world(np.asarray(first, dtype=float)), in_the_world(np.asarray(second, dtype=float))
    end = max(a[-2, 3], b[-2, 3]) + 1.0
    times = np.append(np.arange(0.0, end, GRID_STEP_SEC), end)

    def at(track: np.ndarray) -> np.ndarray:
        return np.column_stack([np.interp(times, track[:, 3], track[:, axis]) for axis in range(3)])

    pa, pb = at(a), at(b)

    def grounded(points: np.ndarray) -> np.ndarray:
        return np.array([z <= world.surface_height_m((x, y)) + 0.05 for x, y, z in points])

    airborne = ~(grounded(pa) & grounded(pb))
    if not airborne.any():
        return float("inf")
    return float(np.linalg.norm(pa - pb, axis=1)[airborne].min())
