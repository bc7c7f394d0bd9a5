"""Loaders that are not ours: the demo's execute, exported, read with the acceptance rules of the system that takes
each file, re-stated from that system's own source or specification (tests/support/consumers.py names the file and
function of each rule): QGroundControl's WPL text loader and its .plan loader, MAVLink's meanings of the commands
and speed types (common.xml), the ASTM F3548-21 OpenAPI schema (vendored), OGC KML 2.2's XSD, RFC 7946.

Each rule is also shown to catch what it is there for (a comment line in a WPL file, a 3D speed written as a ground
speed, an anticlockwise fence, a guessed ellipsoid height), on copies of the demo's files changed by hand."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from standards.flight_plans import FlightExport, plan_export, write_plan
from standards.frame import StandardsError, geo_frame
from tests.support.consumers import (
    CLIMB,
    DO_CHANGE_SPEED,
    GROUND,
    f3548_details,
    f3548_schema_errors,
    kml_errors,
    mission_follows_the_plan,
    qgc_plan,
    qgc_text_mission,
    rfc7946_errors,
)
from tests.support.exports import EXPORT_START, zoned_demo
from tools.certificate import SafetyCertificate


@pytest.fixture(scope="module")
def zoned(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return zoned_demo(tmp_path_factory.getbasetemp() / "zoned-demo")


def _waypoints(zoned: dict) -> np.ndarray:
    return np.asarray(zoned["run"]["decision"]["certificate"]["trajectory"]["waypoints"], dtype=float)


def _plan_items(plan: dict) -> list[tuple[int, list]]:
    return [(i["command"], i["params"]) for i in plan["mission"]["items"]]


# --- QGroundControl and MAVLink -------------------------------------------------------------------------------
def test_qgroundcontrols_text_loader_takes_the_wpl_file_line_by_line(zoned):
    rows, errors = qgc_text_mission(zoned["mavlink"].read_text())
    assert errors == [] and len(rows) > 3


def test_a_comment_line_in_a_wpl_file_is_what_qgroundcontrol_calls_corrupted():
    """The rule that would have caught the provenance written as `#` lines (issue 38, item 1)."""
    good = "QGC WPL 110\n0\t1\t0\t16\t0\t0\t0\t0\t47.4\t8.5\t488\t1\n"
    assert qgc_text_mission(good)[1] == []
    commented = good.replace("\n0\t", "\n# cloudbrain export: certified trajectory sha256 ab12\n0\t", 1)
    assert any("corrupted" in e for e in qgc_text_mission(commented)[1])


def test_qgroundcontrols_plan_loader_takes_the_plan(zoned):
    assert qgc_plan(json.loads(zoned["qgc-plan"].read_text())) == []


@pytest.mark.parametrize(
    ("edit", "complaint"),
    [
        (lambda p: p["mission"].pop("globalPlanAltitudeMode"), "globalPlanAltitudeMode"),
        (lambda p: p["mission"]["items"][0]["params"].pop(), "7 values"),
        (lambda p: p["geoFence"]["polygons"][0]["polygon"].reverse(), "clockwise"),
        (lambda p: p["mission"]["items"][0].update(frame=3), "MAV_FRAME_MISSION"),
        (lambda p: p["geoFence"].update(version=1), "version 2"),
    ],
)
def test_the_plan_rules_catch_what_qgroundcontrol_would_refuse_or_misread(zoned, edit, complaint):
    plan = json.loads(zoned["qgc-plan"].read_text())
    assert plan["geoFence"]["polygons"] and plan["mission"]["items"][0]["command"] == DO_CHANGE_SPEED
    edit(plan)
    assert any(complaint in e for e in qgc_plan(plan)), qgc_plan(plan)


def test_the_mission_takes_off_flies_at_the_planned_speeds_in_their_frames_and_lands(zoned):
    """Both files of the mission, by MAVLink's meanings: every DO_CHANGE_SPEED is the plan's speed on its leg in the
    frame its SPEED_TYPE names, the speeds in force keep every leg's time, hovers are holds, and a ground-to-ground
    route takes off and lands (issue 38, items 2 and 3)."""
    waypoints = _waypoints(zoned)
    plan = json.loads(zoned["qgc-plan"].read_text())
    assert mission_follows_the_plan(_plan_items(plan), waypoints) == []
    rows, _ = qgc_text_mission(zoned["mavlink"].read_text())
    assert mission_follows_the_plan([(command, params) for _, _, _, command, params, _ in rows[1:]], waypoints) == []


def test_a_3d_path_speed_written_as_ground_speed_is_caught(zoned):
    """The old export wrote param1 = 1 (ground speed) with distance-including-climb / time: on the take-off climb
    that is 3 m/s of 'ground speed' over no ground at all, on a climbing leg more than the horizontal speed (issue
    38, item 3; tests/unit/test_mission_items.py shows the climbing leg). Re-typed so, the demo's climb is refused."""
    waypoints = _waypoints(zoned)
    items = _plan_items(json.loads(zoned["qgc-plan"].read_text()))
    climb = next(n for n, (c, p) in enumerate(items) if c == DO_CHANGE_SPEED and p[0] == CLIMB)
    path_speed = float(np.linalg.norm(waypoints[1][:3] - waypoints[0][:3]) / (waypoints[1][3] - waypoints[0][3]))
    assert items[climb][1][1] == pytest.approx(path_speed, abs=0.0005)  # vertical: the path speed is the climb
    wrong = copy.deepcopy(items)
    wrong[climb][1][0] = GROUND
    assert any("ground" in e.lower() and "m/s" in e for e in mission_follows_the_plan(wrong, waypoints))


# --- ASTM F3548-21 --------------------------------------------------------------------------------------------
def test_the_operational_intent_details_are_valid_against_f3548s_openapi_schema(zoned):
    details = json.loads(zoned["f3548"].read_text())["details"]
    assert f3548_details(details, now=datetime.now(UTC)) == []
    for volume in details["volumes"]:
        assert f3548_schema_errors(volume, "Volume4D") == []


@pytest.mark.parametrize(
    ("edit", "complaint"),
    [
        (lambda d: d["volumes"][0]["volume"]["altitude_lower"].update(reference="AMSL"), "W84"),
        (lambda d: d["volumes"][0]["volume"]["outline_polygon"]["vertices"][0].update(lat=95.0), "95"),
        (lambda d: d["volumes"][0]["volume"]["outline_polygon"].update(vertices=[]), "too short"),
        (lambda d: d["volumes"][0]["time_end"].update(format="ISO8601"), "RFC3339"),
        (lambda d: d.update(priority="high"), "integer"),
    ],
)
def test_the_schema_refuses_what_f3548_does_not_allow(zoned, edit, complaint):
    details = json.loads(zoned["f3548"].read_text())["details"]
    edit(details)
    errors = f3548_schema_errors(details, "OperationalIntentDetails")
    assert any(complaint in e for e in errors), errors


def test_an_intent_ending_in_the_past_or_repeating_its_first_vertex_is_caught(zoned):
    details = json.loads(zoned["f3548"].read_text())["details"]
    assert any("in the past" in e for e in f3548_details(details, now=datetime(2100, 1, 1, tzinfo=UTC)))
    vertices = details["volumes"][0]["volume"]["outline_polygon"]["vertices"]
    vertices.append(dict(vertices[0]))
    assert any("duplicated" in e for e in f3548_details(details, now=EXPORT_START))


# --- OGC KML 2.2 and RFC 7946 ---------------------------------------------------------------------------------
def test_the_kml_is_valid_against_ogc_kml_2_2s_schema(zoned):
    text = zoned["kml"].read_text()
    assert kml_errors(text) == []
    assert kml_errors(text.replace("<altitudeMode>absolute", "<altitudeMode>ellipsoid"))  # the XSD does bite


def test_the_kml_heights_are_above_mean_sea_level_as_absolute_says(zoned):
    """KML 2.2: altitudeMode absolute "interprets the altitude as a value in meters above sea level"."""
    text = zoned["kml"].read_text()
    coordinates = re.search(r"<coordinates>(.*?)</coordinates>", text, re.S).group(1).split()
    heights = [float(c.split(",")[2]) for c in coordinates]
    ground = zoned["world"].geo_reference.ground_elevation_amsl_m
    assert np.allclose(heights, ground + _waypoints(zoned)[:, 2], atol=0.001)


def test_the_geojson_follows_rfc_7946_and_its_heights_are_ellipsoidal(zoned):
    document = json.loads(zoned["geojson"].read_text())
    assert rfc7946_errors(document) == []
    reference = zoned["world"].geo_reference
    route = document["features"][0]["geometry"]["coordinates"]  # 3.1.1: the height above the WGS 84 ellipsoid
    expected = reference.ground_elevation_amsl_m + reference.geoid_undulation_m + _waypoints(zoned)[:, 2]
    assert np.allclose([p[2] for p in route], expected, atol=0.001)
    clockwise = copy.deepcopy(document)
    clockwise["features"][1]["geometry"]["coordinates"][0].reverse()
    assert any("right-hand rule" in e for e in rfc7946_errors(clockwise))


# --- heights the world does not know ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def certified(zoned) -> FlightExport:
    world = zoned["world"]
    certificate = SafetyCertificate.model_validate(zoned["run"]["decision"]["certificate"])
    return plan_export(world, certificate, geo_frame(world, EXPORT_START), 0, "--start")


def _without(plan: FlightExport, **unknown) -> FlightExport:
    reference = plan.world.geo_reference.model_copy(update=unknown)
    world = plan.world.model_copy(update={"geo_reference": reference})
    frame = geo_frame(world, EXPORT_START)
    return FlightExport(world, frame, plan.certificate, plan.buffers, plan.volumes, 0, "--start")


def test_without_the_geoid_undulation_no_file_holds_a_guessed_ellipsoid_height(certified):
    plan = _without(certified, geoid_undulation_m=None, geoid_model="")
    assert plan.frame.knows_amsl and not plan.frame.knows_wgs84
    with pytest.raises(StandardsError, match="geoid_undulation_m"):
        write_plan(plan, "f3548")
    document = json.loads(write_plan(plan, "geojson"))
    assert rfc7946_errors(document) == []
    route = document["features"][0]
    assert all(len(p) == 2 for p in route["geometry"]["coordinates"])  # [lon, lat]: no height rather than a wrong one
    assert route["properties"]["altitudes_agl_m"] == [w[2] for w in plan.waypoints]
    assert all("lower_wgs84_m" not in f["properties"] for f in document["features"][1:])
    assert "<altitudeMode>absolute" in write_plan(plan, "kml")  # AMSL is still known


def test_without_the_ground_elevation_kml_is_above_the_ground_and_home_has_no_altitude(certified):
    plan = _without(certified, ground_elevation_amsl_m=None)
    assert not plan.frame.knows_amsl
    text = write_plan(plan, "kml")
    assert kml_errors(text) == [] and "<altitudeMode>relativeToGround" in text
    heights = [float(c.split(",")[2]) for c in re.search(r"<coordinates>(.*?)</coordinates>", text, re.S)[1].split()]
    assert np.allclose(heights, [w[2] for w in plan.waypoints])
    document = json.loads(write_plan(plan, "qgc-plan"))
    assert qgc_plan(document) == [] and document["mission"]["plannedHomePosition"][2] is None  # QGC reads NaN
    rows, errors = qgc_text_mission(write_plan(plan, "mavlink"))
    assert errors == [] and rows[0][4][6] == 0.0  # WPL has no NaN for home: 0, and the provenance says so
    assert any("home line" in n for n in plan.notes)


def test_the_vendored_schema_is_the_published_one():
    text = (Path(__file__).resolve().parents[1] / "data" / "consumers" / "astm_f3548_utm.yaml").read_bytes()
    assert hashlib.sha256(text).hexdigest() == "f50cd6199287195e79bc555ee3061243ac52acd3850c31312581fb4b09b356b9"
