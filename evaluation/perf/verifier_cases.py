"""Random flight cases for the exact trajectory verifier, and an independent oracle that judges them with shapely.

Shared by tests/unit/test_verifier_exact.py (hypothesis draws the numbers) and evaluation/perf/verifier_fuzz.py (numpy
draws them): both call `random_case(source, kind)` with a `Source`, so one generator and one oracle serve both. It
lives in the installed package so the fuzz script runs from an install, without the tests.

Cases: one keep-out shape (a convex hull of random points, a star-shaped concave polygon, an axis-aligned rectangle
or an L with integer corners) and a polyline that passes near its corners and edges (waypoints at a vertex plus a
small offset, pieces aimed through a point near a corner and continued past it, pieces along an edge's line), so
corner cuts between two whole seconds are frequent. Kinds:
- "nfz": a no-fly zone with an optional altitude band and active window (rule R1's signal, nfz_margin);
- "building": a footprint x [0, height] (obstacle_clearance);
- "sensitive": a zone with a buffer (sensitive_clearance, any altitude);
- "traffic": other UAV tracks that fly close to ours in time and space (separation);
- "mixed": all of the above at once, for a whole verify_ltl_stl call (R1 and R2).

The oracle never calls tools/segment_geometry or tools/exact_grid. Per straight piece it splits the parameter
range where the signal's formula changes (altitude band / roof crossings, window ends), and on each part:
- horizontal signed distance: if the 2D piece does not meet the polygon's interior, the minimum is
  shapely.distance(piece, polygon); otherwise it samples the signed distance densely (shapely.distance to the
  boundary, contains_xy for the sign) and refines the best few local minima by golden section to ~1e-13 in u;
- above / below a band or a roof: the pointwise 3D definition, sampled and refined the same way;
- traffic: the closed-form closest approach of the relative linear motion between consecutive knots of both tracks.
Every value the oracle returns is attained by the trajectory (a sampled or refined point), so the exact minimum is
never above it; the refinement makes it within ~1e-10 m of the true minimum. `nfz_intrusion` decides with shapely
predicates alone whether the flight is inside a no-fly zone (deeper than 1e-9 m), in its band, while it is active,
for a positive time: such a flight must never pass.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import shapely
from shapely.geometry import LineString, MultiPoint, Point, Polygon

from tools import exact_grid, signals
from tools.trajectory import resample

GRID = {"nx": 100, "ny": 100, "nz": 6, "cell_size_m": 10.0}  # a 1 km square, ceiling 120 m
CENTRE = (500.0, 500.0)
KINDS = ("nfz", "building", "sensitive", "traffic")
SAMPLES_PER_PART = 4096
REFINED_MINIMA = 4
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
_INTERIOR = "T********"  # DE-9IM: the interiors meet
INTRUSION_DEPTH = 1e-9  # an intrusion must go deeper than this (m)
INTRUSION_TIME = 1e-9  # and last longer than this (s): a window clipped to 1e-13 s is float noise, not a flight
LEVEL_M = 1e-12  # a piece climbing less than this is level


# --- random numbers ------------------------------------------------------------------------------------------------
class Source(Protocol):
    """Where the generator's numbers come from (numpy for the fuzz script, hypothesis for the tests)."""

    def uniform(self, lo: float, hi: float) -> float: ...

    def integer(self, lo: int, hi: int) -> int: ...  # inclusive


class NumpySource:
    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def uniform(self, lo: float, hi: float) -> float:
        return float(self.rng.uniform(lo, hi))

    def integer(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))


def _polar(source: Source, radius: float) -> np.ndarray:
    r, angle = source.uniform(0.0, radius), source.uniform(0.0, 2.0 * math.pi)
    return np.array([r * math.cos(angle), r * math.sin(angle)])


# --- shapes --------------------------------------------------------------------------------------------------------
def convex_polygon(source: Source, centre: Sequence[float], radius: float) -> Polygon:
    """Convex hull of 3-9 random points in a disc (a regular polygon if the hull is degenerate)."""
    n = source.integer(3, 9)
    points = [np.asarray(centre) + _polar(source, radius) for _ in range(n)]
    hull = MultiPoint(points).convex_hull
    if isinstance(hull, Polygon) and hull.area > 0.05 * radius * radius:
        return hull
    angles = 2 * math.pi * np.arange(max(n, 3)) / max(n, 3)
    return Polygon(np.column_stack([centre[0] + radius * np.cos(angles), centre[1] + radius * np.sin(angles)]))


def star_polygon(source: Source, centre: Sequence[float], radius: float) -> Polygon:
    """A concave polygon: 4-12 vertices in angular order around the centre at random radii (star-shaped)."""
    k = source.integer(4, 12)
    turn = source.uniform(0.0, 2.0 * math.pi)
    ring = []
    for i in range(k):
        angle = turn + 2.0 * math.pi * (i + source.uniform(-0.3, 0.3)) / k
        r = radius * source.uniform(0.2, 1.0)
        ring.append((centre[0] + r * math.cos(angle), centre[1] + r * math.sin(angle)))
    polygon = Polygon(ring)
    return polygon if polygon.is_valid and polygon.area > 0 else convex_polygon(source, centre, radius)


def rectangle(source: Source, centre: Sequence[float], radius: float) -> Polygon:
    """An axis-aligned rectangle with integer corners (exact arithmetic: waypoints can sit exactly on it)."""
    x0, y0 = round(centre[0] - source.uniform(5.0, radius)), round(centre[1] - source.uniform(5.0, radius))
    x1, y1 = round(centre[0] + source.uniform(5.0, radius)), round(centre[1] + source.uniform(5.0, radius))
    return Polygon([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])


def l_shape(source: Source, centre: Sequence[float], radius: float) -> Polygon:
    """A rectangle with one corner cut out (one reflex vertex), integer corners."""
    box = rectangle(source, centre, radius)
    x0, y0, x1, y1 = box.bounds
    cx, cy = round(x0 + (x1 - x0) * source.uniform(0.2, 0.8)), round(y0 + (y1 - y0) * source.uniform(0.2, 0.8))
    corner = source.integer(0, 3)
    ring = [(x0, y0), (x1, y0), (x1, cy), (cx, cy), (cx, y1), (x0, y1)]  # top-right corner removed
    if corner:  # the same shape rotated by quarter turns about the box centre
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        for _ in range(corner):
            ring = [(mx - (y - my), my + (x - mx)) for x, y in ring]
    polygon = Polygon(ring)
    return polygon if polygon.is_valid and polygon.area > 0 else box


SHAPES: dict[str, Callable[[Source, Sequence[float], float], Polygon]] = {
    "convex": convex_polygon,
    "star": star_polygon,
    "rectangle": rectangle,
    "l_shape": l_shape,
}


def random_polygon(source: Source, centre: Sequence[float] = CENTRE, radius: float | None = None) -> Polygon:
    names = list(SHAPES)
    name = names[source.integer(0, len(names) - 1)]
    return SHAPES[name](source, centre, radius if radius is not None else source.uniform(15.0, 120.0))


def ring_of(polygon: Polygon) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in np.asarray(polygon.exterior.coords)[:-1, :2]]


# --- trajectories --------------------------------------------------------------------------------------------------
def near_feature(source: Source, polygons: Sequence[Polygon], spread: float) -> np.ndarray:
    """A 2D point near a vertex or an edge of one of the polygons (sometimes exactly on it, sometimes anywhere)."""
    polygon = polygons[source.integer(0, len(polygons) - 1)]
    ring = np.asarray(polygon.exterior.coords)[:-1, :2]
    i = source.integer(0, len(ring) - 1)
    v, w = ring[i], ring[(i + 1) % len(ring)]
    mode = source.integer(0, 11)
    if mode <= 4:  # a vertex plus a small offset
        return v + _polar(source, spread)
    if mode <= 7:  # a point of an edge, pushed off it along the normal
        edge = w - v
        normal = np.array([-edge[1], edge[0]]) / np.linalg.norm(edge)
        return v + source.uniform(0.0, 1.0) * edge + source.uniform(-spread, spread) * normal
    if mode == 8:  # exactly a vertex
        return v.copy()
    if mode == 9:  # exactly on an edge's line (inside or past its ends)
        return v + source.uniform(-0.5, 1.5) * (w - v)
    x0, y0, x1, y1 = polygon.bounds
    grow = 3.0 * spread + 10.0
    return np.array([source.uniform(x0 - grow, x1 + grow), source.uniform(y0 - grow, y1 + grow)])


def polyline_xy(source: Source, polygons: Sequence[Polygon], n: int, spread: float = 8.0) -> np.ndarray:
    """n horizontal waypoints: each piece either jumps to a point near a feature, or aims through a point near
    a corner or an edge and carries on past it (the corner cuts that a 1 Hz sample misses)."""
    points = [near_feature(source, polygons, spread)]
    while len(points) < n:
        last = points[-1]
        mode = source.integer(0, 9)
        if mode <= 3:
            points.append(near_feature(source, polygons, spread))
            continue
        if mode == 9 and len(points) > 1:  # hover: the same position again (it still takes time)
            points.append(last.copy())
            continue
        through = near_feature(source, polygons, spread / 2.0)
        direction = through - last
        length = float(np.linalg.norm(direction))
        if length < 1e-6:
            points.append(through + _polar(source, spread) + 0.5)
            continue
        points.append(through + direction / length * source.uniform(0.5, 60.0))
    return np.asarray(points)


def timed(source: Source, xy: np.ndarray, z: Sequence[float]) -> np.ndarray:
    """(n, 4) waypoints: strictly increasing, mostly non-integer times (0.3 s to 12 s per piece)."""
    t = [source.uniform(0.0, 3.0)]
    for _ in range(len(xy) - 1):
        t.append(t[-1] + source.uniform(0.3, 12.0))
    return np.column_stack([xy, np.asarray(z, dtype=float), np.asarray(t)])


def altitudes(source: Source, n: int, levels: Sequence[float], spread: float = 15.0) -> list[float]:
    """n altitudes near the given levels (band edges, roofs), sometimes exactly on one, never below 0."""
    out = []
    for _ in range(n):
        level = levels[source.integer(0, len(levels) - 1)]
        mode = source.integer(0, 5)
        z = level if mode == 0 else level + source.uniform(-spread, spread) if mode <= 4 else source.uniform(0, 150)
        out.append(max(z, 0.0))
    return out


def traffic_track(source: Source, ours: np.ndarray) -> np.ndarray:
    """Another UAV that flies close to our positions at about the same times (its own knots, partial overlap)."""
    t0, t1 = float(ours[0, 3]), float(ours[-1, 3])
    start = source.uniform(t0 - 8.0, t1)
    times = [start]
    for _ in range(source.integer(1, 3)):
        times.append(times[-1] + source.uniform(0.4, 15.0))
    rows = []
    for t in times:
        xyz = np.array([np.interp(t, ours[:, 3], ours[:, i]) for i in range(3)])
        offset = np.append(_polar(source, 30.0), source.uniform(-10.0, 10.0))
        rows.append([*(xyz + offset), t])
    return np.asarray(rows)


# --- cases ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    kind: str
    waypoints: np.ndarray  # (n, 4) x, y, z, t
    nfz: list[tuple[float, float]] | None = None
    low: float = 0.0
    high: float = 10_000.0
    window: tuple[float, float] | None = None
    building: list[tuple[float, float]] | None = None
    height: float = 0.0
    sensitive: list[tuple[float, float]] | None = None
    buffer: float = 0.0
    tracks: list[np.ndarray] = field(default_factory=list)

    def world_dict(self) -> dict[str, Any]:
        """The case as a World JSON object (one entity of each kind the case has)."""
        world: dict[str, Any] = {"world_id": f"fuzz_{self.kind}", "grid": dict(GRID)}
        if self.nfz is not None:
            zone: dict[str, Any] = {"id": "nfz", "polygon": self.nfz, "alt_min_m": self.low, "alt_max_m": self.high}
            if self.window is not None:
                zone["active_window"] = {"start_sec": self.window[0], "end_sec": self.window[1]}
            world["no_fly_zones"] = [zone]
        if self.building is not None:
            world["buildings"] = [{"id": "building", "polygon": self.building, "height_m": self.height}]
        if self.sensitive is not None:
            world["sensitive_zones"] = [{"id": "sensitive", "polygon": self.sensitive, "buffer_m": self.buffer}]
        if self.tracks:
            world["traffic"] = [{"id": f"track_{i}", "waypoints": t.tolist()} for i, t in enumerate(self.tracks)]
        return world

    def waypoint_list(self) -> list[list[float]]:
        return self.waypoints.tolist()


def _near_centre(source: Source, spread: float) -> tuple[float, float]:
    x = CENTRE[0] + source.uniform(-spread, spread)
    return x, CENTRE[1] + source.uniform(-spread, spread)


def random_case(source: Source, kind: str) -> Case:
    """One random case of `kind` (see the module docstring)."""
    n = source.integer(2, 5)
    if kind == "nfz":
        polygon = random_polygon(source)
        low, high, window = 0.0, 10_000.0, None
        if source.integer(0, 2):
            low = source.uniform(0.0, 80.0)
            high = low + source.uniform(2.0, 80.0)
        xy = polyline_xy(source, [polygon], n)
        waypoints = timed(source, xy, altitudes(source, n, [low, high] if high < 1000 else [60.0]))
        if source.integer(0, 1):
            start = max(0.0, source.uniform(waypoints[0, 3] - 3.0, waypoints[-1, 3]))
            window = (start, start + source.uniform(0.5, 25.0))
        return Case("nfz", waypoints, nfz=ring_of(polygon), low=low, high=high, window=window)
    if kind == "building":
        polygon = random_polygon(source)
        height = source.uniform(3.0, 120.0)
        xy = polyline_xy(source, [polygon], n)
        waypoints = timed(source, xy, altitudes(source, n, [height]))
        return Case("building", waypoints, building=ring_of(polygon), height=height)
    if kind == "sensitive":
        polygon = random_polygon(source)
        buffer = 0.0 if source.integer(0, 4) == 0 else source.uniform(0.0, 40.0)
        grown = polygon.buffer(buffer, quad_segs=4) if buffer > 0.5 else polygon  # the buffer's outline
        xy = polyline_xy(source, [grown if isinstance(grown, Polygon) and not grown.is_empty else polygon], n)
        waypoints = timed(source, xy, altitudes(source, n, [60.0], 50.0))
        return Case("sensitive", waypoints, sensitive=ring_of(polygon), buffer=buffer)
    if kind == "traffic":
        polygon = random_polygon(source)  # only to place the track
        ours = timed(source, polyline_xy(source, [polygon], n, spread=30.0), altitudes(source, n, [60.0], 20.0))
        tracks = [traffic_track(source, ours) for _ in range(source.integer(1, 2))]
        return Case("traffic", ours, tracks=tracks)
    if kind == "mixed":
        nfz = random_polygon(source, CENTRE, source.uniform(15.0, 60.0))
        building = random_polygon(source, _near_centre(source, 90.0), 30.0)
        sensitive = random_polygon(source, _near_centre(source, 90.0), 30.0)
        low = source.uniform(0.0, 50.0)
        high = low + source.uniform(5.0, 80.0)
        height = source.uniform(3.0, 100.0)
        xy = polyline_xy(source, [nfz, building, sensitive], n)
        waypoints = timed(source, xy, altitudes(source, n, [low, high, height]))
        window = None
        if source.integer(0, 1):
            start = max(0.0, source.uniform(waypoints[0, 3] - 3.0, waypoints[-1, 3]))
            window = (start, start + source.uniform(0.5, 25.0))
        return Case(
            "mixed",
            waypoints,
            nfz=ring_of(nfz),
            low=low,
            high=high,
            window=window,
            building=ring_of(building),
            height=height,
            sensitive=ring_of(sensitive),
            buffer=source.uniform(0.0, 30.0),
            tracks=[traffic_track(source, waypoints)] if source.integer(0, 1) else [],
        )
    raise ValueError(f"unknown kind {kind!r}")


# --- the oracle ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    """A polygon and its boundary, both prepared (shapely answers many point queries on each)."""

    polygon: Polygon
    boundary: Any

    @classmethod
    def of(cls, ring: Sequence[tuple[float, float]]) -> Shape:
        polygon = Polygon(ring)
        boundary = polygon.boundary
        shapely.prepare(polygon)
        shapely.prepare(boundary)
        return cls(polygon, boundary)


def signed_horizontal(shape: Shape, xy: np.ndarray) -> np.ndarray:
    """Horizontal distance to the boundary, negative strictly inside (the pointwise definition)."""
    xy = np.ascontiguousarray(np.atleast_2d(xy), dtype=float)
    distance = shapely.distance(shape.boundary, shapely.points(xy))
    return np.where(shapely.contains_xy(shape.polygon, xy[:, 0], xy[:, 1]), -distance, distance)


def minimise(f: Callable[[np.ndarray], np.ndarray], lo: float, hi: float, samples: int = SAMPLES_PER_PART) -> float:
    """Smallest value of f on [lo, hi]: dense samples, then golden section around the best few local minima.

    The result is a value f takes, so it is never below the true minimum."""
    u = np.linspace(lo, hi, samples)
    v = f(u)
    best = float(v.min())
    left, right = np.append(np.inf, v[:-1]), np.append(v[1:], np.inf)
    minima = np.flatnonzero((v <= left) & (v <= right))
    minima = minima[np.argsort(v[minima], kind="stable")[:REFINED_MINIMA]]
    a, b = u[np.maximum(minima - 1, 0)], u[np.minimum(minima + 1, samples - 1)]
    tolerance = 1e-13 * max(1.0, abs(hi - lo))
    while len(a) and float(np.max(b - a)) > tolerance:
        c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
        values = f(np.concatenate([c, d]))
        fc, fd = values[: len(c)], values[len(c) :]
        best = min(best, float(values.min()))
        keep_left = fc <= fd
        a, b = np.where(keep_left, a, c), np.where(keep_left, d, b)
    return best


@dataclass(frozen=True)
class Piece:
    """One straight piece of a track: p(u) = a + u (b - a), t(u) = ta + u (tb - ta), u in [0, 1]."""

    a: np.ndarray  # (3,)
    b: np.ndarray
    ta: float
    tb: float

    def xy(self, u: np.ndarray) -> np.ndarray:
        return self.a[:2] + np.asarray(u)[:, None] * (self.b[:2] - self.a[:2])

    def z(self, u: np.ndarray) -> np.ndarray:
        return self.a[2] + np.asarray(u) * (self.b[2] - self.a[2])

    def t(self, u: float) -> float:
        return self.ta + u * (self.tb - self.ta)

    def u_at_level(self, level: float) -> float | None:
        dz = self.b[2] - self.a[2]
        if abs(dz) <= 1e-12:  # as the verifier's band split: flatter counts as level
            return None
        u = (level - self.a[2]) / dz
        return u if 0 < u < 1 else None

    def u_at_time(self, t: float) -> float | None:
        u = (t - self.ta) / (self.tb - self.ta)
        return u if 0 < u < 1 else None


def pieces(waypoints: np.ndarray) -> list[Piece]:
    return [
        Piece(waypoints[k, :3], waypoints[k + 1, :3], float(waypoints[k, 3]), float(waypoints[k + 1, 3]))
        for k in range(len(waypoints) - 1)
        if waypoints[k + 1, 3] > waypoints[k, 3]
    ]


def _parts(cuts: Sequence[float | None]) -> list[tuple[float, float]]:
    points = sorted({0.0, 1.0, *(c for c in cuts if c is not None)})
    return [(lo, hi) for lo, hi in itertools.pairwise(points) if hi > lo]


def min_horizontal(shape: Shape, piece: Piece, lo: float, hi: float) -> float:
    """Minimum over u in [lo, hi] of the horizontal signed distance of the piece."""
    p, q = piece.xy(np.array([lo, hi]))
    if np.array_equal(p, q):
        return float(signed_horizontal(shape, p[None])[0])
    line = LineString([p, q])
    if not shapely.relate_pattern(line, shape.polygon, _INTERIOR):
        return float(shapely.distance(line, shape.polygon))
    return minimise(lambda u: signed_horizontal(shape, piece.xy(u)), lo, hi)


def min_over_face(shape: Shape, piece: Piece, level: float, lo: float, hi: float, below: float = math.inf) -> float:
    """Minimum over [lo, hi] of hypot(max(h, 0), |z - level|): the 3D distance to the face polygon x {level} of a
    part that stays on one side of it. Skipped (inf) when a lower bound shows it cannot beat `below`."""
    z_lo, z_hi = piece.z(np.array([lo, hi])) - level
    gap = 0.0 if z_lo * z_hi <= 0 else min(abs(z_lo), abs(z_hi))
    if math.hypot(max(_flat_bound(shape, piece, lo, hi), 0.0), gap) >= below:
        return math.inf

    def f(u: np.ndarray) -> np.ndarray:
        return np.hypot(np.maximum(signed_horizontal(shape, piece.xy(u)), 0.0), piece.z(u) - level)

    return minimise(f, lo, hi)


def nfz_oracle(case: Case, far: float) -> float:
    """Minimum over the flight of the signed distance to the zone's volume while it is active (R1's signal)."""
    shape = Shape.of(case.nfz)
    low, high, window = case.low, case.high, case.window
    best = far
    for piece in pieces(case.waypoints):
        cuts = [piece.u_at_level(low), piece.u_at_level(high)]
        if window is not None:
            cuts += [piece.u_at_time(window[0]), piece.u_at_time(window[1])]
        for lo, hi in sorted(_parts(cuts), key=lambda part: _flat_bound(shape, piece, *part)):
            mid = (lo + hi) / 2
            if window is not None and not window[0] <= piece.t(mid) <= window[1]:
                continue
            z = float(piece.z(np.array([mid]))[0])
            if low <= z <= high:
                if _flat_bound(shape, piece, lo, hi) < best:
                    best = min(best, min_horizontal(shape, piece, lo, hi))
            else:
                best = min(best, min_over_face(shape, piece, high if z > high else low, lo, hi, best))
    for row in case.waypoints:  # the waypoints themselves, with their exact altitude and time
        best = min(best, nfz_point(case, shape, row, far))
    return min(best, far)


def nfz_point(case: Case, shape: Shape, row: np.ndarray, far: float) -> float:
    """The pointwise definition of nfz_margin at one (x, y, z, t)."""
    if case.window is not None and not case.window[0] <= row[3] <= case.window[1]:
        return far
    h = float(signed_horizontal(shape, row[None, :2])[0])
    gap = max(case.low - row[2], row[2] - case.high, 0.0)
    return math.hypot(max(h, 0.0), gap) if gap > 0 else h


def building_oracle(case: Case, far: float) -> float:
    """Minimum over the flight of the clearance to the building prism footprint x [0, height]."""
    shape = Shape.of(case.building)
    height = case.height
    best = far
    for piece in pieces(case.waypoints):
        for lo, hi in _parts([piece.u_at_level(height)]):
            z = float(piece.z(np.array([(lo + hi) / 2]))[0])
            if z <= height:
                if _flat_bound(shape, piece, lo, hi) < best:
                    best = min(best, min_horizontal(shape, piece, lo, hi))
            else:
                best = min(best, min_over_face(shape, piece, height, lo, hi, best))
    for row in case.waypoints:
        h = float(signed_horizontal(shape, row[None, :2])[0])
        best = min(best, math.hypot(max(h, 0.0), row[2] - height) if row[2] > height else h)
    return min(best, far)


def sensitive_oracle(case: Case, far: float) -> float:
    """Minimum over the flight of the horizontal signed distance to the zone minus its buffer."""
    shape = Shape.of(case.sensitive)
    best = far
    for piece in pieces(case.waypoints):
        if _flat_bound(shape, piece, 0.0, 1.0) - case.buffer < best:
            best = min(best, min_horizontal(shape, piece, 0.0, 1.0) - case.buffer)
    return min(best, far)


def traffic_oracle(ours: np.ndarray, tracks: Sequence[np.ndarray], far: float) -> float:
    """Closest 3D approach to each other track while both fly (closed form between consecutive knots)."""
    best = far
    for other in tracks:
        lo, hi = max(ours[0, 3], other[0, 3]), min(ours[-1, 3], other[-1, 3])
        if lo > hi:
            continue
        knots = np.unique(np.concatenate([[lo, hi], ours[:, 3], other[:, 3]]))
        knots = knots[(knots >= lo) & (knots <= hi)]
        for t0, t1 in itertools.pairwise(knots) if len(knots) > 1 else [(lo, lo)]:
            r0 = _position(ours, t0) - _position(other, t0)
            r1 = _position(ours, t1) - _position(other, t1)
            v = r1 - r0
            s = 0.0 if not v @ v else min(max(-(r0 @ v) / (v @ v), 0.0), 1.0)
            best = min(best, float(np.linalg.norm(r0 + s * v)))
    return best


def _position(track: np.ndarray, t: float) -> np.ndarray:
    return np.array([np.interp(t, track[:, 3], track[:, i]) for i in range(3)])


def _flat_bound(shape: Shape, piece: Piece, lo: float, hi: float) -> float:
    """A lower bound of the horizontal signed distance on [lo, hi] (-inf when the piece meets the polygon)."""
    p, q = piece.xy(np.array([lo, hi]))
    trace = Point(p) if np.array_equal(p, q) else LineString([p, q])
    return -math.inf if shape.polygon.intersects(trace) else float(shape.polygon.distance(trace))


def exempt_sensitive(case: Case) -> bool:
    """The task's origin or goal (first / last waypoint) lies within the sensitive zone's buffer (exact distance)."""
    polygon = Polygon(case.sensitive)
    return any(polygon.distance(Point(row[:2])) <= case.buffer for row in (case.waypoints[0], case.waypoints[-1]))


def oracle(case: Case, far: float) -> float:
    """The exact minimum over the flight of the case's signal (kinds nfz, building, sensitive, traffic)."""
    if case.kind == "nfz":
        return nfz_oracle(case, far)
    if case.kind == "building":
        return building_oracle(case, far)
    if case.kind == "sensitive":
        return sensitive_oracle(case, far)
    if case.kind == "traffic":
        return traffic_oracle(case.waypoints, case.tracks, far)
    raise ValueError(f"no single signal for kind {case.kind!r}")


def oracle_rules(case: Case, far: float, d_min: float) -> tuple[float, float]:
    """(R1, R2) robustness of a "mixed" case as verify_ltl_stl defines them (origin / goal = first / last waypoint)."""
    r1 = nfz_oracle(case, far) if case.nfz is not None else far
    obstacle = building_oracle(case, far) if case.building is not None else far
    separation = traffic_oracle(case.waypoints, case.tracks, far)
    sensitive = far
    if case.sensitive is not None and not exempt_sensitive(case):
        sensitive = sensitive_oracle(case, far)
    return r1, min(obstacle - d_min, separation - d_min, sensitive)


def nfz_intrusion(case: Case, depth: float = INTRUSION_DEPTH) -> bool:
    """Whether the flight is strictly inside the zone, in its band, while it is active, for a positive time.

    "Inside" means deeper than `depth` (inside the zone shrunk by it): a piece through a vertex, computed in floating
    point, may clip a sliver 1e-14 m deep that no distance computation resolves; and for longer than INTRUSION_TIME,
    for the same reason in time (a band or window edge met 1e-13 s before the piece ends)."""
    polygon = Polygon(case.nfz).buffer(-depth) if depth > 0 else Polygon(case.nfz)
    if polygon.is_empty:
        return False
    for piece in pieces(case.waypoints):
        lo, hi = 0.0, 1.0
        z0, z1 = piece.a[2], piece.b[2]
        if abs(z1 - z0) <= LEVEL_M:  # level, as the verifier's band split (and no overflow on a subnormal climb)
            # within LEVEL_M of a band edge, a "level" piece may leave the band at once: no certain intrusion
            if not case.low + LEVEL_M < z0 < case.high - LEVEL_M:
                continue
        else:
            u_low, u_high = (case.low - z0) / (z1 - z0), (case.high - z0) / (z1 - z0)
            lo, hi = max(lo, min(u_low, u_high)), min(hi, max(u_low, u_high))
        if case.window is not None:
            lo = max(lo, (case.window[0] - piece.ta) / (piece.tb - piece.ta))
            hi = min(hi, (case.window[1] - piece.ta) / (piece.tb - piece.ta))
        if (hi - lo) * (piece.tb - piece.ta) <= INTRUSION_TIME:
            continue
        p, q = piece.xy(np.array([lo, hi]))
        if np.array_equal(p, q):
            if polygon.contains(Point(p)):
                return True
        elif shapely.relate_pattern(LineString([p, q]), polygon, _INTERIOR):
            return True
    return False


# --- the methods under test ----------------------------------------------------------------------------------------
def signal_minimum(world: Any, kind: str, rows: np.ndarray) -> float:
    """The minimum over the rows (x, y, z, t) of the case's signal, as tools/signals computes it."""
    if kind == "nfz":
        return float(signals.nfz_margin(world, rows).values.min())
    if kind == "building":
        return float(signals.obstacle_clearance(world, rows).values.min())
    if kind == "sensitive":
        return float(signals.sensitive_clearance(world, rows).values.min())
    if kind == "traffic":
        return float(signals.traffic_separation(world, rows).values.min())
    raise ValueError(kind)


def exact_minimum(world: Any, case: Case) -> float:
    """The verifier's method: the signal's minimum over the exact time grid of tools/exact_grid."""
    times = signals.exact_times(world, case.waypoints)
    return signal_minimum(world, case.kind, exact_grid.sample_track(case.waypoints, times))


def hz_minimum(world: Any, case: Case) -> float:
    """The old method: the signal's minimum over the 1 Hz resampling of the track."""
    return signal_minimum(world, case.kind, resample(case.waypoints, 1.0))
