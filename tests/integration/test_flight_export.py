"""Published zones imported into the example world, a run that keeps clear of them, and its execute exported to
the five formats: each file read back by a parser this project did not write (uas-standards, pymavlink, fastkml,
geojson-pydantic), the F3548 volumes shown to hold the certified trajectory at every instant, and the route shown
to be the certified one."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import stat
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
from tests.support.cli import run_cli
from tests.support.paths import DOWNTOWN
from tests.support.zones import ED269_SAMPLE, bow_tie
from tools.certificate import sha256_of
from tools.world import World, load_world

ZONES = ED269_SAMPLE
MISSION_START = "2026-11-26T09:00:00Z"
DEMO_INSTRUCTION = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, keep away "
    "from the school and the temporary no-fly zone."
)
FORMATS = ("f3548", "qgc-plan", "mavlink", "geojson", "kml")


@pytest.fixture(scope="module")
def zoned(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The ED-269 sample imported into downtown, the demo request run on it, and the execute in every format."""
    folder = tmp_path_factory.mktemp("standards")
    world_path, run_path = folder / "zoned.json", folder / "run.json"
    with contextlib.redirect_stdout(io.StringIO()):  # module-scoped: no capsys, stdout is caught here
        assert main(["zones", "import", "--world", str(DOWNTOWN), "--file", str(ZONES), "--mission-start",
                     MISSION_START, "--out", str(world_path)]) == 0  # fmt: skip
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["run", "--world", str(world_path), "--instruction", DEMO_INSTRUCTION, "--model", "rules",
                     "--json", "--db", str(folder / "runs.sqlite"), "--thread", "zoned-demo", "--memory-path",
                     str(folder / "memory")])  # fmt: skip
    assert code == 0
    run_path.write_text(printed.getvalue(), encoding="utf-8")
    files = {}
    for file_format in FORMATS:
        out = folder / f"route.{file_format}"
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["export", "--run", str(run_path), "--world", str(world_path), "--format", file_format,
                         "--out", str(out)]) == 0  # fmt: skip
        files[file_format] = out
    run = json.loads(run_path.read_text(encoding="utf-8"))
    return {
        "world": load_world(world_path),
        "world_path": world_path,
        "run": run,
        "run_path": run_path,
        "db": folder / "runs.sqlite",
        **files,
    }


def _certified(zoned: dict) -> dict:
    return zoned["run"]["decision"]["certificate"]


def _waypoints(zoned: dict) -> np.ndarray:
    return np.asarray(_certified(zoned)["trajectory"]["waypoints"], dtype=float)


def _to_local(world: World):
    """The frame rebuilt here from the world's anchor (a tangent transverse Mercator), not through standards/."""
    lat, lon = world.geo_reference.anchor_lat_lon
    crs = f"+proj=tmerc +lat_0={lat} +lon_0={lon} +k=1 +x_0=0 +y_0=0 +datum=WGS84 +units=m"
    return Transformer.from_crs("EPSG:4326", crs, always_xy=True).transform


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
    origin = datetime.fromisoformat(MISSION_START.replace("Z", "+00:00"))
    ground = world.geo_reference.ground_elevation_amsl_m  # no geoid undulation given: W84 = AMSL, as stated
    assert any("geoid undulation unknown" in a for a in document["cloudbrain"]["assumptions"])
    volumes = []
    for volume in details.volumes:
        outline = volume.volume.outline_polygon.vertices
        assert outline[0] != outline[-1]  # F3548 polygons do not repeat their first vertex
        assert volume.volume.altitude_lower.reference == "W84" and volume.volume.altitude_lower.units == "M"
        polygon = Polygon([to_local(v.lng, v.lat) for v in outline])
        volumes.append(
            (
                polygon,
                volume.volume.altitude_lower.value - ground,
                volume.volume.altitude_upper.value - ground,
                (volume.time_start.value.datetime - origin).total_seconds(),
                (volume.time_end.value.datetime - origin).total_seconds(),
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
    buffers = document["cloudbrain"]["buffers"]
    assert buffers["lateral_m"] > 1.0 and buffers["delay_sec"] > 1.0 and "stress scenarios" in buffers["basis"]


def test_every_export_carries_the_certified_route_and_its_digest(zoned):
    certificate = _certified(zoned)
    for file_format in ("f3548", "qgc-plan", "geojson"):
        provenance = json.loads(zoned[file_format].read_text())["cloudbrain"]
        assert sha256_of(provenance["certified_trajectory"]) == certificate["digests"]["trajectory_sha256"]
        assert provenance["certified_trajectory"]["waypoints"] == certificate["trajectory"]["waypoints"]
    assert certificate["digests"]["trajectory_sha256"] in zoned["mavlink"].read_text()
    assert certificate["digests"]["trajectory_sha256"] in zoned["kml"].read_text()


def test_the_qgc_plan_follows_qgroundcontrols_documented_schema(zoned):
    plan = json.loads(zoned["qgc-plan"].read_text())
    assert plan["fileType"] == "Plan" and plan["version"] == 1 and plan["groundStation"] == "QGroundControl"
    mission = plan["mission"]
    assert mission["version"] == 2 and len(mission["plannedHomePosition"]) == 3
    waypoints = [i for i in mission["items"] if i["command"] == 16]
    assert all(i["type"] == "SimpleItem" and len(i["params"]) == 7 and i["frame"] == 3 for i in mission["items"])
    assert [i["doJumpId"] for i in mission["items"]] == list(range(1, len(mission["items"]) + 1))
    to_local = _to_local(zoned["world"])
    flown = [(*to_local(i["params"][5], i["params"][4]), i["params"][6]) for i in waypoints]
    distinct = [w for i, w in enumerate(_waypoints(zoned)) if i == 0 or np.any(w[:3] != _waypoints(zoned)[i - 1][:3])]
    assert np.allclose(flown, [w[:3] for w in distinct], atol=1e-6)
    for fence in plan["geoFence"]["polygons"]:  # exclusion fences the route never crosses
        assert fence["inclusion"] is False
        fenced = Polygon([to_local(lon, lat) for lat, lon in fence["polygon"]])
        assert not fenced.intersects(LineString(_waypoints(zoned)[:, :2]))


def test_the_mavlink_mission_loads_in_pymavlink_and_packs_as_mission_item_int(zoned):
    loader = mavwp.MAVWPLoader()
    count = loader.load(str(zoned["mavlink"]))
    items = [loader.wp(i) for i in range(count)]
    assert items[0].frame == 0 and items[0].z == zoned["world"].geo_reference.ground_elevation_amsl_m  # home, AMSL
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
    navigation = [i for i in items[1:] if i.command == 16]
    first = _waypoints(zoned)[0]
    assert np.allclose(to_local(navigation[0].y, navigation[0].x), first[:2], atol=0.01)


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
                               str(zoned["world_path"]), "--format", "qgc-plan", "--out", str(out))  # fmt: skip
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
    code, _, err = run_cli(capsys, "zones", "import", "--world", str(DOWNTOWN), "--file", str(bad), "--out", str(out))
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
