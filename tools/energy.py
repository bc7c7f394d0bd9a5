"""Energy use along a path: horizontal distance (payload and head wind aware) plus climbing."""

from __future__ import annotations

import numpy as np

from tools.world import UAV, World


def _head_wind(world: World, x: float, y: float, heading: np.ndarray) -> float:
    region = world.wind_at(x, y)
    if region is None or region.wind_speed_mps == 0:
        return 0.0
    angle = np.deg2rad(region.wind_dir_deg)
    wind = region.wind_speed_mps * np.array([np.cos(angle), np.sin(angle)])
    return max(0.0, -float(wind @ heading))  # wind blowing against the direction of travel


def segment_energies_wh(world: World, points: np.ndarray, payload_kg: float = 0.0) -> np.ndarray:
    """Energy (Wh) of each segment between consecutive rows of `points` (n, >=3); length n - 1."""
    model = world.energy
    if len(points) < 2:
        return np.zeros(0)
    deltas = np.diff(points[:, :3], axis=0)
    horizontal = np.linalg.norm(deltas[:, :2], axis=1)
    climb = np.clip(deltas[:, 2], 0.0, None)
    energies = np.empty(len(deltas))
    per_m = model.base_wh_per_m + model.payload_wh_per_m_per_kg * payload_kg
    for i, (dxy, dist) in enumerate(zip(deltas[:, :2], horizontal)):
        heading = dxy / dist if dist > 0 else np.zeros(2)
        mid = points[i, :2] + dxy / 2
        wind = _head_wind(world, float(mid[0]), float(mid[1]), heading)
        energies[i] = per_m * dist * (1.0 + model.headwind_factor_per_mps * wind)
    return (energies + model.climb_wh_per_m * climb) * model.conservative_factor


def battery_profile(world: World, uav: UAV, points: np.ndarray, payload_kg: float = 0.0) -> np.ndarray:
    """Battery ratio at each row of `points`, starting from the UAV's current charge."""
    used = np.concatenate([[0.0], np.cumsum(segment_energies_wh(world, points, payload_kg))])
    return uav.battery_ratio - used / uav.battery_capacity_wh


def path_energy_wh(world: World, points: np.ndarray, payload_kg: float = 0.0) -> float:
    return float(segment_energies_wh(world, points, payload_kg).sum())
