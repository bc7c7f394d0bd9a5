"""Synthetic city worlds: street grid, buildings, POIs, no-fly and sensitive zones, corridors, weather, fleet, traffic.

`generate_city(layout, rng, world_id)` returns a `CityDraft`: mutable lists of world parts plus the bilingual
labels instructions need. Scenarios edit the draft (a pop-up NFZ, a congested corridor, a drained fleet) and
`CityDraft.build()` freezes it into a `tools.world.World`. Everything is drawn from the one numpy Generator,
so a seed fixes the world.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from shapely.geometry import Point
from shapely.ops import unary_union
from shapely.prepared import prep

from benchmark.layouts import LayoutSpec, Range
from benchmark.vocabulary import (
    ADJECTIVES,
    NFZ_REASONS,
    PERMANENT_NFZ_REASONS,
    TEMPORARY_NFZ_REASONS,
    Term,
    area_of,
    entity_name,
)
from tools.world import (
    UAV,
    Building,
    Corridor,
    Entity,
    EntityKind,
    GeoReference,
    Grid,
    NoFlyZone,
    Region,
    RiskLevel,
    SensitiveZone,
    TimeWindow,
    TrafficTrack,
    UAVStatus,
    WeatherRegion,
    World,
)

XY = tuple[float, float]
# Synthetic cities lie nowhere: this stated anchor (the home position of PX4's SITL simulators, Zurich, 488 m AMSL)
# puts their exports where a simulator starts. The example worlds carry the same one. The geoid undulation is
# EGM96's at the anchor (standards.geoid.egm96_undulation(47.397742, 8.545594) = 47.3364 m), stored so that
# generating a world never needs the grid; tests/unit/test_geoid.py recomputes it.
SYNTHETIC_ANCHOR = GeoReference(
    anchor_lat_lon=(47.397742, 8.545594),
    ground_elevation_amsl_m=488.0,
    geoid_undulation_m=47.336,
    geoid_model="EGM96 (PROJ egm96_15.gtx, bilinear), at the anchor",
    note="a stated anchor for a synthetic city: the home position of PX4's SITL simulators (Zurich, 488 m AMSL), "
    "so an exported plan opens where a simulator starts",
)
STREET_M = 20.0
# Buildings stand this far inside their lot: the planner blocks cells within min_separation + half a cell
# diagonal (~17 m) of a footprint, and a POI at a street intersection must keep a free column.
SETBACK_M = 12.0
SITE_SPACING_M = 45.0
POI_CLEARANCE_M = 25.0
ESSENTIAL_KINDS = (
    "charging_pad",
    "depot",
    "hospital",
    "accident_site",
    "inspection_site",
)  # a POI keeps this far from any NFZ and any school's buffered zone


@dataclass(frozen=True)
class UAVModel:
    name: str
    battery_wh: float
    payload_kg: float
    speed_mps: float
    max_wind_mps: float
    sensors: tuple[str, ...]


UAV_MODELS: tuple[tuple[UAVModel, float], ...] = (
    (UAVModel("quad-light", 150.0, 2.0, 10.0, 10.0, ("camera",)), 0.3),
    (
        UAVModel("quad-medical", 200.0, 3.0, 12.0, 12.0, ("camera", "defibrillator_bay")),
        0.3,
    ),
    (UAVModel("hexa-cargo", 300.0, 5.0, 14.0, 14.0, ("camera", "lidar")), 0.25),
    (UAVModel("vtol-long-range", 400.0, 2.5, 18.0, 15.0, ("camera", "thermal")), 0.15),
)
STATUS_SHARES = (
    (UAVStatus.idle, 0.62),
    (UAVStatus.busy, 0.2),
    (UAVStatus.charging, 0.1),
    (UAVStatus.maintenance, 0.08),
)


@dataclass(frozen=True)
class EntityLabel:
    """How instructions refer to an entity or zone: its name and the area of the map it lies in."""

    kind: str
    name: Term
    area: Term

    @property
    def described(self) -> Term:
        return Term(f"the {self.name.en} {self.area.en}", f"{self.area.zh}的{self.name.zh}")

    def entity(self, entity_id: str, position: XY) -> Entity:
        """The world's entity, named in both languages of the requests (a Chinese request names it in Chinese)."""
        described = self.described
        return Entity(
            id=entity_id, kind=EntityKind(self.kind), name=described.en, names={"zh": described.zh}, position=position
        )


@dataclass
class CityDraft:
    world_id: str
    name: str
    layout: str
    grid: Grid
    regions: list[Region] = field(default_factory=list)
    buildings: list[Building] = field(default_factory=list)
    entities: list[Entity] = field(default_factory=list)
    no_fly_zones: list[NoFlyZone] = field(default_factory=list)
    sensitive_zones: list[SensitiveZone] = field(default_factory=list)
    corridors: list[Corridor] = field(default_factory=list)
    weather: list[WeatherRegion] = field(default_factory=list)
    fleet: list[UAV] = field(default_factory=list)
    traffic: list[TrafficTrack] = field(default_factory=list)
    labels: dict[str, EntityLabel] = field(default_factory=dict)
    data_sources: list[str] = field(default_factory=lambda: ["cloudbrain_bench_generator"])
    spare_sites: list[XY] = field(default_factory=list)  # open sites no POI took: room for scenario additions
    geo_reference: GeoReference = SYNTHETIC_ANCHOR

    def build(self) -> World:
        """The World of this draft: each World field the draft holds, taken by name (the rest keep defaults)."""
        parts = {name: getattr(self, name) for name in World.model_fields if hasattr(self, name)}
        return World(**parts, city_layout=self.layout)

    # --- look-ups scenarios use --------------------------------------------------------------------------
    def entity(self, entity_id: str) -> Entity:
        return next(e for e in self.entities if e.id == entity_id)

    def entities_of(self, *kinds: str) -> list[Entity]:
        return [e for e in self.entities if e.kind.value in kinds]

    def uav(self, uav_id: str) -> UAV:
        return next(u for u in self.fleet if u.id == uav_id)

    def replace_uav(self, uav: UAV) -> None:
        self.fleet = [uav if u.id == uav.id else u for u in self.fleet]

    def replace_corridor(self, corridor: Corridor) -> None:
        self.corridors = [corridor if c.id == corridor.id else c for c in self.corridors]

    def next_id(self, prefix: str) -> str:
        taken = {
            x.id
            for group in (
                self.no_fly_zones,
                self.sensitive_zones,
                self.entities,
                self.weather,
            )
            for x in group
        }
        n = 1
        while f"{prefix}{n}" in taken:
            n += 1
        return f"{prefix}{n}"

    def label_for(self, ref: str) -> EntityLabel | None:
        return self.labels.get(ref)


def r1(value: float) -> float:
    """Coordinates are kept to 0.1 m: small files, and identical bytes on every platform."""
    return round(float(value), 1)


def rect(x0: float, y0: float, x1: float, y1: float) -> list[XY]:
    return [(r1(x0), r1(y0)), (r1(x1), r1(y0)), (r1(x1), r1(y1)), (r1(x0), r1(y1))]


def choice_weighted(rng: np.random.Generator, options: tuple[tuple[object, float], ...]):
    cumulative = np.cumsum([w for _, w in options])
    index = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    return options[min(index, len(options) - 1)][0]


def randint(rng: np.random.Generator, bounds: tuple[int, int]) -> int:
    return int(rng.integers(bounds[0], bounds[1] + 1))


# --- street grid and buildings ----------------------------------------------------------------------------


def _lots(layout: LayoutSpec) -> list[tuple[int, int, float, float, float, float]]:
    """(i, j, x0, y0, x1, y1) of every lot between streets."""
    pitch = layout.block_m
    n_i, n_j = int(layout.width_m // pitch), int(layout.depth_m // pitch)
    half = STREET_M / 2.0
    return [
        (
            i,
            j,
            i * pitch + half,
            j * pitch + half,
            (i + 1) * pitch - half,
            (j + 1) * pitch - half,
        )
        for i in range(n_i)
        for j in range(n_j)
    ]


def _height(layout: LayoutSpec, rng: np.random.Generator, x: float, y: float) -> float:
    low, high = layout.building_height.low, layout.building_height.high
    if layout.zoned:  # towers in the core, low houses towards the edge
        dist = np.hypot(x - layout.width_m / 2, y - layout.depth_m / 2) / (layout.width_m / 2)
        high = low + (high - low) * max(0.15, 1.0 - dist)
    if rng.random() < layout.tall_share:
        return r1(rng.uniform(130.0, 180.0))
    return r1(rng.uniform(low, max(low + 1.0, high)))


def _place_buildings(layout: LayoutSpec, rng: np.random.Generator) -> tuple[list[Building], list[tuple]]:
    buildings: list[Building] = []
    open_lots = []
    for i, j, x0, y0, x1, y1 in _lots(layout):
        if rng.random() >= layout.lot_fill:
            open_lots.append((x0, y0, x1, y1))
            continue
        x0, y0, x1, y1 = x0 + SETBACK_M, y0 + SETBACK_M, x1 - SETBACK_M, y1 - SETBACK_M
        w, d = (x1 - x0) * rng.uniform(0.6, 1.0), (y1 - y0) * rng.uniform(0.6, 1.0)
        bx, by = x0 + rng.uniform(0, x1 - x0 - w), y0 + rng.uniform(0, y1 - y0 - d)
        height = _height(layout, rng, bx + w / 2, by + d / 2)
        buildings.append(
            Building(
                id=f"bldg_{i}_{j}",
                polygon=rect(bx, by, bx + w, by + d),
                height_m=height,
            )
        )
    return buildings, open_lots


def _open_sites(layout: LayoutSpec, open_lots: list[tuple]) -> list[XY]:
    """Street intersections and the centres of empty lots: where POIs, pads and UAVs can sit."""
    pitch = layout.block_m
    margin = 30.0
    sites = [
        (i * pitch, j * pitch)
        for i in range(1, int(layout.width_m // pitch) + 1)
        for j in range(1, int(layout.depth_m // pitch) + 1)
        if margin <= i * pitch <= layout.width_m - margin and margin <= j * pitch <= layout.depth_m - margin
    ]
    sites += [((x0 + x1) / 2, (y0 + y1) / 2) for x0, y0, x1, y1 in open_lots]
    return [(r1(x), r1(y)) for x, y in sites]


# --- zones ------------------------------------------------------------------------------------------------


def make_nfz(
    rng: np.random.Generator,
    nfz_id: str,
    centre: XY,
    size: tuple[float, float],
    reason_key: str,
    window: TimeWindow | None,
) -> NoFlyZone:
    cx, cy = centre
    w, d = size
    return NoFlyZone(
        id=nfz_id,
        polygon=rect(cx - w / 2, cy - d / 2, cx + w / 2, cy + d / 2),
        alt_min_m=0.0,
        alt_max_m=float(rng.choice([300.0, 500.0])),
        active_window=window,
        reason=NFZ_REASONS[reason_key].en,
        temporary=window is not None,
    )


def temporary_window(rng: np.random.Generator) -> TimeWindow:
    """Active now (most), a pop-up later in the mission, or one that already ended."""
    kind = rng.choice(["now", "popup", "ended"], p=[0.6, 0.25, 0.15])
    if kind == "now":
        return TimeWindow(start_sec=0.0, end_sec=float(rng.choice([1800.0, 3600.0, 7200.0])))
    if kind == "popup":
        start = float(rng.choice([60.0, 120.0, 300.0]))
        return TimeWindow(start_sec=start, end_sec=start + 3600.0)
    return TimeWindow(start_sec=0.0, end_sec=float(rng.choice([1.0, 5.0])))


def _place_nfzs(
    layout: LayoutSpec, rng: np.random.Generator, sites: list[XY]
) -> tuple[list[NoFlyZone], dict[str, EntityLabel]]:
    zones, labels = [], {}
    n_perm = randint(rng, layout.nfz_count)
    n_temp = int(rng.integers(0, 2))
    for k in range(n_perm + n_temp):
        permanent = k < n_perm
        centre = sites[int(rng.integers(len(sites)))]
        size = (r1(rng.uniform(50, 120)), r1(rng.uniform(50, 120)))
        reasons = PERMANENT_NFZ_REASONS if permanent else TEMPORARY_NFZ_REASONS
        reason = str(rng.choice(reasons))
        nfz_id = f"nfz_perm_{k + 1}" if permanent else f"nfz_temp_{k - n_perm + 1}"
        zone = make_nfz(
            rng,
            nfz_id,
            centre,
            size,
            reason,
            None if permanent else temporary_window(rng),
        )
        zones.append(zone)
        labels[nfz_id] = nfz_label(zone, reason, layout.width_m, layout.depth_m)
    return zones, labels


def _place_schools(
    layout: LayoutSpec, rng: np.random.Generator
) -> tuple[list[SensitiveZone], list[Entity], dict[str, EntityLabel]]:
    """Schools take whole lots (building and yard); the zone is the lot, the buffer 30 m."""
    count = min(randint(rng, layout.school_count), len(ADJECTIVES["school"]))
    lots = _lots(layout)
    picks = rng.permutation(len(lots))[:count]
    adjectives = rng.permutation(len(ADJECTIVES["school"]))
    zones, entities, labels = [], [], {}
    for n, (lot_index, adj_index) in enumerate(zip(picks, adjectives), start=1):
        _, _, x0, y0, x1, y1 = lots[int(lot_index)]
        school_id, zone_id = f"school_{n}", f"school_zone_{n}"
        label = EntityLabel(
            "school",
            entity_name("school", ADJECTIVES["school"][int(adj_index)]),
            area_of((x0 + x1) / 2, (y0 + y1) / 2, layout.width_m, layout.depth_m),
        )
        zones.append(
            SensitiveZone(
                id=zone_id,
                kind="school",
                name=f"{label.name.en} grounds",
                polygon=rect(x0 + 5, y0 + 5, x1 - 5, y1 - 5),
                buffer_m=30.0,
            )
        )
        entities.append(label.entity(school_id, (r1((x0 + x1) / 2), r1((y0 + y1) / 2))))
        labels[school_id] = label
        labels[zone_id] = EntityLabel(
            "school_zone",
            Term(f"{label.name.en} grounds", f"{label.name.zh}校园"),
            label.area,
        )
    return zones, entities, labels


def keep_clear(sites: list[XY], shapes: list) -> list[XY]:
    """Sites at least POI_CLEARANCE_M away from every shape."""
    if not shapes:
        return sites
    zone = prep(unary_union(shapes).buffer(POI_CLEARANCE_M))
    return [s for s in sites if not zone.contains(Point(s))]


def _spread(rng: np.random.Generator, sites: list[XY], count: int, taken: list[XY]) -> list[XY]:
    """Up to `count` sites, each at least SITE_SPACING_M from every taken site, drawn in random order."""
    chosen: list[XY] = []
    for index in rng.permutation(len(sites)):
        site = sites[int(index)]
        if all(np.hypot(site[0] - t[0], site[1] - t[1]) >= SITE_SPACING_M for t in taken + chosen):
            chosen.append(site)
            if len(chosen) == count:
                break
    return chosen


# --- POIs -------------------------------------------------------------------------------------------------


def _place_pois(
    layout: LayoutSpec, rng: np.random.Generator, sites: list[XY]
) -> tuple[list[Entity], dict[str, EntityLabel], list[XY]]:
    entities: list[Entity] = []
    labels: dict[str, EntityLabel] = {}
    taken: list[XY] = []
    # Kinds every scenario needs come first, so a crowded map runs out of room for the optional ones.
    wanted = {"charging_pad": layout.charging_pads, **layout.poi_counts}
    for kind in sorted(wanted, key=lambda k: k not in ESSENTIAL_KINDS):
        bounds = wanted[kind]
        adjectives = ADJECTIVES[kind]
        count = min(randint(rng, bounds), len(adjectives))
        order = rng.permutation(len(adjectives))
        for n, (site, adj_index) in enumerate(zip(_spread(rng, sites, count, taken), order), start=1):
            taken.append(site)
            jitter = rng.uniform(-3, 3, size=2)
            position = (r1(site[0] + jitter[0]), r1(site[1] + jitter[1]))
            label = EntityLabel(
                kind,
                entity_name(kind, adjectives[int(adj_index)]),
                area_of(*position, layout.width_m, layout.depth_m),
            )
            entity_id = f"{kind}_{n}"
            entities.append(label.entity(entity_id, position))
            labels[entity_id] = label
    gaps = np.linalg.norm(
        np.asarray(sites)[:, None, :] - np.asarray(taken or [(-1e9, -1e9)])[None, :, :],
        axis=2,
    )
    spare = [site for site, gap in zip(sites, gaps.min(axis=1)) if gap >= SITE_SPACING_M]
    return entities, labels, spare


# --- airspace, weather, fleet, traffic --------------------------------------------------------------------


def _corridors(layout: LayoutSpec, rng: np.random.Generator) -> list[Corridor]:
    corridors = []
    pitch = layout.block_m
    for n in range(1, randint(rng, layout.corridor_count) + 1):
        along_x = bool(rng.random() < 0.5)
        span = layout.width_m if along_x else layout.depth_m
        line = pitch * int(rng.integers(1, int(span // pitch)))
        a, b = 40.0, span - 40.0
        polyline = [(a, line), (b, line)] if along_x else [(line, a), (line, b)]
        capacity = int(rng.integers(2, 6))
        corridors.append(
            Corridor(
                id=f"corridor_c{n}",
                polyline=[(r1(x), r1(y)) for x, y in polyline],
                width_m=float(rng.choice([20.0, 30.0, 40.0])),
                capacity=capacity,
                load=int(rng.integers(0, capacity + 1)),
                alt_min_m=60.0,
                alt_max_m=100.0,
            )
        )
    return corridors


def _regions(layout: LayoutSpec) -> list[Region]:
    w, d = layout.width_m, layout.depth_m
    return [
        Region(id="north", bbox=(0.0, d / 2, w, d)),
        Region(id="south", bbox=(0.0, 0.0, w, d / 2)),
        Region(id="east", bbox=(w / 2, 0.0, w, d)),
        Region(id="west", bbox=(0.0, 0.0, w / 2, d)),
        Region(id="centre", bbox=(w / 4, d / 4, 3 * w / 4, 3 * d / 4)),
    ]


def base_weather(wind: Range, width: float, depth: float, rng: np.random.Generator) -> WeatherRegion:
    speed = r1(rng.uniform(wind.low, wind.high))
    return WeatherRegion(
        id="city_wind",
        bbox=(0.0, 0.0, width, depth),
        wind_speed_mps=speed,
        wind_dir_deg=float(rng.integers(0, 8) * 45),
        gust_mps=r1(rng.uniform(0, 3)),
        risk_level=RiskLevel.none if speed < 3 else RiskLevel.low,
    )


def battery_ratio(rng: np.random.Generator) -> float:
    """Beta-like, mostly well charged, with a tail of low-battery edge cases."""
    if rng.random() < 0.12:
        return round(float(rng.uniform(0.08, 0.3)), 3)
    return round(float(np.clip(rng.beta(5.0, 1.6), 0.3, 1.0)), 3)


def make_fleet(
    rng: np.random.Generator,
    size: int,
    homes: list[XY],
    width: float,
    depth: float,
    start_index: int = 1,
) -> list[UAV]:
    fleet = []
    for n in range(start_index, start_index + size):
        model = choice_weighted(rng, UAV_MODELS)
        status = choice_weighted(rng, STATUS_SHARES)
        home = homes[int(rng.integers(len(homes)))]
        offset = rng.uniform(-3, 3, size=2)
        position = (
            r1(np.clip(home[0] + offset[0], 1, width - 1)),
            r1(np.clip(home[1] + offset[1], 1, depth - 1)),
        )
        battery = battery_ratio(rng)
        if status is UAVStatus.charging:
            battery = round(float(rng.uniform(0.15, 0.6)), 3)
        fleet.append(
            UAV(
                id=f"uav_{n:02d}",
                position=position,
                status=status,
                battery_ratio=battery,
                battery_capacity_wh=model.battery_wh,
                payload_capacity_kg=model.payload_kg,
                cruise_speed_mps=model.speed_mps,
                max_wind_mps=model.max_wind_mps,
                sensors=list(model.sensors),
                model=model.name,
            )
        )
    return fleet


def _traffic(layout: LayoutSpec, rng: np.random.Generator, corridors: list[Corridor]) -> list[TrafficTrack]:
    """Other operators' flights: along corridors where there are any, at the corridor's altitude."""
    tracks = []
    for n in range(1, randint(rng, layout.traffic_tracks) + 1):
        if corridors and rng.random() < 0.7:
            corridor = corridors[int(rng.integers(len(corridors)))]
            (ax, ay), (bx, by) = corridor.polyline[0], corridor.polyline[-1]
            z = float(rng.choice([70.0, 80.0, 90.0]))
        else:
            ax, ay = 0.0, float(rng.uniform(0, layout.depth_m))
            bx, by = layout.width_m, float(rng.uniform(0, layout.depth_m))
            z = float(rng.choice([100.0, 110.0]))
        if rng.random() < 0.5:
            (ax, ay), (bx, by) = (bx, by), (ax, ay)
        speed = float(rng.uniform(10, 15))
        t0 = r1(rng.uniform(0, 120))
        duration = np.hypot(bx - ax, by - ay) / speed
        tracks.append(
            TrafficTrack(
                id=f"track_t{n}",
                waypoints=[
                    (r1(ax), r1(ay), z, t0),
                    (r1(bx), r1(by), z, r1(t0 + duration)),
                ],
            )
        )
    return tracks


def leave_room_for_traffic(corridors: list[Corridor], tracks: list[TrafficTrack]) -> list[Corridor]:
    """Corridor loads that leave a slot for one more UAV beside the traffic flying along each corridor (rule R6
    counts the current load, the traffic inside and us); a corridor the traffic alone fills is congested, so the
    planner keeps out of it. Without this a route crossing a corridor would fail R6 by accident of the draw."""
    settled = []
    for corridor in corridors:
        ends = {tuple(corridor.polyline[0]), tuple(corridor.polyline[-1])}
        along = sum({tuple(t.waypoints[0][:2]), tuple(t.waypoints[-1][:2])} == ends for t in tracks)
        room = corridor.capacity - along - 1
        load = corridor.capacity if corridor.load >= corridor.capacity or room < 0 else min(corridor.load, room)
        settled.append(corridor.model_copy(update={"load": load}))
    return settled


def generate_city(
    layout: LayoutSpec,
    rng: np.random.Generator,
    world_id: str,
    fleet_size: int | None = None,
) -> CityDraft:
    grid = Grid(
        nx=layout.nx,
        ny=layout.ny,
        nz=layout.nz,
        cell_size_m=layout.cell_size_m,
        layer_base_m=layout.layer_base_m,
        layer_height_m=layout.layer_height_m,
    )
    buildings, open_lots = _place_buildings(layout, rng)
    sites = _open_sites(layout, open_lots)
    nfzs, nfz_labels = _place_nfzs(layout, rng, sites)
    school_zones, schools, school_labels = _place_schools(layout, rng)
    buildings = [b for b in buildings if not any(z.shape.intersects(b.shape) for z in school_zones)]
    free = keep_clear(sites, [z.shape for z in nfzs] + [z.buffered_shape for z in school_zones])
    pois, labels, spare = _place_pois(layout, rng, free)
    labels.update(school_labels)
    labels.update(nfz_labels)
    corridors = _corridors(layout, rng)
    traffic = _traffic(layout, rng, corridors)
    homes = [e.position for e in pois if e.kind.value in ("depot", "charging_pad", "vertiport")]
    size = fleet_size or int(choice_weighted(rng, layout.fleet_sizes))
    return CityDraft(
        world_id=world_id,
        name=f"{layout.name} instance {world_id}",
        layout=layout.name,
        grid=grid,
        regions=_regions(layout),
        buildings=buildings,
        entities=pois + schools,
        no_fly_zones=nfzs,
        sensitive_zones=school_zones,
        corridors=leave_room_for_traffic(corridors, traffic),
        weather=[base_weather(layout.base_wind, layout.width_m, layout.depth_m, rng)],
        fleet=make_fleet(rng, size, homes, layout.width_m, layout.depth_m),
        traffic=traffic,
        labels=labels,
        spare_sites=spare,
    )


def nfz_label(zone: NoFlyZone, reason_key: str, width: float, depth: float) -> EntityLabel:
    reason = NFZ_REASONS[reason_key]
    what = reason.en.split(",")[0]
    term = (
        Term(f"temporary no-fly zone ({what})", f"{reason.zh.split(',')[0]}临时禁飞区")
        if zone.temporary
        else Term(f"no-fly zone ({what})", f"{reason.zh.split(',')[0]}禁飞区")
    )
    centre = zone.shape.centroid
    return EntityLabel("no_fly_zone", term, area_of(centre.x, centre.y, width, depth))
