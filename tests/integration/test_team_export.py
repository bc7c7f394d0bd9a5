"""A fleet mission's execute exported (issue 42): `cloudbrain export` of a team run writes one file set per member
(`<stem>.<sub-task>.<UAV><suffix>`), each the member's flight exported as a one-UAV execute is, on the run's one
mission clock, its legs held in time slices. Each member's F3548 intent is checked against the vendored F3548 OpenAPI
schema (utm.yaml) and its volumes against the member's own waypoints by this test's own geometry (the frame rebuilt
from the world's anchor with pyproj, not through standards/); the .plan, WPL, KML and GeoJSON of every member by their
consumers' rules (tests/support/consumers.py). No two members' intents of one team overlap in 4D, for each kind of
team (a split load, parallel sites, roles, a relay). A member that cannot be exported means no member's file is
written."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from implicitdict import ImplicitDict
from pyproj import Transformer
from shapely.geometry import LineString, Point, Polygon
from uas_standards.astm.f3548.v21.api import OperationalIntentDetails

from cli.standards import member_out
from standards.flight_plans import plan_export, plan_team_export
from standards.formats import PLAN_FORMATS, SIDECAR_SUFFIX
from standards.frame import StandardsError, geo_frame
from standards.volumes import member_volumes
from tests.support.cli import run_cli
from tests.support.consumers import (
    f3548_details,
    f3548_schema_errors,
    kml_errors,
    mission_follows_the_plan,
    qgc_plan,
    qgc_text_mission,
    rfc7946_errors,
)
from tests.support.exports import EXPORT_START, _quiet, export_start
from tests.support.paths import ROOT
from tools.certificate import SafetyCertificate, sha256_of
from tools.world import World, load_world

FLEET = ROOT / "examples" / "fleet_city.json"
REQUESTS = {
    r["id"]: r for r in map(json.loads, (ROOT / "examples" / "fleet_requests.jsonl").read_text("utf-8").splitlines())
}
SPLIT_LOAD = REQUESTS["split-1"]["instruction"]
OTHER_KINDS = ("parallel-1", "roles-1", "relay-1")  # a team of each other kind, exported as F3548 only


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The split load run on the fleet world (a team of two, the second departing later), exported in every format
    with one --start."""
    folder = tmp_path_factory.mktemp("team-export")
    run_path = folder / "run.json"
    run = _run(folder, SPLIT_LOAD)
    reports = {}
    for file_format in PLAN_FORMATS:
        code, printed = _quiet(["export", "--run", str(run_path), "--world", str(FLEET), "--format", file_format,
                                "--out", str(folder / f"plan.{file_format}"), "--start", export_start(), "--json"])  # fmt: skip
        assert code == 0, printed
        reports[file_format] = json.loads(printed)
    return {"folder": folder, "run": run, "run_path": run_path, "reports": reports, "world": load_world(FLEET)}


def _run(folder: Path, instruction: str) -> dict:
    """`cloudbrain run --json` of a team request on the fleet world, its output kept as `folder`/run.json."""
    code, printed = _quiet(["run", "--world", str(FLEET), "--instruction", instruction, "--model", "rules", "--without",
                            "memory", "--json", "--db", str(folder / "runs.sqlite"), "--thread", "team"])  # fmt: skip
    assert code == 0, printed[-2000:]
    (folder / "run.json").write_text(printed, encoding="utf-8")
    return json.loads(printed)


@pytest.fixture(scope="module")
def kinds(team: dict, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every kind of team exported as F3548 on the fleet world: the split load above and a team of each other kind."""
    exported = {"split-1": team}
    for request_id in OTHER_KINDS:
        folder = tmp_path_factory.mktemp(f"team-export-{request_id}")
        run = _run(folder, REQUESTS[request_id]["instruction"])
        assert run["status"] == "execute", run["decision"].get("reason")
        code, printed = _quiet(["export", "--run", str(folder / "run.json"), "--world", str(FLEET), "--format",
                                "f3548", "--out", str(folder / "plan.f3548"), "--start", export_start()])  # fmt: skip
        assert code == 0, printed
        exported[request_id] = {"folder": folder, "run": run, "world": team["world"]}
    return exported


def _members(team: dict) -> list[dict]:
    return team["run"]["decision"]["team"]


def _file(team: dict, file_format: str, member: dict) -> Path:
    return team["folder"] / f"plan.{member['subtask_id']}.{member['uav_id']}.{file_format}"


def _to_local(world: World):
    lat, lon = world.geo_reference.anchor_lat_lon
    crs = f"+proj=tmerc +lat_0={lat} +lon_0={lon} +k=1 +x_0=0 +y_0=0 +datum=WGS84 +units=m"
    return Transformer.from_crs("EPSG:4326", crs, always_xy=True).transform


Volume = tuple[Polygon, float, float, float, float]


def _volumes(team: dict, member: dict) -> list[Volume]:
    """The member's F3548 volumes back in the world's frame: outline, AGL bounds, seconds after t = 0."""
    details = ImplicitDict.parse(
        json.loads(_file(team, "f3548", member).read_text())["details"], OperationalIntentDetails
    )
    to_local = _to_local(team["world"])
    reference = team["world"].geo_reference
    ground_w84 = reference.ground_elevation_amsl_m + reference.geoid_undulation_m
    return [
        (
            Polygon([to_local(v.lng, v.lat) for v in v4.volume.outline_polygon.vertices]),
            v4.volume.altitude_lower.value - ground_w84,
            v4.volume.altitude_upper.value - ground_w84,
            (v4.time_start.value.datetime - EXPORT_START).total_seconds(),
            (v4.time_end.value.datetime - EXPORT_START).total_seconds(),
        )
        for v4 in details.volumes
    ]


def test_the_team_run_is_two_members_the_second_departing_later(team):
    """The premise of the clock checks below."""
    members = _members(team)
    assert team["run"]["status"] == "execute" and len(members) == 2
    assert members[0]["waypoints"][0][3] == 0.0 and members[1]["waypoints"][0][3] > 10.0


def test_export_writes_one_file_set_per_member_and_nothing_under_the_plain_name(team):
    folder = team["folder"]
    for file_format in PLAN_FORMATS:
        assert not (folder / f"plan.{file_format}").exists()
        report = team["reports"][file_format]
        assert [(m["subtask_id"], m["uav_id"]) for m in report["members"]] == [
            (m["subtask_id"], m["uav_id"]) for m in _members(team)
        ]
        for member, reported in zip(_members(team), report["members"], strict=True):
            assert reported["out"] == str(_file(team, file_format, member)) and Path(reported["out"]).is_file()
    for member in _members(team):  # the WPL file's provenance beside each member's own
        sidecar = json.loads(Path(str(_file(team, "mavlink", member)) + SIDECAR_SUFFIX).read_text())
        assert sidecar["cloudbrain"]["team_member"]["uav_id"] == member["uav_id"]


def test_every_members_intent_is_valid_against_f3548s_openapi_schema(team):
    for member in _members(team):
        details = json.loads(_file(team, "f3548", member).read_text())["details"]
        assert f3548_details(details, now=datetime.now(UTC)) == []
        for volume in details["volumes"]:
            assert f3548_schema_errors(volume, "Volume4D") == []


def _uncovered(volumes: list[Volume], waypoints: np.ndarray) -> list[str]:
    """Where the flight is in no volume, by this test's geometry: each leg cut at every volume start and end that
    falls within it (the flight is linear between two cuts), each stretch lying in one volume for its whole time."""
    failures = []
    for a, b in zip(waypoints[:-1], waypoints[1:]):
        cuts = sorted({a[3], b[3], *(t for *_, t0, t1 in volumes for t in (t0, t1) if a[3] < t < b[3])})
        at = [a + (b - a) * ((t - a[3]) / (b[3] - a[3]) if b[3] > a[3] else 0.0) for t in cuts]
        for (s, e), p, q in zip(zip(cuts[:-1], cuts[1:]), at[:-1], at[1:]):
            stretch = LineString([p[:2], q[:2]]) if np.any(p[:2] != q[:2]) else Point(p[:2])
            if not any(
                polygon.covers(stretch) and lower <= min(p[2], q[2]) and max(p[2], q[2]) <= upper and t0 <= s and e <= t1
                for polygon, lower, upper, t0, t1 in volumes
            ):  # fmt: skip
                failures.append(f"the leg {a} -> {b} from t={s:g} to {e:g} s")
    return failures


def test_each_members_volumes_hold_its_own_waypoints_on_the_one_mission_clock(team):
    """By this test's geometry: every instant of a member's decided waypoints lies in one of its volumes; its legs
    are held in slices of at most 10 s (plus the delay buffer), so a member holds no stretch of the corridor much
    longer than it flies it; its volumes start at its own departure on the shared clock (not re-based to 0), so the
    later member's first volume starts after the first member's t = 0, by its departure time."""
    starts = []
    for member in _members(team):
        volumes = _volumes(team, member)
        waypoints = np.asarray(member["waypoints"], dtype=float)
        assert _uncovered(volumes, waypoints) == [], member["uav_id"]
        delay = json.loads(_file(team, "f3548", member).read_text())["cloudbrain"]["buffers"]["delay_sec"]
        assert max(t1 - t0 for *_, t0, t1 in volumes) <= 10.0 + delay + 0.002  # the ms rounding, outward
        assert len(volumes) > len(waypoints) - 1  # the long legs cut
        first = min(t0 for *_, t0, _ in volumes)
        assert first == pytest.approx(waypoints[0][3], abs=0.001)
        assert max(t1 for *_, t1 in volumes) > waypoints[-1][3]  # the delay buffer after touchdown
        starts.append(first)
    first_t0 = _members(team)[0]["waypoints"][0][3]
    assert starts[0] == pytest.approx(first_t0, abs=0.001) and starts[1] > first_t0 + 10.0


def _overlap(a: Volume, b: Volume) -> bool:
    """Two volumes share airspace at some instant: their time spans overlap, their altitude intervals overlap and
    their footprints intersect (shapely)."""
    (shape_a, lower_a, upper_a, t0_a, t1_a), (shape_b, lower_b, upper_b, t0_b, t1_b) = a, b
    return t0_a < t1_b and t0_b < t1_a and lower_a < upper_b and lower_b < upper_a and shape_a.intersects(shape_b)


@pytest.mark.parametrize("request_id", ["split-1", *OTHER_KINDS])
def test_no_two_members_intents_of_one_team_overlap_in_4d(kinds, request_id):
    """The team planner keeps members apart (a split load's members in trail along one corridor, 40-50 s apart):
    their F3548 intents, as a USS would read them, show it: no volume of one member shares airspace with a volume of
    another at the same time; and each member's intent still holds its whole flight."""
    exported = kinds[request_id]
    members = _members(exported)
    assert exported["run"]["status"] == "execute" and len({m["uav_id"] for m in members}) == len(members) >= 2
    volumes = {m["uav_id"]: _volumes(exported, m) for m in members}
    for member in members:
        assert _uncovered(volumes[member["uav_id"]], np.asarray(member["waypoints"], dtype=float)) == []
    for first, second in itertools.combinations(members, 2):
        shared = [
            (i, j)
            for i, a in enumerate(volumes[first["uav_id"]])
            for j, b in enumerate(volumes[second["uav_id"]])
            if _overlap(a, b)
        ]
        assert shared == [], f"{first['uav_id']} and {second['uav_id']}: volumes {shared[:5]} overlap in 4D"


def test_each_file_carries_its_members_certified_route_and_the_teams_digest(team):
    certificate = team["run"]["decision"]["certificate"]
    clocks = set()
    for member, certified in zip(_members(team), certificate["members"], strict=True):
        for file_format in ("f3548", "qgc-plan", "geojson"):
            provenance = json.loads(_file(team, file_format, member).read_text())["cloudbrain"]
            trajectory = certified["certificate"]["trajectory"]
            assert provenance["certified_trajectory"] == trajectory
            assert provenance["trajectory_sha256"] == sha256_of(trajectory)
            assert provenance["trajectory_sha256"] == certified["certificate"]["digests"]["trajectory_sha256"]
            assert provenance["team_member"]["subtask_id"] == member["subtask_id"]
            assert provenance["team_member"]["uav_id"] == member["uav_id"] == trajectory["uav_id"]
            assert provenance["team_member"]["team_trajectory_sha256"] == certificate["digests"]["trajectory_sha256"]
            clocks.add(provenance["mission_clock"]["t0_utc"])
    assert clocks == {export_start().replace("Z", ".000Z")}


def test_every_members_plan_mission_kml_and_geojson_pass_their_consumers(team):
    for member in _members(team):
        waypoints = np.asarray(member["waypoints"], dtype=float)
        plan = json.loads(_file(team, "qgc-plan", member).read_text())
        assert qgc_plan(plan) == []
        items = [(i["command"], i["params"]) for i in plan["mission"]["items"]]
        assert mission_follows_the_plan(items, waypoints) == []
        rows, errors = qgc_text_mission(_file(team, "mavlink", member).read_text())
        assert errors == []
        assert (
            mission_follows_the_plan([(command, params) for _, _, _, command, params, _ in rows[1:]], waypoints) == []
        )
        kml_text = _file(team, "kml", member).read_text()
        assert kml_errors(kml_text) == [] and f"route of {member['uav_id']}" in kml_text
        geojson = json.loads(_file(team, "geojson", member).read_text())
        assert rfc7946_errors(geojson) == []
        ids = [f["id"] for f in geojson["features"]]
        assert len(set(ids)) == len(ids) > len(waypoints)  # the route, then one feature per slice, each its own id


def test_the_text_output_is_one_line_per_member(team, tmp_path, capsys):
    out = tmp_path / "intent.json"
    code, said, _ = run_cli(capsys, "export", "--run", str(team["run_path"]), "--world", str(FLEET), "--format",
                            "f3548", "--out", str(out), "--start", export_start())  # fmt: skip
    assert code == 0 and said.startswith("f3548: a fleet mission of 2 UAVs")
    for member in _members(team):
        path = tmp_path / f"intent.{member['subtask_id']}.{member['uav_id']}.json"
        lines = [line for line in said.splitlines() if f" -> {path}:" in line]
        assert len(lines) == 1 and f"{member['subtask_id']} ({member['role']}) {member['uav_id']}" in lines[0]
        assert path.is_file()


def test_a_tampered_member_fails_the_teams_re_check_and_nothing_is_written(team, tmp_path, capsys):
    run = json.loads(team["run_path"].read_text())
    run["decision"]["certificate"]["members"][1]["certificate"]["trajectory"]["waypoints"][5][0] += 30.0
    tampered = tmp_path / "run.json"
    tampered.write_text(json.dumps(run), "utf-8")
    code, _, err = run_cli(capsys, "export", "--run", str(tampered), "--world", str(FLEET), "--format", "f3548",
                           "--out", str(tmp_path / "plan.json"), "--start", export_start())  # fmt: skip
    assert code == 2 and "does not re-check" in err and "members' waypoints" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_one_member_that_cannot_be_exported_means_no_member_is(team, tmp_path, capsys):
    """t = 0 chosen so the first member's intent has already ended and the second's has not: F3548 refuses the
    first, so the second, exportable alone, is not written either."""
    ends = [max(t1 for *_, t1 in _volumes(team, member)) for member in _members(team)]
    assert ends[1] - ends[0] > 20.0  # room either side for the seconds the export takes
    start = datetime.now(UTC) - timedelta(seconds=(ends[0] + ends[1]) / 2)
    code, _, err = run_cli(capsys, "export", "--run", str(team["run_path"]), "--world", str(FLEET), "--format",
                           "f3548", "--out", str(tmp_path / "plan.json"), "--start", start.isoformat())  # fmt: skip
    first = _members(team)[0]
    assert code == 2 and f"member {first['subtask_id']} ({first['uav_id']})" in err and "already have ended" in err
    assert list(tmp_path.iterdir()) == []


def test_the_one_uav_and_the_team_entry_points_refuse_each_others_certificates(team):
    world = team["world"]
    certificate = SafetyCertificate.model_validate(team["run"]["decision"]["certificate"])
    frame = geo_frame(world, EXPORT_START)
    with pytest.raises(StandardsError, match="one flight plan per member"):
        plan_export(world, certificate, frame)
    member = certificate.members[0].certificate
    with pytest.raises(StandardsError, match="not a fleet mission"):
        plan_team_export(world, member, frame)


def test_member_file_names_keep_the_folder_and_the_suffix():
    assert member_out("out/plan.json", "t1", "uav_01") == str(Path("out/plan.t1.uav_01.json"))
    assert member_out("out/plan", "deliver/../x", "uav 1") == str(Path("out/plan.deliver____x.uav_1"))


def test_members_whose_intents_would_share_airspace_are_not_exported(team, monkeypatch):
    """The team's own intents must not conflict by the ledger's 4D test (standards.volumes.overlapping): with each
    member's volumes held for ten minutes more (as if its delay buffer were that long), the split load's members, in
    trail along one corridor, would share airspace, so nothing is exported."""
    import standards.flight_plans as flight_plans

    def held_long(waypoints, buffers):
        return [v.model_copy(update={"t_end": v.t_end + 600.0}) for v in member_volumes(waypoints, buffers)]

    world = team["world"]
    certificate = SafetyCertificate.model_validate(team["run"]["decision"]["certificate"])
    frame = geo_frame(world, EXPORT_START)
    assert len(plan_team_export(world, certificate, frame)) == 2  # sliced: apart
    monkeypatch.setattr(flight_plans, "member_volumes", held_long)
    with pytest.raises(StandardsError, match="share airspace.*nothing is written for any member"):
        plan_team_export(world, certificate, frame)
