"""Per-sample safety signals on a sampled 4D trajectory: an (n, 4) array of rows (x, y, z, t).

The verifier feeds these signals to its STL monitor (rules R1-R6) and its LTL atoms; the simulator calls the same
functions on its perturbed positions (with its own extra traffic and pop-up zones), so every function takes plain
arrays and optional entity lists instead of a Trajectory.

Distances are in metres. A signal that has nothing to measure at a sample (no active zone, no other UAV in the air)
takes the value `far_distance(world)`, which is larger than any distance on the map, so that `min` over samples and
entities stays meaningful and the numbers stay JSON-friendly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import shapely
from shapely.geometry import Polygon

from tools import exact_grid as grid
from tools.energy import battery_profile
from tools.trajectory import positions
from tools.world import UAV, Corridor, NoFlyZone, Reservation, SensitiveZone, TrafficTrack, World

AIRBORNE_MIN_ALT_M = 1.0  # the `airborne` atom: above this altitude
_BOUNDARY_M = 1e-6  # rounding allowance for a sample placed on a disc's rim
GROUNDED_EPSILON_M = 0.05  # a UAV at most this high above the surface stands on it (parked, not flying)


@dataclass(frozen=True)
class Margin:
    """A signal that is a minimum over entities, with the entity that attains it at each sample."""

    values: np.ndarray  # (n,) float
    entities: tuple[str | None, ...]  # (n,) worst entity id per sample; None where nothing applies

    def worst(self) -> tuple[int, float, str | None]:
        """(sample index, value, entity) of the smallest value over the whole trajectory."""
        index = int(np.argmin(self.values))
        return index, float(self.values[index]), self.entities[index]


@dataclass(frozen=True)
class CorridorLoad:
    """Corridor occupancy while we fly: load counts us (+1) and the other traffic inside the same corridor."""

    load: np.ndarray  # (n,) slots taken in the worst corridor we are inside, ours included (0 outside corridors)
    capacity: np.ndarray  # (n,) that corridor's capacity (the largest capacity on the map outside corridors)
    entities: tuple[str | None, ...]  # corridor id per sample; None outside corridors

    @property
    def margin(self) -> Margin:
        return Margin(self.capacity - self.load, self.entities)


@dataclass(frozen=True)
class SignalSet:
    """All signals of one sampled trajectory, by the names the STL specs use."""

    samples: np.ndarray
    nfz: Margin
    obstacle: Margin
    sensitive: Margin
    separation: Margin
    corridor: CorridorLoad
    altitude_margin: np.ndarray
    goal_dist: np.ndarray | None
    battery: np.ndarray | None
    reservation: Margin | None = None  # R9: None when the world holds no approved intent

    @property
    def times(self) -> np.ndarray:
        return self.samples[:, 3]

    def stl_dataset(self) -> dict[str, np.ndarray]:
        """Signal name -> values, the variables an STL spec may use (see tools/stl_monitor.SIGNAL_DOCS)."""
        data = {
            "nfz_margin": self.nfz.values,
            "obstacle_clearance": self.obstacle.values,
            "sensitive_clearance": self.sensitive.values,
            "separation": self.separation.values,
            "clearance": np.minimum(self.obstacle.values, self.separation.values),
            "alt": self.samples[:, 2],
            "alt_margin": self.altitude_margin,
            "load": self.corridor.load,
            "capacity": self.corridor.capacity,
        }
        if self.goal_dist is not None:
            data["goal_dist"] = self.goal_dist
        if self.battery is not None:
            data["battery"] = self.battery
        if self.reservation is not None:
            data["intent_margin"] = self.reservation.values
        return data


def far_distance(world: World) -> float:
    """A distance larger than any on the map (the value of a signal with nothing to measure)."""
    return 2.0 * math.hypot(world.grid.width_m, world.grid.depth_m, world.grid.ceiling_m)


def signed_distances(polygons: Sequence[Polygon], xy: np.ndarray) -> np.ndarray:
    """(polygons, points): horizontal distance to each polygon's boundary, positive outside, negative inside
    (one vectorised GEOS call for all pairs)."""
    if not len(polygons):
        return np.zeros((0, len(xy)))
    shapes = np.asarray(polygons, dtype=object)[:, None]
    points = shapely.points(xy[:, 0], xy[:, 1])[None, :]
    distance = shapely.distance(shapely.boundary(shapes), points)
    inside = shapely.contains_xy(shapes, xy[None, :, 0], xy[None, :, 1])
    return np.where(inside, -distance, distance)


def positions_at(waypoints: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interpolated (x, y, z) of a 4D track at `times`, and whether the track is in the air at each time."""
    flying = (times >= waypoints[0, 3]) & (times <= waypoints[-1, 3])
    return positions(waypoints, times), flying


def nfz_margin(world: World, samples: np.ndarray, zones: Sequence[NoFlyZone] | None = None) -> Margin:
    """Signed distance to the no-fly zones active at each second: negative inside one (rule R1).

    Inside a zone's altitude band the distance is horizontal (how far to fly sideways to leave it); above or below
    the band it is the 3D distance to the zone's volume, so the signal stays continuous at the band's edges.
    """
    zones = world.no_fly_zones if zones is None else zones
    far = far_distance(world)
    z, t = samples[:, 2], samples[:, 3]
    columns = []
    for zone, horizontal in zip(zones, signed_distances([zone.shape for zone in zones], samples[:, :2])):
        gap = np.maximum.reduce([zone.alt_min_m - z, z - zone.alt_max_m, np.zeros_like(z)])
        value = np.where(gap > 0, np.hypot(np.maximum(horizontal, 0.0), gap), horizontal)
        active = _active(zone, t)
        columns.append(np.where(active, value, far))
    return _min_over(columns, [zone.id for zone in zones], len(samples), far)


def obstacle_clearance(world: World, samples: np.ndarray, pads: Sequence[tuple[float, float]] = ()) -> Margin:
    """Clearance to buildings: horizontal at or below the roof, 3D over it; negative inside a building.

    `pads` are the points a flight takes off from and lands on (its track's ends). A pad inside a building's
    outline is on its roof: over the pad (strictly within the world's arrival tolerance, as `terminal_phase`) and
    no lower than that roof, the UAV is taking off from or landing on it, so that building does not count there;
    every other building does, and so does that one anywhere else.
    """
    far = far_distance(world)
    z = samples[:, 2]
    columns = []
    horizontals = signed_distances([building.shape for building in world.buildings], samples[:, :2])
    on_pad: dict[str, np.ndarray] = {}
    for pad in pads:
        near = np.linalg.norm(samples[:, :2] - np.asarray(pad, dtype=float), axis=1) < world.arrival_tolerance_m
        for building in world.pad_buildings(pad):
            standing = near & (z >= building.height_m - _BOUNDARY_M)
            on_pad[building.id] = on_pad.get(building.id, np.zeros(len(z), dtype=bool)) | standing
    for building, horizontal in zip(world.buildings, horizontals):
        over_roof = z > building.height_m
        value = np.where(over_roof, np.hypot(np.maximum(horizontal, 0.0), z - building.height_m), horizontal)
        columns.append(np.where(on_pad[building.id], far, value) if building.id in on_pad else value)
    return _min_over(columns, [b.id for b in world.buildings], len(samples), far)


def track_pads(samples: np.ndarray) -> tuple[tuple[float, float], tuple[float, float]]:
    """Where a track takes off and lands: its first and last points."""
    return (float(samples[0, 0]), float(samples[0, 1])), (float(samples[-1, 0]), float(samples[-1, 1]))


def sensitive_clearance(world: World, samples: np.ndarray, exempt: Iterable[str] = ()) -> Margin:
    """Horizontal distance to each sensitive zone minus its buffer (negative inside the buffer), any altitude.

    `exempt` names zones the task cannot keep clear of (its own origin or destination lies inside them).
    """
    skipped = set(exempt)
    zones = [zone for zone in world.sensitive_zones if zone.id not in skipped]
    horizontals = signed_distances([zone.shape for zone in zones], samples[:, :2])
    columns = [horizontal - zone.buffer_m for zone, horizontal in zip(zones, horizontals)]
    return _min_over(columns, [zone.id for zone in zones], len(samples), far_distance(world))


def zones_containing(world: World, xy: Iterable[tuple[float, float]]) -> list[str]:
    """Sensitive zones whose buffered area contains one of the points (the task's own origin / destination)."""
    points = list(xy)
    return [z.id for z in world.sensitive_zones if any(z.buffered_shape.covers(shapely.Point(p)) for p in points)]


def surface_heights(world: World, xy: np.ndarray) -> np.ndarray:
    """World.surface_height_m at every (x, y) row: the highest roof whose footprint holds it, else 0 (vectorised)."""
    heights = np.zeros(len(xy))
    if not len(xy):
        return heights
    points = shapely.points(xy[:, 0], xy[:, 1])
    for building in world.buildings:
        covered = shapely.covers(building.shape, points)
        heights = np.where(covered, np.maximum(heights, building.height_m), heights)
    return heights


def on_ground(world: World, xyz: np.ndarray, candidates: np.ndarray | None = None) -> np.ndarray:
    """Whether each (x, y, z) row stands on the surface (z within GROUNDED_EPSILON_M of it); only the rows in
    `candidates` are looked at (the others are not on the ground)."""
    low = xyz[:, 2] <= _highest_surface(world) + GROUNDED_EPSILON_M
    if candidates is not None:
        low &= candidates
    grounded = np.zeros(len(xyz), dtype=bool)
    if low.any():
        rows = np.flatnonzero(low)
        grounded[rows] = np.abs(xyz[rows, 2] - surface_heights(world, xyz[rows, :2])) <= GROUNDED_EPSILON_M
    return grounded


def _highest_surface(world: World) -> float:
    return max((b.height_m for b in world.buildings), default=0.0)


def traffic_separation(world: World, samples: np.ndarray, tracks: Sequence[TrafficTrack] | None = None) -> Margin:
    """3D distance to every other UAV in the world at the same second (tracks interpolated; a track counts over its
    own time span). A sample where both we and the other UAV stand on the ground (parked side by side) is not a
    separation: only a pair with at least one of the two in the air is measured."""
    tracks = world.traffic if tracks is None else tracks
    far = far_distance(world)
    columns = []
    own_low: np.ndarray | None = None
    for track in tracks:
        xyz, flying = positions_at(np.asarray(track.waypoints, dtype=float), samples[:, 3])
        distance = np.where(flying, np.linalg.norm(xyz - samples[:, :3], axis=1), far)
        ceiling = _highest_surface(world) + GROUNDED_EPSILON_M
        both_low = flying & (xyz[:, 2] <= ceiling) & (samples[:, 2] <= ceiling)
        if both_low.any():  # never for airborne traffic: single-UAV results are unchanged
            if own_low is None:
                own_low = on_ground(world, samples[:, :3])
            grounded = own_low & on_ground(world, xyz, both_low)
            distance = np.where(grounded, far, distance)
        columns.append(distance)
    return _min_over(columns, [track.id for track in tracks], len(samples), far)


def inside_corridor(corridor: Corridor, xyz: np.ndarray) -> np.ndarray:
    in_band = (xyz[:, 2] >= corridor.alt_min_m) & (xyz[:, 2] <= corridor.alt_max_m)
    return in_band & shapely.contains_xy(corridor.shape, xyz[:, 0], xyz[:, 1])


def corridor_load(
    world: World, samples: np.ndarray, tracks: Sequence[TrafficTrack] | None = None, own_slots: int = 1
) -> CorridorLoad:
    """Load of the corridors we are inside (rule R6): the world's current load + other traffic inside + our slots."""
    tracks = world.traffic if tracks is None else tracks
    n = len(samples)
    outside_capacity = float(max((c.capacity for c in world.corridors), default=1))
    load, capacity = np.zeros(n), np.full(n, outside_capacity)
    entities: list[str | None] = [None] * n
    track_positions = [positions_at(np.asarray(t.waypoints, dtype=float), samples[:, 3]) for t in tracks]
    for corridor in world.corridors:
        ours = inside_corridor(corridor, samples[:, :3])
        others = sum((flying & inside_corridor(corridor, xyz)).astype(int) for xyz, flying in track_positions)
        corridor_load_now = corridor.load + others + own_slots
        worse = ours & (corridor.capacity - corridor_load_now < capacity - load)
        load = np.where(worse, corridor_load_now, load)
        capacity = np.where(worse, corridor.capacity, capacity)
        entities = [corridor.id if w else e for w, e in zip(worse, entities)]
    return CorridorLoad(load.astype(float), capacity, tuple(entities))


def terminal_phase(samples: np.ndarray, tolerance_m: float) -> np.ndarray:
    """Samples of the take-off / landing verticals: strictly within the tolerance (horizontally) of either end."""
    xy = samples[:, :2]
    inner = tolerance_m - _BOUNDARY_M  # the disc's rim belongs to the cruise: the exact grid samples it there
    near_start = np.linalg.norm(xy - xy[0], axis=1) < inner
    near_end = np.linalg.norm(xy - xy[-1], axis=1) < inner
    return near_start | near_end


def altitude_margin(samples: np.ndarray, alt_min_m: float, alt_max_m: float, tolerance_m: float) -> np.ndarray:
    """Distance inside the altitude band (rule R3), negative outside it.

    The floor does not apply on the take-off and landing verticals over the origin and the goal (a UAV must climb
    through it); the ceiling always does.
    """
    z = samples[:, 2]
    above_floor = np.where(terminal_phase(samples, tolerance_m), np.inf, z - alt_min_m)
    return np.minimum(above_floor, alt_max_m - z)


def horizontal_distance(samples: np.ndarray, xy: tuple[float, float]) -> np.ndarray:
    return np.linalg.norm(samples[:, :2] - np.asarray(xy, dtype=float), axis=1)


def compute_signals(
    world: World,
    samples: np.ndarray,
    *,
    alt_min_m: float,
    alt_max_m: float,
    goal_xy: tuple[float, float] | None = None,
    uav: UAV | None = None,
    payload_kg: float = 0.0,
    exempt_sensitive: Iterable[str] = (),
    own_slots: int = 1,
    energy_track: np.ndarray | None = None,
    reservations: Sequence[Reservation] = (),
) -> SignalSet:
    """All signals at `samples`. The battery is integrated along `energy_track` (default: the samples; the
    verifier passes the 1 Hz track, the energy model's resolution) and read off at the sample times."""
    battery = None
    if uav is not None:
        track = samples if energy_track is None else energy_track
        battery = np.interp(samples[:, 3], track[:, 3], battery_profile(world, uav, track, payload_kg))
    return SignalSet(
        samples=samples,
        nfz=nfz_margin(world, samples),
        obstacle=obstacle_clearance(world, samples, track_pads(samples)),
        sensitive=sensitive_clearance(world, samples, exempt_sensitive),
        separation=traffic_separation(world, samples),
        corridor=corridor_load(world, samples, own_slots=own_slots),
        altitude_margin=altitude_margin(samples, alt_min_m, alt_max_m, world.arrival_tolerance_m),
        goal_dist=None if goal_xy is None else horizontal_distance(samples, goal_xy),
        battery=battery,
        # R9 is judged whenever the world holds approved intents; only those near the route can decide it
        reservation=nfz_margin(world, samples, reservations) if world.reservations else None,
    )


def reservations_near(world: World, waypoints: np.ndarray, reach_m: float) -> list[Reservation]:
    """The reservations a track can come within `reach_m` of while they are active: the only ones that can decide
    R9 (the rest are further than that all the time), found through an index so a ledger of thousands costs one
    query."""
    if not world.reservations:
        return []
    t0, t1 = float(waypoints[0, 3]), float(waypoints[-1, 3])
    path = shapely.LineString(waypoints[:, :2]) if len(waypoints) > 1 else shapely.Point(waypoints[0, :2])
    hits = world.reservation_tree.query(path, predicate="dwithin", distance=reach_m)
    near = [world.reservations[i] for i in sorted(hits)]
    return [r for r in near if r.active_during(t0, t1)]


def exact_times(
    world: World,
    waypoints: np.ndarray,
    *,
    zones: Sequence[NoFlyZone] | None = None,
    tracks: Sequence[TrafficTrack] | None = None,
    exempt_sensitive: Iterable[str] = (),
    goal_xy: tuple[float, float] | None = None,
    origin_xy: tuple[float, float] | None = None,
    deadline_sec: float | None = None,
    min_separation_m: float = 0.0,
    atoms: Iterable[str] = (),
    stl_specs: Sequence[str] = (),
) -> np.ndarray:
    """The instants at which every signal of this module, and every LTL atom in `atoms`, is judged exactly on the
    piecewise-linear track `waypoints` (see tools/exact_grid)."""
    zones = world.no_fly_zones if zones is None else zones
    tracks = world.traffic if tracks is None else tracks
    exempt = set(exempt_sensitive)
    segments = grid.Segments.of(waypoints)
    sensitive = [z for z in world.sensitive_zones if z.id not in exempt]
    nfz_volumes = [grid.Volume.of_nfz(zone) for zone in zones]
    windowed = bool(grid.stl_bound_times(stl_specs, 0.0))  # a time-windowed spec needs every segment's minima
    minima = [
        *grid.minimum_times(segments, nfz_volumes, nfz_margin(world, waypoints, zones).values, 0.0, windowed),
        *grid.minimum_times(
            segments,
            [grid.Volume(b.id, b.shape, high=b.height_m) for b in world.buildings],
            obstacle_clearance(world, waypoints).values,  # without the pads: every building's minima are timed
            min_separation_m,
            windowed,
        ),
        *grid.minimum_times(
            segments,
            [grid.Volume(z.id, z.shape, offset=z.buffer_m) for z in sensitive],
            sensitive_clearance(world, waypoints, exempt).values,
            0.0,
            windowed,
        ),
        *grid.traffic_times(waypoints, tracks),
        *([] if goal_xy is None else grid.point_approach_times(segments, goal_xy)),
    ]
    corridors = [grid.Volume.of_corridor(c) for c in world.corridors]
    ends = [tuple(waypoints[0, :2]), tuple(waypoints[-1, :2])]
    events = [
        *grid.membership_times(segments, nfz_volumes),  # so a violation is reported from its entry on
        *grid.membership_times(segments, corridors),
        *(
            t
            for track in tracks
            for t in grid.membership_times(grid.Segments.of(np.asarray(track.waypoints)), corridors)
        ),
        *grid.disc_times(segments, ends, world.arrival_tolerance_m),
        *_atom_times(world, segments, set(atoms), origin_xy or ends[0], goal_xy or ends[1]),
        *([] if deadline_sec is None else [deadline_sec]),
        *grid.stl_bound_times(stl_specs, float(waypoints[0, 3])),
    ]
    return grid.assemble(waypoints, minima, events)


def _atom_times(
    world: World, segments: grid.Segments, atoms: set[str], origin_xy: tuple[float, float], goal_xy: tuple[float, float]
) -> list[float]:
    """Instants where one of the LTL atoms can switch (see `atom_values` for their meaning)."""
    zones = zone_atoms(world)
    volumes = []
    for atom in atoms & set(zones):
        zone = zones[atom]
        if isinstance(zone, NoFlyZone):
            volumes.append(grid.Volume.of_nfz(zone))
        elif isinstance(zone, Corridor):
            volumes.append(grid.Volume.of_corridor(zone))
        else:
            volumes.append(grid.Volume(zone.id, zone.shape))
    places = {"at_origin": origin_xy, "at_goal": goal_xy}
    places.update({f"at_{e}": world.entity_index[e].position for e in world.entity_index if f"at_{e}" in atoms})
    centres = [xy for atom, xy in places.items() if atom in atoms]
    times = grid.membership_times(segments, volumes) + grid.disc_times(segments, centres, world.arrival_tolerance_m)
    return times + (grid.level_times(segments, AIRBORNE_MIN_ALT_M) if "airborne" in atoms else [])


# --- LTL atoms -------------------------------------------------------------------------------------------------
def zone_atoms(world: World) -> dict[str, NoFlyZone | SensitiveZone | Corridor]:
    """`in_<id>` atoms: no-fly zones, sensitive zones and corridors."""
    return {f"in_{zone_id}": zone for zone_id, zone in {**world.zone_index, **world.corridor_index}.items()}


def known_atoms(world: World) -> set[str]:
    entity_atoms = {f"at_{entity_id}" for entity_id in world.entity_index}
    return set(zone_atoms(world)) | entity_atoms | {"at_origin", "at_goal", "airborne"}


def atom_values(
    world: World, samples: np.ndarray, atom: str, origin_xy: tuple[float, float], goal_xy: tuple[float, float]
) -> np.ndarray:
    """Truth of one LTL atom at each sample (KeyError for an atom not in `known_atoms(world)`).

    in_<nfz>: inside the polygon and altitude band while active; in_<sensitive zone>: inside its polygon (the
    buffer is R2's business); in_<corridor>: inside its area and band; at_<entity> / at_origin / at_goal: within
    the world's arrival tolerance horizontally; airborne: above AIRBORNE_MIN_ALT_M.
    """
    tolerance = world.arrival_tolerance_m
    if atom == "airborne":
        return samples[:, 2] > AIRBORNE_MIN_ALT_M
    if atom in ("at_origin", "at_goal"):
        return horizontal_distance(samples, origin_xy if atom == "at_origin" else goal_xy) <= tolerance
    if atom.startswith("at_") and atom[3:] in world.entity_index:
        return horizontal_distance(samples, world.entity_index[atom[3:]].position) <= tolerance
    zone = zone_atoms(world)[atom]
    if isinstance(zone, Corridor):
        return inside_corridor(zone, samples[:, :3])
    inside = shapely.contains_xy(zone.shape, samples[:, 0], samples[:, 1])
    if isinstance(zone, NoFlyZone):
        z = samples[:, 2]
        inside &= (z >= zone.alt_min_m) & (z <= zone.alt_max_m) & _active(zone, samples[:, 3])
    return inside


def _active(zone: NoFlyZone, times: np.ndarray) -> np.ndarray:
    window = zone.active_window
    if window is None:
        return np.ones(len(times), dtype=bool)
    return (times >= window.start_sec) & (times <= window.end_sec)


def _min_over(columns: list[np.ndarray], ids: list[str], n: int, far: float) -> Margin:
    if not columns:
        return Margin(np.full(n, far), (None,) * n)
    stacked = np.vstack(columns)
    worst = np.argmin(stacked, axis=0)
    values = np.minimum(stacked[worst, np.arange(n)], far)
    entities = tuple(ids[w] if v < far else None for w, v in zip(worst, values))
    return Margin(values, entities)
