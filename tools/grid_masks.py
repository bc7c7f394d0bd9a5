"""Rasterise the world onto its planning grid: a boolean occupancy array (nx, ny, nz), True = blocked.

Every obstacle is a keep-out volume (a 2D shape, a lateral margin and an altitude band). A cell is blocked when
its *cell neighbourhood* touches a keep-out volume: horizontally, the cell centre lies within
`margin + half the cell diagonal` of the shape; vertically, the layer's slab [z - h/2, z + h/2] overlaps the band.
That inflation is what makes straight flight between two free neighbouring cells safe: every point of such a
segment is within half a cell diagonal (horizontally) and half a layer (vertically) of one of its two free end
cells, so the whole segment stays outside every keep-out volume, not only its end points.

Keep-out volumes:
- buildings: footprint + min_separation_m laterally, from the ground to height + min_separation_m;
- no-fly zones named for avoidance: polygon within its altitude band, if active at any time of the time window;
- sensitive zones named for avoidance: polygon + its buffer, at all altitudes;
- corridors named for avoidance (the route tool names the congested ones): corridor area within its band.
Layers outside [altitude_min_m, altitude_max_m] are blocked as well.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TypeVar

import numpy as np
import shapely
from shapely.geometry.base import BaseGeometry

from tools.rules import DEFAULT_ALTITUDE_MAX_M, DEFAULT_ALTITUDE_MIN_M, DEFAULT_MIN_SEPARATION_M
from tools.world import Grid, SensitiveZone, World

Cell = tuple[int, int, int]

T = TypeVar("T")
_OCCUPANCY_CACHE: dict[Hashable, Occupancy] = {}


@dataclass(frozen=True)
class MaskSpec:
    """What to keep out of; hashable so that occupancy grids can be cached per (world version, spec)."""

    avoid_zones: tuple[str, ...] = ()
    avoid_corridors: tuple[str, ...] = ()
    altitude_min_m: float = DEFAULT_ALTITUDE_MIN_M
    altitude_max_m: float = DEFAULT_ALTITUDE_MAX_M
    min_separation_m: float = DEFAULT_MIN_SEPARATION_M
    time_window: tuple[float, float] = (0.0, math.inf)
    reservation_horizon_sec: float = 1800.0  # how long the flight may be in the air: the route tool narrows it


@dataclass(frozen=True)
class KeepOut:
    id: str
    kind: str  # building | no_fly_zone | sensitive_zone | corridor | reservation
    shape: BaseGeometry
    margin_m: float
    alt_min_m: float
    alt_max_m: float


@dataclass(frozen=True)
class Occupancy:
    world_version: str
    grid: Grid
    spec: MaskSpec
    keep_outs: tuple[KeepOut, ...]
    blocked: np.ndarray = field(repr=False, compare=False)  # (nx, ny, nz) bool, read-only

    def blockers(self, cell: Cell) -> list[str]:
        """Why a cell is blocked: the ids of the keep-out volumes it touches, or 'altitude_band'."""
        layer = cell[2]
        reasons = [] if allowed_layers(self.grid, self.spec)[layer] else ["altitude_band"]
        x, y, _ = cell_centres(self.grid, np.array([cell]))[0]
        centre = shapely.points(x, y)
        for keep_out in self.keep_outs:
            near = shapely.dwithin(keep_out.shape, centre, keep_out.margin_m + _half_diagonal(self.grid))
            if near and _layer_overlaps(self.grid, keep_out)[layer]:
                reasons.append(keep_out.id)
        return reasons


def cell_of(grid: Grid, x: float, y: float) -> tuple[int, int]:
    """The (i, j) column containing (x, y); points on the far map edge belong to the last column."""
    i = min(max(int(math.floor(x / grid.cell_size_m)), 0), grid.nx - 1)
    j = min(max(int(math.floor(y / grid.cell_size_m)), 0), grid.ny - 1)
    return i, j


def layer_altitudes(grid: Grid) -> np.ndarray:
    return grid.layer_base_m + grid.layer_height_m * np.arange(grid.nz)


def cell_centres(grid: Grid, cells: np.ndarray) -> np.ndarray:
    """Metric (x, y, z) of each row (i, j, k) of `cells`."""
    cells = np.asarray(cells).reshape(-1, 3)
    xy = (cells[:, :2] + 0.5) * grid.cell_size_m
    return np.column_stack([xy, layer_altitudes(grid)[cells[:, 2]]])


def allowed_layers(grid: Grid, spec: MaskSpec) -> np.ndarray:
    altitudes = layer_altitudes(grid)
    return (altitudes >= spec.altitude_min_m) & (altitudes <= spec.altitude_max_m)


RESERVATION_LOOKAHEAD_SEC = 1800.0


def keep_outs(world: World, spec: MaskSpec) -> list[KeepOut]:
    """The keep-out volumes for `spec`; unknown zone or corridor ids raise KeyError (callers validate first)."""
    sep = spec.min_separation_m
    volumes = [KeepOut(b.id, "building", b.shape, sep, -math.inf, b.height_m + sep) for b in world.buildings]
    t0, t1 = spec.time_window
    for zone_id in spec.avoid_zones:
        zone = world.zone_index[zone_id]
        if isinstance(zone, SensitiveZone):
            volumes.append(KeepOut(zone.id, "sensitive_zone", zone.shape, zone.buffer_m, -math.inf, math.inf))
        elif zone.active_during(t0, t1):
            volumes.append(KeepOut(zone.id, "no_fly_zone", zone.shape, 0.0, zone.alt_min_m, zone.alt_max_m))
    # Approved intents' volumes are kept out of whether or not the IR names them: they are other flights. Only
    # those held while this flight may still be in the air (the route tool's bound on its duration, at most
    # RESERVATION_LOOKAHEAD_SEC): masking one that opens after the flight has landed refuses a route that conflicts
    # with nothing. The verifier judges the route against every reservation exactly anyway.
    lookahead = min(t1, t0 + min(spec.reservation_horizon_sec, RESERVATION_LOOKAHEAD_SEC))
    for reservation in world.reservations:
        if reservation.active_during(t0, lookahead):
            volumes.append(
                KeepOut(
                    reservation.id, "reservation", reservation.shape, 0.0, reservation.alt_min_m, reservation.alt_max_m
                )
            )
    for corridor_id in spec.avoid_corridors:
        corridor = world.corridor_index[corridor_id]
        volumes.append(KeepOut(corridor.id, "corridor", corridor.shape, 0.0, corridor.alt_min_m, corridor.alt_max_m))
    return volumes


def rasterise(grid: Grid, volumes: list[KeepOut]) -> np.ndarray:
    """(nx, ny, nz) bool: cells whose neighbourhood touches one of `volumes` (altitude band not applied)."""
    blocked = np.zeros((grid.nx * grid.ny, grid.nz), dtype=bool)
    if volumes:
        shapes = [v.shape for v in volumes]
        reach = np.array([v.margin_m for v in volumes]) + _half_diagonal(grid)
        volume_idx, column_idx = _centre_tree(grid).query(shapes, predicate="dwithin", distance=reach)
        layers = np.array([_layer_overlaps(grid, v) for v in volumes])
        np.logical_or.at(blocked, column_idx, layers[volume_idx])
    return blocked.reshape(grid.nx, grid.ny, grid.nz)


def build_occupancy(world: World, spec: MaskSpec = MaskSpec()) -> Occupancy:
    """Occupancy of `world` under `spec`, cached per (world.version, spec); the array is read-only."""

    def make() -> Occupancy:
        volumes = tuple(keep_outs(world, spec))
        blocked = rasterise(world.grid, list(volumes)) | ~allowed_layers(world.grid, spec)[None, None, :]
        blocked.flags.writeable = False
        return Occupancy(world.version, world.grid, spec, volumes, blocked)

    return cached(_OCCUPANCY_CACHE, (world.version, spec), make)


def cached(cache: dict[Hashable, T], key: Hashable, make: Callable[[], T], size: int = 32) -> T:
    """`cache[key]`, made on a miss; the oldest entry goes once the cache holds `size` (dicts keep order)."""
    if key not in cache:
        if len(cache) >= size:
            cache.pop(next(iter(cache)))
        cache[key] = make()
    return cache[key]


def _half_diagonal(grid: Grid) -> float:
    return grid.cell_size_m * math.sqrt(2.0) / 2.0


def _layer_overlaps(grid: Grid, volume: KeepOut) -> np.ndarray:
    """(nz,) bool: layers whose slab [z - h/2, z + h/2] overlaps the volume's altitude band."""
    altitudes = layer_altitudes(grid)
    half = grid.layer_height_m / 2.0
    return (altitudes - half <= volume.alt_max_m) & (altitudes + half >= volume.alt_min_m)


@lru_cache(maxsize=16)
def _centre_tree(grid: Grid) -> shapely.STRtree:
    """STRtree over the cell-centre points, indexed i * ny + j (the row-major column order of the masks)."""
    i, j = np.meshgrid(np.arange(grid.nx), np.arange(grid.ny), indexing="ij")
    return shapely.STRtree(shapely.points((i.ravel() + 0.5) * grid.cell_size_m, (j.ravel() + 0.5) * grid.cell_size_m))
