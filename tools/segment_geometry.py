"""Exact extrema of distance signals along one straight flight segment.

A trajectory is piecewise linear in space and time, so on each segment every safety signal (signed distance to a
no-fly zone, clearance to a building, distance to a school's buffer) is a function of one parameter u in [0, 1].
A 1 Hz sample misses a corner cut that falls between two samples; these functions find, per segment, the parameter
where the signal is smallest and the parameters where the point enters or leaves a shape. The verifier and the
simulator add those instants to their time grid (tools/exact_grid.py), so that the minimum over the grid is the
minimum over the continuous flight.

Conventions: a segment is p(u) = a + u (b - a), u in [lo, hi] within [0, 1]; polygons are shapely polygons whose
boundary is given as an (E, 2, 2) array of edges; "signed distance" is the horizontal distance to the polygon's
boundary, negative inside. Every minimiser is exact up to floating-point rounding:
- outside a polygon the distance is convex along the segment: the closest points of two segments (Ericson,
  Real-Time Collision Detection 5.1.9) give it per edge;
- inside, the depth min_e dist(p(u), e) is the lower envelope of convex per-edge functions, so its maximum lies at
  an end of the inside interval or where two edges' squared distances (piecewise quadratics in u) are equal: all
  those roots are the candidates;
- above or below an altitude band the value is the 3D distance to the band's top or bottom face: the closest
  points to the face's edges, or the face's interior where z is linear.
"""

from __future__ import annotations

import math

import numpy as np
import shapely
from shapely.geometry import Polygon

_TINY = 1e-12


def polygon_edges(polygon: Polygon) -> np.ndarray:
    """(E, 2, 2) boundary edges of every ring; zero-length edges dropped."""
    rings = [np.asarray(ring.coords)[:, :2] for ring in (polygon.exterior, *polygon.interiors)]
    edges = np.concatenate([np.stack([ring[:-1], ring[1:]], axis=1) for ring in rings])
    return edges[np.linalg.norm(edges[:, 1] - edges[:, 0], axis=1) > 0]


def closest_segment_points(
    p0: np.ndarray, p1: np.ndarray, q0: np.ndarray, q1: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closest points of segments p0-p1 and q0-q1 (broadcast over leading axes; any dimension).

    Returns (u, v, distance) with the points p0 + u (p1 - p0) and q0 + v (q1 - q0).
    """
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e = np.sum(d1 * d1, axis=-1), np.sum(d2 * d2, axis=-1)
    b, c, f = np.sum(d1 * d2, axis=-1), np.sum(d1 * r, axis=-1), np.sum(d2 * r, axis=-1)
    a, e, b, c, f = np.broadcast_arrays(a, e, b, c, f)
    safe_a, safe_e = np.where(a > _TINY, a, 1.0), np.where(e > _TINY, e, 1.0)
    denom = a * e - b * b
    u = np.where(
        denom > _TINY * np.maximum(a * e, 1.0), np.clip((b * f - c * e) / np.where(denom > 0, denom, 1.0), 0, 1), 0.0
    )
    v = (b * u + f) / safe_e
    u = np.where(v < 0, np.clip(-c / safe_a, 0, 1), np.where(v > 1, np.clip((b - c) / safe_a, 0, 1), u))
    v = np.clip(v, 0, 1)
    # degenerate segments: a point against a segment (or a point)
    u = np.where(a <= _TINY, 0.0, np.where(e <= _TINY, np.clip(-c / safe_a, 0, 1), u))
    v = np.where(e <= _TINY, 0.0, np.where(a <= _TINY, np.clip(f / safe_e, 0, 1), v))
    gap = (p0 + u[..., None] * d1) - (q0 + v[..., None] * d2)
    return u, v, np.linalg.norm(gap, axis=-1)


def point_boundary_distance(edges: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(n,) distance of each 2D point to the nearest edge."""
    q0, q1 = edges[None, :, 0], edges[None, :, 1]
    d = q1 - q0
    t = np.clip(np.sum((points[:, None] - q0) * d, axis=-1) / np.sum(d * d, axis=-1), 0, 1)
    return np.min(np.linalg.norm(points[:, None] - (q0 + t[..., None] * d), axis=-1), axis=1)


def inside_intervals(polygon: Polygon, edges: np.ndarray, a: np.ndarray, b: np.ndarray) -> list[tuple[float, float]]:
    """Maximal u-intervals of [0, 1] where a + u (b - a) lies strictly inside the polygon (2D)."""
    d = b - a
    e = edges[:, 1] - edges[:, 0]
    w = edges[:, 0] - a
    denom = d[0] * e[:, 1] - d[1] * e[:, 0]
    crossing = np.abs(denom) > _TINY
    safe = np.where(crossing, denom, 1.0)
    u = (w[:, 0] * e[:, 1] - w[:, 1] * e[:, 0]) / safe
    v = (w[:, 0] * d[1] - w[:, 1] * d[0]) / safe
    # a crossing at a vertex may round to just past both edges' ends (v = -1e-17 on one, the other collinear with
    # the segment): accept a little past the ends, an extra cut only splits an interval that the probes then judge
    hits = u[crossing & (u > 0) & (u < 1) & (v >= -1e-9) & (v <= 1 + 1e-9)]
    cuts = np.unique(np.concatenate([[0.0, 1.0], hits]))
    mids = (cuts[:-1] + cuts[1:]) / 2
    probe = a + mids[:, None] * d
    inside = shapely.contains_xy(polygon, probe[:, 0], probe[:, 1])
    intervals: list[tuple[float, float]] = []
    for lo, hi, flag in zip(cuts[:-1], cuts[1:], inside):
        if not flag or hi - lo <= _TINY:
            continue
        if intervals and abs(intervals[-1][1] - lo) <= _TINY:
            intervals[-1] = (intervals[-1][0], float(hi))
        else:
            intervals.append((float(lo), float(hi)))
    return intervals


def _edge_pieces(edges: np.ndarray, a: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Squared distance from a + u d to each edge as up to three quadratics in u: (coefficients (P, 3), lo, hi).

    Before the edge's start the nearest point is its start, past its end its end, in between the foot on its line.
    """
    q0, q1 = edges[:, 0], edges[:, 1]
    e = q1 - q0
    length2 = np.sum(e * e, axis=1)
    w0, w1 = a - q0, a - q1
    dd = float(d @ d)
    l0, l1 = np.sum(w0 * e, axis=1) / length2, (e @ d) / length2
    c0 = (w0[:, 0] * e[:, 1] - w0[:, 1] * e[:, 0]) / np.sqrt(length2)
    c1 = (d[0] * e[:, 1] - d[1] * e[:, 0]) / np.sqrt(length2)
    start = np.column_stack([np.full(len(e), dd), 2 * (w0 @ d), np.sum(w0 * w0, axis=1)])
    end = np.column_stack([np.full(len(e), dd), 2 * (w1 @ d), np.sum(w1 * w1, axis=1)])
    foot = np.column_stack([c1 * c1, 2 * c0 * c1, c0 * c0])
    moving = np.abs(l1) > _TINY
    slope = np.where(moving, l1, 1.0)
    at0, at1 = -l0 / slope, (1 - l0) / slope  # u where the foot passes the edge's start / end
    first, second = np.minimum(at0, at1), np.maximum(at0, at1)
    rising = l1 > 0
    inf = np.full(len(e), np.inf)
    # moving along the edge: (-inf, first] is before the start when rising, past the end when falling
    low_piece = np.where(rising[:, None], start, end)
    high_piece = np.where(rising[:, None], end, start)
    coeffs = [low_piece, foot, high_piece]
    los = [-inf, first, second]
    his = [first, second, inf]
    # not moving along the edge: one piece, by where the foot sits
    fixed = np.where((l0 < 0)[:, None], start, np.where((l0 > 1)[:, None], end, foot))
    coefficients = np.concatenate([np.where(moving[:, None], c, fixed) for c in coeffs])
    lo = np.concatenate([np.where(moving, x, -np.inf if i == 0 else np.inf) for i, x in enumerate(los)])
    hi = np.concatenate([np.where(moving, x, np.inf if i == 0 else -np.inf) for i, x in enumerate(his)])
    return coefficients, lo, hi


def _quadratic_roots(coefficients: np.ndarray) -> np.ndarray:
    """(k, 2) real roots of c2 u^2 + c1 u + c0 (NaN where absent); linear and constant rows handled."""
    c2, c1, c0 = coefficients.T
    scale = np.maximum.reduce([np.abs(c2), np.abs(c1), np.abs(c0), np.ones(len(c2))])
    quadratic = np.abs(c2) > 1e-12 * scale
    disc = c1 * c1 - 4 * c2 * c0
    root = np.sqrt(np.where(disc >= 0, disc, np.nan))
    q = -0.5 * (c1 + np.where(c1 >= 0, root, -root))
    with np.errstate(divide="ignore", invalid="ignore"):
        r1 = np.where(quadratic, q / np.where(quadratic, c2, 1.0), np.nan)
        r2 = np.where(quadratic, c0 / q, np.nan)
        linear = ~quadratic & (np.abs(c1) > 1e-12 * scale)
        r_lin = np.where(linear, -c0 / np.where(linear, c1, 1.0), np.nan)
    r1 = np.where(quadratic, r1, r_lin)
    r2 = np.where(quadratic, r2, np.nan)
    return np.column_stack([r1, r2])


def deepest_point(
    edges: np.ndarray, a: np.ndarray, b: np.ndarray, lo: float, hi: float, polish: bool = True
) -> tuple[float, float]:
    """(u, depth): the point of [lo, hi] (inside the polygon) farthest from its boundary."""
    d = b - a
    coefficients, piece_lo, piece_hi = _edge_pieces(edges, a, d)
    live = (piece_lo <= hi) & (piece_hi >= lo)
    coefficients, piece_lo, piece_hi = (
        coefficients[live],
        np.maximum(piece_lo[live], lo),
        np.minimum(piece_hi[live], hi),
    )
    i, j = np.triu_indices(len(coefficients), k=1)
    overlap_lo, overlap_hi = np.maximum(piece_lo[i], piece_lo[j]), np.minimum(piece_hi[i], piece_hi[j])
    keep = overlap_lo <= overlap_hi
    i, j, overlap_lo, overlap_hi = i[keep], j[keep], overlap_lo[keep], overlap_hi[keep]
    roots = _quadratic_roots(coefficients[i] - coefficients[j])
    inside = (roots >= overlap_lo[:, None]) & (roots <= overlap_hi[:, None])
    candidates = np.concatenate([[lo, hi], roots[inside]])
    depth = point_boundary_distance(edges, a + candidates[:, None] * d)
    best = int(np.argmax(depth))
    u, found = float(candidates[best]), float(depth[best])
    if polish:  # once more from the point found: far from a, the roots of the squared distances lose digits
        centre = a + u * d
        du, again = deepest_point(edges, centre, centre + d, lo - u, hi - u, polish=False)
        if again > found:
            return min(max(u + du, lo), hi), again
    return u, found


def _within(lo: float, hi: float, u: float) -> float:
    """The parameter u of a sub-piece [lo, hi] as a parameter of the whole segment; clamped, because lo + u (hi - lo)
    can land one rounding step outside [lo, hi]."""
    return min(hi, max(lo, lo + u * (hi - lo)))


def min_signed_distance(
    polygon: Polygon, edges: np.ndarray, a: np.ndarray, b: np.ndarray, lo: float = 0.0, hi: float = 1.0
) -> tuple[float, float]:
    """(u, value): the minimum over u in [lo, hi] of the horizontal signed distance of a + u (b - a) (2D)."""
    a, b = np.asarray(a, dtype=float)[:2], np.asarray(b, dtype=float)[:2]
    start, stop = a + lo * (b - a), a + hi * (b - a)
    u, _, distance = closest_segment_points(start, stop, edges[:, 0], edges[:, 1])
    nearest = int(np.argmin(distance))
    touching = distance[nearest] <= 1e-9
    if not touching and not shapely.contains_xy(polygon, start[0], start[1]):
        return _within(lo, hi, float(u[nearest])), float(distance[nearest])
    intervals = inside_intervals(polygon, edges, start, stop)
    if not intervals:  # grazes the boundary from outside
        return _within(lo, hi, float(u[nearest])), float(distance[nearest])
    deepest = [deepest_point(edges, start, stop, i_lo, i_hi) for i_lo, i_hi in intervals]
    u_best, depth = max(deepest, key=lambda item: item[1])
    return _within(lo, hi, u_best), -depth


def min_face_distance(
    polygon: Polygon, edges: np.ndarray, height: float, a: np.ndarray, b: np.ndarray, lo: float, hi: float
) -> tuple[float, float]:
    """(u, value): the minimum over u in [lo, hi] of the 3D distance from a + u (b - a) to the flat face
    polygon x {height}, for a part of the segment that stays on one side of that height."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    start, stop = a + lo * (b - a), a + hi * (b - a)
    level = np.full((len(edges), 1), height)
    e0, e1 = np.hstack([edges[:, 0], level]), np.hstack([edges[:, 1], level])
    u, _, distance = closest_segment_points(start, stop, e0, e1)
    k = int(np.argmin(distance))
    best_u, best = float(u[k]), float(distance[k])
    for i_lo, i_hi in inside_intervals(polygon, edges, start[:2], stop[:2]):
        for end in (i_lo, i_hi):  # over the face the distance is the height gap, linear in u
            gap = abs(start[2] + end * (stop[2] - start[2]) - height)
            if gap < best:
                best_u, best = end, gap
    return _within(lo, hi, best_u), best


def band_parts(z0: float, z1: float, low: float, high: float, lo: float, hi: float) -> list[tuple[str, float, float]]:
    """Split [lo, hi] of a segment climbing linearly from z0 to z1 into its parts below / in / above [low, high]."""
    cuts = [lo, hi]
    if abs(z1 - z0) > 1e-12:  # flatter than that: one part (and no overflow dividing by a subnormal)
        cuts += [c for c in ((low - z0) / (z1 - z0), (high - z0) / (z1 - z0)) if lo < c < hi]
    cuts = sorted(cuts)
    parts = []
    for p_lo, p_hi in zip(cuts, cuts[1:]):
        z = z0 + (p_lo + p_hi) / 2 * (z1 - z0)
        side = "below" if z < low else "above" if z > high else "band"
        parts.append((side, p_lo, p_hi))
    return parts


def min_prism_distance(
    polygon: Polygon,
    edges: np.ndarray,
    low: float,
    high: float,
    a: np.ndarray,
    b: np.ndarray,
    lo: float = 0.0,
    hi: float = 1.0,
) -> tuple[float, float]:
    """(u, value): the minimum over [lo, hi] of the distance to the volume polygon x [low, high]: horizontal and
    signed inside the band (negative within the footprint), 3D to the top or bottom face above or below it."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    best = (lo, math.inf)
    for side, p_lo, p_hi in band_parts(a[2], b[2], low, high, lo, hi):
        if side == "band":
            found = min_signed_distance(polygon, edges, a, b, p_lo, p_hi)
        else:
            found = min_face_distance(polygon, edges, high if side == "above" else low, a, b, p_lo, p_hi)
        if found[1] < best[1]:
            best = found
    for end in (lo, hi):  # an end on the band's edge with the rest outside it: a band part of zero length
        point = a + end * (b - a)
        if low <= point[2] <= high:
            depth = float(point_boundary_distance(edges, point[None, :2])[0])
            value = -depth if shapely.contains_xy(polygon, point[0], point[1]) else depth
            if value < best[1]:
                best = (end, value)
    return best


def disc_crossings(centre: np.ndarray, radius: float, a: np.ndarray, b: np.ndarray) -> list[float]:
    """u in (0, 1) where a + u (b - a) crosses the circle of `radius` around `centre` (2D)."""
    d, w = b[:2] - a[:2], a[:2] - centre
    roots = _quadratic_roots(np.array([[d @ d, 2 * (w @ d), w @ w - radius * radius]]))[0]
    return sorted(float(r) for r in roots if np.isfinite(r) and 0 < r < 1)


def closest_approach(rel0: np.ndarray, velocity: np.ndarray, duration: np.ndarray) -> np.ndarray:
    """Per row, the time in [0, duration] when the relative position rel0 + t * velocity is shortest."""
    speed2 = np.sum(velocity * velocity, axis=-1)
    moving = speed2 > _TINY
    t = -np.sum(rel0 * velocity, axis=-1) / np.where(moving, speed2, 1.0)
    return np.where(moving, np.clip(t, 0.0, duration), 0.0)
