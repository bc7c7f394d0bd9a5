"""The time grid on which a piecewise-linear 4D track is judged exactly.

The verifier (and the simulator, on the track it flew) evaluates its signals at these instants and hands them to
rtamt's dense-time monitor, which interpolates linearly between them. The grid holds:
- every waypoint;
- the instant where each distance signal is smallest on a segment (no-fly zones in their altitude band and active
  window, buildings, sensitive-zone buffers, other traffic, the goal), found exactly by tools/segment_geometry,
  for every segment where that minimum may be the flight's minimum or cross its rule's threshold (every segment
  when an STL spec has a time window);
- the instants where a membership switches (entering / leaving a corridor, a zone named by an LTL atom, an
  arrival disc, the take-off / landing discs where the altitude floor is waived, a zone's active window, another
  UAV's flight), each with a sample on either side, so a piecewise-constant signal (corridor load, an LTL atom)
  is seen on every interval where it is constant;
- the deadline and the bounds of the STL specs' temporal operators (relative to the start).
So the minimum of each signal over the grid is its minimum over the continuous flight, and `always` /
`eventually` robustness (the min / max over an interval whose ends are on the grid) is exact.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import shapely
from shapely.geometry import Polygon

from tools import segment_geometry as geo
from tools.trajectory import positions
from tools.world import Corridor, NoFlyZone, TimeWindow, TrafficTrack

_BOUNDS = re.compile(r"\[\s*([0-9.eE+-]+)\s*:\s*([0-9.eE+-]+)\s*\]")


@dataclass(frozen=True)
class Segments:
    """The straight pieces of a 4D track (zero-duration pieces dropped: they do not move)."""

    start: np.ndarray  # (k, 3)
    end: np.ndarray  # (k, 3)
    t0: np.ndarray  # (k,)
    t1: np.ndarray  # (k,)
    first: np.ndarray  # (k,) index of each piece's first waypoint

    @classmethod
    def of(cls, waypoints: np.ndarray) -> Segments:
        first = np.flatnonzero(np.diff(waypoints[:, 3]) > 0)
        return cls(waypoints[first, :3], waypoints[first + 1, :3], waypoints[first, 3], waypoints[first + 1, 3], first)

    def __len__(self) -> int:
        return len(self.t0)

    def time(self, k: int, u: float) -> float:
        return float(self.t0[k] + u * (self.t1[k] - self.t0[k]))

    def u_at(self, k: int, t: float) -> float:
        return (t - float(self.t0[k])) / float(self.t1[k] - self.t0[k])

    def lines(self) -> np.ndarray:
        """Each piece's horizontal trace; a vertical (or hovering) piece's is a point, since GEOS's STRtree finds
        no `dwithin` partner for a zero-length line."""
        lines = shapely.linestrings(np.stack([self.start[:, :2], self.end[:, :2]], axis=1))
        flat = np.all(self.start[:, :2] == self.end[:, :2], axis=1)
        return np.where(flat, shapely.points(self.start[:, :2]), lines)


@dataclass(frozen=True)
class Volume:
    """A keep-out volume: polygon x [low, high], active in `window`, its signal lowered by `offset` (a buffer)."""

    id: str
    shape: Polygon
    low: float = -math.inf
    high: float = math.inf
    window: TimeWindow | None = None
    offset: float = 0.0

    @classmethod
    def of_nfz(cls, zone: NoFlyZone) -> Volume:
        return cls(zone.id, zone.shape, zone.alt_min_m, zone.alt_max_m, zone.active_window)

    @classmethod
    def of_corridor(cls, corridor: Corridor) -> Volume:
        return cls(corridor.id, corridor.shape, corridor.alt_min_m, corridor.alt_max_m)

    def active_range(self, segments: Segments, k: int) -> tuple[float, float] | None:
        """The u-range of segment k during which the volume is active (None: never)."""
        if self.window is None:
            return 0.0, 1.0
        lo = max(0.0, segments.u_at(k, self.window.start_sec))
        hi = min(1.0, segments.u_at(k, self.window.end_sec))
        return (lo, hi) if lo <= hi else None

    def window_times(self) -> list[float]:
        return [] if self.window is None else [self.window.start_sec, self.window.end_sec]


def minimum_times(
    segments: Segments,
    volumes: Sequence[Volume],
    at_waypoints: np.ndarray,
    threshold: float,
    per_segment: bool = False,
) -> list[float]:
    """Instants where the smallest of the volumes' signals (given at the waypoints) is lowest on a segment.

    A segment's minimum matters where it may be the flight's minimum (under the lowest waypoint value) or may cross
    `threshold` (the value a rule or an event compares with), or everywhere with `per_segment` (time-windowed
    specs). A segment's end values bound its minimum from above and the horizontal distance to a volume bounds it
    from below, so only the volumes within that bound are solved exactly.
    """
    if not volumes or not len(segments):
        return []
    ends = np.minimum(at_waypoints[segments.first], at_waypoints[segments.first + 1])
    wanted = ends if per_segment else np.minimum(ends, max(float(at_waypoints.min()), threshold))
    bound = wanted + max(v.offset for v in volumes)
    tree = shapely.STRtree([v.shape for v in volumes])
    seg_idx, vol_idx = tree.query(segments.lines(), predicate="dwithin", distance=np.maximum(bound, 0.0))
    edges = {i: geo.polygon_edges(volumes[i].shape) for i in np.unique(vol_idx)}
    best: dict[int, tuple[float, float, int]] = {}
    for k, i in zip(seg_idx.tolist(), vol_idx.tolist()):
        volume = volumes[i]
        active = volume.active_range(segments, k)
        if active is None:
            continue
        u, value = geo.min_prism_distance(
            volume.shape, edges[i], volume.low, volume.high, segments.start[k], segments.end[k], *active
        )
        value -= volume.offset
        if k not in best or value < best[k][1]:
            best[k] = (u, value, i)
    return [_into_band(segments, k, segments.time(k, u), volumes[i]) for k, (u, _, i) in best.items()]


MAX_NUDGE_SEC = 1e-9  # how far _into_band may move a minimum's time (15 m/s x 1e-9 s: 1.5e-8 m of track)


def _into_band(segments: Segments, k: int, t: float, volume: Volume) -> float:
    """`t`, moved by a few ulps where needed so that segment k's altitude there, as `sample_track` interpolates
    it, lies in the volume's band [low, high]: a minimum found on the band's edge (entering a zone or a roof's
    height) belongs to the band, where the signal is the (negative) horizontal one, and a rounding to just
    outside would read the small 3D distance to the face instead."""
    t0, t1 = float(segments.t0[k]), float(segments.t1[k])
    z0, z1 = float(segments.start[k, 2]), float(segments.end[k, 2])
    low, high = volume.low, volume.high
    z = float(np.interp(t, [t0, t1], [z0, z1]))
    if low <= z <= high or z0 == z1 or not (low - 1e-9 <= z <= high + 1e-9):
        return t
    toward = -1.0 if (z > high) == (z1 > z0) else 1.0  # back in time if too high and climbing, etc.
    step = max(abs(t), 1.0) * 2.0**-52
    while step <= MAX_NUDGE_SEC:  # a rounding fix only: a near-level segment may reach the band far away
        moved = min(max(t + toward * step, t0), t1)
        if low <= float(np.interp(moved, [t0, t1], [z0, z1])) <= high:
            return moved
        step *= 2.0
    return t


def membership_times(segments: Segments, volumes: Iterable[Volume]) -> list[float]:
    """Instants where the track enters or leaves each volume (in its band and active window)."""
    volumes = list(volumes)
    if not volumes or not len(segments):
        return []
    times = [t for v in volumes for t in v.window_times()]
    seg_idx, vol_idx = shapely.STRtree([v.shape for v in volumes]).query(segments.lines(), predicate="intersects")
    for k, i in zip(seg_idx.tolist(), vol_idx.tolist()):
        volume = volumes[i]
        a, b = segments.start[k], segments.end[k]
        for lo, hi in geo.inside_intervals(volume.shape, geo.polygon_edges(volume.shape), a[:2], b[:2]):
            for side, p_lo, p_hi in geo.band_parts(a[2], b[2], volume.low, volume.high, lo, hi):
                if side == "band":
                    times += [segments.time(k, p_lo), segments.time(k, p_hi)]
    return times


def disc_times(segments: Segments, centres: Iterable[tuple[float, float]], radius: float) -> list[float]:
    """Instants where the track crosses the circle of `radius` around each centre (arrival discs)."""
    times = []
    for centre in centres:
        c = np.asarray(centre, dtype=float)
        for k in range(len(segments)):
            times += [segments.time(k, u) for u in geo.disc_crossings(c, radius, segments.start[k], segments.end[k])]
    return times


def level_times(segments: Segments, level: float) -> list[float]:
    """Instants where the track's altitude crosses `level`."""
    z0, z1 = segments.start[:, 2], segments.end[:, 2]
    crossing = (z0 - level) * (z1 - level) < 0
    u = (level - z0[crossing]) / (z1[crossing] - z0[crossing])
    return [segments.time(k, float(x)) for k, x in zip(np.flatnonzero(crossing), u)]


def point_approach_times(segments: Segments, xy: tuple[float, float]) -> list[float]:
    """Per segment, the instant of horizontal closest approach to a point (e.g. the goal)."""
    if not len(segments):
        return []
    d = segments.end[:, :2] - segments.start[:, :2]
    w = np.asarray(xy, dtype=float) - segments.start[:, :2]
    length2 = np.sum(d * d, axis=1)
    u = np.clip(np.sum(w * d, axis=1) / np.where(length2 > 0, length2, 1.0), 0, 1)
    return (segments.t0 + u * (segments.t1 - segments.t0)).tolist()


def traffic_times(waypoints: np.ndarray, tracks: Sequence[TrafficTrack]) -> list[float]:
    """Closest approach to each other UAV on every interval where both fly straight, and when each takes off or lands."""
    times: list[float] = []
    for track in tracks:
        other = np.asarray(track.waypoints, dtype=float)
        lo, hi = max(waypoints[0, 3], other[0, 3]), min(waypoints[-1, 3], other[-1, 3])
        times += [other[0, 3], other[-1, 3]]
        if lo >= hi:
            continue
        cuts = np.unique(np.concatenate([[lo, hi], waypoints[:, 3], other[:, 3]]))
        cuts = cuts[(cuts >= lo) & (cuts <= hi)]
        rel = positions(waypoints, cuts) - positions(other, cuts)
        duration = np.diff(cuts)
        velocity = np.diff(rel, axis=0) / duration[:, None]
        times += (cuts[:-1] + geo.closest_approach(rel[:-1], velocity, duration)).tolist()
    return times


def stl_bound_times(specs: Iterable[str], t0: float) -> list[float]:
    """Start + every [a:b] bound written in the STL specs (the window ends of their temporal operators)."""
    times = []
    for spec in specs:
        for a, b in _BOUNDS.findall(spec):
            try:
                times += [t0 + float(a), t0 + float(b)]
            except ValueError:
                continue
    return times


def assemble(waypoints: np.ndarray, minima: Iterable[float], events: Iterable[float]) -> np.ndarray:
    """Sorted grid: waypoint times, the minima and the events, plus a sample between each event and its neighbours
    (so every interval between two events holds a sample). Times outside the flight are dropped."""
    t0, t1 = float(waypoints[0, 3]), float(waypoints[-1, 3])
    events = np.asarray([t for t in events if t0 <= t <= t1], dtype=float)
    base = np.unique(np.concatenate([waypoints[:, 3], np.asarray(list(minima), dtype=float), events]))
    base = base[(base >= t0) & (base <= t1)]
    if len(events) and len(base) > 1:
        at = np.searchsorted(base, events)
        before, after = at[at > 0], at[at < len(base) - 1]
        mids = np.concatenate([(base[before - 1] + base[before]) / 2, (base[after] + base[after + 1]) / 2])
        base = np.unique(np.concatenate([base, mids]))
    return base


def sample_track(waypoints: np.ndarray, times: np.ndarray) -> np.ndarray:
    """(n, 4) rows (x, y, z, t) of the track at `times`."""
    return np.column_stack([positions(waypoints, times), times])
