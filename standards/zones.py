"""UAS geographical zones in and out of a world: published zones become its no-fly and sensitive zones, and its
zones are written back as ED-269, ED-318 or GeoJSON.

Import, per published restriction class (the agent holds no authorisation and meets no condition by itself, so
every class that restricts anything is kept clear of):
- PROHIBITED -> a no-fly zone;
- REQ_AUTHORISATION -> a no-fly zone whose reason says an authorisation is required;
- CONDITIONAL -> a sensitive zone with no buffer, kept clear at every altitude and time (reported as approximated);
- NO_RESTRICTION and U-space airspace -> skipped (nothing to keep clear of), reported.
Vertical limits become metres above this world's ground (FT to M; AMSL and WGS84 through the geo_reference's ground
elevation and geoid undulation, which the import never guesses); circles become circumscribed polygons whose
outward error is at most `circle_tolerance_m`; schedules become the active window on the mission's clock (the hull
of the day's windows when there are several: active through the gaps, reported). Coordinates are read as
[lon, lat] unless the file's pairs only make sense as [lat, lon] near this world (then reported), or in the order
the caller fixes. A zone that misses the world's frame, or is never active in the horizon, is skipped and reported
by its identifier; one that misses it but would lie in or near it read with its axes swapped says so.

What the world does not use is kept on the zone's `source` and written back by the export: the published country,
reasons and their text, conditions, authorities, and the time periods as published (every window of a weekly
schedule, while the zone's active window is still the one the import read from them).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import time
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel
from pyproj import Geod
from shapely.geometry import Polygon, box
from uas_standards.eurocae_ed269 import ED269TimeType

from standards.frame import GeoFrame, StandardsError, rfc3339
from standards.schedule import active_intervals
from standards.zone_files import PERIOD_FIELDS, Horizontal, Limits, PublishedZone, clock_time, read_zones
from tools.world import NoFlyZone, SensitiveZone, TimeWindow, World, ZoneSource

UNLIMITED_M = 10_000.0  # NoFlyZone's own default ceiling: no upper limit
NEARBY_M = 100_000.0  # a file's pairs are read in the order that puts zones within this of the world
DIGITS = 3  # local metres are kept to the millimetre, so a round trip through WGS84 lands on the same values
ROUNDING_SLACK_M = 0.01
MIN_CIRCLE_TOLERANCE_M = 0.05  # above the slack, so a circle's polygon can be built
MAX_HORIZON_SEC = 366 * 86_400.0
WGS84_GEOD = Geod(ellps="WGS84")


AxisOrder = Literal["auto", "lon,lat", "lat,lon"]


class ImportLine(BaseModel):
    identifier: str
    outcome: Literal["imported", "approximated", "replaced", "skipped"]
    zone_ids: list[str] = []
    detail: str = ""
    axes_look_swapped: bool = False  # skipped outside the frame, but in or near it read with its axes swapped


@dataclass
class ZoneImport:
    world: World
    lines: list[ImportLine] = field(default_factory=list)
    axis_order: str = "lon,lat"


def import_zones(
    world: World,
    document: Any,
    file_format: str,
    frame: GeoFrame,
    horizon_sec: float = 86_400.0,
    circle_tolerance_m: float = 0.5,
    axis_order: AxisOrder = "auto",
) -> ZoneImport:
    """The world with the file's zones added (a zone with an id the world already has replaces it). `axis_order`
    "auto" reads the file's pairs in the order that puts more of its zones near the world ([lon, lat] on a tie)."""
    if not (math.isfinite(horizon_sec) and 0 < horizon_sec <= MAX_HORIZON_SEC):
        raise StandardsError(f"the horizon must be more than 0 and at most {MAX_HORIZON_SEC / 3600:g} hours")
    if not (math.isfinite(circle_tolerance_m) and circle_tolerance_m >= MIN_CIRCLE_TOLERANCE_M):
        raise StandardsError(f"the circle tolerance must be at least {MIN_CIRCLE_TOLERANCE_M:g} m")
    if axis_order not in ("auto", "lon,lat", "lat,lon"):
        raise StandardsError(f"axis order {axis_order!r}: auto, lon,lat or lat,lon")
    published = read_zones(document, file_format)
    lat_first = _lat_first(published, frame, world) if axis_order == "auto" else axis_order == "lat,lon"
    _check_coordinates(published, lat_first)
    result = ZoneImport(world, axis_order="lat,lon" if lat_first else "lon,lat")
    frame_box = box(0.0, 0.0, world.grid.width_m, world.grid.depth_m)
    no_fly, sensitive = {z.id: z for z in world.no_fly_zones}, {z.id: z for z in world.sensitive_zones}
    other_ids = {item.id for group in (world.buildings, world.entities, world.corridors, world.fleet) for item in group}
    made_by: dict[str, str] = {}
    for zone in published:
        line, made_zones = _import_one(zone, file_format, frame, frame_box, lat_first, horizon_sec, circle_tolerance_m)
        result.lines.append(line)
        for made in made_zones:
            if made_by.setdefault(made.id, zone.identifier) != zone.identifier:
                raise StandardsError(
                    f"zones {made_by[made.id]} and {zone.identifier} would both be {made.id} in the world"
                )
            if made.id in other_ids:
                raise StandardsError(f"zone {zone.identifier}: its id {made.id} is already a building, place or UAV")
            if made.id in no_fly or made.id in sensitive:
                line.outcome = "replaced"
            no_fly.pop(made.id, None)
            sensitive.pop(made.id, None)
            (sensitive if isinstance(made, SensitiveZone) else no_fly)[made.id] = made
    # The clock the windows were read on becomes the world's, so they keep their meaning in later exports.
    reference = world.geo_reference.model_copy(update={"clock_origin_utc": frame.clock_origin})
    updated = {
        **world.model_dump(),
        "no_fly_zones": [z.model_dump() for z in no_fly.values()],
        "sensitive_zones": [z.model_dump() for z in sensitive.values()],
        "geo_reference": reference.model_dump(),
    }
    result.world = World.model_validate(updated)  # checked whole, as a file would be
    return result


def _import_one(
    zone: PublishedZone,
    file_format: str,
    frame: GeoFrame,
    frame_box: Polygon,
    lat_first: bool,
    horizon_sec: float,
    tolerance_m: float,
) -> tuple[ImportLine, list[NoFlyZone | SensitiveZone]]:
    line = ImportLine(identifier=zone.identifier, outcome="imported")
    made: list[NoFlyZone | SensitiveZone] = []
    if zone.restriction in ("NO_RESTRICTION", "USPACE"):
        line.outcome, line.detail = "skipped", f"{zone.restriction}: nothing to keep clear of"
        return line, made
    window, notes = _window(zone, frame, horizon_sec)
    if window == "never":
        line.outcome, line.detail = "skipped", "not active in the mission's horizon"
        return line, made
    source = ZoneSource(
        standard=file_format,
        identifier=zone.identifier,
        country=zone.country,
        restriction=zone.restriction,
        reasons=zone.reasons,
        name=zone.name,
        message=zone.message,
        other_reason_info=zone.other_reason_info,
        lang=zone.lang,
        restriction_conditions=zone.restriction_conditions,
        authorities=zone.authorities,
        applicability=zone.applicability,
        applicability_window=window,
    )
    base_id = re.sub(r"[^A-Za-z0-9_]", "_", zone.identifier)
    if not base_id[:1].isalpha():
        base_id = f"zone_{base_id}"
    outside = 0
    for index, (horizontal, limits) in enumerate(zone.volumes):
        where = f"zone {zone.identifier}" + (f" volume {index + 1}" if len(zone.volumes) > 1 else "")
        ring, ring_notes = _local_ring(horizontal, frame, lat_first, tolerance_m, where)
        if not Polygon(ring).intersects(frame_box):
            outside += 1
            continue
        lower, upper = _agl_band(limits, frame, where)
        if upper <= 0.0:
            notes.append(f"volume {index + 1} lies wholly below this world's ground")
            continue
        notes += ring_notes
        zone_id = base_id if len(zone.volumes) == 1 else f"{base_id}_{index + 1}"
        made.append(_world_zone(zone, zone_id, ring, lower, upper, window, source, notes))
    if not made:
        line.outcome = "skipped"
        if outside:
            line.detail, line.axes_look_swapped = _outside(zone, frame, frame_box, lat_first, tolerance_m)
        else:
            line.detail = "; ".join(notes)
        return line, made
    line.zone_ids = [z.id for z in made]
    if notes:
        line.outcome, line.detail = "approximated", "; ".join(dict.fromkeys(notes))
    return line, made


def _world_zone(
    zone: PublishedZone,
    zone_id: str,
    ring: list[tuple[float, float]],
    lower: float,
    upper: float,
    window: TimeWindow | None,
    source: ZoneSource,
    notes: list[str],
) -> NoFlyZone | SensitiveZone:
    if zone.restriction == "CONDITIONAL":
        notes.append("CONDITIONAL: kept clear at every altitude and time, as a sensitive zone with no buffer")
        return SensitiveZone(
            id=zone_id, kind="conditional", name=zone.name or zone.message, polygon=ring, buffer_m=0.0, source=source
        )
    reasons = [zone.other_reason_info if r == "OTHER" and zone.other_reason_info else r for r in zone.reasons]
    reason = zone.message or zone.name or ", ".join(reasons)
    if zone.restriction == "REQ_AUTHORISATION":
        reason = f"authorisation required{': ' + reason if reason else ''}"
    return NoFlyZone(
        id=zone_id,
        polygon=ring,
        alt_min_m=lower,
        alt_max_m=upper,
        active_window=window,
        reason=reason,
        temporary=window is not None,
        source=source,
    )


def _window(zone: PublishedZone, frame: GeoFrame, horizon_sec: float) -> tuple[TimeWindow | None | str, list[str]]:
    if zone.periods is None:
        return None, []
    notes = []
    if any(w.approximated for p in zone.periods for w in p.daily or ()):
        notes.append("a sunrise / sunset bound read as the whole day")
    intervals = active_intervals(zone.periods, frame.clock_origin, horizon_sec)
    if not intervals:
        return "never", notes
    start, end = round(intervals[0][0], DIGITS), round(intervals[-1][1], DIGITS)
    if len(intervals) > 1:
        notes.append(f"{len(intervals)} active windows in the horizon merged into one (active through the gaps)")
    if start <= 0.0 and end >= horizon_sec and len(intervals) == 1:
        return None, notes  # active throughout the mission's horizon
    return TimeWindow(start_sec=max(start, 0.0), end_sec=end), notes


def _outside(
    zone: PublishedZone, frame: GeoFrame, frame_box: Polygon, lat_first: bool, tolerance_m: float
) -> tuple[str, bool]:
    """Why a zone was skipped as outside the frame: how far it lies, and whether its pairs read the other way round
    would put it in the world (or near it, nearer than as read): then the file's axes are likely swapped."""
    read = _distance(zone, frame, frame_box, lat_first, tolerance_m)
    swapped = _distance(zone, frame, frame_box, not lat_first, tolerance_m)
    detail = "outside the world's frame" + (f" ({_km(read)} from it)" if read is not None else "")
    other = "lon, lat" if lat_first else "lat, lon"
    if swapped == 0.0:
        return f"{detail}; its pairs look like [{other}]: read with its axes swapped it lies in the world", True
    if swapped is not None and (read is None or swapped < read):
        return f"{detail}; its pairs may be [{other}]: read with its axes swapped it lies {_km(swapped)} from it", True
    return detail, False


def _distance(
    zone: PublishedZone, frame: GeoFrame, frame_box: Polygon, lat_first: bool, tolerance_m: float
) -> float | None:
    """How far the zone's nearest volume lies from the frame, read in this axis order (0: it reaches the frame);
    None where that is more than NEARBY_M, or where the pairs are no positions in this order."""
    nearest = math.inf
    for horizontal, _ in zone.volumes:
        try:
            ring, _ = _local_ring(horizontal, frame, lat_first, tolerance_m, zone.identifier)
        except StandardsError:
            return None
        nearest = min(nearest, Polygon(ring).distance(frame_box))
    return nearest if nearest <= NEARBY_M else None


def _km(metres: float) -> str:
    return f"{metres / 1000:.1f} km" if metres >= 1000 else f"{metres:.0f} m"


def nothing_imported(result: ZoneImport) -> str | None:
    """Why an import that lands no zone in the world is refused (a world written with nothing imported would hide
    a wrong file, world, order or time), naming a likely axis swap first; None when some zone landed."""
    if any(line.outcome != "skipped" for line in result.lines):
        return None
    if not result.lines:
        return "the file holds no zones"
    swapped = [line for line in result.lines if line.axes_look_swapped]
    shown = swapped or result.lines
    listed = "; ".join(f"{line.identifier}: {line.detail}" for line in shown[:3])
    more = f"; and {len(shown) - 3} more" if len(shown) > 3 else ""
    return f"no zone imported (pairs read as [{result.axis_order.replace(',', ', ')}]): {listed}{more}"


def _agl_band(limits: Limits, frame: GeoFrame, where: str) -> tuple[float, float]:
    lower = 0.0 if limits.lower_m is None else frame.agl(limits.lower_m, limits.lower_reference, where)
    upper = UNLIMITED_M if limits.upper_m is None else frame.agl(limits.upper_m, limits.upper_reference, where)
    if upper <= lower:
        raise StandardsError(f"{where}: its upper limit is not above its lower limit")
    return round(max(lower, 0.0), DIGITS), round(min(upper, UNLIMITED_M), DIGITS)


def _local_ring(
    horizontal: Horizontal, frame: GeoFrame, lat_first: bool, tolerance_m: float, where: str
) -> tuple[list[tuple[float, float]], list[str]]:
    notes = []
    if horizontal.radius_m is not None:
        lon, lat = _lon_lat(horizontal.centre, lat_first)
        radius = horizontal.radius_m
        tangent = radius + ROUNDING_SLACK_M  # the edges touch a slightly larger circle: rounding never cuts in
        sides = max(8, math.ceil(math.pi / math.acos(tangent / (radius + tolerance_m))))
        reach = tangent / math.cos(math.pi / sides)
        azimuths = np.linspace(0.0, 360.0, sides, endpoint=False)
        lons, lats, _ = WGS84_GEOD.fwd(np.full(sides, lon), np.full(sides, lat), azimuths, np.full(sides, reach))
        pairs = list(zip(lons.tolist(), lats.tolist()))
        notes.append(
            f"circle of radius {radius:g} m as a {sides}-sided polygon around it, at most "
            f"{reach - radius:.2f} m outside the circle"
        )
    else:
        pairs = [_lon_lat(p, lat_first) for p in horizontal.ring or []]
        if horizontal.holes:
            notes.append(f"{horizontal.holes} hole(s) filled in (the zone covers them)")
    ring = [tuple(round(v, DIGITS) for v in frame.local(lon, lat)) for lon, lat in pairs]
    if not all(math.isfinite(v) for xy in ring for v in xy):
        raise StandardsError(f"{where}: coordinates that do not project into this world's frame")
    polygon = Polygon(ring)
    if not polygon.is_valid or polygon.area <= 0:
        raise StandardsError(f"{where}: self-intersecting or degenerate polygon")
    return ring, notes


def _lon_lat(pair: tuple[float, float] | None, lat_first: bool) -> tuple[float, float]:
    a, b = pair or (0.0, 0.0)
    return (b, a) if lat_first else (a, b)


def _check_coordinates(zones: list[PublishedZone], lat_first: bool) -> None:
    for zone in zones:
        for horizontal, _ in zone.volumes:
            for pair in [horizontal.centre] if horizontal.centre else horizontal.ring or []:
                lon, lat = _lon_lat(pair, lat_first)
                if not (-180.0 <= lon <= 180.0 and -90.0 <= lat <= 90.0):
                    order = "lat, lon" if lat_first else "lon, lat"
                    raise StandardsError(f"zone {zone.identifier}: {list(pair)} is not a {order} position")


def _lat_first(zones: list[PublishedZone], frame: GeoFrame, world: World) -> bool:
    """Whether the file's pairs are [lat, lon]: only when more zones then lie near the world than read as
    [lon, lat] (GeoJSON's order, the default)."""
    centre = frame.lon_lat(world.grid.width_m / 2, world.grid.depth_m / 2)
    firsts = [h.centre or (h.ring or [(0.0, 0.0)])[0] for z in zones for h, _ in z.volumes]
    if not firsts:
        return False
    a, b = np.array([p[0] for p in firsts]), np.array([p[1] for p in firsts])

    def near(lon: np.ndarray, lat: np.ndarray) -> int:
        valid = (np.abs(lat) <= 90.0) & (np.abs(lon) <= 180.0)
        if not valid.any():
            return 0
        _, _, distance = WGS84_GEOD.inv(
            np.full(valid.sum(), centre[0]), np.full(valid.sum(), centre[1]), lon[valid], lat[valid]
        )
        return int((distance <= NEARBY_M).sum())

    return near(b, a) > near(a, b)


# --- export ----------------------------------------------------------------------------------------------------
ExportFormat = Literal["ed269", "ed318", "geojson"]
ED269_OTHER_REASON_CHARS = 30  # ED-269's otherReasonInfo is at most 30 characters
LANG = "en-GB"  # ED-318 texts are {text, lang}: a zone's own language where it was published with one
MIDNIGHT = "00:00:00.00Z"


def export_zones(world: World, frame: GeoFrame, file_format: ExportFormat) -> dict[str, Any]:
    """The world's zones as a published file; sensitive zones as CONDITIONAL, their buffer drawn into the polygon.
    An imported zone is written with its published fields (country, reasons and their text, conditions,
    authorities, and its time periods as published while its window is still the one read from them); the world's
    own zones with reason OTHER and their own reason as its text, and their active window."""
    say = _Assumptions(frame)
    zones = [*(_exported_nfz(z, say) for z in world.no_fly_zones), *map(_exported_sensitive, world.sensitive_zones)]
    country = _country(world, zones, say)
    writer = {"ed269": _ed269, "ed318": _ed318, "geojson": _geojson}[file_format]
    features = [writer(group, frame, country, say) for group in _by_identifier(zones)]
    name = f"UAS geographical zones of {world.world_id}"
    if file_format == "ed269":
        return {"title": name, "description": _described(frame), "features": features}
    document: dict[str, Any] = {"type": "FeatureCollection", "name": name, "features": features}
    if file_format == "ed318":
        document["metadata"] = {
            "description": _texts(_described(frame), LANG),
            "issued": rfc3339(frame.clock_origin),
        }
    return document


class _Assumptions:
    """Says a thing once in the export's assumptions (the file's description carries them)."""

    def __init__(self, frame: GeoFrame) -> None:
        self.frame = frame

    def __call__(self, text: str) -> None:
        if text not in self.frame.assumptions:
            self.frame.assumptions.append(text)


def _country(world: World, zones: list[dict[str, Any]], say: _Assumptions) -> str:
    """The country written on zones that publish none (the world's own): the world's, else the one country every
    imported zone names (they were published for a place that reaches this world), else XXX, said."""
    country = world.geo_reference.country if world.geo_reference else ""
    if country or all(z["source"] and z["source"].country for z in zones):
        return country or "XXX"
    published = {z["source"].country for z in zones if z["source"] and z["source"].country}
    if len(published) == 1:
        (country,) = published
        say(f"the world names no country: zones without one are written with {country}, every imported zone's")
        return country
    say("the world names no country: zones without one are written with XXX")
    return "XXX"


def _by_identifier(zones: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The world zones of one published zone (its volumes, imported as <id>_1, <id>_2...) as one feature again."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for zone in zones:
        groups.setdefault(zone["source"].identifier if zone["source"] else zone["id"], []).append(zone)
    return [sorted(group, key=lambda z: (len(z["id"]), z["id"])) for group in groups.values()]  # _2 before _10


def _described(frame: GeoFrame) -> str:
    base = "Exported by CloudBrain; altitudes in metres above ground level"
    return f"{base}. Assumptions: {'; '.join(frame.assumptions)}" if frame.assumptions else base


def _exported_nfz(zone: NoFlyZone, say: _Assumptions) -> dict[str, Any]:
    source = zone.source
    periods = source.applicability if source else None
    if periods is not None and zone.active_window != source.applicability_window:
        say(f"zone {zone.id}: its active window is not the one read from its published periods: written as its window")
        periods = None
    return {
        "id": zone.id,
        "source": source,
        "restriction": source.restriction if source else "PROHIBITED",
        "ring": zone.polygon,
        "lower": zone.alt_min_m,
        "upper": None if zone.alt_max_m >= UNLIMITED_M else zone.alt_max_m,
        "window": zone.active_window,
        "periods": periods,
        "name": source.name if source else zone.reason,
        "reason_text": zone.reason or "no-fly zone",
    }


def _exported_sensitive(zone: SensitiveZone) -> dict[str, Any]:
    shape = zone.shape.buffer(zone.buffer_m, join_style="mitre") if zone.buffer_m > 0 else zone.shape
    return {
        "id": zone.id,
        "source": zone.source,
        "restriction": "CONDITIONAL",
        "ring": [tuple(round(v, DIGITS) for v in xy) for xy in list(shape.exterior.coords)[:-1]],
        "lower": 0.0,
        "upper": None,
        "window": None,  # kept clear at every time: a published schedule is written back as published
        "periods": zone.source.applicability if zone.source else None,
        "name": zone.source.name if zone.source else zone.name or zone.kind,
        "reason_text": zone.name or zone.kind,
    }


def _lon_lat_ring(zone: dict[str, Any], frame: GeoFrame) -> list[list[float]]:
    ring = [list(frame.lon_lat(x, y)) for x, y in zone["ring"]]
    return [*ring, ring[0]]


def _common(zone: dict[str, Any], country: str) -> dict[str, Any]:
    """The published fields of a zone, by ED-269's names; a reason OTHER always with its text (the published one,
    else the world zone's own reason)."""
    source: ZoneSource | None = zone["source"]
    reasons = list(source.reasons) if source else ["OTHER"]
    other = (source.other_reason_info if source else "") or ("OTHER" in reasons and zone["reason_text"] or "")
    return {
        "identifier": source.identifier if source else zone["id"],
        "country": source.country if source and source.country else country,
        "name": zone["name"],
        "reason": reasons,
        "otherReasonInfo": other,
        "restrictionConditions": list(source.restriction_conditions) if source else [],
        "message": source.message if source else "",
        "zoneAuthority": [dict(a) for a in source.authorities] if source else [],
    }


def _times(window: TimeWindow | None, frame: GeoFrame) -> dict[str, str] | None:
    if window is None:
        return None
    return {
        "startDateTime": rfc3339(frame.instant(window.start_sec)),
        "endDateTime": rfc3339(frame.instant(window.end_sec)),
    }


def _periods(zone: dict[str, Any], frame: GeoFrame) -> list[dict[str, Any]] | None:
    """The zone's time periods in ED-318's TimePeriod fields: as published, else its active window; None:
    permanent."""
    if zone["periods"] is not None:
        return [json.loads(json.dumps(p)) for p in zone["periods"]]
    times = _times(zone["window"], frame)
    return [times] if times else None


def _ed269(group: list[dict[str, Any]], frame: GeoFrame, country: str, say: _Assumptions) -> dict[str, Any]:
    zone = group[0]
    common = _common(zone, country)
    periods = _periods(zone, frame)
    other = common.pop("otherReasonInfo")
    if len(other) > ED269_OTHER_REASON_CHARS:
        say(f"zone {common['identifier']}: its reason text cut to ED-269's {ED269_OTHER_REASON_CHARS} characters")
        other = other[: ED269_OTHER_REASON_CHARS - 1] + "…"
    conditions = common.pop("restrictionConditions")
    feature = {
        **common,
        "message": common["message"] or None,
        "otherReasonInfo": other or None,
        "restrictionConditions": (conditions[0] if len(conditions) == 1 else conditions) or None,
        "type": "COMMON",
        "restriction": zone["restriction"],
        "applicability": (
            [{"permanent": "NO", **_ed269_period(p, common["identifier"], say)} for p in periods]
            if periods is not None
            else [{"permanent": "YES"}]
        ),
        "geometry": [
            {
                "uomDimensions": "M",
                "lowerLimit": math.floor(part["lower"]),
                "lowerVerticalReference": "AGL",
                "upperLimit": None if part["upper"] is None else math.ceil(part["upper"]),
                "upperVerticalReference": "AGL",
                "horizontalProjection": {"type": "Polygon", "coordinates": [_lon_lat_ring(part, frame)]},
            }
            for part in group
        ],
    }
    return _no_nulls(feature)


def _ed269_period(period: dict[str, Any], identifier: str, say: _Assumptions) -> dict[str, Any]:
    """A period in ED-269's fields: its schedule's times as published where uas-standards' model reads them, else
    the same time of day and offset in the model's spelling; a daylight event (ED-318) as the day's bound, as the
    import reads it."""
    written = {k: v for k, v in period.items() if k != "schedule"}
    if "schedule" in period:
        written["schedule"] = []
        for day in period["schedule"]:
            if day.get("startEvent") or day.get("endEvent"):
                say(f"zone {identifier}: a sunrise / sunset bound written as the day's (ED-269 has no daylight events)")
            start, end = day.get("startTime"), day.get("endTime")
            written["schedule"].append(
                {
                    "day": day["day"],
                    "startTime": _ed269_time(start) if start else MIDNIGHT,  # the import's start of day: UTC
                    "endTime": _ed269_time(end) if end else _midnight(start),
                }
            )
    return written


def _ed269_time(text: str) -> str:
    try:
        ED269TimeType(text)
        return text
    except (ValueError, TypeError):
        return _spelled(clock_time(text, "a published time"))


def _midnight(start: str | None) -> str:
    """The end of the day, in the start's offset (the import reads a missing end so)."""
    if not start:
        return MIDNIGHT
    return _spelled(time(0, tzinfo=clock_time(start, "a published time").tzinfo))


def _spelled(value: time) -> str:
    offset = value.strftime("%z")
    return value.strftime("%H:%M:%S.%f")[:11] + ("Z" if offset in ("", "+0000") else offset)


def _layer(zone: dict[str, Any]) -> dict[str, Any]:
    upper = UNLIMITED_M if zone["upper"] is None else zone["upper"]
    return {"upper": upper, "upperReference": "AGL", "lower": zone["lower"], "lowerReference": "AGL", "uom": "m"}


def _texts(text: str, lang: str) -> list[dict[str, str]]:
    return [{"text": text, "lang": lang}]


def _ed318_authority(authority: dict[str, str], identifier: str, lang: str, say: _Assumptions) -> dict[str, Any]:
    """An authority in ED-318's fields: its texts as {text, lang}; a purpose it must have (ED-269's is optional)."""
    if not authority.get("purpose"):
        say(f"zone {identifier}: an authority without a purpose written as INFORMATION (ED-318 requires one)")
    written: dict[str, Any] = {"purpose": authority.get("purpose") or "INFORMATION"}
    for key in ("name", "service", "contactName"):
        if authority.get(key):
            written[key] = _texts(authority[key], lang)
    for key in ("siteURL", "email", "phone"):
        if authority.get(key):
            written[key] = {"text": authority[key], "lang": lang}
    if authority.get("intervalBefore"):
        written["intervalBefore"] = authority["intervalBefore"]
    return written


def _ed318(group: list[dict[str, Any]], frame: GeoFrame, country: str, say: _Assumptions) -> dict[str, Any]:
    zone = group[0]
    common = _common(zone, country)
    identifier = common["identifier"]
    lang = zone["source"].lang if zone["source"] and zone["source"].lang else LANG
    restriction = zone["restriction"].replace("AUTHORISATION", "AUTHORIZATION")
    authorities = [_ed318_authority(a, identifier, lang, say) for a in common["zoneAuthority"]]
    properties = {
        "identifier": identifier,
        "country": common["country"],
        "name": _texts(common["name"], lang),
        "type": restriction,
        "variant": "COMMON",
        "reason": common["reason"],
        "otherReasonInfo": _texts(common["otherReasonInfo"], lang) if common["otherReasonInfo"] else None,
        "restrictionConditions": "; ".join(common["restrictionConditions"]) or None,
        "message": _texts(common["message"], lang) if common["message"] else None,
        "limitedApplicability": _periods(zone, frame),
        "zoneAuthority": authorities or [{"purpose": "INFORMATION"}],
    }
    # no Feature id: the identifier is in the properties, and uas-standards' model reads a string id as an int
    return {"type": "Feature", "properties": _no_nulls(properties), "geometry": _layered(group, frame)}


def _layered(group: list[dict[str, Any]], frame: GeoFrame) -> dict[str, Any]:
    """One Polygon with its layer; several (a zone of several volumes) as a GeometryCollection of them."""
    parts = [{"type": "Polygon", "coordinates": [_lon_lat_ring(p, frame)], "layer": _layer(p)} for p in group]
    return parts[0] if len(parts) == 1 else {"type": "GeometryCollection", "geometries": parts}


def _geojson(group: list[dict[str, Any]], frame: GeoFrame, country: str, say: _Assumptions) -> dict[str, Any]:
    zone = group[0]
    common = _common(zone, country)
    conditions = common.pop("restrictionConditions")
    properties = {
        **common,
        "message": common["message"] or None,
        "otherReasonInfo": common["otherReasonInfo"] or None,
        "restrictionConditions": (conditions[0] if len(conditions) == 1 else conditions) or None,
        "restriction": zone["restriction"],
    }
    periods = _periods(zone, frame)
    if periods is not None and len(periods) == 1 and periods[0] and set(periods[0]) <= set(PERIOD_FIELDS):
        properties.update(periods[0])  # one date range: flat, as a GIS tool's attribute table holds it
    elif periods is not None:
        properties["limitedApplicability"] = periods
    if len(group) == 1:  # flat limits, as a GIS tool's attribute table holds them
        layer = _layer(zone)
        properties.update({k: layer[k] for k in ("lower", "lowerReference", "upper", "upperReference", "uom")})
        geometry = {"type": "Polygon", "coordinates": [_lon_lat_ring(zone, frame)]}
    else:
        geometry = _layered(group, frame)
    return {"type": "Feature", "id": common["identifier"], "properties": _no_nulls(properties), "geometry": geometry}


def _no_nulls(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
