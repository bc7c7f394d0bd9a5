"""A world's geodetic frame: local metres <-> WGS84 (pyproj), and altitudes between AGL, AMSL and WGS84 heights.

A height above a reference the world does not place (AMSL without its ground elevation, WGS84 without the ground
elevation and the geoid undulation) is refused in one line, never guessed: `knows_amsl` and `knows_wgs84` say
beforehand which a writer can give. The one stated default is the clock's start, said in `assumptions`, which every
export carries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property

from pyproj import CRS, Transformer
from pyproj.exceptions import CRSError

from tools.world import GeoReference, World

WGS84 = "EPSG:4326"
_UNKNOWN_GROUND = (
    "{what} need the world's ground elevation (geo_reference.ground_elevation_amsl_m), which it does not give"
)
FEET = 0.3048  # metres in an international foot (exact)
VERTICAL_REFERENCES = ("AGL", "AMSL", "WGS84")


class StandardsError(Exception):
    """A file or world the standards layer cannot use: one line naming what and where."""


@dataclass
class GeoFrame:
    reference: GeoReference
    clock_origin: datetime
    assumptions: list[str] = field(default_factory=list)

    @cached_property
    def _local_crs(self) -> CRS:
        reference = self.reference
        if reference.anchor_lat_lon is not None:
            lat, lon = reference.anchor_lat_lon
            return CRS.from_proj4(f"+proj=tmerc +lat_0={lat!r} +lon_0={lon!r} +k=1 +x_0=0 +y_0=0 +datum=WGS84 +units=m")
        try:
            crs = CRS.from_user_input(reference.crs)
        except CRSError as exc:
            raise StandardsError(f"geo_reference.crs {reference.crs!r} is not a CRS pyproj knows: {exc}") from None
        units = {axis.unit_name for axis in crs.axis_info}
        if not crs.is_projected or units - {"metre"}:
            raise StandardsError(f"geo_reference.crs {reference.crs} is not a projected CRS in metres")
        return crs

    @cached_property
    def _offset(self) -> tuple[float, float]:
        return self.reference.origin_easting_northing or (0.0, 0.0)

    @cached_property
    def _forward(self) -> Transformer:
        return Transformer.from_crs(self._local_crs, WGS84, always_xy=True)

    @cached_property
    def _inverse(self) -> Transformer:
        return Transformer.from_crs(WGS84, self._local_crs, always_xy=True)

    def lon_lat(self, x: float, y: float) -> tuple[float, float]:
        east, north = x + self._offset[0], y + self._offset[1]
        lon, lat = self._forward.transform(east, north)
        return float(lon), float(lat)

    def local(self, lon: float, lat: float) -> tuple[float, float]:
        east, north = self._inverse.transform(lon, lat)
        return float(east) - self._offset[0], float(north) - self._offset[1]

    # --- altitudes ------------------------------------------------------------------------------------------
    @property
    def knows_amsl(self) -> bool:
        """The world gives its ground elevation, so heights above mean sea level can be written."""
        return self.reference.ground_elevation_amsl_m is not None

    @property
    def knows_wgs84(self) -> bool:
        """The world gives its ground elevation and geoid undulation, so WGS84 ellipsoidal heights can be written."""
        return self.knows_amsl and self.reference.geoid_undulation_m is not None

    def amsl(self, agl: float) -> float:
        """Metres above mean sea level of a height above this world's ground."""
        if self.reference.ground_elevation_amsl_m is None:
            raise StandardsError(_UNKNOWN_GROUND.format(what="AMSL heights"))
        return agl + self.reference.ground_elevation_amsl_m

    def wgs84_height(self, agl: float) -> float:
        """Metres above the WGS84 ellipsoid of a height above this world's ground."""
        if self.reference.ground_elevation_amsl_m is None:
            raise StandardsError(_UNKNOWN_GROUND.format(what="WGS84 heights"))
        if self.reference.geoid_undulation_m is None:
            raise StandardsError(
                "WGS84 heights need the world's geoid undulation (geo_reference.geoid_undulation_m), "
                "which it does not give"
            )
        return agl + self.reference.ground_elevation_amsl_m + self.reference.geoid_undulation_m

    def agl(self, value_m: float, reference: str, what: str) -> float:
        """A published altitude in metres (AGL, AMSL or WGS84) above this world's ground; an import cannot assume
        a ground elevation it does not know, so a file that needs one it lacks is refused."""
        if reference == "AGL":
            return value_m
        if self.reference.ground_elevation_amsl_m is None:
            raise StandardsError(
                f"{what}: altitudes above {reference} need the world's ground elevation "
                "(geo_reference.ground_elevation_amsl_m), which it does not give"
            )
        if reference == "AMSL":
            return value_m - self.reference.ground_elevation_amsl_m
        if self.reference.geoid_undulation_m is None:
            raise StandardsError(
                f"{what}: WGS84 altitudes need the world's geoid undulation (geo_reference.geoid_undulation_m)"
            )
        return value_m - self.reference.geoid_undulation_m - self.reference.ground_elevation_amsl_m

    # --- time -----------------------------------------------------------------------------------------------
    def instant(self, t_sec: float) -> datetime:
        return self.clock_origin + timedelta(seconds=t_sec)

    def seconds(self, instant: datetime) -> float:
        return (instant - self.clock_origin).total_seconds()


def geo_frame(world: World, clock_origin: datetime | None = None) -> GeoFrame:
    """The world's frame; `clock_origin` (else the world's own, else now) is the UTC instant of t = 0."""
    reference = world.geo_reference
    if reference is None:
        raise StandardsError(
            f"world {world.world_id} has no geo_reference: add one (a CRS and origin, or a WGS84 anchor; "
            "docs/standards.md) before importing or exporting"
        )
    frame = GeoFrame(reference, clock_origin or reference.clock_origin_utc or _now())
    if clock_origin is None and reference.clock_origin_utc is None:
        frame.assumptions.append(f"the world gives no clock origin: t = 0 is {rfc3339(frame.clock_origin)}")
    frame.lon_lat(0.0, 0.0)  # a CRS pyproj cannot use fails here, as one line
    return frame


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def rfc3339(instant: datetime) -> str:
    text = instant.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def parse_instant(text: str, what: str) -> datetime:
    """An RFC 3339 instant with its time zone, or `now` (this second, UTC)."""
    if text.strip().lower() == "now":
        return datetime.now(UTC).replace(microsecond=0)
    try:
        instant = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        raise StandardsError(f"{what}: {text!r} is not an RFC 3339 date-time") from None
    if instant.utcoffset() is None:
        raise StandardsError(f"{what}: {text!r} has no time zone (add Z or an offset)")
    return instant


def metres(value: float, unit: str, what: str) -> float:
    unit = unit.upper()
    if unit == "M":
        return float(value)
    if unit == "FT":
        return float(value) * FEET
    raise StandardsError(f"{what}: unknown unit {unit!r} (M or FT)")
