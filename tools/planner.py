"""3D A* on the occupancy grid: 26-neighbourhood, Euclidean step costs in metres, Euclidean heuristic.

The search is A* with a *bucketed* open list, vectorised with numpy: each round expands, at once, every open cell
whose f = g + h lies within `bucket_m` of the smallest open f, and relaxes all their 26 neighbours in a handful of
array operations. A cell whose g later improves is simply re-opened (label-correcting), and the search stops once
the goal's g is no larger than the smallest open f. With an admissible heuristic that test proves the goal's g is
optimal: a cheaper path would still have an open cell on it whose f is at most that path's cost. So the path cost
equals that of a textbook one-cell-at-a-time A*; only the order of expansions differs. This trades a few
redundant expansions for doing the per-cell work in C instead of the Python interpreter: that is where the speed
comes from (see evaluation/perf/planner_vs_networkx.py).

Cells are flat indices into the grid padded by one blocked cell on every side, so neighbour indices are
`index + offset` with no bounds checks.

A route runs from the ground to the ground: the search starts and ends above the first and last stops' (x, y), on
the lowest layer inside the altitude band that building clearance leaves free (see `endpoint_cell`), and the plan
adds the vertical take-off climb from the surface under the first stop and the landing descent to the surface
under the last (the ground, or a rooftop pad's roof: tools/trajectory.ground_to_ground), so the verifier and the simulator judge them like any other leg.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from tools.energy import path_energy_wh
from tools.grid_masks import Cell, Occupancy, allowed_layers, cached, cell_centres, cell_of, layer_altitudes
from tools.trajectory import LANDING_DESCENT_MPS, TAKEOFF_CLIMB_MPS, ground_to_ground, path_length
from tools.world import XY, Grid, World

DEFAULT_BUCKET_CELLS = 1.0  # bucket width in horizontal cell sizes; tuned on the perf benchmark
DEFAULT_SPEED_MPS = 10.0


@dataclass(frozen=True)
class GridPath:
    cells: np.ndarray  # (n, 3) int: (i, j, k) from start to goal
    cost_m: float
    expanded: int  # cell expansions, re-expansions included


class GridGraph:
    """The free cells of an occupancy array as a 26-connected graph with metric edge costs."""

    def __init__(self, blocked: np.ndarray, cell_size_m: float, layer_height_m: float):
        self.shape = tuple(int(n) for n in blocked.shape)
        self.cell_size_m, self.layer_height_m = float(cell_size_m), float(layer_height_m)
        nx, ny, nz = self.shape
        # Layers outermost, so that the longest axis (j) is innermost: broadcasts over it run long inner loops.
        self._padded_shape = (nz + 2, nx + 2, ny + 2)
        self._strides = np.array([ny + 2, 1, (nx + 2) * (ny + 2)])  # flat index = (cell + 1) @ strides
        free = np.zeros(self._padded_shape, dtype=bool)
        free[1:-1, 1:-1, 1:-1] = ~blocked.transpose(2, 0, 1)
        self._free = free.ravel()
        steps = np.array([d for d in itertools.product((-1, 0, 1), repeat=3) if d != (0, 0, 0)])
        self.steps = steps
        self.step_costs = np.linalg.norm(steps * self._scale, axis=1)
        self._offsets = steps @ self._strides
        self._g_template = np.where(self._free, np.inf, -np.inf)

    @classmethod
    def from_occupancy(cls, occupancy: Occupancy) -> GridGraph:
        return cls(occupancy.blocked, occupancy.grid.cell_size_m, occupancy.grid.layer_height_m)

    @property
    def _scale(self) -> np.ndarray:
        return np.array([self.cell_size_m, self.cell_size_m, self.layer_height_m])

    def free_cells(self) -> np.ndarray:
        """(nx, ny, nz) bool: the graph's nodes."""
        return self._padded_free()[1:-1, 1:-1, 1:-1]

    def _padded_free(self) -> np.ndarray:
        """The padded free array as an (i, j, k) view."""
        return self._free.reshape(self._padded_shape).transpose(1, 2, 0)

    def is_free(self, cell: Cell) -> bool:
        return self._inside(cell) and bool(self._free[self._flat(cell)])

    def heuristic(self, a: Cell, b: Cell) -> float:
        """Straight-line distance in metres between two cells (admissible and consistent)."""
        cs, lh = self.cell_size_m, self.layer_height_m
        return math.hypot((a[0] - b[0]) * cs, (a[1] - b[1]) * cs, (a[2] - b[2]) * lh)

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every undirected edge once: (u cells (m, 3), v cells (m, 3), costs (m,)); for building the same graph
        in another library."""
        free = self._padded_free()  # padded: rolls wrap onto blocked borders
        us, vs, ws = [], [], []
        for step, cost in zip(self.steps, self.step_costs):
            if tuple(step) <= (0, 0, 0):  # each undirected edge from its lexicographically smaller step
                continue
            u = np.argwhere(free & np.roll(free, tuple(-step), axis=(0, 1, 2))) - 1
            us.append(u)
            vs.append(u + step)
            ws.append(np.full(len(u), cost))
        return np.concatenate(us), np.concatenate(vs), np.concatenate(ws)

    def astar(self, start: Cell, goal: Cell, bucket_m: float | None = None) -> GridPath | None:
        """Cheapest path between two free cells, or None when the goal is unreachable (or either end blocked)."""
        if not (self.is_free(start) and self.is_free(goal)):
            return None
        source, target = self._flat(start), self._flat(goal)
        bucket = DEFAULT_BUCKET_CELLS * self.cell_size_m if bucket_m is None else bucket_m
        g = self._g_template.copy()
        h = self._heuristic_to(goal)
        f = np.full(g.size, np.inf)  # f of the open cells; inf = not open
        parent = np.empty(g.size, dtype=np.int64)  # valid wherever g is finite, source excepted
        stamp = np.empty(g.size, dtype=np.int64)
        g[source], f[source] = 0.0, h[source]
        open_cells = np.array([source], dtype=np.int64)
        expanded = 0
        while open_cells.size:
            open_f = f[open_cells]
            f_min = open_f.min()
            if g[target] <= f_min:
                break
            chosen = open_f <= f_min + bucket
            batch, open_cells = open_cells.compress(chosen), open_cells.compress(~chosen)
            f[batch] = np.inf
            expanded += batch.size
            improved, via = self._relax(batch, g, stamp)
            parent[improved] = via
            fresh = improved.compress(f[improved] == np.inf)
            f[improved] = g[improved] + h[improved]
            open_cells = np.concatenate([open_cells, fresh])
        if not np.isfinite(g[target]):
            return None
        return GridPath(self._unflat(self._trace(parent, source, target)), float(g[target]), expanded)

    def _relax(self, batch: np.ndarray, g: np.ndarray, stamp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower g of the neighbours of `batch` in place; returns (improved cells, the batch cell each came from).

        Blocked cells hold g = -inf, so no offer ever improves them. `stamp` is scratch space of g's size, used
        to keep one entry per improved cell.
        """
        neighbours = np.add.outer(batch, self._offsets).ravel()
        tentative = np.add.outer(g[batch], self.step_costs).ravel()
        better = (tentative < g[neighbours]).nonzero()[0]
        neighbours, tentative = neighbours[better], tentative[better]
        np.minimum.at(g, neighbours, tentative)
        best = (tentative == g[neighbours]).nonzero()[0]  # the cheapest offer(s) for each cell
        neighbours, via = neighbours[best], batch[better[best] // len(self._offsets)]
        # Keep one offer per cell: whichever write lands last in `stamp`, exactly one position matches it.
        position = np.arange(len(neighbours))
        stamp[neighbours] = position
        unique = stamp[neighbours] == position
        return neighbours.compress(unique), via.compress(unique)

    def _heuristic_to(self, goal: Cell) -> np.ndarray:
        """Euclidean distance in metres from every padded cell to `goal`, flat; built from per-axis squares."""
        di, dj, dk = (((np.arange(n + 2) - 1 - c) * scale) ** 2 for n, c, scale in zip(self.shape, goal, self._scale))
        return np.sqrt(dk[:, None, None] + di[None, :, None] + dj[None, None, :]).ravel()

    def _trace(self, parent: np.ndarray, source: int, target: int) -> list[int]:
        path = [target]
        while path[-1] != source:
            path.append(int(parent[path[-1]]))
        return path[::-1]

    def _inside(self, cell: Cell) -> bool:
        return all(0 <= c < n for c, n in zip(cell, self.shape))

    def _flat(self, cell: Cell) -> int:
        return int((np.asarray(cell) + 1) @ self._strides)

    def _unflat(self, flat: list[int]) -> np.ndarray:
        k, i, j = np.unravel_index(np.asarray(flat), self._padded_shape)
        return np.column_stack([i, j, k]) - 1


class NoPathError(Exception):
    """No route: `blockers` names what is in the way (zone, building, corridor ids or 'altitude_band')."""

    def __init__(self, message: str, blockers: list[str] | None = None):
        super().__init__(message)
        self.blockers = blockers or []


@dataclass(frozen=True)
class PlannedRoute:
    waypoints: np.ndarray  # (n, 4): x, y, z metres, t seconds
    length_m: float
    eta_sec: float  # arrival time on the same clock as the departure time
    energy_wh: float


_GRAPH_CACHE: dict[Hashable, GridGraph] = {}


def graph_for(occupancy: Occupancy) -> GridGraph:
    """The search graph of an occupancy grid, cached like the occupancy itself."""
    key = (occupancy.world_version, occupancy.spec)
    return cached(_GRAPH_CACHE, key, lambda: GridGraph.from_occupancy(occupancy), size=8)


def endpoint_cell(occupancy: Occupancy, label: str, xy: XY) -> Cell:
    """The free cell a route starts or ends in, above (x, y): the lowest layer inside the altitude band, or, where
    only building clearance blocks it, the lowest free layer above (the climb from a pad beside a building is the
    take-off vertical, judged by the verifier's R2 like the rest). Raises NoPathError when a zone,
    a corridor or buildings up to the top of the band block the column.
    """
    grid, spec = occupancy.grid, occupancy.spec
    allowed = np.flatnonzero(allowed_layers(grid, spec))
    if allowed.size == 0:
        raise NoPathError(
            f"no grid layer lies within the altitude band [{spec.altitude_min_m}, {spec.altitude_max_m}] m "
            f"(layers at {layer_altitudes(grid).tolist()} m)",
            ["altitude_band"],
        )
    buildings = {v.id for v in occupancy.keep_outs if v.kind == "building"}
    column = cell_of(grid, *xy)
    for layer in allowed:
        cell = (*column, int(layer))
        if not occupancy.blocked[cell]:
            return cell
        blockers = occupancy.blockers(cell)
        if not set(blockers) <= buildings:
            break
    altitude = layer_altitudes(grid)[cell[2]]
    raise NoPathError(
        f"{label} at ({xy[0]:g}, {xy[1]:g}): its cell {cell} at {altitude:g} m is blocked by {', '.join(blockers)}",
        blockers,
    )


def plan_through(
    world: World,
    occupancy: Occupancy,
    stops: list[tuple[str, XY]],
    *,
    speed_mps: float = DEFAULT_SPEED_MPS,
    depart_time_sec: float = 0.0,
    leg_payloads_kg: list[float] | None = None,
) -> PlannedRoute:
    """Route visiting named `stops` [(label, (x, y)), ...] in order; raises NoPathError naming the failing leg.

    Each leg is an A* search between the stops' endpoint cells; the exact stop positions are kept as the first
    and last waypoints of each leg (a stop lies inside its free endpoint cell's safe disc, so that stub is safe).
    """
    payloads = leg_payloads_kg or [0.0] * (len(stops) - 1)
    graph = graph_for(occupancy)
    legs, energy = [], 0.0
    for (from_label, from_xy), (to_label, to_xy), payload in zip(stops, stops[1:], payloads):
        start = endpoint_cell(occupancy, from_label, from_xy)
        goal = endpoint_cell(occupancy, to_label, to_xy)
        path = graph.astar(start, goal)
        if path is None:
            raise NoPathError(f"no path from {from_label} to {to_label} outside the masked airspace")
        points = _leg_points(world.grid, path.cells, from_xy, to_xy)
        energy += path_energy_wh(world, points, payload)
        legs.append(points if not legs else points[1:])  # a leg starts where the previous one ended
    points = np.concatenate(legs)
    steps = np.diff(points, axis=0)
    # a sloped move takes as long as its climb or descent needs at the autopilot's vertical speed, if longer
    seconds = np.maximum.reduce(
        [
            np.linalg.norm(steps, axis=1) / speed_mps,
            np.clip(steps[:, 2], 0.0, None) / TAKEOFF_CLIMB_MPS,
            np.clip(-steps[:, 2], 0.0, None) / LANDING_DESCENT_MPS,
        ]
    )
    track = ground_to_ground(
        np.column_stack([points, np.concatenate([[0.0], np.cumsum(seconds)])]),
        depart_time_sec,
        start_surface_m=world.surface_height_m(stops[0][1]),
        end_surface_m=world.surface_height_m(stops[-1][1]),
    )
    energy += path_energy_wh(world, track[:2, :3], payloads[0]) + path_energy_wh(world, track[-2:, :3], payloads[-1])
    return PlannedRoute(track, path_length(track), float(track[-1, 3]), energy)


def merge_collinear(cells: np.ndarray) -> np.ndarray:
    """Drop the cells inside straight runs (same step repeated), keeping the turns and both ends."""
    if len(cells) < 3:
        return cells
    steps = np.diff(cells, axis=0)
    turns = np.flatnonzero(np.any(steps[1:] != steps[:-1], axis=1)) + 1
    return cells[np.concatenate([[0], turns, [len(cells) - 1]])]


def _leg_points(grid: Grid, cells: np.ndarray, from_xy: XY, to_xy: XY) -> np.ndarray:
    centres = cell_centres(grid, merge_collinear(cells))
    first = np.array([[*from_xy, centres[0, 2]]])
    last = np.array([[*to_xy, centres[-1, 2]]])
    points = np.concatenate([first, centres, last])
    keep = np.concatenate([[True], np.any(np.diff(points, axis=0) != 0, axis=1)])
    return points[keep]
