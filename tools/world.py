"""The world model: city, airspace, fleet and traffic in a local metric frame (x east, y north, z up, metres).

Worlds are plain JSON validated by pydantic; `load_world` turns every malformed file into a `WorldFileError`
that names the offending field, so no caller ever sees a raw traceback.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from enum import Enum
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from shapely import STRtree
from shapely.geometry import LineString, Point, Polygon

XY = tuple[float, float]
XYZT = tuple[float, float, float, float]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Grid(_Model):
    """Planning grid. Cell (i, j, k) has centre (i + 0.5, j + 0.5) * cell_size and altitude layer_altitude(k)."""

    nx: int = Field(ge=2, le=1000)
    ny: int = Field(ge=2, le=1000)
    nz: int = Field(default=6, ge=1, le=50, description="number of altitude layers")
    cell_size_m: float = Field(default=10.0, gt=0)
    layer_base_m: float = Field(default=20.0, ge=0, description="altitude of the lowest layer")
    layer_height_m: float = Field(default=20.0, gt=0, description="vertical spacing of layers")

    @property
    def width_m(self) -> float:
        return self.nx * self.cell_size_m

    @property
    def depth_m(self) -> float:
        return self.ny * self.cell_size_m

    @property
    def ceiling_m(self) -> float:
        return self.layer_base_m + (self.nz - 1) * self.layer_height_m

    def layer_altitude(self, k: int) -> float:
        return self.layer_base_m + k * self.layer_height_m

    def contains_xy(self, x: float, y: float) -> bool:
        return 0.0 <= x <= self.width_m and 0.0 <= y <= self.depth_m


class EntityKind(str, Enum):
    hospital = "hospital"
    school = "school"
    park = "park"
    accident_site = "accident_site"
    depot = "depot"
    charging_pad = "charging_pad"
    metro_station = "metro_station"
    police = "police"
    fire_station = "fire_station"
    vertiport = "vertiport"
    warehouse = "warehouse"
    residential = "residential"
    office = "office"
    inspection_site = "inspection_site"
    other = "other"


class UAVStatus(str, Enum):
    idle = "idle"
    busy = "busy"
    charging = "charging"
    maintenance = "maintenance"


class RiskLevel(str, Enum):
    none = "none"
    low = "low"
    medium = "medium"
    high = "high"

    @property
    def rank(self) -> int:
        return ["none", "low", "medium", "high"].index(self.value)


def _check_ring(ring: list[XY]) -> list[XY]:
    poly = Polygon(ring)
    if not poly.is_valid or poly.area <= 0:
        raise ValueError("polygon must be a simple ring with positive area")
    return ring


Ring = Annotated[
    list[XY], Field(min_length=3, description="polygon exterior ring, metres"), AfterValidator(_check_ring)
]


class _PolygonMixin:
    """Gives a model with a `polygon` ring its shapely shape, built once."""

    @cached_property
    def shape(self) -> Polygon:
        return Polygon(self.polygon)


class Building(_PolygonMixin, _Model):
    id: str
    polygon: Ring
    height_m: float = Field(gt=0)
    name: str = ""


class Entity(_Model):
    """A point of interest that tasks refer to (origin, destination, handoff point...)."""

    id: str
    kind: EntityKind
    name: str = Field(default="", description="descriptive name, e.g. 'the children's hospital on the north side'")
    names: dict[str, str] = Field(
        default_factory=dict,
        description="the name in other languages by language code, as OSM's name:<lang> tags, e.g. "
        "{'zh': '北侧的儿童医院'}: requests in those languages name the entity by it",
    )
    position: XY

    @cached_property
    def point(self) -> Point:
        return Point(self.position)


class TimeWindow(_Model):
    start_sec: float = Field(ge=0)
    end_sec: float

    @model_validator(mode="after")
    def _ordered(self) -> TimeWindow:
        if self.end_sec <= self.start_sec:
            raise ValueError("end_sec must be greater than start_sec")
        return self


class ZoneSource(_Model):
    """Where an imported zone came from: the published zone's own fields, kept so an export writes them back."""

    standard: str = Field(description="ed269 | ed318 | geojson")
    identifier: str = Field(description="the zone's identifier in the published file")
    country: str = ""
    restriction: str = Field(description="PROHIBITED | REQ_AUTHORISATION | CONDITIONAL, as published")
    reasons: list[str] = Field(default_factory=list)
    name: str = ""
    message: str = ""
    other_reason_info: str = Field(default="", description="the published text of reason OTHER (otherReasonInfo)")
    lang: str = Field(default="", description="the language of its published texts (ED-318's lang); '' none given")
    restriction_conditions: list[str] = Field(default_factory=list, description="the published conditions")
    authorities: list[dict[str, str]] = Field(
        default_factory=list,
        description="the published zoneAuthority entries by ED-269's field names (name, service, email, "
        "contactName, siteURL, phone, purpose, intervalBefore)",
    )
    applicability: list[dict[str, Any]] | None = Field(
        default=None,
        description="the zone's time periods as published (startDateTime, endDateTime, schedule of day, "
        "startTime / startEvent, endTime / endEvent); None: permanent",
    )
    applicability_window: TimeWindow | None = Field(
        default=None,
        description="the active window the import read from them: while it is the zone's, an export writes the "
        "published periods back",
    )


class NoFlyZone(_PolygonMixin, _Model):
    id: str
    polygon: Ring
    alt_min_m: float = Field(default=0.0, ge=0)
    alt_max_m: float = Field(default=10_000.0, gt=0)
    active_window: TimeWindow | None = Field(default=None, description="None = permanently active")
    reason: str = ""
    temporary: bool = False
    source: ZoneSource | None = Field(default=None, description="the published zone it was imported from")

    def active_at(self, t: float) -> bool:
        w = self.active_window
        return w is None or w.start_sec <= t <= w.end_sec

    def active_during(self, t0: float, t1: float) -> bool:
        """Active at some moment of the closed interval [t0, t1]: the one definition of "active during" (the
        planner's masks, the airspace query, the rules, the request's defaults and the gold builder all ask this)."""
        w = self.active_window
        return w is None or (w.start_sec <= t1 and t0 <= w.end_sec)

    def covers_altitude(self, z: float) -> bool:
        return self.alt_min_m <= z <= self.alt_max_m


class Reservation(NoFlyZone):
    """One 4D volume of another operator's approved operational intent, as a plan must keep clear of it (rule R9):
    the volume already widened by the new flight's own buffers, active over the time it is reserved."""

    intent_id: str
    owner: str = ""
    priority: int = 0


class SensitiveZone(_PolygonMixin, _Model):
    """A zone to keep clear of laterally (schools, hospitals' wards, stadiums), at any altitude."""

    id: str
    kind: str = "school"
    name: str = ""
    polygon: Ring
    buffer_m: float = Field(default=30.0, ge=0)
    source: ZoneSource | None = Field(default=None, description="the published zone it was imported from")

    @cached_property
    def buffered_shape(self) -> Polygon:
        return self.shape.buffer(self.buffer_m)


class Corridor(_Model):
    id: str
    polyline: list[XY] = Field(min_length=2)
    width_m: float = Field(default=40.0, gt=0)
    capacity: int = Field(ge=1, description="UAVs allowed in the corridor at once")
    load: int = Field(default=0, ge=0, description="UAVs in the corridor now")
    alt_min_m: float = Field(default=0.0, ge=0)
    alt_max_m: float = Field(default=10_000.0, gt=0)

    @cached_property
    def shape(self) -> Polygon:
        return LineString(self.polyline).buffer(self.width_m / 2.0, cap_style="flat")

    @property
    def free_capacity(self) -> int:
        return self.capacity - self.load


class WeatherRegion(_Model):
    id: str
    bbox: tuple[float, float, float, float] = Field(description="xmin, ymin, xmax, ymax")
    wind_speed_mps: float = Field(default=0.0, ge=0)
    wind_dir_deg: float = Field(default=0.0, description="direction the wind blows TOWARDS, degrees from east, CCW")
    gust_mps: float = Field(default=0.0, ge=0)
    risk_level: RiskLevel = RiskLevel.none

    def contains(self, x: float, y: float) -> bool:
        x0, y0, x1, y1 = self.bbox
        return x0 <= x <= x1 and y0 <= y <= y1


class UAV(_Model):
    """A UAV and its 'resume' (EMOS): what it can carry, how far and in what wind."""

    id: str
    position: XY
    status: UAVStatus = UAVStatus.idle
    battery_ratio: float = Field(ge=0, le=1)
    battery_capacity_wh: float = Field(gt=0)
    payload_capacity_kg: float = Field(ge=0)
    cruise_speed_mps: float = Field(gt=0, le=60)
    max_wind_mps: float = Field(gt=0)
    sensors: list[str] = Field(default_factory=list)
    model: str = ""


def _time_ordered(wps: list[XYZT]) -> list[XYZT]:
    if any(b[3] < a[3] for a, b in zip(wps, wps[1:])):
        raise ValueError("waypoint times must be non-decreasing")
    return wps


TimedWaypoints = Annotated[list[XYZT], AfterValidator(_time_ordered)]


class TrafficTrack(_Model):
    """Planned 4D trajectory of another UAV: (x, y, z, t) waypoints, t non-decreasing."""

    id: str
    waypoints: TimedWaypoints = Field(min_length=2)


class EnergyModel(_Model):
    """Energy per metre = (base + per_kg * payload) * (1 + headwind_factor * headwind) * conservative_factor.

    conservative_factor inflates the mean model to its 90th percentile so plans keep a margin by default.
    """

    base_wh_per_m: float = Field(default=0.05, gt=0)
    payload_wh_per_m_per_kg: float = Field(default=0.01, ge=0)
    headwind_factor_per_mps: float = Field(default=0.04, ge=0)
    climb_wh_per_m: float = Field(default=0.15, ge=0)
    conservative_factor: float = Field(default=1.15, ge=1.0)
    percentile: float = Field(default=0.9, gt=0, le=1)


class GeoReference(_Model):
    """Where the world's local frame lies on the Earth, and what its altitudes and clock are measured from.

    Either a projected CRS in metres and the easting / northing of the frame's (0, 0) (real-context worlds: their
    national grid), or a WGS84 anchor: the frame is then a transverse Mercator plane tangent at the anchor (scale 1
    there; under 1 mm of distortion across 10 km). World altitudes are above ground level; AMSL heights add the
    ground elevation, WGS84 ellipsoidal heights also the geoid undulation (one value for the whole world, from the
    model `geoid_model` names). Where one is unknown, heights above that reference are not known (never guessed).
    """

    crs: str | None = Field(default=None, description="projected CRS in metres, e.g. 'EPSG:3067'; None: anchor")
    origin_easting_northing: XY | None = Field(default=None, description="the CRS coordinates of local (0, 0)")
    anchor_lat_lon: XY | None = Field(default=None, description="WGS84 latitude, longitude of local (0, 0)")
    ground_elevation_amsl_m: float | None = Field(default=None, description="ground height above mean sea level")
    geoid_undulation_m: float | None = Field(
        default=None, description="WGS84 ellipsoid height minus height above mean sea level, here"
    )
    geoid_model: str = Field(
        default="", description="where geoid_undulation_m comes from, e.g. 'EGM96 (PROJ egm96_15.gtx, bilinear)'"
    )
    country: str = Field(default="", description="ISO 3166-1 alpha-3 code written on exported zones; '' unknown")
    clock_origin_utc: datetime | None = Field(
        default=None, description="the UTC instant of t = 0 on the world's clock (zone schedules, exported times)"
    )
    note: str = Field(default="", description="where the reference comes from")

    @model_validator(mode="after")
    def _one_kind(self) -> GeoReference:
        projected = self.crs is not None or self.origin_easting_northing is not None
        if projected == (self.anchor_lat_lon is not None):
            raise ValueError("give either crs and origin_easting_northing, or anchor_lat_lon")
        if projected and (self.crs is None or self.origin_easting_northing is None):
            raise ValueError("a projected reference needs both crs and origin_easting_northing")
        if self.anchor_lat_lon is not None:
            lat, lon = self.anchor_lat_lon
            if not (-85.0 <= lat <= 85.0 and -180.0 <= lon <= 180.0):
                raise ValueError(f"anchor_lat_lon {self.anchor_lat_lon} is not a latitude, longitude")
        if self.geoid_model and self.geoid_undulation_m is None:
            raise ValueError("geoid_model names the source of a geoid_undulation_m the reference does not give")
        if self.clock_origin_utc is not None and self.clock_origin_utc.utcoffset() is None:
            raise ValueError("clock_origin_utc needs a time zone (e.g. a trailing Z)")
        return self


class Region(_Model):
    id: str
    bbox: tuple[float, float, float, float]


class World(_Model):
    world_id: str
    name: str = ""
    city_layout: str = "custom"
    grid: Grid
    regions: list[Region] = Field(default_factory=list)
    buildings: list[Building] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)
    no_fly_zones: list[NoFlyZone] = Field(default_factory=list)
    sensitive_zones: list[SensitiveZone] = Field(default_factory=list)
    corridors: list[Corridor] = Field(default_factory=list)
    weather: list[WeatherRegion] = Field(default_factory=list)
    fleet: list[UAV] = Field(default_factory=list)
    traffic: list[TrafficTrack] = Field(default_factory=list)
    reservations: list[Reservation] = Field(
        default_factory=list, description="approved operational intents' volumes (operations mode): rule R9"
    )
    energy: EnergyModel = Field(default_factory=EnergyModel)
    arrival_tolerance_m: float = Field(default=15.0, gt=0)
    data_sources: list[str] = Field(default_factory=lambda: ["hand_made"])
    geo_reference: GeoReference | None = Field(
        default=None, description="where the frame lies on the Earth; None: local metres only (no export)"
    )

    @model_validator(mode="after")
    def _consistent(self) -> World:
        seen: dict[str, str] = {}
        groups = {
            "buildings": self.buildings,
            "entities": self.entities,
            "no_fly_zones": self.no_fly_zones,
            "sensitive_zones": self.sensitive_zones,
            "corridors": self.corridors,
            "fleet": self.fleet,
            "traffic": self.traffic,
            "regions": self.regions,
            "reservations": self.reservations,
        }
        for group, items in groups.items():
            for index, item in enumerate(items):
                if item.id in seen:
                    raise ValueError(f"{group}.{index}.id: duplicate id {item.id!r} (also in {seen[item.id]})")
                seen[item.id] = group
        for group, items in (("entities", self.entities), ("fleet", self.fleet)):
            for index, item in enumerate(items):
                if not self.grid.contains_xy(*item.position):
                    raise ValueError(f"{group}.{index}.position: {item.position} lies outside the grid")
        return self

    def updated(self, **fields: Any) -> World:
        """A copy with `fields` replaced and no look-up carried over: pydantic's model_copy copies the cached
        indexes too, which would then describe the old fleet, zones or reservations."""
        copy = self.model_copy(update=fields)
        for name in [n for n, v in type(self).__dict__.items() if isinstance(v, cached_property)]:
            copy.__dict__.pop(name, None)
        return copy

    # --- look-ups -------------------------------------------------------------------------------------------
    def active_no_fly_zones(self, t0: float, t1: float) -> list[NoFlyZone]:
        """The no-fly zones active at some moment of [t0, t1], in the world's order."""
        return [zone for zone in self.no_fly_zones if zone.active_during(t0, t1)]

    @cached_property
    def version(self) -> str:
        """Content hash: identical worlds have identical versions, whatever file they came from."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]

    @cached_property
    def entity_index(self) -> dict[str, Entity]:
        return {e.id: e for e in self.entities}

    @cached_property
    def uav_index(self) -> dict[str, UAV]:
        return {u.id: u for u in self.fleet}

    @cached_property
    def zone_index(self) -> dict[str, NoFlyZone | SensitiveZone]:
        return {**{z.id: z for z in self.no_fly_zones}, **{z.id: z for z in self.sensitive_zones}}

    @cached_property
    def reservation_tree(self) -> STRtree:
        """A spatial index of the reservations' footprints (operations mode holds thousands)."""
        return STRtree([r.shape for r in self.reservations])

    @cached_property
    def corridor_index(self) -> dict[str, Corridor]:
        return {c.id: c for c in self.corridors}

    @cached_property
    def region_index(self) -> dict[str, Region]:
        whole = Region(id=self.world_id, bbox=(0.0, 0.0, self.grid.width_m, self.grid.depth_m))
        return {whole.id: whole, **{r.id: r for r in self.regions}}

    def wind_at(self, x: float, y: float) -> WeatherRegion | None:
        """The first weather region containing (x, y); regions are listed most specific first."""
        return next((w for w in self.weather if w.contains(x, y)), None)

    def pad_buildings(self, xy: XY) -> list[Building]:
        """The buildings whose footprint holds (x, y): a place there is on their roof (a rooftop pad, a POI mapped
        inside its building's outline), where a flight takes off or lands."""
        point = Point(xy)
        return [b for b in self.buildings if b.shape.covers(point)]

    def surface_height_m(self, xy: XY) -> float:
        """The height a UAV stands on at (x, y): the highest roof whose footprint holds it, else the ground (0 m)."""
        return max((b.height_m for b in self.pad_buildings(xy)), default=0.0)

    def position_of(self, ref: str) -> XY:
        """Position of an entity or UAV id (KeyError if neither)."""
        if ref in self.entity_index:
            return self.entity_index[ref].position
        return self.uav_index[ref].position


class WorldFileError(Exception):
    """A world file that cannot be used; `field` is the dotted path of the first offending field."""

    def __init__(self, path: str, field: str, message: str):
        self.path, self.field, self.message = path, field, message
        super().__init__(f"{path}: {field}: {message}" if field else f"{path}: {message}")


def parse_world(data: Any, source: str = "<world>") -> World:
    if not isinstance(data, dict):
        raise WorldFileError(source, "", f"a world must be a JSON object, got {type(data).__name__}")
    try:
        return World.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        if not field and ": " in message:  # model-level checks name their field in the message
            field, message = message.split(": ", 1)
        raise WorldFileError(source, field, message) from None


def load_world(path: str | Path) -> World:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorldFileError(str(path), "", f"cannot read file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise WorldFileError(str(path), "", "not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorldFileError(
            str(path), "", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise WorldFileError(str(path), "", "nests deeper than a JSON reader follows") from None
    return parse_world(data, str(path))
