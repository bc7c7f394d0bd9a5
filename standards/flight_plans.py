"""An execute as the files other systems take: an ASTM F3548-21 operational intent, a QGroundControl `.plan`, a
MAVLink mission (QGC WPL 110 lines, one MISSION_ITEM_INT each), GeoJSON and KML.

Every file carries, or has beside it, the certificate's trajectory digest and the route it was made from
(`certified_trajectory`, whose sha256 is the certificate's `trajectory_sha256`), so a reader can check the file is
the certified route; the run's one mission clock (t = 0 and where it comes from); and the assumptions its altitudes
and times rest on. A WPL file has no place for any of it (QGroundControl reads 12 tab-separated fields on every line
after the header), so its provenance is the sidecar `<file>.cloudbrain.json`.

A fleet mission (a team execute, issue 42) is one flight plan per member (`plan_team_export`): the team's certificate
re-checked once as a whole, then each member exported as one UAV is, on the same mission clock, its provenance naming
its sub-task and the team's trajectory digest (`team_member`). If one member cannot be exported, none is.

A certified trajectory runs from the ground to the ground (tools.trajectory.flight_phases): the mission takes off
(NAV_TAKEOFF to the top of the climb), flies the en-route waypoints and lands (NAV_LAND at the last point), with a
DO_CHANGE_SPEED before every leg whose speed changes, in the frame its speed type names: ground speed (horizontal
distance / time), climb speed or descent speed (vertical distance / time). A track that starts or ends in the air
(an older plan) has no take-off or landing item there.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from shapely.geometry import LineString

from standards.frame import GeoFrame, StandardsError, rfc3339
from standards.volumes import (
    Buffers,
    LegVolume,
    leg_volumes,
    member_volumes,
    overlapping,
    simulated_buffers,
    uncovered_legs,
)
from tools.certificate import MemberCertificate, SafetyCertificate, check_certificate, sha256_of, world_digest
from tools.team_traffic import with_members_as_traffic
from tools.trajectory import GROUND_M, flight_phases
from tools.world import World

SUFFIX = {"f3548": ".json", "qgc-plan": ".plan", "mavlink": ".waypoints", "geojson": ".geojson", "kml": ".kml"}

# MAVLink enums (common.xml), by name so the file reads as the standard does
MAV_CMD_NAV_WAYPOINT = 16
MAV_CMD_NAV_LAND = 21
MAV_CMD_NAV_TAKEOFF = 22
MAV_CMD_DO_CHANGE_SPEED = 178
MAV_FRAME_GLOBAL = 0  # AMSL: the home line of a WPL file
MAV_FRAME_MISSION = 2  # "NOT a coordinate frame, indicates a mission command" (what QGC gives DO_ commands)
MAV_FRAME_GLOBAL_RELATIVE_ALT = 3  # metres above home (the take-off point, on the ground): the world's AGL
SPEED_TYPE_GROUNDSPEED, SPEED_TYPE_CLIMB_SPEED, SPEED_TYPE_DESCENT_SPEED = 1, 2, 3
NAVIGATION = (MAV_CMD_NAV_WAYPOINT, MAV_CMD_NAV_LAND, MAV_CMD_NAV_TAKEOFF)
QGC_FIRMWARE_PX4, QGC_VEHICLE_QUADROTOR = 12, 2
QGC_ALTITUDE_MODE_RELATIVE = 1  # QGroundControlQmlGlobal::AltMode: Mixed 0, Relative 1, Absolute 2, ...
ACCEPTANCE_RADIUS_M = 2.0
TIME_RESOLUTION_SEC = 0.001  # a certified waypoint's time is to the ms: a speed in force that keeps a leg's time to
# within it is the leg's speed, and is not written again
_STILL_M = 1e-6
KML = "http://www.opengis.net/kml/2.2"


@dataclass
class FlightExport:
    world: World
    frame: GeoFrame
    certificate: SafetyCertificate
    buffers: Buffers
    volumes: list[LegVolume]
    priority: int = 0
    clock_source: str = "the world's clock origin"
    exported_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    notes: list[str] = field(default_factory=list)  # what a writer states beyond the frame's assumptions
    member: MemberCertificate | None = None  # a fleet mission's member: this intent is its flight alone
    team: SafetyCertificate | None = None  # ... and the team's certificate it is a member of

    @property
    def waypoints(self) -> list[list[float]]:
        return self.certificate.trajectory.waypoints

    @property
    def ends_sec(self) -> float:
        """The intent's end on the world's clock: the last volume's, which holds the delay buffer."""
        return max((v.t_end for v in self.volumes), default=float(self.waypoints[-1][3]))

    @property
    def has_ended(self) -> bool:
        """The flight's time (its last volume's end) is already past when it is exported."""
        return self.frame.instant(self.ends_sec) <= self.exported_at

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def provenance(self) -> dict[str, Any]:
        trajectory = self.certificate.trajectory.model_dump(mode="json")
        document = {
            "generator": "cloudbrain export",
            "certified_trajectory": trajectory,
            "trajectory_sha256": sha256_of(trajectory),
            "certificate_trajectory_sha256": self.certificate.digests.trajectory_sha256,
            "world_sha256": self.certificate.digests.world_sha256,
            "world_id": self.world.world_id,
            "geo_reference": self.frame.reference.model_dump(mode="json"),
            "clock_origin_utc": rfc3339(self.frame.clock_origin),
            "mission_clock": {
                "t0_utc": rfc3339(self.frame.clock_origin),
                "source": self.clock_source,
                "starts_utc": rfc3339(self.frame.instant(float(self.waypoints[0][3]))),
                "ends_utc": rfc3339(self.frame.instant(self.ends_sec)),
            },
            "buffers": self.buffers.model_dump(),
            "assumptions": [*self.frame.assumptions, *self.notes],
        }
        if membership := self.membership():  # a one-UAV export has no such key
            document["team_member"] = membership
        return document

    def membership(self) -> dict[str, Any] | None:
        """Which member of which team this intent flies: its sub-task, role, share and UAV, every member's, and the
        team certificate's trajectory digest (over every member's trajectory, sub-task, role and share). None for
        a one-UAV export."""
        if self.member is None or self.team is None:
            return None
        return {
            "subtask_id": self.member.subtask_id,
            "role": self.member.role,
            "share_kg": self.member.share_kg,
            "uav_id": self.certificate.trajectory.uav_id,
            "members": [f"{m.subtask_id}:{m.certificate.trajectory.uav_id}" for m in self.team.members or []],
            "team_trajectory_sha256": self.team.digests.trajectory_sha256,
        }


def plan_export(
    world: World,
    certificate: SafetyCertificate,
    frame: GeoFrame,
    priority: int = 0,
    clock_source: str = "the world's clock origin",
    now: datetime | None = None,
) -> FlightExport:
    """The export of a certified execute: the certificate must be this world's and re-check (both gates re-run),
    and every leg must lie in its volume, or nothing is written. `frame.clock_origin` is the run's one mission
    clock (t = 0), `clock_source` where it comes from. A fleet mission is exported by `plan_team_export`."""
    _same_world(world, certificate)
    if certificate.members is not None:  # no single trajectory: each member is an intent of its own
        raise StandardsError(
            f"the run is a fleet mission of {len(certificate.members)} UAVs ({_flown(certificate)}): it is exported "
            "as one flight plan per member (plan_team_export), not as one"
        )
    check = check_certificate(certificate, world)
    if not check.valid:
        raise StandardsError(f"the certificate does not re-check: {check.differences[0]}")
    return _flight_export(world, world, certificate, frame, priority, clock_source, now or datetime.now(UTC))


def plan_team_export(
    world: World,
    certificate: SafetyCertificate,
    frame: GeoFrame,
    priority: int = 0,
    clock_source: str = "the world's clock origin",
    now: datetime | None = None,
) -> list[FlightExport]:
    """The exports of a certified fleet mission, one per member in the certificate's order: the team's certificate
    must be this world's and re-check as a whole (every member's gates re-run with the others as traffic), then each
    member is exported as a one-UAV execute is (its buffers from its own stress scenarios, flown in the world it
    was certified in: the others as traffic; every leg in its volumes) on the one mission clock `frame` gives, so a
    member that departs later has volumes that start later. A member's legs are held in time slices
    (standards.volumes.member_volumes), so its intent shows the time separation the team planner kept from the
    others. If one member cannot be exported, none is."""
    _same_world(world, certificate)
    if certificate.members is None:
        raise StandardsError("the run is not a fleet mission: it is exported as one flight plan (plan_export)")
    check = check_certificate(certificate, world)  # once for the team: each member's re-check needs the others
    if not check.valid:
        raise StandardsError(f"the certificate does not re-check: {check.differences[0]}")
    exported_at = now or datetime.now(UTC)  # one instant for every member's "already ended"
    members = certificate.members
    plans = []
    for member in members:
        flown_in = with_members_as_traffic(world, [m.track_of() for m in members if m is not member])
        try:
            plan = _flight_export(
                world, flown_in, member.certificate, frame, priority, clock_source, exported_at, member, certificate
            )
        except StandardsError as exc:
            raise member_refusal(member, exc) from None
        plans.append(plan)
    for (a, first), (b, second) in itertools.combinations(zip(members, plans), 2):
        # the team's own intents must not conflict (the ledger's test): a USS would refuse, or mis-deconflict, them
        if shared := overlapping(first.volumes, second.volumes):
            i, j = shared[0]
            raise StandardsError(
                f"members {a.subtask_id} ({a.certificate.trajectory.uav_id}) and {b.subtask_id} "
                f"({b.certificate.trajectory.uav_id}) have intents that share airspace (volumes {first.volumes[i].label} "
                f"and {second.volumes[j].label}, from t={max(first.volumes[i].t_start, second.volumes[j].t_start):g} s); "
                "nothing is written for any member"
            )
    return plans


def member_refusal(member: MemberCertificate, exc: StandardsError) -> StandardsError:
    """A member's export refused, named, for the whole team: a team's files are written all or none."""
    label = f"{member.subtask_id} ({member.certificate.trajectory.uav_id})"
    return StandardsError(f"member {label}: {exc}; nothing is written for any member")


def _same_world(world: World, certificate: SafetyCertificate) -> None:
    if world_digest(world) != certificate.digests.world_sha256:
        raise StandardsError("the certificate is not this world's (world sha256 differs): export with its own world")


def _flown(certificate: SafetyCertificate) -> str:
    return ", ".join(f"{m.subtask_id} ({m.certificate.trajectory.uav_id})" for m in certificate.members or [])


def _flight_export(
    world: World,
    flown_in: World,
    certificate: SafetyCertificate,
    frame: GeoFrame,
    priority: int,
    clock_source: str,
    exported_at: datetime,
    member: MemberCertificate | None = None,
    team: SafetyCertificate | None = None,
) -> FlightExport:
    """One UAV's export from its re-checked certificate: `flown_in` is the world its stress scenarios were
    certified in (the world itself, or for a team member the world with the other members as traffic)."""
    buffers = simulated_buffers(flown_in, certificate)
    volumes = (leg_volumes if member is None else member_volumes)(certificate.trajectory.waypoints, buffers)
    if failures := uncovered_legs(volumes, certificate.trajectory.waypoints):
        raise StandardsError(f"the volumes do not hold the route: {failures[0]}")
    plan = FlightExport(world, frame, certificate, buffers, volumes, priority, clock_source, member=member, team=team)
    plan.exported_at = exported_at
    if plan.has_ended:
        plan.note(
            f"the flight's time is past: it ended at {rfc3339(frame.instant(plan.ends_sec))}, before this export "
            f"({rfc3339(plan.exported_at)}); flown now, it flies outside the times its certificate checked"
        )
    return plan


def past_intent(plan: FlightExport) -> str | None:
    """ASTM F3548-21: a volume's end time may not be in the past (OperationalIntentDetails.volumes). One line
    saying so, or None."""
    if not plan.has_ended:
        return None
    return (
        f"the operational intent would already have ended ({rfc3339(plan.frame.instant(plan.ends_sec))}; t = 0 is "
        f"{rfc3339(plan.frame.clock_origin)}, {plan.clock_source}) and F3548 volumes may not end in the past: give "
        "--start with a later instant"
    )


def write_plan(plan: FlightExport, file_format: str) -> str:
    writer = {"f3548": _f3548, "qgc-plan": _qgc_plan, "mavlink": _mavlink, "geojson": _geojson, "kml": _kml}
    return writer[file_format](plan)


def sidecar(plan: FlightExport, file_format: str, text: str) -> str:
    """The provenance of a file that cannot carry it (a WPL mission), tied to that file by its sha256."""
    document = {
        "describes": {
            "format": file_format,
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "note": "QGC WPL 110 has no comment lines: QGroundControl reads 12 tab-separated fields on every line",
        },
        "cloudbrain": plan.provenance(),
    }
    return _json(document)


def _json(document: Any) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


# --- ASTM F3548-21 ---------------------------------------------------------------------------------------------
def _f3548(plan: FlightExport) -> str:
    frame = plan.frame
    if not frame.knows_wgs84:
        reference = frame.reference
        missing = [f"geo_reference.{name}" for name in ("ground_elevation_amsl_m", "geoid_undulation_m")]
        missing = [m for m, value in zip(missing, (reference.ground_elevation_amsl_m, reference.geoid_undulation_m))
                   if value is None]  # fmt: skip
        raise StandardsError(
            f"F3548 volumes are bounded in W84 (ellipsoid) heights, which need what the world does not give: "
            f"{' and '.join(missing)}"
        )
    if reason := past_intent(plan):
        raise StandardsError(reason)
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
            # to the cm, the lower bound down and the upper up: a volume from the ground (lower_m = 0) starts at
            # or below the ground's W84 height
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
    params: tuple[float | None, ...]  # param1..4, lat, lon, alt; None: NaN (the command's default)


def leg_speeds(a: np.ndarray, b: np.ndarray) -> dict[int, float]:
    """The speeds a plan assumes on the leg a -> b, by MAVLink SPEED_TYPE: ground speed (horizontal distance over
    time) where it moves sideways, climb or descent speed (vertical distance over time) where it changes height."""
    seconds = float(b[3] - a[3])
    if seconds <= 0:
        return {}
    speeds = {}
    horizontal = float(np.hypot(*(b[:2] - a[:2])))
    vertical = float(b[2] - a[2])
    if horizontal > _STILL_M:
        speeds[SPEED_TYPE_GROUNDSPEED] = _speed(horizontal, seconds)
    if vertical > _STILL_M:
        speeds[SPEED_TYPE_CLIMB_SPEED] = _speed(vertical, seconds)
    elif vertical < -_STILL_M:
        speeds[SPEED_TYPE_DESCENT_SPEED] = _speed(-vertical, seconds)
    return speeds


def _speed(metres: float, seconds: float) -> float:
    """metres / seconds with the fewest decimals that keep the leg's time to within half the plan's time
    resolution (the waypoints' times are rounded to it): 40 m in 13.333 s is 3 m/s, not 3.000075."""
    exact = metres / seconds
    for decimals in range(10):
        speed = round(exact, decimals)
        if speed > 0 and abs(metres / speed - seconds) <= TIME_RESOLUTION_SEC / 2:
            return speed
    return exact


def mission_items(plan: FlightExport) -> list[MissionItem]:
    """The mission of a certified trajectory, in MAVLink commands (common.xml):

    - MAV_CMD_NAV_TAKEOFF (22) at the take-off point to the top of the climb (frame 3, relative to home: the
      surface the UAV takes off from, the ground or a rooftop pad), after DO_CHANGE_SPEED to the climb speed (2);
    - a NAV_WAYPOINT (16) per en-route waypoint at its AGL altitude, each leg preceded by DO_CHANGE_SPEED (178) to
      the speeds the plan assumes on it where they change: ground speed (1), climb (2) or descent speed (3); a leg
      that stays in place adds its time to the previous waypoint's hold (param1);
    - DO_CHANGE_SPEED to the descent speed (3), then MAV_CMD_NAV_LAND (21) at the last point (its surface, relative
      to home: 0 where both are on the ground).

    A track that starts in the air starts with a NAV_WAYPOINT; one that ends in the air ends with one."""
    points = np.asarray(plan.waypoints, dtype=float)
    phases = flight_phases(points)
    home = home_agl(points)  # frame 3's altitudes are above home: the surface the UAV takes off from
    items: list[MissionItem] = []
    in_force: dict[int, float] = {}

    def change_speeds(a: np.ndarray, b: np.ndarray) -> None:
        speeds = leg_speeds(a, b)
        seconds = float(b[3] - a[3])
        distance = {SPEED_TYPE_GROUNDSPEED: float(np.hypot(*(b[:2] - a[:2]))), 0: abs(float(b[2] - a[2]))}
        # vertical speeds first, the ground speed last: a reader that takes every DO_CHANGE_SPEED for the forward
        # speed (QGroundControl's time estimate, MissionItem::flightSpeed) still flies the leg at its ground speed
        for kind in sorted(speeds, reverse=True):
            held = in_force.get(kind)
            metres = distance[kind if kind == SPEED_TYPE_GROUNDSPEED else 0]
            if held is not None and abs(metres / held - seconds) <= TIME_RESOLUTION_SEC:
                continue  # the speed in force keeps the leg's time to the precision of the plan's times
            items.append(MissionItem(MAV_CMD_DO_CHANGE_SPEED, MAV_FRAME_MISSION, (kind, speeds[kind], -1, 0, 0, 0, 0)))
            in_force[kind] = speeds[kind]
            if kind != SPEED_TYPE_GROUNDSPEED:
                in_force.pop(SPEED_TYPE_GROUNDSPEED, None)  # ... so the ground speed is given again after it

    def place(command: int, point: np.ndarray, params: tuple[float | None, ...], altitude: float) -> None:
        lon, lat = plan.frame.lon_lat(point[0], point[1])
        relative = round(float(altitude) - home, 3)
        items.append(MissionItem(command, MAV_FRAME_GLOBAL_RELATIVE_ALT, (*params, lat, lon, relative)))

    def waypoint(point: np.ndarray, hold: float = 0.0) -> None:
        place(MAV_CMD_NAV_WAYPOINT, point, (hold, ACCEPTANCE_RADIUS_M, 0, None), point[2])

    if phases.has_takeoff:
        change_speeds(points[0], points[phases.takeoff_end])
        # param1 minimum pitch (fixed wing only), param3 NAV_TAKEOFF_FLAGS none, param4 yaw NaN: the heading mode
        place(MAV_CMD_NAV_TAKEOFF, points[0], (0, 0, 0, None), points[phases.takeoff_end][2])
    else:
        waypoint(points[0])
    for i in range(phases.takeoff_end + 1, phases.landing_start + 1):
        a, b = points[i - 1], points[i]
        if float(np.linalg.norm(b[:3] - a[:3])) <= _STILL_M:  # a hover: the time held where it is
            previous = items[-1]
            if previous.command == MAV_CMD_NAV_WAYPOINT:
                held = round(float(previous.params[0] or 0) + float(b[3] - a[3]), 3)
                items[-1] = MissionItem(previous.command, previous.frame, (held, *previous.params[1:]))
            else:  # right after the take-off: a waypoint where it is, to hold at
                waypoint(b, round(float(b[3] - a[3]), 3))
            continue
        change_speeds(a, b)
        waypoint(b)
    if phases.has_landing(len(points)):
        change_speeds(points[phases.landing_start], points[-1])
        # param1 abort altitude 0 (the system's default), param2 PRECISION_LAND_MODE disabled, param4 yaw NaN;
        # param7 the landing altitude, ground level in the item's frame: 0 above home
        place(MAV_CMD_NAV_LAND, points[-1], (0, 0, 0, None), points[-1][2])
    return items


def home_agl(points: np.ndarray) -> float:
    """Home's height above the world's ground: the surface the UAV takes off from (the ground, or the roof of a
    rooftop pad); a track that starts in the air has the ground below it as home."""
    return float(points[0][2]) if flight_phases(points).has_takeoff else GROUND_M


def _home(plan: FlightExport) -> tuple[float, float, float | None]:
    """Home, the take-off point on the surface it stands on: latitude, longitude, AMSL altitude (None where the
    world does not know its ground elevation)."""
    lon, lat = plan.frame.lon_lat(*plan.waypoints[0][:2])
    if not plan.frame.knows_amsl:
        return lat, lon, None
    return lat, lon, plan.frame.amsl(home_agl(np.asarray(plan.waypoints, dtype=float)))


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
    ground = [i.params[1] for i in mission if i.command == MAV_CMD_DO_CHANGE_SPEED and i.params[0] == 1]
    cruise = max(ground, default=5.0)
    lat, lon, alt = _home(plan)
    if alt is None:
        plan.note(
            "ground elevation unknown: the planned home position's altitude is null (QGroundControl reads NaN); "
            "every item flies relative to home (frame 3), so the flight does not depend on it"
        )
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
            "globalPlanAltitudeMode": QGC_ALTITUDE_MODE_RELATIVE,
            "plannedHomePosition": [lat, lon, alt],
            "items": items,
        },
        "geoFence": {"version": 2, "circles": [], "polygons": _fences(plan)},
        "rallyPoints": {"version": 2, "points": []},
        "cloudbrain": plan.provenance(),
    }
    return _json(document)


def _fences(plan: FlightExport) -> list[dict[str, Any]]:
    """The world's no-fly and sensitive zones as exclusion fences, only those the route keeps clear of sideways:
    a fence is 2D and always on, so a zone the route passes over, under or outside its window would trip it.
    Vertices [lat, lon], wound clockwise (QGroundControl's plan format)."""
    route = LineString([p[:2] for p in plan.waypoints]).buffer(plan.buffers.lateral_m)
    shapes = [z.shape for z in plan.world.no_fly_zones]
    shapes += [z.shape.buffer(z.buffer_m, join_style="mitre") for z in plan.world.sensitive_zones]
    fences = []
    for shape in shapes:
        if shape.intersects(route):
            continue
        lon_lat = [list(plan.frame.lon_lat(x, y)) for x, y in list(shape.exterior.coords)[:-1]]
        ring = _wound(lon_lat, counter_clockwise=False)
        fences.append({"version": 1, "inclusion": False, "polygon": [[lat, lon] for lon, lat in ring]})
    return fences


def _mavlink(plan: FlightExport) -> str:
    """QGC WPL 110 (the MAVLink mission file QGroundControl, Mission Planner and pymavlink read): the header, then
    seq 0 home (AMSL), then one MISSION_ITEM_INT per line, 12 tab-separated fields each and nothing else (no
    comment lines: QGroundControl's loader rejects them); latitudes and longitudes to 1e-8 degrees (an INT item
    keeps 1e-7). A NaN parameter (the command's default) is written 0, as ArduPilot's planners write it."""
    lat, lon, alt = _home(plan)
    if alt is None:
        plan.note(
            "ground elevation unknown: the WPL home line's AMSL altitude is written 0; every item flies relative "
            "to home (frame 3), so the flight does not depend on it"
        )
    lines = ["QGC WPL 110"]
    rows = [(1, MAV_FRAME_GLOBAL, MAV_CMD_NAV_WAYPOINT, (0, 0, 0, 0, lat, lon, alt or 0.0))]
    rows += [(0, item.frame, item.command, item.params) for item in mission_items(plan)]
    for seq, (current, frame, command, params) in enumerate(rows):
        values = [0.0 if p is None else float(p) for p in params]
        fields = [f"{v:.8f}" for v in values]
        lines.append("\t".join([str(seq), str(current), str(frame), str(command), *fields, "1"]))
    return "\n".join(lines) + "\n"


# --- GIS: GeoJSON and KML -------------------------------------------------------------------------------------
def _geojson(plan: FlightExport) -> str:
    """RFC 7946: positions [lon, lat, height above the WGS84 ellipsoid] where the world gives the ellipsoid
    height, else [lon, lat] (RFC 7946 heights are ellipsoidal: none is better than a wrong one); the AGL altitudes
    in the properties either way. The route, then each leg's volume (a fleet mission member's: each slice's,
    `volume_<leg>.<slice>`), exterior rings counterclockwise."""
    frame = plan.frame
    heights = frame.knows_wgs84
    if not heights:
        plan.note("WGS84 heights unknown: GeoJSON positions are [lon, lat]; the AGL altitudes are in the properties")

    def position(x: float, y: float, z: float) -> list[float]:
        lon, lat = frame.lon_lat(x, y)
        return [lon, lat, round(frame.wgs84_height(z), 3)] if heights else [lon, lat]

    route = [position(x, y, z) for x, y, z, _ in plan.waypoints]
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
        ring = _wound(ring, counter_clockwise=True)
        properties: dict[str, Any] = {"kind": "volume", "leg": volume.leg}
        if volume.part is not None:  # a fleet mission member's time slice of the leg
            properties["part"] = volume.part
        properties |= {"lower_agl_m": volume.lower_m, "upper_agl_m": volume.upper_m}
        if heights:
            properties["lower_wgs84_m"] = round(frame.wgs84_height(volume.lower_m), 3)
            properties["upper_wgs84_m"] = round(frame.wgs84_height(volume.upper_m), 3)
        properties["time_start"] = rfc3339(frame.instant(volume.t_start))
        properties["time_end"] = rfc3339(frame.instant(volume.t_end + 0.000999))
        features.append(
            {
                "type": "Feature",
                "id": f"volume_{volume.label}",
                "geometry": {"type": "Polygon", "coordinates": [[*ring, ring[0]]]},
                "properties": properties,
            }
        )
    return _json({"type": "FeatureCollection", "features": features, "cloudbrain": plan.provenance()})


def _wound(ring: list[list[float]], counter_clockwise: bool) -> list[list[float]]:
    """An open ring of [x, y] (lon, lat) in the winding asked for, its first vertex kept first."""
    area = sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(ring, ring[1:] + ring[:1]))
    return ring if (area > 0) == counter_clockwise else [ring[0], *reversed(ring[1:])]


def _kml(plan: FlightExport) -> str:
    """The route as a LineString above mean sea level (KML's `absolute`) where the world gives its ground
    elevation, else above the ground (`relativeToGround`, the AGL altitudes), in a Placemark whose TimeSpan is the
    flight's, with the certificate's digest and the mission clock in its ExtendedData."""
    ET.register_namespace("", KML)
    frame = plan.frame
    amsl = frame.knows_amsl
    if not amsl:
        plan.note("ground elevation unknown: the KML route is relativeToGround, its altitudes AGL")
    root = ET.Element(f"{{{KML}}}kml")
    document = ET.SubElement(root, f"{{{KML}}}Document")
    name = f"CloudBrain execute in {plan.world.world_id}"
    if plan.member is not None:
        name += f", member {plan.member.subtask_id} ({plan.member.role}) of a fleet mission"
    ET.SubElement(document, f"{{{KML}}}name").text = name
    placemark = ET.SubElement(document, f"{{{KML}}}Placemark")
    ET.SubElement(placemark, f"{{{KML}}}name").text = f"route of {plan.certificate.trajectory.uav_id}"
    span = ET.SubElement(placemark, f"{{{KML}}}TimeSpan")
    ET.SubElement(span, f"{{{KML}}}begin").text = rfc3339(frame.instant(plan.waypoints[0][3]))
    ET.SubElement(span, f"{{{KML}}}end").text = rfc3339(frame.instant(plan.waypoints[-1][3]))
    extended = ET.SubElement(placemark, f"{{{KML}}}ExtendedData")
    line = ET.Element(f"{{{KML}}}LineString")
    ET.SubElement(line, f"{{{KML}}}altitudeMode").text = "absolute" if amsl else "relativeToGround"
    coordinates = []
    for x, y, z, _ in plan.waypoints:
        lon, lat = frame.lon_lat(x, y)
        coordinates.append(f"{lon:.9f},{lat:.9f},{frame.amsl(z) if amsl else z:.3f}")
    ET.SubElement(line, f"{{{KML}}}coordinates").text = " ".join(coordinates)
    provenance = plan.provenance()
    values = {key: str(provenance[key]) for key in ("trajectory_sha256", "world_sha256", "clock_origin_utc")}
    values["mission_clock_source"] = provenance["mission_clock"]["source"]
    values["assumptions"] = "; ".join(provenance["assumptions"]) or "none"
    if membership := provenance.get("team_member"):
        values["team_subtask_id"] = membership["subtask_id"]
        values["team_members"] = ", ".join(membership["members"])
        values["team_trajectory_sha256"] = membership["team_trajectory_sha256"]
    for key, value in values.items():
        data = ET.SubElement(extended, f"{{{KML}}}Data", name=key)
        ET.SubElement(data, f"{{{KML}}}value").text = value
    placemark.append(line)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
