"""Published zones imported into the example world, a run that keeps clear of them, and its execute exported to
the five formats with one mission clock: each file read back by a parser this project did not write (uas-standards,
pymavlink, fastkml, geojson-pydantic), the F3548 volumes shown to hold the certified trajectory, from the ground up,
at every instant, and the route shown to be the certified one (take-off, en route, landing). The consumers' own
acceptance rules (QGroundControl's loaders, the F3548 OpenAPI schema, KML's XSD, RFC 7946) are applied in
test_export_consumers.py."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import stat
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from fastkml import kml
from geojson_pydantic import FeatureCollection
from implicitdict import ImplicitDict
from pymavlink import mavwp
from pymavlink.dialects.v20 import common as mavlink2
from pyproj import Transformer
from shapely.geometry import LineString, Point, Polygon
from uas_standards.astm.f3548.v21.api import OperationalIntentDetails

from cli.main import main
from graph.checkpoint import open_checkpointer, thread_config
from standards.formats import SIDECAR_SUFFIX
from tests.support.cli import run_cli
from tests.support.exports import DEMO_INSTRUCTION, EXPORT_START, MISSION_START, export_start, zoned_demo
from tests.support.paths import DOWNTOWN
from tests.support.zones import ED269_SAMPLE, bow_tie
from tools.certificate import sha256_of
from tools.trajectory import flight_phases
from tools.world import World

ZONES = ED269_SAMPLE
KML_NS = {"k": "http://www.opengis.net/kml/2.2"}


@pytest.fixture(scope="module")
def zoned(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The ED-269 sample imported into downtown, the demo request run on it, and the execute in every format."""
    return zoned_demo(tmp_path_factory.getbasetemp() / "zoned-demo")


def _certified(zoned: dict) -> dict:
    return zoned["run"]["decision"]["certificate"]


def _waypoints(zoned: dict) -> np.ndarray:
    return np.asarray(_certified(zoned)["trajectory"]["waypoints"], dtype=float)


def _to_local(world: World):
    """The frame rebuilt here from the world's anchor (a tangent transverse Mercator), not through standards/."""
    lat, lon = world.geo_reference.anchor_lat_lon
    crs = f"+proj=tmerc +lat_0={lat} +lon_0={lon} +k=1 +x_0=0 +y_0=0 +datum=WGS84 +units=m"
    return Transformer.from_crs("EPSG:4326", crs, always_xy=True).transform


def flown_targets(waypoints: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(command, [x, y, altitude above home]) of each navigation item a mission of these waypoints has, in order:
    NAV_TAKEOFF over the first point to the top of the climb, a NAV_WAYPOINT per en-route point (a hover is a hold,
    no item), NAV_LAND at the last point on the ground; a track starting or ending in the air has NAV_WAYPOINTs
    there."""
    phases = flight_phases(waypoints)
    targets = []
    if phases.has_takeoff:
        targets.append((22, np.array([*waypoints[0][:2], waypoints[phases.takeoff_end][2]])))
    else:
        targets.append((16, waypoints[0][:3]))
    for i in range(phases.takeoff_end + 1, phases.landing_start + 1):
        if np.any(waypoints[i][:3] != waypoints[i - 1][:3]):
            targets.append((16, waypoints[i][:3]))
    if phases.has_landing(len(waypoints)):
        targets.append((21, waypoints[-1][:3]))
    return targets


def test_the_run_executes_clear_of_every_imported_zone_and_verify_names_them(zoned):
    run, world = zoned["run"], zoned["world"]
    assert run["status"] == "execute"
    specs = {s["spec"]: s["status"] for s in _certified(zoned)["specs"]}
    assert specs.get("G !in_EMG0001") == "pass" and specs.get("G !in_PWR0002") == "pass"
    route = LineString(_waypoints(zoned)[:, :2])
    for zone_id in ("EMG0001", "PWR0002", "MKT0003", "PRK0004"):
        assert not route.intersects(world.zone_index[zone_id].shape), zone_id
    # and clear of the true circle, as published (not only of our polygon for it)
    circle = json.loads(ZONES.read_text())["features"][0]["geometry"][0]["horizontalProjection"]
    lon, lat = circle["center"]
    centre = Point(_to_local(world)(lon, lat))
    assert route.distance(centre) > circle["radius"] * 0.3048


def test_the_operational_intent_parses_as_f3548_and_its_volumes_hold_the_route_at_every_instant(zoned):
    document = json.loads(zoned["f3548"].read_text())
    details = ImplicitDict.parse(document["details"], OperationalIntentDetails)
    world = zoned["world"]
    to_local = _to_local(world)
    reference = world.geo_reference
    ground_w84 = reference.ground_elevation_amsl_m + reference.geoid_undulation_m  # the world's ground, W84
    volumes = []
    for volume in details.volumes:
        outline = volume.volume.outline_polygon.vertices
        assert outline[0] != outline[-1]  # F3548 polygons do not repeat their first vertex
        assert volume.volume.altitude_lower.reference == "W84" and volume.volume.altitude_lower.units == "M"
        polygon = Polygon([to_local(v.lng, v.lat) for v in outline])
        volumes.append(
            (
                polygon,
                volume.volume.altitude_lower.value - ground_w84,
                volume.volume.altitude_upper.value - ground_w84,
                (volume.time_start.value.datetime - EXPORT_START).total_seconds(),
                (volume.time_end.value.datetime - EXPORT_START).total_seconds(),
            )
        )
    waypoints = _waypoints(zoned)
    for a, b in zip(waypoints[:-1], waypoints[1:]):
        leg = LineString([a[:2], b[:2]]) if np.any(a[:2] != b[:2]) else Point(a[:2])
        holding = [
            v for v in volumes
            if v[0].covers(leg) and v[1] <= min(a[2], b[2]) and max(a[2], b[2]) <= v[2] and v[3] <= a[3] and b[3] <= v[4]
        ]  # fmt: skip
        assert holding, f"the leg {a} -> {b} lies in no volume for the whole of its time"
    assert all(lower >= -0.01 for _, lower, *_ in volumes)  # never below the ground (the W84 rounded to the cm)
    phases = flight_phases(waypoints)
    if phases.has_takeoff:  # the whole flight from the ground: the take-off's and the landing's volumes reach it
        assert volumes[0][1] <= 0.0 and volumes[-1][1] <= 0.0
    buffers = document["cloudbrain"]["buffers"]
    assert buffers["lateral_m"] > 1.0 and buffers["delay_sec"] > 1.0 and "stress scenarios" in buffers["basis"]


def test_every_export_carries_the_certified_route_and_its_digest(zoned):
    certificate = _certified(zoned)
    sidecar = Path(str(zoned["mavlink"]) + SIDECAR_SUFFIX)
    provenances = [json.loads(zoned[f].read_text())["cloudbrain"] for f in ("f3548", "qgc-plan", "geojson")]
    wpl = json.loads(sidecar.read_text())
    provenances.append(wpl["cloudbrain"])
    for provenance in provenances:
        assert sha256_of(provenance["certified_trajectory"]) == certificate["digests"]["trajectory_sha256"]
        assert provenance["certified_trajectory"]["waypoints"] == certificate["trajectory"]["waypoints"]
    # the WPL file is itself nothing but mission lines; its sidecar names it by its sha256
    assert wpl["describes"]["sha256"] == hashlib.sha256(zoned["mavlink"].read_bytes()).hexdigest()
    assert "#" not in zoned["mavlink"].read_text() and zoned["reports"]["mavlink"]["provenance_file"] == str(sidecar)
    assert certificate["digests"]["trajectory_sha256"] in zoned["kml"].read_text()


def test_every_file_of_the_run_states_one_mission_clock(zoned):
    """t = 0 is the same instant in every file of a run (here --start, stated as moved from the world's clock)."""
    t0 = EXPORT_START.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    stated = [json.loads(zoned[f].read_text())["cloudbrain"] for f in ("f3548", "qgc-plan", "geojson")]
    stated.append(json.loads(Path(str(zoned["mavlink"]) + SIDECAR_SUFFIX).read_text())["cloudbrain"])
    for provenance in stated:
        assert provenance["mission_clock"]["t0_utc"] == t0 and provenance["mission_clock"]["source"] == "--start"
        assert any(MISSION_START.replace("Z", ".000Z") in a for a in provenance["assumptions"])  # moved, said so
    extended = ET.fromstring(zoned["kml"].read_text()).findall(".//k:Data", KML_NS)
    assert {d.get("name"): d.findtext("k:value", namespaces=KML_NS) for d in extended}["clock_origin_utc"] == t0
    assert {r["mission_clock"]["t0_utc"] for r in zoned["reports"].values()} == {t0}


def test_an_intent_that_has_already_ended_is_refused_and_says_to_move_it(zoned, tmp_path, capsys):
    """Without --start the zoned world's own clock origin (the zones' schedules were read on it, a day ago) is
    t = 0: the F3548 intent would have ended before it is written, so it is not."""
    out = tmp_path / "intent.json"
    code, _, err = run_cli(capsys, "export", "--run", str(zoned["run_path"]), "--world", str(zoned["world_path"]),
                           "--format", "f3548", "--out", str(out))  # fmt: skip
    assert code == 2 and not out.exists() and len(err.strip().splitlines()) == 1
    assert "would already have ended" in err and "--start" in err


def test_the_qgc_plan_takes_off_flies_the_route_and_lands(zoned):
    plan = json.loads(zoned["qgc-plan"].read_text())
    mission = plan["mission"]
    assert [i["doJumpId"] for i in mission["items"]] == list(range(1, len(mission["items"]) + 1))
    to_local = _to_local(zoned["world"])
    navigation = [i for i in mission["items"] if i["command"] in (16, 21, 22)]
    flown = [(i["command"], np.array([*to_local(i["params"][5], i["params"][4]), i["params"][6]])) for i in navigation]
    expected = flown_targets(_waypoints(zoned))
    assert [c for c, _ in flown] == [c for c, _ in expected]
    assert all(np.allclose(f, e, atol=1e-6) for (_, f), (_, e) in zip(flown, expected))
    assert all(i["frame"] == 3 for i in navigation)  # altitudes above home, the take-off point on the ground
    for fence in plan["geoFence"]["polygons"]:  # exclusion fences the route never crosses
        assert fence["inclusion"] is False
        fenced = Polygon([to_local(lon, lat) for lat, lon in fence["polygon"]])
        assert not fenced.intersects(LineString(_waypoints(zoned)[:, :2]))


def test_the_mavlink_mission_loads_in_pymavlink_and_packs_as_mission_item_int(zoned):
    loader = mavwp.MAVWPLoader()
    count = loader.load(str(zoned["mavlink"]))
    items = [loader.wp(i) for i in range(count)]
    reference = zoned["world"].geo_reference
    assert items[0].frame == 0 and items[0].z == reference.ground_elevation_amsl_m  # home, AMSL
    encoder = mavlink2.MAVLink(None, srcSystem=255, srcComponent=190)
    decoder = mavlink2.MAVLink(None)
    for item in items:
        message = mavlink2.MAVLink_mission_item_int_message(
            1, 1, item.seq, item.frame, item.command, 0, 1, item.param1, item.param2, item.param3, item.param4,
            round(item.x * 1e7), round(item.y * 1e7), item.z, 0,
        )  # fmt: skip
        decoded = decoder.parse_buffer(message.pack(encoder))[0]
        assert decoded.get_type() == "MISSION_ITEM_INT" and decoded.x == round(item.x * 1e7)
    to_local = _to_local(zoned["world"])
    navigation = [i for i in items[1:] if i.command in (16, 21, 22)]
    expected = flown_targets(_waypoints(zoned))
    assert [i.command for i in navigation] == [c for c, _ in expected]
    for item, (_, target) in zip(navigation, expected):
        assert np.allclose([*to_local(item.y, item.x), item.z], target, atol=0.01)


def test_the_gis_files_parse_and_lie_on_the_route(zoned):
    collection = FeatureCollection.model_validate_json(zoned["geojson"].read_text())
    route = next(f for f in collection.features if f.id == "route")
    to_local = _to_local(zoned["world"])
    assert np.allclose([to_local(*p[:2]) for p in route.geometry.coordinates], _waypoints(zoned)[:, :2], atol=1e-6)
    document = kml.KML.from_string(zoned["kml"].read_bytes())
    placemark = next(iter(document.features)).features[0]
    line = placemark.geometry
    assert len(line.coords) == len(_waypoints(zoned))
    assert np.allclose([to_local(x, y) for x, y, _ in line.coords], _waypoints(zoned)[:, :2], atol=1e-4)


def test_a_checkpointed_run_exports_the_same_file_as_its_json_output(zoned, tmp_path, capsys):
    out = tmp_path / "from-thread.plan"
    code, printed, _ = run_cli(capsys, "export", "--db", str(zoned["db"]), "--thread", "zoned-demo", "--world",
                               str(zoned["world_path"]), "--format", "qgc-plan", "--out", str(out), "--start",
                               export_start())  # fmt: skip
    assert code == 0 and "4D volumes" in printed
    assert out.read_text() == zoned["qgc-plan"].read_text()


def test_an_export_against_another_world_or_of_a_refusal_is_refused_whole(zoned, tmp_path, capsys):
    out = tmp_path / "intent.json"
    code, _, err = run_cli(capsys, "export", "--run", str(zoned["run_path"]), "--world", str(DOWNTOWN), "--format",
                           "f3548", "--out", str(out))  # fmt: skip
    assert code == 2 and "not this world's" in err and len(err.strip().splitlines()) == 1 and not out.exists()
    refusal = tmp_path / "refusal.json"
    refusal.write_text(json.dumps({"status": "safe_refusal", "decision": {"status": "safe_refusal"}}))
    code, _, err = run_cli(capsys, "export", "--run", str(refusal), "--world", str(zoned["world_path"]), "--format",
                           "kml", "--out", str(out))  # fmt: skip
    assert code == 2 and "holds no certificate" in err and not out.exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda f: f["features"][0].update(restriction="FORBIDDEN"), "unknown restriction|FORBIDDEN"),
        (lambda f: f["features"][1].update(geometry=[]), "missing geometry"),
        (lambda f: f["features"][1]["geometry"][0].pop("lowerVerticalReference"), "lowerVerticalReference"),
        (lambda f: bow_tie(f["features"][2]), "self-intersecting"),
    ],
)
def test_a_bad_zone_file_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, edit, message):
    document = json.loads(ZONES.read_text())
    edit(document)
    bad, out = tmp_path / "bad.json", tmp_path / "world.json"
    bad.write_text(json.dumps(document))
    # a Wednesday morning inside the sample's schedules: the checks run on the zones active in the mission's horizon
    code, _, err = run_cli(capsys, "zones", "import", "--world", str(DOWNTOWN), "--file", str(bad), "--out", str(out),
                           "--mission-start", "2026-06-03T09:00:00Z")  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert re.search(message, err), err
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]


def test_not_json_and_a_world_without_a_frame_are_one_line_each(tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text("{ not json")
    code, _, err = run_cli(capsys, "zones", "import", "--world", str(DOWNTOWN), "--file", str(broken), "--out",
                           str(tmp_path / "w.json"))  # fmt: skip
    assert code == 2 and "not valid JSON" in err
    bare = json.loads(Path(DOWNTOWN).read_text())
    del bare["geo_reference"]
    bare_path = tmp_path / "bare.json"
    bare_path.write_text(json.dumps(bare))
    code, _, err = run_cli(capsys, "zones", "export", "--world", str(bare_path), "--format", "ed269", "--out",
                           str(tmp_path / "z.json"))  # fmt: skip
    assert code == 2 and "no geo_reference" in err


@pytest.mark.parametrize(("content", "message"), [(b"\xff\xfe\x00\x01", "not UTF-8"), (b"[" * 100_000, "nests deeper")])
def test_a_zone_file_no_json_reader_can_take_is_one_line(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    code, _, err = run_cli(capsys, "zones", "import", "--world", str(DOWNTOWN), "--file", str(bad), "--out",
                           str(tmp_path / "w.json"))  # fmt: skip
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_written_files_are_ordinary_files(zoned):
    umask = os.umask(0)
    os.umask(umask)
    for name in ("world_path", "f3548", "kml"):
        assert stat.S_IMODE(os.stat(zoned[name]).st_mode) == 0o666 & ~umask


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The demo request run on downtown as it is (no clock origin), its checkpoint the run's only clock."""
    folder = tmp_path_factory.mktemp("plain")
    run_path = folder / "run.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["run", "--world", str(DOWNTOWN), "--instruction", DEMO_INSTRUCTION, "--model", "rules", "--json",
                     "--db", str(folder / "runs.sqlite"), "--thread", "plain-demo", "--memory-path",
                     str(folder / "memory")])  # fmt: skip
    assert code == 0
    run_path.write_text(printed.getvalue(), encoding="utf-8")
    return {"folder": folder, "run_path": run_path, "db": folder / "runs.sqlite"}


def test_without_a_world_clock_every_export_of_a_run_counts_from_the_runs_recorded_start(plain, capsys):
    """Five formats, one t = 0: the start of the run as its checkpoint recorded it (the thread's latest input),
    whether the export reads the `run --json` output or the thread."""
    history = list(open_checkpointer(str(plain["db"])).list(thread_config("plain-demo")))
    started = max(datetime.fromisoformat(c.checkpoint["ts"]) for c in history if c.metadata["source"] == "input")
    t0 = started.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    stated = set()
    for file_format, source in (("geojson", "--run"), ("kml", "--run"), ("qgc-plan", "--thread")):
        out = plain["folder"] / f"route.{file_format}"
        where = (
            ["--run", str(plain["run_path"])]
            if source == "--run"
            else ["--thread", "plain-demo", "--db", str(plain["db"])]
        )
        code, printed, err = run_cli(capsys, "export", *where, "--world", str(DOWNTOWN), "--format", file_format,
                                     "--out", str(out), "--json")  # fmt: skip
        assert code == 0, err
        report = json.loads(printed)
        assert "recorded in its checkpoint" in report["mission_clock"]["source"]
        stated.add(report["mission_clock"]["t0_utc"])
    assert stated == {t0}


def test_a_run_with_no_clock_anywhere_is_refused_in_one_line_asking_for_start(plain, tmp_path, capsys):
    """A certificate alone (no run, no checkpoint) on a world without a clock origin: nothing says when t = 0 is."""
    certificate = json.loads(plain["run_path"].read_text())["decision"]["certificate"]
    alone = tmp_path / "certificate.json"
    alone.write_text(json.dumps(certificate))
    out = tmp_path / "route.kml"
    code, _, err = run_cli(capsys, "export", "--run", str(alone), "--world", str(DOWNTOWN), "--format", "kml",
                           "--out", str(out))  # fmt: skip
    assert code == 2 and not out.exists() and len(err.strip().splitlines()) == 1
    assert "no mission clock" in err and "--start" in err
