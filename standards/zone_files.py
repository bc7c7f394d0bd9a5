"""Reading published UAS geographical zone files into one shape: EUROCAE ED-269 JSON, ED-318 (its GeoJSON
successor) and plain GeoJSON.

The structure of ED-269 files and ED-318 zone properties is checked by `uas-standards`' typed models (so a field
the standard requires and the file lacks is named by the standard's own model); geometry, limits and schedules are
read here into `PublishedZone`, in the file's own units and references, with the fields an export writes back
(reason text, conditions, authorities, the time periods as published). Coordinates are kept as the file gives
them: whether pairs are [lon, lat] or [lat, lon] is decided for the whole file by `standards.zones`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from typing import Any

from implicitdict import ImplicitDict
from uas_standards.eurocae_ed269 import ED269Schema
from uas_standards.eurocae_ed318 import UASZone

from standards.frame import VERTICAL_REFERENCES, StandardsError, metres, parse_instant

RESTRICTIONS = ("PROHIBITED", "REQ_AUTHORISATION", "CONDITIONAL", "NO_RESTRICTION")
SPELLINGS = {"REQ_AUTHORIZATION": "REQ_AUTHORISATION", "USPACE": "USPACE"}  # ED-318 spells it with a Z
WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
AUTHORITY_FIELDS = ("name", "service", "email", "contactName", "siteURL", "phone", "purpose", "intervalBefore")
PERIOD_FIELDS = ("startDateTime", "endDateTime")
DAILY_FIELDS = ("day", "startTime", "startEvent", "endTime", "endEvent")
MAX_RADIUS_M = 1_000_000.0


@dataclass(frozen=True)
class Horizontal:
    """A polygon's exterior ring (pairs as published) and how many holes it had, or a circle."""

    ring: list[tuple[float, float]] | None = None
    holes: int = 0
    centre: tuple[float, float] | None = None
    radius_m: float | None = None


@dataclass(frozen=True)
class Limits:
    lower_m: float | None  # None: the surface
    lower_reference: str
    upper_m: float | None  # None: unlimited
    upper_reference: str


@dataclass(frozen=True)
class DailyWindow:
    days: tuple[str, ...]  # MON..SUN, or ANY
    start: time | None  # None: start of day (or a daylight event, read conservatively)
    end: time | None  # None: end of day
    approximated: bool = False  # a sunrise / sunset event read as the whole day


@dataclass(frozen=True)
class Period:
    start: datetime | None
    end: datetime | None
    daily: tuple[DailyWindow, ...] | None  # None: all day within [start, end]


@dataclass
class PublishedZone:
    identifier: str
    country: str
    restriction: str
    reasons: list[str]
    name: str
    message: str
    volumes: list[tuple[Horizontal, Limits]]
    periods: list[Period] | None  # None: permanent
    notes: list[str] = field(default_factory=list)
    other_reason_info: str = ""  # the text of reason OTHER
    lang: str = ""  # the language of its texts (ED-318's {text, lang}), '' where none is given
    restriction_conditions: list[str] = field(default_factory=list)
    authorities: list[dict[str, str]] = field(default_factory=list)  # by ED-269's field names, values as text
    applicability: list[dict[str, Any]] | None = None  # the periods as published (ED-318's TimePeriod fields)


def detect_format(document: Any) -> str:
    """A GeoJSON FeatureCollection is ED-318 when its features' properties carry ED-318's required `variant`, else
    plain GeoJSON; any other object with `features` is ED-269."""
    features = document.get("features") if isinstance(document, dict) else None
    if not isinstance(features, list):
        raise StandardsError("not a zone file: no `features` list (ED-269, ED-318 or GeoJSON FeatureCollection)")
    if document.get("type") != "FeatureCollection":
        return "ed269"
    first = next((f for f in features if isinstance(f, dict)), {})
    properties = first.get("properties")
    return "ed318" if isinstance(properties, dict) and "variant" in properties else "geojson"


def read_zones(document: Any, file_format: str) -> list[PublishedZone]:
    if file_format == "ed269":
        zones = _read_ed269(document)
    else:
        if not isinstance(document, dict) or document.get("type") != "FeatureCollection":
            raise StandardsError(f"an {file_format} file is a GeoJSON FeatureCollection (its `type` says so)")
        features = document.get("features")
        if not isinstance(features, list):
            raise StandardsError("features: missing or not a list")
        zones = [_read_feature(f, i, strict=file_format == "ed318") for i, f in enumerate(features)]
    seen: set[str] = set()
    for zone in zones:  # a second zone of one identifier would silently replace the first
        if zone.identifier in seen:
            raise StandardsError(f"identifier {zone.identifier!r} names two zones")
        seen.add(zone.identifier)
    return zones


# --- ED-269 ----------------------------------------------------------------------------------------------------
def _read_ed269(document: Any) -> list[PublishedZone]:
    """The structure is checked by uas-standards' model; the values are read from the file itself, since the model
    coerces (a limit of 152.9 read through its `int` field would lose 0.9 m of the zone)."""
    if not isinstance(document, dict):
        raise StandardsError("an ED-269 file is a JSON object with a `features` list")
    try:
        ED269Schema.from_dict(_times_as_the_model_reads_them(document))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise StandardsError(f"not valid ED-269: {exc}") from None
    zones = []
    for index, feature in enumerate(document["features"]):
        identifier = _identifier(feature.get("identifier"), f"features[{index}]")
        where = f"features[{index}] ({identifier})"
        if not feature.get("geometry"):
            raise StandardsError(f"{where}: missing geometry")
        volumes = [_ed269_volume(volume, f"{where}.geometry[{g}]") for g, volume in enumerate(feature["geometry"])]
        applicability = feature.get("applicability") or []
        periods = _ed269_periods(applicability, where)
        zones.append(
            PublishedZone(
                identifier=identifier,
                country=str(feature.get("country") or ""),
                restriction=_restriction(str(feature.get("restriction")), where),
                reasons=_reasons(feature.get("reason"), where),
                name=_text(feature.get("name"), f"{where}.name"),
                message=_text(feature.get("message"), f"{where}.message"),
                volumes=volumes,
                periods=periods,
                **_published_fields(feature, None if periods is None else applicability, where),
            )
        )
    return zones


def _published_fields(fields: dict, periods: list[Any] | None, where: str) -> dict[str, Any]:
    """What the world does not use but an export writes back: the reason text, conditions, authorities and the
    time periods as published (ED-269's `permanent` left out: a zone with periods is not permanent)."""
    return {
        "lang": _lang(fields),
        "other_reason_info": _text(fields.get("otherReasonInfo"), f"{where}.otherReasonInfo"),
        "restriction_conditions": _conditions(fields.get("restrictionConditions"), where),
        "authorities": _authorities(fields.get("zoneAuthority"), where),
        "applicability": None if periods is None else [_as_published(p) for p in periods],
    }


def _lang(fields: dict) -> str:
    """The language of the zone's first text that gives one (ED-318 texts are lists of {text, lang})."""
    for key in ("name", "message", "otherReasonInfo"):
        value = fields.get(key)
        if isinstance(value, list):
            for text in value:
                if isinstance(text, dict) and isinstance(text.get("lang"), str) and text["lang"]:
                    return text["lang"]
    return ""


def _as_published(period: dict) -> dict[str, Any]:
    """A period's own fields as the file gives them (already read and checked by `_period`)."""
    published: dict[str, Any] = {k: period[k] for k in PERIOD_FIELDS if period.get(k) is not None}
    if period.get("schedule"):
        published["schedule"] = [{k: d[k] for k in DAILY_FIELDS if d.get(k) is not None} for d in period["schedule"]]
    return published


def _times_as_the_model_reads_them(document: dict) -> dict:
    """A copy whose schedule times are in the one spelling uas-standards' ED269TimeType parses (it refuses
    "08:00:00Z" and "+02:00" offsets that published files use); the real times are read by `clock_time`."""
    copy = json.loads(json.dumps(document))
    for feature in copy.get("features") or []:
        for period in (feature.get("applicability") or []) if isinstance(feature, dict) else []:
            for day in (period.get("schedule") or []) if isinstance(period, dict) else []:
                if isinstance(day, dict):
                    for key in ("startTime", "endTime"):
                        if isinstance(day.get(key), str):
                            day[key] = "00:00:00.00Z"
    return copy


def _ed269_volume(volume: dict, where: str) -> tuple[Horizontal, Limits]:
    unit = str(volume.get("uomDimensions"))
    limits = Limits(
        lower_m=_limit(volume.get("lowerLimit"), unit, where),
        lower_reference=_reference(volume.get("lowerVerticalReference"), where, "lowerVerticalReference"),
        upper_m=_limit(volume.get("upperLimit"), unit, where),
        upper_reference=_reference(volume.get("upperVerticalReference"), where, "upperVerticalReference"),
    )
    projection = volume.get("horizontalProjection") or {}
    if projection.get("type") == "Circle":
        centre = _pair(projection.get("center"), where)
        return Horizontal(centre=centre, radius_m=_radius(projection.get("radius"), unit, where)), limits
    return _polygon(projection.get("coordinates"), where), limits


def _ed269_periods(applicability: list[Any], where: str) -> list[Period] | None:
    periods = []
    for index, period in enumerate(applicability):
        if period.get("permanent") == "YES":
            return None
        periods.append(_period(period, f"{where}.applicability[{index}]"))
    return periods or None


# --- ED-318 and GeoJSON --------------------------------------------------------------------------------------
def _read_feature(feature: Any, index: int, strict: bool) -> PublishedZone:
    where = f"features[{index}]"
    if not isinstance(feature, dict):
        raise StandardsError(f"{where}: not a GeoJSON Feature object")
    properties = feature.get("properties")
    if not isinstance(properties, dict):
        raise StandardsError(f"{where}: no properties (the zone's identifier and restriction)")
    if strict:
        try:
            ImplicitDict.parse(properties, UASZone)
        except (ValueError, TypeError, KeyError) as exc:
            raise StandardsError(f"{where}.properties: not a valid ED-318 zone: {exc}") from None
    identifier = _identifier(properties.get("identifier", feature.get("id")), where)
    where = f"{where} ({identifier})"
    geometry = feature.get("geometry")
    if not isinstance(geometry, dict):
        raise StandardsError(f"{where}: missing geometry")
    restriction = properties.get("type") if strict else properties.get("restriction", properties.get("type"))
    if restriction is None:
        raise StandardsError(f"{where}: no restriction (`type` in ED-318, `restriction` in GeoJSON)")
    periods, published = _geojson_periods(properties, where)
    return PublishedZone(
        identifier=identifier,
        country=str(properties.get("country") or ""),
        restriction=_restriction(str(restriction), where),
        reasons=_reasons(properties.get("reason"), where),
        name=_text(properties.get("name"), f"{where}.name"),
        message=_text(properties.get("message"), f"{where}.message"),
        volumes=_geojson_volumes(geometry, properties, where, strict),
        periods=periods,
        **_published_fields(properties, published, where),
    )


def _geojson_volumes(geometry: dict, properties: dict, where: str, strict: bool) -> list[tuple[Horizontal, Limits]]:
    if not isinstance(geometry, dict):
        raise StandardsError(f"{where}: missing geometry (a geometry must be an object)")
    kind = geometry.get("type")
    if kind == "GeometryCollection":
        parts = geometry.get("geometries") or []
        if not parts:
            raise StandardsError(f"{where}: missing geometry (an empty GeometryCollection)")
        return [v for n, part in enumerate(parts) for v in _geojson_volumes(part, properties, f"{where}[{n}]", strict)]
    layer = geometry.get("layer")
    limits = _layer_limits(layer, where) if layer is not None else _flat_limits(properties, where, strict)
    if kind == "Polygon":
        return [(_polygon(geometry.get("coordinates"), where), limits)]
    if kind == "MultiPolygon":
        polygons = geometry.get("coordinates") or []
        if not polygons:
            raise StandardsError(f"{where}: missing geometry (an empty MultiPolygon)")
        return [(_polygon(p, f"{where}[{n}]"), limits) for n, p in enumerate(polygons)]
    if kind == "Point":
        extent = geometry.get("extent") or {}
        if extent.get("subType") != "Circle":
            raise StandardsError(f"{where}: a Point zone needs a Circle extent with a radius")
        centre = _pair(geometry.get("coordinates"), where)
        # LayeredGeoJSON's circle radius is in metres; its `uom` is the layer's (vertical) unit. Reading it in feet
        # where the layer is in feet would shrink the zone 3.28 times, so metres it is.
        return [(Horizontal(centre=centre, radius_m=_radius(extent.get("radius"), "M", where)), limits)]
    raise StandardsError(f"{where}: missing geometry (a zone is a Polygon, MultiPolygon or circle, not {kind!r})")


def _layer_limits(layer: Any, where: str) -> Limits:
    if not isinstance(layer, dict):
        raise StandardsError(f"{where}: layer is not an object")
    unit = str(layer.get("uom") or "")
    if not unit:
        raise StandardsError(f"{where}: layer has no uom (m or ft)")
    return Limits(
        lower_m=_limit(layer.get("lower"), unit, where),
        lower_reference=_reference(layer.get("lowerReference"), where, "lowerReference"),
        upper_m=_limit(layer.get("upper"), unit, where),
        upper_reference=_reference(layer.get("upperReference"), where, "upperReference"),
    )


def _flat_limits(properties: dict, where: str, strict: bool) -> Limits:
    """Plain GeoJSON keeps limits in the properties; no limits at all is a zone from the surface up."""
    keys = ("lower", "upper", "lowerReference", "upperReference")
    if strict and not any(k in properties for k in keys):
        raise StandardsError(f"{where}: altitude reference missing (an ED-318 geometry needs its `layer`)")
    if not any(k in properties for k in keys):
        return Limits(None, "AGL", None, "AGL")
    unit = str(properties.get("uom") or "m")
    return Limits(
        lower_m=_limit(properties.get("lower"), unit, where),
        lower_reference=_reference(properties.get("lowerReference"), where, "lowerReference"),
        upper_m=_limit(properties.get("upper"), unit, where),
        upper_reference=_reference(properties.get("upperReference"), where, "upperReference"),
    )


def _geojson_periods(properties: dict, where: str) -> tuple[list[Period] | None, list[Any] | None]:
    """The periods read, and as published (flat start / end properties as one period)."""
    periods = properties.get("limitedApplicability")
    if periods is None and ("startDateTime" in properties or "endDateTime" in properties):
        periods = [{k: properties.get(k) for k in PERIOD_FIELDS}]
    if not periods:
        return None, None
    if not isinstance(periods, list):
        raise StandardsError(f"{where}: limitedApplicability is not a list")
    return [_period(p, f"{where}.limitedApplicability[{n}]") for n, p in enumerate(periods)], periods


# --- shared pieces ---------------------------------------------------------------------------------------------
def _period(period: Any, where: str) -> Period:
    if not isinstance(period, dict):
        raise StandardsError(f"{where}: not an object")
    start, end = period.get("startDateTime"), period.get("endDateTime")
    schedule = period.get("schedule")
    daily = None
    if schedule:
        daily = tuple(_daily(day, f"{where}.schedule[{n}]") for n, day in enumerate(schedule))
    begins = None if start is None else parse_instant(str(start), f"{where}.startDateTime")
    ends = None if end is None else parse_instant(str(end), f"{where}.endDateTime")
    if begins is not None and ends is not None and ends <= begins:
        raise StandardsError(f"{where}: endDateTime {end} is not after startDateTime {start}")
    return Period(start=begins, end=ends, daily=daily)


def _daily(day: Any, where: str) -> DailyWindow:
    if not isinstance(day, dict):
        raise StandardsError(f"{where}: not an object")
    days = tuple(str(d) for d in day.get("day") or [])
    unknown = [d for d in days if d not in (*WEEKDAYS, "ANY")]
    if not days or unknown:
        raise StandardsError(f"{where}: day must list MON..SUN or ANY, got {list(days)}")
    start, end = day.get("startTime"), day.get("endTime")
    return DailyWindow(
        days=days,
        start=None if start is None else clock_time(str(start), where),
        end=None if end is None else clock_time(str(end), where),
        approximated=(start is None and day.get("startEvent") is not None)
        or (end is None and day.get("endEvent") is not None),
    )


def clock_time(text: str, where: str) -> time:
    """ED-269's hh:mm:ss(.s)Z / hh:mmZ, with Z or an offset; no zone is UTC (ED-318 times are UTC)."""
    value = text.strip().replace("Z", "+00:00")
    try:
        parsed = time.fromisoformat(value)
    except ValueError:
        raise StandardsError(f"{where}: {text!r} is not a time of day (hh:mm[:ss]Z)") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _polygon(coordinates: Any, where: str) -> Horizontal:
    if not isinstance(coordinates, list) or not coordinates or not isinstance(coordinates[0], list):
        raise StandardsError(f"{where}: missing geometry (a polygon needs its coordinates)")
    ring = [_pair(p, where) for p in coordinates[0]]
    if len(ring) > 1 and ring[0] == ring[-1]:
        ring = ring[:-1]
    if len(set(ring)) < 3:
        raise StandardsError(f"{where}: missing geometry (a polygon needs at least three distinct vertices)")
    return Horizontal(ring=ring, holes=len(coordinates) - 1)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _pair(point: Any, where: str) -> tuple[float, float]:
    if not isinstance(point, list | tuple) or len(point) < 2 or not all(_number(v) for v in point[:2]):
        raise StandardsError(f"{where}: a coordinate must be a pair of numbers, got {point!r}")
    return float(point[0]), float(point[1])


def _radius(radius: Any, unit: str, where: str) -> float:
    if not _number(radius) or radius <= 0:
        raise StandardsError(f"{where}: missing geometry (a circle needs a positive radius, got {radius!r})")
    metres_ = metres(radius, unit, where)
    if metres_ > MAX_RADIUS_M:
        raise StandardsError(f"{where}: a circle of radius {metres_:g} m is not a UAS zone (at most {MAX_RADIUS_M:g})")
    return metres_


def _limit(value: Any, unit: str, where: str) -> float | None:
    if value is None:
        return None
    if not _number(value):
        raise StandardsError(f"{where}: an altitude limit must be a number, got {value!r}")
    return metres(value, unit, where)


def _identifier(value: Any, where: str) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
        raise StandardsError(f"{where}: no identifier (a non-empty string)")
    return str(value).strip()


def _reasons(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
        raise StandardsError(f"{where}: reason must be a list of reason codes, got {value!r}")
    return list(value)


def _conditions(value: Any, where: str) -> list[str]:
    """ED-269's restrictionConditions is a text or a list of texts, ED-318's one expression."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
        raise StandardsError(f"{where}: restrictionConditions must be a text or a list of texts, got {value!r}")
    return [c for c in value if c]


def _authorities(value: Any, where: str) -> list[dict[str, str]]:
    """zoneAuthority entries by ED-269's field names, each value as text (ED-318's {text, lang} lists read as
    their first text), fields left empty dropped."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(a, dict) for a in value):
        raise StandardsError(f"{where}: zoneAuthority must be a list of authorities, got {value!r}")
    read = []
    for n, authority in enumerate(value):
        texts = {k: _text(authority.get(k), f"{where}.zoneAuthority[{n}].{k}") for k in AUTHORITY_FIELDS}
        read.append({k: v for k, v in texts.items() if v})
    return read


def _reference(value: Any, where: str, key: str) -> str:
    if value is None:
        raise StandardsError(f"{where}: altitude reference missing ({key}: AGL, AMSL or WGS84)")
    reference = str(value).upper()
    if reference not in VERTICAL_REFERENCES:
        raise StandardsError(f"{where}: unknown altitude reference {value!r} ({key}: AGL, AMSL or WGS84)")
    return reference


def _restriction(value: str, where: str) -> str:
    restriction = SPELLINGS.get(value, value)
    if restriction not in (*RESTRICTIONS, "USPACE"):
        raise StandardsError(f"{where}: unknown restriction {value!r} (one of {', '.join(RESTRICTIONS)})")
    return restriction


def _text(value: Any, where: str) -> str:
    """ED-269 texts are strings; ED-318's are lists of {text, lang} (the first text), or one {text, lang}."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("text", ""), str | None):
        return value.get("text") or ""
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return next((str(v["text"]) for v in value if v.get("text")), "")
    raise StandardsError(f"{where}: a text must be a string or a list of {{text, lang}}, got {value!r}")
