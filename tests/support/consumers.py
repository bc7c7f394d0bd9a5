"""The acceptance rules of the systems that take our exports, re-stated from their own source or specification, each
rule next to where it comes from. Every checker returns the list of what the consumer would reject or misread
(empty: it takes the file as meant).

Sources (read for this, not copied):
- QGroundControl (github.com/mavlink/qgroundcontrol), src/MissionManager/: MissionController.cc
  (`_loadTextMissionFile`, `_loadJsonMissionFileV2`), MissionItem.cc (`MissionItem::load(QTextStream&)`,
  `MissionItem::load(const QJsonObject&, int, QString&)`), SimpleMissionItem.cc (`_setDefaultsForCommand`),
  PlanMasterController.cc (`loadFromFile`), GeoFenceController.cc (`load`), RallyPointController.cc (`load`),
  src/QmlControls/QGCFencePolygon.cc and QGCMapPolygon.cc (`loadFromJson`), src/Utilities/JsonHelper.cc
  (`validateKeys`, `loadGeoCoordinate`), src/QmlControls/QGroundControlQmlGlobal.h (`enum AltMode`), and the
  plan format's documentation docs/en/qgc-dev-guide/file_formats/plan.md.
- MAVLink (github.com/mavlink/mavlink) message_definitions/v1.0/common.xml, read here through pymavlink's generated
  `common` dialect (`enums`): MAV_CMD_NAV_WAYPOINT 16, NAV_LAND 21, NAV_TAKEOFF 22, DO_CHANGE_SPEED 178, SPEED_TYPE,
  MAV_FRAME; and mavlink.io's File Formats page (the mission plain-text file).
- ASTM F3548-21's OpenAPI definition (github.com/astm-utm/Protocol utm.yaml), vendored in tests/data/consumers/.
- OGC KML 2.2: the XSD fastkml ships (fastkml/schema/ogckml22.xsd and the schemas it imports).
- RFC 7946 (GeoJSON), sections 3.1.1 (positions), 3.1.4 (LineString), 3.1.6 (Polygon), 3.2 (Feature), 4 (CRS).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import fastkml
import numpy as np
import yaml
from jsonschema import Draft4Validator
from lxml import etree
from pymavlink.dialects.v20 import common as mavlink
from shapely.geometry import Polygon

from tools.trajectory import flight_phases

UTM_YAML = Path(__file__).resolve().parents[1] / "data" / "consumers" / "astm_f3548_utm.yaml"
KML_XSD = Path(fastkml.__file__).resolve().parent / "schema" / "ogckml22.xsd"

# --- MAVLink (common.xml, through pymavlink) -------------------------------------------------------------------
MAV_CMD = {value: entry.name for value, entry in mavlink.enums["MAV_CMD"].items() if not entry.name.endswith("_END")}
MAV_FRAME = {value: e.name for value, e in mavlink.enums["MAV_FRAME"].items() if not e.name.endswith("_END")}
SPEED_TYPE = {value: e.name for value, e in mavlink.enums["SPEED_TYPE"].items() if not e.name.endswith("_END")}
NAV_WAYPOINT, NAV_LAND, NAV_TAKEOFF, DO_CHANGE_SPEED = (
    mavlink.MAV_CMD_NAV_WAYPOINT,
    mavlink.MAV_CMD_NAV_LAND,
    mavlink.MAV_CMD_NAV_TAKEOFF,
    mavlink.MAV_CMD_DO_CHANGE_SPEED,
)
NAVIGATION = (NAV_WAYPOINT, NAV_LAND, NAV_TAKEOFF)
GROUND, CLIMB, DESCENT = (
    mavlink.SPEED_TYPE_GROUNDSPEED,
    mavlink.SPEED_TYPE_CLIMB_SPEED,
    mavlink.SPEED_TYPE_DESCENT_SPEED,
)
TIME_RESOLUTION_SEC = 0.001  # a certified waypoint's time is to the millisecond
# QGroundControlQmlGlobal::AltMode: AltitudeModeMixed 0, Relative 1 (MAV_FRAME_GLOBAL_RELATIVE_ALT), Absolute 2
# (MAV_FRAME_GLOBAL), CalcAboveTerrain 3, TerrainFrame 4 (MAV_FRAME_GLOBAL_TERRAIN_ALT), None 5
QGC_ALT_MODES = {0: "Mixed", 1: "Relative", 2: "Absolute", 3: "CalcAboveTerrain", 4: "TerrainFrame", 5: "None"}
QGC_ALT_MODE_FRAME = {1: mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT, 2: mavlink.MAV_FRAME_GLOBAL}

_QT_INT = re.compile(r"[+-]?\d+")
_QT_DOUBLE = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|nan|[+-]?inf")


# --- QGroundControl: the WPL text loader ----------------------------------------------------------------------
def qgc_text_mission(text: str) -> tuple[list[tuple[int, int, int, int, tuple[float, ...], int]], list[str]]:
    """QGroundControl's MissionController::_loadTextMissionFile: the first line split on " " must be
    ["QGC", "WPL", "110"] (110: the planned home position is item 0) or "120"; then, while the stream is not at
    its end, MissionItem::load(QTextStream&) reads one line, splits it on "\\t" and needs exactly 12 fields, else
    the load stops with "The mission file is corrupted.". Fields 0-3 and 11 are read with QString::toInt, 4-10
    with QString::toDouble (each silently 0 when unreadable: here that is a rejection). mavlink.io's File Formats
    page gives the same 12 fields: INDEX, CURRENT WP, COORD FRAME, COMMAND, PARAM1-4, PARAM5/X/LATITUDE,
    PARAM6/Y/LONGITUDE, PARAM7/Z/ALTITUDE, AUTOCONTINUE. Returns the rows and what is wrong."""
    errors: list[str] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":  # QTextStream::atEnd after the last line's newline
        lines = lines[:-1]
    lines = [line.removesuffix("\r") for line in lines]
    if not lines or lines[0].split(" ") not in (["QGC", "WPL", "110"], ["QGC", "WPL", "120"]):
        return [], ["The mission file is not compatible with this version of QGroundControl (header)"]
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != 12:
            errors.append(f"line {number}: {len(fields)} tab-separated fields: The mission file is corrupted.")
            continue
        if not all(_QT_INT.fullmatch(fields[i]) for i in (0, 1, 2, 3, 11)):
            errors.append(f"line {number}: an integer field QString::toInt cannot read: {fields}")
            continue
        if not all(_QT_DOUBLE.fullmatch(f) for f in fields[4:11]):
            errors.append(f"line {number}: a parameter QString::toDouble cannot read: {fields}")
            continue
        seq, current, frame, command, autocontinue = (int(fields[i]) for i in (0, 1, 2, 3, 11))
        rows.append((seq, current, frame, command, tuple(float(f) for f in fields[4:11]), autocontinue))
    for index, (seq, current, frame, command, _, autocontinue) in enumerate(rows):
        if seq != index:
            errors.append(f"item {index}: INDEX {seq}")
        if frame not in MAV_FRAME or command not in MAV_CMD:
            errors.append(f"item {index}: frame {frame} / command {command} not in common.xml's MAV_FRAME / MAV_CMD")
        if current not in (0, 1) or autocontinue not in (0, 1):
            errors.append(f"item {index}: CURRENT WP / AUTOCONTINUE not 0 or 1")
    if rows and (rows[0][2] != mavlink.MAV_FRAME_GLOBAL or rows[0][3] != NAV_WAYPOINT):
        errors.append("item 0 (WPL 110: the planned home position) is not a NAV_WAYPOINT in MAV_FRAME_GLOBAL (AMSL)")
    return rows, errors


# --- QGroundControl: the .plan JSON loader --------------------------------------------------------------------
def _is_double(value: Any) -> bool:
    """QJsonValue::Double: a JSON number (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _validate_keys(where: str, json: Any, keys: Sequence[tuple[str, str, bool]]) -> list[str]:
    """JsonHelper::validateKeys: each required key present, each present key of its QJsonValue type (a null is
    taken where a Double is asked: JsonHelper reads it as NaN)."""
    if not isinstance(json, dict):
        return [f"{where}: not an object"]
    errors = []
    check = {"Double": lambda v: _is_double(v) or v is None, "Array": lambda v: isinstance(v, list)}
    check |= {"Object": lambda v: isinstance(v, dict), "String": lambda v: isinstance(v, str)}
    check |= {"Bool": lambda v: isinstance(v, bool)}
    for key, kind, required in keys:
        if key not in json:
            if required:
                errors.append(f"{where}: The following required keys are missing: {key}")
        elif not check[kind](json[key]):
            errors.append(f"{where}: Incorrect value type - key:type:expected {key}:{type(json[key]).__name__}:{kind}")
    return errors


def _geo_coordinate(where: str, value: Any, altitude_required: bool) -> list[str]:
    """JsonHelper::loadGeoCoordinate: an array of 3 values (2 without altitude), each a Double or null."""
    count = 3 if altitude_required else 2
    if not isinstance(value, list) or len(value) != count:
        return [f"{where}: Coordinate array must contain {count} values"]
    if not all(_is_double(v) or v is None for v in value):
        return [f"{where}: Coordinate array may only contain double values"]
    return []


def clockwise(lat_lon: Sequence[Sequence[float]]) -> bool:
    """A ring of [lat, lon] seen on a north-up map (x east = lon, y north = lat) turns clockwise."""
    points = [(lon, lat) for lat, lon in lat_lon]
    area = sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1]))
    return area < 0


def qgc_plan(document: Any) -> list[str]:
    """What QGroundControl's Plan loader rejects, or reads otherwise than meant."""
    # PlanMasterController::loadFromFile: JsonHelper::validateQGCJsonFile(json, "Plan", 1, 1), then the three
    # objects; plan.md: version 1, fileType "Plan", groundStation
    errors = _validate_keys("plan", document, [("fileType", "String", True), ("version", "Double", True),
                                                ("groundStation", "String", True), ("mission", "Object", True),
                                                ("geoFence", "Object", True), ("rallyPoints", "Object", True)])  # fmt: skip
    if errors:
        return errors
    if document["fileType"] != "Plan" or document["version"] != 1:
        errors.append("plan: fileType must be Plan, version 1 (kPlanFileType, kPlanFileVersion)")
    mission = document["mission"]
    # MissionController::_loadJsonMissionFileV2: the root keys and their types
    errors += _validate_keys("mission", mission, [("plannedHomePosition", "Array", True), ("items", "Array", True),
                                                  ("firmwareType", "Double", True), ("vehicleType", "Double", False),
                                                  ("cruiseSpeed", "Double", False), ("hoverSpeed", "Double", False),
                                                  ("globalPlanAltitudeMode", "Double", False)])  # fmt: skip
    if errors:
        return errors
    # plan.md: the mission object's version is 2, and globalPlanAltitudeMode is among its required values
    if mission.get("version") != 2:
        errors.append("mission: version must be 2 (MissionController::_missionFileVersion)")
    mode = mission.get("globalPlanAltitudeMode")
    if mode not in QGC_ALT_MODES:
        errors.append(f"mission: globalPlanAltitudeMode {mode!r} is not a QGroundControlQmlGlobal::AltMode")
    errors += _geo_coordinate("plannedHomePosition", mission["plannedHomePosition"], altitude_required=True)
    for index, item in enumerate(mission["items"]):
        errors += _simple_item(f"item {index}", item, QGC_ALT_MODE_FRAME.get(mode))
    errors += _geofence(document["geoFence"])
    # RallyPointController::load: version 2 (_jsonCurrentVersion), points an array of [lat, lon, alt]
    rally = document["rallyPoints"]
    errors += _validate_keys("rallyPoints", rally, [("version", "Double", True), ("points", "Array", True)])
    if rally.get("version") != 2:
        errors.append("rallyPoints: Rally Points supports version 2")
    for index, point in enumerate(rally.get("points") or []):
        errors += _geo_coordinate(f"rally point {index}", point, altitude_required=True)
    return errors


def _simple_item(where: str, item: Any, plan_frame: int | None) -> list[str]:
    # _loadJsonMissionFileV2: every item has a "type"; SimpleItem -> MissionItem::load(const QJsonObject&, ...)
    errors = _validate_keys(where, item, [("type", "String", True)])
    if errors:
        return errors
    if item["type"] != "SimpleItem":
        return [f"{where}: Unknown item type: {item['type']}"]
    errors = _validate_keys(where, item, [("frame", "Double", True), ("command", "Double", True),
                                          ("params", "Array", True), ("autoContinue", "Bool", True),
                                          ("doJumpId", "Double", False)])  # fmt: skip
    if errors:
        return errors
    params = item["params"]
    if len(params) != 7:
        return [f"{where}: params key must contains 7 values"]
    if not all(_is_double(p) or p is None for p in params):
        return [f"{where}: a param is not a double or null (JsonHelper::possibleNaNJsonValue)"]
    command, frame = item["command"], item["frame"]
    if command not in MAV_CMD or frame not in MAV_FRAME:
        return [f"{where}: command {command} / frame {frame} not in common.xml"]
    # SimpleMissionItem::_setDefaultsForCommand: a command with a coordinate flies in the plan's altitude frame
    # (a take-off always relative to home); one without gets MAV_FRAME_MISSION
    if command in NAVIGATION:
        if frame != (mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT if command == NAV_TAKEOFF else plan_frame):
            errors.append(f"{where}: {MAV_CMD[command]} in frame {frame}, not the plan's altitude mode's")
        if params[4] is None or params[5] is None or not (-90 <= params[4] <= 90 and -180 <= params[5] <= 180):
            errors.append(f"{where}: no latitude / longitude in params 5, 6")
    elif frame != mavlink.MAV_FRAME_MISSION:
        errors.append(f"{where}: {MAV_CMD[command]} has no coordinate: its frame is MAV_FRAME_MISSION (2)")
    return errors


def _geofence(fence: Any) -> list[str]:
    # GeoFenceController::load: version 2 (_jsonCurrentVersion); circles and polygons arrays
    errors = _validate_keys("geoFence", fence, [("version", "Double", True), ("circles", "Array", True),
                                                ("polygons", "Array", True), ("breachReturn", "Array", False)])  # fmt: skip
    if errors:
        return errors
    if fence["version"] != 2:
        errors.append("geoFence: GeoFence supports version 2")
    for index, polygon in enumerate(fence["polygons"]):
        where = f"fence polygon {index}"
        # QGCFencePolygon::loadFromJson: version 1, inclusion; QGCMapPolygon::loadFromJson: "polygon", an array of
        # coordinates without altitude (JsonHelper::loadGeoCoordinateArray)
        found = _validate_keys(where, polygon, [("version", "Double", True), ("inclusion", "Bool", True),
                                                ("polygon", "Array", True)])  # fmt: skip
        if found:
            errors += found
            continue
        if polygon["version"] != 1:
            errors.append(f"{where}: GeoFence Polygon only supports version 1")
        vertices = polygon["polygon"]
        for vertex in vertices:
            errors += _geo_coordinate(where, vertex, altitude_required=False)
        # plan.md, Polygon Geofence: "The points are ordered in a clockwise winding" (they must enclose an area)
        if len(vertices) < 3 or not clockwise(vertices):
            errors.append(f"{where}: the vertices are not wound clockwise around an area (plan.md)")
    return errors


# --- MAVLink: the speeds a mission sets, against the plan ---------------------------------------------------------
def _stops(waypoints: np.ndarray) -> list[list[Any]]:
    """The places a track stops at: [x, y, z], arrival time, departure time (a hover merged into its place)."""
    stops: list[list[Any]] = []
    for w in waypoints:
        if stops and np.all(w[:3] == stops[-1][0]):
            stops[-1][2] = float(w[3])
        else:
            stops.append([w[:3], float(w[3]), float(w[3])])
    return stops


def mission_follows_the_plan(items: Sequence[tuple[int, Sequence[float | None]]], waypoints: np.ndarray) -> list[str]:
    """A mission's (command, params 1-7) after home, against the certified waypoints, by MAVLink's meanings:

    - common.xml DO_CHANGE_SPEED: param1 a SPEED_TYPE (0 airspeed, 1 ground speed, 2 climb speed, 3 descent speed),
      param2 the speed in m/s, param3 throttle (-1 no change), params 4-7 reserved (0); "the value persists until
      it is overridden". Every value written equals the speed the plan assumes, in that speed type, on the leg it
      comes before (ground speed: horizontal distance / time; climb / descent: vertical distance / time), to the
      precision of the plan's times (a waypoint's time is to the ms: the leg flown at that speed takes its time
      to within 1 ms), and on every leg the speeds in force keep the plan's time so.
    - NAV_TAKEOFF at the first point to the top of the climb; NAV_LAND at the last (param7 "Landing altitude
      (ground level in current frame)": 0 above home); a NAV_WAYPOINT's param1 is its hold time (rotary wing)."""
    errors: list[str] = []
    phases = flight_phases(waypoints)
    stops = _stops(waypoints)
    k = 1 if phases.has_takeoff else 0
    in_force: dict[int, float] = {}
    written: list[tuple[int, float]] = []
    holds = [0.0] * len(stops)
    previous: tuple[float | None, ...] | None = None
    for index, (command, params) in enumerate(items):
        if command == DO_CHANGE_SPEED:
            kind, value = int(params[0] or 0), float(params[1] or 0)
            if kind not in SPEED_TYPE or kind == mavlink.SPEED_TYPE_AIRSPEED or value <= 0:
                errors.append(f"item {index}: DO_CHANGE_SPEED type {kind} value {value}: no speed the plan assumes")
            if params[2] != -1 or any(p not in (0, None) for p in params[3:]):
                errors.append(f"item {index}: DO_CHANGE_SPEED throttle not -1 (no change) or reserved params not 0")
            in_force[kind] = value
            written.append((kind, value))
            continue
        if command not in NAVIGATION:
            continue
        position = tuple(params[4:7])
        if previous is not None and position == previous and command == NAV_WAYPOINT:  # a hold where it is
            holds[k - 1] += float(params[0] or 0)
            continue
        previous = position
        if k >= len(stops):
            errors.append(f"item {index}: more navigation items than the plan has places")
            break
        if k == 1 and phases.has_takeoff and command != NAV_TAKEOFF:
            errors.append(f"item {index}: a ground-to-ground plan takes off first (NAV_TAKEOFF), not {command}")
        if k == len(stops) - 1 and phases.has_landing(len(waypoints)):
            if command != NAV_LAND or params[6] != 0:
                errors.append(f"item {index}: a ground-to-ground plan ends with NAV_LAND at 0 above home")
        if command == NAV_WAYPOINT:
            holds[k] += float(params[0] or 0)
        if k > 0:
            errors += _leg_speeds(index, stops[k - 1], stops[k], in_force, written)
        written = []
        k += 1
    if k != len(stops):
        errors.append(f"the mission visits {k} of the plan's {len(stops)} places")
    for place, (_, arrive, depart) in enumerate(stops[:-1]):
        if place > 0 and abs(holds[place] - (depart - arrive)) > TIME_RESOLUTION_SEC:
            errors.append(f"place {place}: held {holds[place]} s, the plan hovers {depart - arrive:.3f} s")
    return errors


def _leg_speeds(index: int, a: list[Any], b: list[Any], in_force: dict[int, float], written: list) -> list[str]:
    errors = []
    seconds = b[1] - a[2]
    metres = {GROUND: float(np.hypot(*(b[0][:2] - a[0][:2]))), CLIMB: 0.0, DESCENT: 0.0}
    vertical = float(b[0][2] - a[0][2])
    metres[CLIMB if vertical > 0 else DESCENT] = abs(vertical)
    for kind, value in written:  # each value written is this leg's speed in the frame its type names
        if kind in metres and (metres[kind] == 0 or abs(metres[kind] / value - seconds) > TIME_RESOLUTION_SEC):
            errors.append(
                f"item {index}: DO_CHANGE_SPEED {SPEED_TYPE[kind]} {value} m/s before a leg the plan flies at "
                f"{metres[kind] / seconds:.3f} m/s in that frame"
            )
    for kind, distance in metres.items():
        if distance <= 1e-6:
            continue
        speed = in_force.get(kind)
        if speed is None or abs(distance / speed - seconds) > TIME_RESOLUTION_SEC + 1e-9:
            errors.append(
                f"item {index}: the leg takes {seconds:.3f} s in the plan, {SPEED_TYPE[kind]} in force "
                f"{speed} m/s over {distance:.3f} m"
            )
    return errors


# --- ASTM F3548-21: the OpenAPI schema ------------------------------------------------------------------------
def _openapi_to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0's Schema Object is JSON Schema draft 4/5 plus keywords: `nullable: true` also admits null."""
    if isinstance(node, list):
        return [_openapi_to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    converted = {key: _openapi_to_json_schema(value) for key, value in node.items()}
    if converted.pop("nullable", False) is True:
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


@cache
def _utm_spec() -> dict[str, Any]:
    return _openapi_to_json_schema(yaml.safe_load(UTM_YAML.read_text(encoding="utf-8")))


def f3548_schema_errors(instance: Any, component: str) -> list[str]:
    """The instance against utm.yaml's components.schemas.<component>, $refs resolved in the YAML."""
    validator = Draft4Validator({**_utm_spec(), "$ref": f"#/components/schemas/{component}"})
    errors = []
    for error in validator.iter_errors(instance):  # an anyOf's own reasons are in its context
        reasons = "; ".join(e.message for e in error.context)
        errors.append(
            f"{'/'.join(map(str, error.absolute_path))}: {error.message}{' (' + reasons + ')' if reasons else ''}"
        )
    return errors


_RFC3339_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z")


def f3548_details(details: Any, now: datetime) -> list[str]:
    """OperationalIntentDetails, by the schema and by the rules its descriptions state."""
    errors = f3548_schema_errors(details, "OperationalIntentDetails")
    if errors:
        return errors
    volumes = details.get("volumes") or []
    if not volumes:  # "Required with at least one item when the operational intent is Accepted, Activated ..."
        errors.append("volumes: none (an Accepted or Activated intent needs at least one)")
    for index, volume in enumerate(volumes):
        where = f"volume {index}"
        shape = volume["volume"]
        # Volume4D's volumes: "Start and end times, as well as lower and upper altitudes, are required for each
        # volume. The end time may not be in the past."
        if not all(k in volume for k in ("time_start", "time_end")):
            errors.append(f"{where}: no start or end time")
            continue
        if not all(k in shape for k in ("altitude_lower", "altitude_upper")):
            errors.append(f"{where}: no lower or upper altitude")
            continue
        start, end = (volume[k]["value"] for k in ("time_start", "time_end"))
        if not (_RFC3339_Z.fullmatch(start) and _RFC3339_Z.fullmatch(end)):  # Time: "The time zone must be 'Z'."
            errors.append(f"{where}: times not RFC 3339 in Z: {start}, {end}")
            continue
        begins, ends = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (start, end))
        if not begins < ends:  # "Beginning time of this volume. Must be before time_end."
            errors.append(f"{where}: starts at {start}, not before its end {end}")
        if ends <= now:
            errors.append(f"{where}: ends at {end}, in the past")
        if not shape["altitude_lower"]["value"] < shape["altitude_upper"]["value"]:  # Volume3D: "Must be less"
            errors.append(f"{where}: altitude_lower not below altitude_upper")
        # Volume3D: "Exactly one outline must be specified."
        if ("outline_polygon" in shape) == ("outline_circle" in shape):
            errors.append(f"{where}: not exactly one outline")
            continue
        # Polygon: "Edges may not cross. Vertices may not be duplicated. In particular, the final polygon vertex
        # must not be identical to the first vertex."
        vertices = [(v["lng"], v["lat"]) for v in shape["outline_polygon"]["vertices"]]
        if len(set(vertices)) != len(vertices):
            errors.append(f"{where}: a vertex is duplicated (or the last repeats the first)")
        elif not Polygon(vertices).is_valid:
            errors.append(f"{where}: the outline's edges cross")
    return errors


# --- OGC KML 2.2 ----------------------------------------------------------------------------------------------
@cache
def _kml_schema() -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(KML_XSD)))


def kml_errors(text: str) -> list[str]:
    """The document against OGC KML 2.2's XSD (ogckml22.xsd, as fastkml ships it, with its imports)."""
    schema = _kml_schema()
    if schema.validate(etree.fromstring(text.encode("utf-8"))):
        return []
    return [f"line {e.line}: {e.message}" for e in schema.error_log]


# --- RFC 7946 (GeoJSON) ---------------------------------------------------------------------------------------
def _position(where: str, position: Any) -> list[str]:
    # 3.1.1: "A position is an array of numbers. There MUST be two or more elements. The first two elements are
    # longitude and latitude [...] Altitude or elevation MAY be included as an optional third element."
    # "Implementations SHOULD NOT extend positions beyond three elements"
    if not isinstance(position, list) or not 2 <= len(position) <= 3 or not all(_is_double(v) for v in position):
        return [f"{where}: {position!r} is not a position [lon, lat(, height)]"]
    lon, lat = position[:2]
    if not (-180 <= lon <= 180 and -90 <= lat <= 90):
        return [f"{where}: {position!r} is not [longitude, latitude]"]
    return []


def _ring_area(ring: Sequence[Sequence[float]]) -> float:
    return sum(x0 * y1 - x1 * y0 for (x0, y0, *_), (x1, y1, *_) in zip(ring[:-1], ring[1:])) / 2


def rfc7946_errors(document: Any) -> list[str]:
    errors: list[str] = []
    if not isinstance(document, dict) or document.get("type") != "FeatureCollection":
        return ["not a FeatureCollection"]
    if "crs" in document:  # 4: the crs member is gone; coordinates are WGS 84 longitude, latitude
        errors.append("a crs member")
    for index, feature in enumerate(document.get("features", [])):
        where = f"feature {index}"
        # 3.2: "A Feature object has a "type" member with the value "Feature"", a "geometry" and a "properties"
        # member; an identifier, if any, is "either a JSON string or number"
        if feature.get("type") != "Feature" or "geometry" not in feature or "properties" not in feature:
            errors.append(f"{where}: not a Feature with geometry and properties")
            continue
        if "id" in feature and not (isinstance(feature["id"], str) or _is_double(feature["id"])):
            errors.append(f"{where}: id is neither a string nor a number")
        geometry = feature["geometry"]
        kind, coordinates = geometry.get("type"), geometry.get("coordinates")
        if kind == "LineString":
            # 3.1.4: "the "coordinates" member is an array of two or more positions"
            if not isinstance(coordinates, list) or len(coordinates) < 2:
                errors.append(f"{where}: a LineString of fewer than two positions")
                continue
            for position in coordinates:
                errors += _position(where, position)
        elif kind == "Polygon":
            for number, ring in enumerate(coordinates):
                # 3.1.6: a linear ring is "a closed LineString with four or more positions. The first and last
                # positions are equivalent"; "exterior rings are counterclockwise, and holes are clockwise"
                for position in ring:
                    errors += _position(where, position)
                if len(ring) < 4 or ring[0] != ring[-1]:
                    errors.append(f"{where}: ring {number} not closed or of fewer than four positions")
                elif (_ring_area(ring) > 0) != (number == 0):
                    errors.append(f"{where}: ring {number} does not follow the right-hand rule")
        else:
            errors.append(f"{where}: an unexpected geometry {kind}")
    return errors


def heights_m(positions: Sequence[Sequence[float]]) -> list[float]:
    return [p[2] for p in positions if len(p) == 3 and not math.isnan(p[2])]
