"""An execute as the files other systems take: an ASTM F3548-21 operational intent, a QGroundControl `.plan`, a
MAVLink mission (QGC WPL 110 lines, one MISSION_ITEM_INT each), GeoJSON and KML.

Every file carries the certificate's trajectory digest and the route it was made from (`certified_trajectory`,
whose sha256 is the certificate's `trajectory_sha256`), so a reader can check the file is the certified route; and
the assumptions its altitudes and times rest on.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from shapely.geometry import LineString

from standards.frame import GeoFrame, StandardsError, rfc3339
from standards.volumes import Buffers, LegVolume, leg_volumes, simulated_buffers, uncovered_legs
from tools.certificate import SafetyCertificate, check_certificate, sha256_of, world_digest
from tools.world import World

PlanFormat = Literal["f3548", "qgc-plan", "mavlink", "geojson", "kml"]
PLAN_FORMATS: tuple[str, ...] = ("f3548", "qgc-plan", "mavlink", "geojson", "kml")
SUFFIX = {"f3548": ".json", "qgc-plan": ".plan", "mavlink": ".waypoints", "geojson": ".geojson", "kml": ".kml"}
# MAVLink enums (common.xml), by name so the file reads as the standard does
MAV_CMD_NAV_WAYPOINT = 16
MAV_CMD_DO_CHANGE_SPEED = 178
MAV_FRAME_GLOBAL = 0  # AMSL: the home line of a WPL file
MAV_FRAME_GLOBAL_RELATIVE_ALT = 3  # metres above home: the world's AGL
QGC_FIRMWARE_PX4, QGC_VEHICLE_QUADROTOR = 12, 2
ACCEPTANCE_RADIUS_M = 2.0
KML = "http://www.opengis.net/kml/2.2"


@dataclass
class FlightExport:
    world: World
    frame: GeoFrame
    certificate: SafetyCertificate
    buffers: Buffers
    volumes: list[LegVolume]
    priority: int = 0

    @property
    def waypoints(self) -> list[list[float]]:
        return self.certificate.trajectory.waypoints

    def provenance(self) -> dict[str, Any]:
        trajectory = self.certificate.trajectory.model_dump(mode="json")
        return {
            "generator": "cloudbrain export",
            "certified_trajectory": trajectory,
            "trajectory_sha256": sha256_of(trajectory),
            "certificate_trajectory_sha256": self.certificate.digests.trajectory_sha256,
            "world_sha256": self.certificate.digests.world_sha256,
            "world_id": self.world.world_id,
            "geo_reference": self.frame.reference.model_dump(mode="json"),
            "clock_origin_utc": rfc3339(self.frame.clock_origin),
            "buffers": self.buffers.model_dump(),
            "assumptions": self.frame.assumptions,
        }


def plan_export(world: World, certificate: SafetyCertificate, frame: GeoFrame, priority: int = 0) -> FlightExport:
    """The export of a certified execute: the certificate must be this world's and re-check (both gates re-run),
    and every leg must lie in its volume, or nothing is written."""
    if world_digest(world) != certificate.digests.world_sha256:
        raise StandardsError("the certificate is not this world's (world sha256 differs): export with its own world")
    check = check_certificate(certificate, world)
    if not check.valid:
        raise StandardsError(f"the certificate does not re-check: {check.differences[0]}")
    buffers = simulated_buffers(world, certificate)
    volumes = leg_volumes(certificate.trajectory.waypoints, buffers)
    if failures := uncovered_legs(volumes, certificate.trajectory.waypoints):
        raise StandardsError(f"the volumes do not hold the route: {failures[0]}")
    frame.wgs84_height(0.0)  # every export states the altitude assumptions, whichever heights it writes
    return FlightExport(world, frame, certificate, buffers, volumes, priority)


def write_plan(plan: FlightExport, file_format: str) -> str:
    writer = {"f3548": _f3548, "qgc-plan": _qgc_plan, "mavlink": _mavlink, "geojson": _geojson, "kml": _kml}
    return writer[file_format](plan)


def _json(document: Any) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


# --- ASTM F3548-21 ---------------------------------------------------------------------------------------------
def _f3548(plan: FlightExport) -> str:
    frame = plan.frame
    volumes = [_volume4d(v, frame) for v in plan.volumes]
    document = {
        "details": {"volumes": volumes, "off_nominal_volumes": [], "priority": plan.priority},
        "cloudbrain": plan.provenance(),
    }
    return _json(document)


def _volume4d(volume: LegVolume, frame: GeoFrame) -> dict[str, Any]:
    vertices = [dict(zip(("lng", "lat"), frame.lon_lat(x, y))) for x, y in volume.ring]
    return {
        "volume": {
            "outline_polygon": {"vertices": vertices},
            "altitude_lower": _w84(math.floor(frame.wgs84_height(volume.lower_m) * 100) / 100),
            "altitude_upper": _w84(math.ceil(frame.wgs84_height(volume.upper_m) * 100) / 100),
        },
        # RFC 3339 to the millisecond: the start rounded down, the end up, so the span only grows
        "time_start": {"value": rfc3339(frame.instant(volume.t_start)), "format": "RFC3339"},
        "time_end": {"value": rfc3339(frame.instant(volume.t_end + 0.000999)), "format": "RFC3339"},
    }


def _w84(value: float) -> dict[str, Any]:
    return {"value": value, "reference": "W84", "units": "M"}


# --- MAVLink: QGroundControl .plan and WPL 110 -----------------------------------------------------------------
@dataclass(frozen=True)
class MissionItem:
    command: int
    frame: int
    params: tuple[float | None, ...]  # param1..4, lat, lon, alt


def mission_items(plan: FlightExport) -> list[MissionItem]:
    """A NAV_WAYPOINT per certified waypoint at its AGL altitude (relative to home, the take-off point on the
    ground), each leg preceded by DO_CHANGE_SPEED to the plan's ground speed on it so the times hold; a leg that
    stays in place becomes the previous waypoint's hold time."""
    items: list[MissionItem] = []
    points = np.asarray(plan.waypoints, dtype=float)
    speed = None
    for i, point in enumerate(points):
        if i > 0:
            previous = points[i - 1]
            distance, seconds = float(np.linalg.norm(point[:3] - previous[:3])), float(point[3] - previous[3])
            if distance == 0.0:
                hold = items[-1]
                items[-1] = MissionItem(hold.command, hold.frame, (round(seconds, 3), *hold.params[1:]))
                continue
            leg_speed = round(distance / seconds, 3) if seconds > 0 else None
            if leg_speed is not None and leg_speed != speed:
                items.append(
                    MissionItem(MAV_CMD_DO_CHANGE_SPEED, MAV_FRAME_GLOBAL_RELATIVE_ALT, (1, leg_speed, -1, 0, 0, 0, 0))
                )
                speed = leg_speed
        lon, lat = plan.frame.lon_lat(point[0], point[1])
        items.append(
            MissionItem(
                MAV_CMD_NAV_WAYPOINT,
                MAV_FRAME_GLOBAL_RELATIVE_ALT,
                (0, ACCEPTANCE_RADIUS_M, 0, None, lat, lon, point[2]),
            )
        )
    return items


def _home(plan: FlightExport) -> tuple[float, float, float]:
    lon, lat = plan.frame.lon_lat(*plan.waypoints[0][:2])
    return lat, lon, plan.frame.amsl(0.0)


def _qgc_plan(plan: FlightExport) -> str:
    mission = mission_items(plan)
    items = []
    for seq, item in enumerate(mission, start=1):
        items.append(
            {
                "type": "SimpleItem",
                "autoContinue": True,
                "command": item.command,
                "doJumpId": seq,
                "frame": item.frame,
                "params": list(item.params),
            }
        )
    cruise = max((i.params[1] for i in mission if i.command == MAV_CMD_DO_CHANGE_SPEED), default=10.0)
    document = {
        "fileType": "Plan",
        "version": 1,
        "groundStation": "QGroundControl",
        "mission": {
            "version": 2,
            "firmwareType": QGC_FIRMWARE_PX4,
            "vehicleType": QGC_VEHICLE_QUADROTOR,
            "cruiseSpeed": cruise,
            "hoverSpeed": cruise,
            "plannedHomePosition": list(_home(plan)),
            "items": items,
        },
        "geoFence": {"version": 2, "circles": [], "polygons": _fences(plan)},
        "rallyPoints": {"version": 2, "points": []},
        "cloudbrain": plan.provenance(),
    }
    return _json(document)


def _fences(plan: FlightExport) -> list[dict[str, Any]]:
    """The world's no-fly and sensitive zones as exclusion fences, only those the route keeps clear of sideways:
    a fence is 2D and always on, so a zone the route passes over, under or outside its window would trip it."""
    route = LineString([p[:2] for p in plan.waypoints]).buffer(plan.buffers.lateral_m)
    shapes = [z.shape for z in plan.world.no_fly_zones]
    shapes += [z.shape.buffer(z.buffer_m, join_style="mitre") for z in plan.world.sensitive_zones]
    fences = []
    for shape in shapes:
        if shape.intersects(route):
            continue
        ring = [list(reversed(plan.frame.lon_lat(x, y))) for x, y in list(shape.exterior.coords)[:-1]]
        fences.append({"version": 1, "inclusion": False, "polygon": ring})
    return fences


def _mavlink(plan: FlightExport) -> str:
    """QGC WPL 110 (the MAVLink mission file pymavlink and Mission Planner read): seq 0 is home (AMSL), then one
    MISSION_ITEM_INT per line; latitudes and longitudes to 1e-8 degrees (an INT item keeps 1e-7)."""
    provenance = plan.provenance()
    lines = [
        "QGC WPL 110",
        f"# cloudbrain export: certified trajectory sha256 {provenance['trajectory_sha256']}",
        f"# world {plan.world.world_id} sha256 {provenance['world_sha256']}; clock origin {provenance['clock_origin_utc']}",
        *(f"# assumption: {a}" for a in plan.frame.assumptions),
    ]
    lat, lon, alt = _home(plan)
    rows = [(1, MAV_FRAME_GLOBAL, MAV_CMD_NAV_WAYPOINT, (0, 0, 0, 0, lat, lon, alt))]
    rows += [(0, item.frame, item.command, item.params) for item in mission_items(plan)]
    for seq, (current, frame, command, params) in enumerate(rows):
        values = [0.0 if p is None else float(p) for p in params]
        fields = [f"{v:.8f}" for v in values]
        lines.append("\t".join([str(seq), str(current), str(frame), str(command), *fields, "1"]))
    return "\n".join(lines) + "\n"


# --- GIS: GeoJSON and KML -------------------------------------------------------------------------------------
def _geojson(plan: FlightExport) -> str:
    """RFC 7946: positions [lon, lat, height above the WGS84 ellipsoid]; the route, then each leg's volume."""
    frame = plan.frame
    route = [[*frame.lon_lat(x, y), round(frame.wgs84_height(z), 3)] for x, y, z, _ in plan.waypoints]
    features = [
        {
            "type": "Feature",
            "id": "route",
            "geometry": {"type": "LineString", "coordinates": route},
            "properties": {
                "kind": "route",
                "uav_id": plan.certificate.trajectory.uav_id,
                "times": [rfc3339(frame.instant(w[3])) for w in plan.waypoints],
                "altitudes_agl_m": [w[2] for w in plan.waypoints],
            },
        }
    ]
    for volume in plan.volumes:
        ring = [list(frame.lon_lat(x, y)) for x, y in volume.ring]
        features.append(
            {
                "type": "Feature",
                "id": f"volume_{volume.leg}",
                "geometry": {"type": "Polygon", "coordinates": [[*_counter_clockwise(ring), ring[0]]]},
                "properties": {
                    "kind": "volume",
                    "leg": volume.leg,
                    "lower_wgs84_m": round(frame.wgs84_height(volume.lower_m), 3),
                    "upper_wgs84_m": round(frame.wgs84_height(volume.upper_m), 3),
                    "time_start": rfc3339(frame.instant(volume.t_start)),
                    "time_end": rfc3339(frame.instant(volume.t_end + 0.000999)),
                },
            }
        )
    return _json({"type": "FeatureCollection", "features": features, "cloudbrain": plan.provenance()})


def _counter_clockwise(ring: list[list[float]]) -> list[list[float]]:
    area = sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(ring, ring[1:] + ring[:1]))
    return ring if area > 0 else [ring[0], *reversed(ring[1:])]


def _kml(plan: FlightExport) -> str:
    """The route as a LineString above mean sea level (KML's `absolute`), in a Placemark whose TimeSpan is the
    flight's, with the certificate's digest in its ExtendedData."""
    ET.register_namespace("", KML)
    frame = plan.frame
    root = ET.Element(f"{{{KML}}}kml")
    document = ET.SubElement(root, f"{{{KML}}}Document")
    ET.SubElement(document, f"{{{KML}}}name").text = f"CloudBrain execute in {plan.world.world_id}"
    placemark = ET.SubElement(document, f"{{{KML}}}Placemark")
    ET.SubElement(placemark, f"{{{KML}}}name").text = f"route of {plan.certificate.trajectory.uav_id}"
    span = ET.SubElement(placemark, f"{{{KML}}}TimeSpan")
    ET.SubElement(span, f"{{{KML}}}begin").text = rfc3339(frame.instant(plan.waypoints[0][3]))
    ET.SubElement(span, f"{{{KML}}}end").text = rfc3339(frame.instant(plan.waypoints[-1][3]))
    extended = ET.SubElement(placemark, f"{{{KML}}}ExtendedData")
    provenance = plan.provenance()
    for key in ("trajectory_sha256", "world_sha256", "clock_origin_utc"):
        data = ET.SubElement(extended, f"{{{KML}}}Data", name=key)
        ET.SubElement(data, f"{{{KML}}}value").text = str(provenance[key])
    data = ET.SubElement(extended, f"{{{KML}}}Data", name="assumptions")
    ET.SubElement(data, f"{{{KML}}}value").text = "; ".join(frame.assumptions) or "none"
    line = ET.SubElement(placemark, f"{{{KML}}}LineString")
    ET.SubElement(line, f"{{{KML}}}altitudeMode").text = "absolute"
    coordinates = []
    for x, y, z, _ in plan.waypoints:
        lon, lat = frame.lon_lat(x, y)
        coordinates.append(f"{lon:.9f},{lat:.9f},{frame.amsl(z):.3f}")
    ET.SubElement(line, f"{{{KML}}}coordinates").text = " ".join(coordinates)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
