"""Fleet requests (examples/fleet_requests.jsonl, written by hand in English and Chinese) on the rules model, which
writes a team IR for them: the graph assigns, routes, verifies and simulates every member (issue 42). A request the
fleet can serve executes as a team; one it cannot ends with the operator or a refusal naming the binding constraint
from assign_team, never flown as one UAV. One-UAV requests on the same world still execute."""

from __future__ import annotations

import json
import math
import re
import sqlite3

import pytest

from graph.runner import run_task
from nodes.context import Context
from tests.support.cli import run_cli
from tests.support.paths import ROOT
from tools.world import World

REQUESTS = [json.loads(line) for line in (ROOT / "examples" / "fleet_requests.jsonl").read_text("utf-8").splitlines()]
CONTEXT = Context(model="rules", without=frozenset({"memory"}))


def _world(path: str) -> World:
    return World.model_validate_json((ROOT / path).read_text("utf-8"))


@pytest.mark.parametrize("request_", REQUESTS, ids=[r["id"] for r in REQUESTS])
def test_a_team_request_is_flown_as_a_team_or_not_at_all(request_):
    out = run_task(_world(request_["world"]), request_["instruction"], context=CONTEXT, db=None)
    expect = request_["expect"]
    # a team is never flown as one UAV: its decision has no single route
    assert not out.decision.get("uav_id") and not out.decision.get("waypoints")
    if expect["decision"] == "execute":
        assert out.status == "execute", out.decision.get("reason")
        team = out.decision["team"]
        assert len({m["uav_id"] for m in team}) == len(team) >= expect["min_uavs"]
        assert out.decision["certificate"]["members"]
        world = _world(request_["world"])
        for site in expect["sites"]:  # every stated site is reached by some member, by the world's own tolerance
            x, y = world.entity_index[site].position
            assert any(math.dist((x, y), w[:2]) <= world.arrival_tolerance_m for m in team for w in m["waypoints"]), (
                site
            )
        if "payload_kg" in expect:  # the whole mass is carried (a relay leg carries on what its first leg took)
            assert sum(m["share_kg"] for m in team if m["role"] != "relay_leg") >= expect["payload_kg"] - 1e-6
        if "shares_kg" in expect:  # each member's share as the words make it: even, or whole items
            assert sorted(m["share_kg"] for m in team if m["role"] == "deliver") == expect["shares_kg"], team
        for role, uavs in (expect.get("uavs") or {}).items():  # UAVs the request names fly their part
            assert {m["uav_id"] for m in team if m["role"] == role} == set(uavs), team
        return
    assert out.status in ("human_confirm", "safe_refusal") and not out.decision.get("team"), out.decision
    if "binding" in expect:
        assert f"binding constraint: {expect['binding']}" in out.decision["reason"], out.decision["reason"]
    if "asks" in expect:
        assert expect["asks"] in out.decision["reason"], out.decision["reason"]


@pytest.mark.parametrize(
    "instruction",
    [
        "Deliver a small parcel from depot_1 to hospital_1.",
        "Take 2 kg of medicine from hospital_1 to the metro station.",
        "用一架无人机把1公斤的零件从warehouse_2送到construction_site_1。",
    ],
)
def test_a_one_uav_request_on_the_fleet_world_still_executes(instruction):
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")


@pytest.mark.parametrize(
    "instruction",
    [
        "Two drones: uav_05 takes an AED from City General Hospital to West Gate metro station and uav_06 takes one "
        "to the crash on the eastern ring road, within 2 minutes.",
        "两架无人机从市总医院送AED，2分钟内：uav_05送到西门地铁站，uav_06送到东环路车祸现场。",
    ],
)
def test_uavs_named_for_their_sites_fly_to_those_sites(instruction):
    """Never the swap: uav_05 ends at the metro station and uav_06 at the crash, as the words give them."""
    world = _world("examples/fleet_city.json")
    out = run_task(world, instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    ends = {m["uav_id"]: m["waypoints"][-1][:2] for m in out.decision["team"]}
    assert set(ends) == {"uav_05", "uav_06"}
    for uav, site in (("uav_05", "metro_station_1"), ("uav_06", "accident_site_1")):
        assert math.dist(ends[uav], world.entity_index[site].position) <= world.arrival_tolerance_m, (uav, site)


@pytest.mark.parametrize(
    ("instruction", "count", "payload_kg"),
    [
        ("Split 4 kg of sandbags from the sandbag depot between two drones and fly them to the flood site.", 2, 4.0),
        ("Take 8 kg of sandbags from the sandbag depot to the flood site, use three drones.", 3, 8.0),
    ],
)
def test_a_load_split_between_as_many_drones_as_the_words_say_is_flown_by_that_many(instruction, count, payload_kg):
    """The stated team size is the split sub-task's uav_count: the team tool flies exactly that many, though fewer
    could carry it (4 kg fits one 5 kg UAV; 8 kg two), each with a real share of the load."""
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    team = out.decision["team"]
    assert len({m["uav_id"] for m in team}) == len(team) == count
    assert sum(m["share_kg"] for m in team) == pytest.approx(payload_kg, abs=1e-3)
    assert all(m["share_kg"] >= payload_kg / count / 2 - 1e-3 for m in team), team


def test_more_drones_than_can_fly_the_load_ends_with_the_operator_naming_the_fleet_size():
    """Six drones asked for 4 kg: four idle UAVs can carry a share from the sandbag depot (the rest lack the battery
    for one), so the team tool names the fleet size and the run asks the operator, never flying fewer."""
    instruction = "Split 4 kg of sandbags from the sandbag depot between six drones and fly them to the flood site."
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "human_confirm" and not out.decision.get("team"), out.decision
    assert out.failure["error_type"] == "fleet_too_small"
    assert "asks for exactly 6 UAVs; idle UAVs able to carry a share: 4" in out.decision["reason"]


def test_a_team_of_another_size_than_the_words_ask_for_is_not_flown():
    """Coverage is a sub-task per UAV, one site at least each: five camera drones asked for four sites fly as four.
    A team of another size than the request states ("five drones", "a second drone", "分两架") is the operator's,
    named, never flown as if it were what was asked."""
    instruction = (
        "Flood watch: I need photos of the sluice gate, the pumping station, the old bridge pier and the east levee "
        "inspection points within 2 minutes. Split them between five camera drones."
    )
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "human_confirm" and out.failure["error_type"] == "team_size_not_kept", out.decision
    assert "asks for 5 UAVs; the team flies 4" in out.decision["reason"]


def test_filming_the_scene_is_filming_the_drop_off():
    """'film the scene' names no place: it is the one place the cargo goes (language/team.py), so the second drone
    films the crash while the first delivers; before, the film sub-task was lost and a 1-UAV team asked the operator."""
    world = _world("examples/fleet_city.json")
    instruction = (
        "Drop a 2 kg rescue kit at the crash on the eastern ring road and have a second drone with a camera film "
        "the scene while it's delivered."
    )
    out = run_task(world, instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    roles = {m["role"]: m for m in out.decision["team"]}
    assert set(roles) == {"deliver", "film"} and roles["film"]["uav_id"] != roles["deliver"]["uav_id"]
    crash = world.entity_index["accident_site_1"].position
    for member in roles.values():
        assert math.dist(member["waypoints"][-1][:2], crash) <= world.arrival_tolerance_m


SPLIT_LOAD = (
    "We've got 8 kg of sandbags sitting at the sandbag depot and the flood site at the Riverside Road underpass needs "
    "them now. That's more than any one of our drones can lift, so split the load between two of them."
)


def test_a_team_execute_is_exported_and_admitted_to_the_ledger_per_member(capsys, tmp_path):
    """A team's execute is exported as one F3548 intent per member, never as one plan of one member standing for
    the mission (tests/integration/test_team_export.py checks the files), and operations mode admits it as one
    intent per member (tests/integration/test_ops_team.py checks the admission)."""
    fleet, db, out = str(ROOT / "examples" / "fleet_city.json"), str(tmp_path / "runs.sqlite"), tmp_path / "plan.json"
    common = ("--model", "rules", "--without", "memory", "--db", db)
    code, said, _ = run_cli(capsys, "run", "--world", fleet, "--instruction", SPLIT_LOAD, "--thread", "team", *common)
    assert code == 0 and said.startswith("EXECUTE: a team of 2 UAVs") and "None flies" not in said
    assert said.count("(deliver): uav_") == 2  # one line per member, each naming its UAV
    code, said, _ = run_cli(
        capsys, "export", "--db", db, "--thread", "team", "--world", fleet, "--format", "f3548", "--out", str(out),
        "--start", "2100-01-01T09:00:00Z",
    )  # fmt: skip
    written = sorted(p.name for p in tmp_path.glob("plan*"))
    assert code == 0 and said.startswith("f3548: a fleet mission of 2 UAVs") and not out.exists()
    assert len(written) == 2 and all(re.fullmatch(r"plan\.t\d+\.uav_\d+\.json", name) for name in written)
    for name in written:
        intent = json.loads((tmp_path / name).read_text("utf-8"))
        assert intent["details"]["volumes"] and intent["cloudbrain"]["team_member"]["uav_id"] in name
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"at_sec": 0, "request_id": "bags", "instruction": SPLIT_LOAD}) + "\n", "utf-8")
    code, out_text, _ = run_cli(
        capsys, "ops", "--world", fleet, "--requests", str(requests), *common, "--fresh-ledger", "--json"
    )
    (decision,) = json.loads(out_text)["decisions"]
    # the two members fly in trail along one corridor; their legs held in time slices, their intents keep apart by
    # the ledger's own check, and the team is admitted whole: one row per member, under the team's id
    assert code == 0 and decision["status"] == "execute", decision["reason"]
    assert decision["intent_id"] and decision["uav_id"] is None and len(decision["team"]) == 2
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT intent_id, body FROM operational_intents ORDER BY intent_id").fetchall()
    assert sorted(m["intent_id"] for m in decision["team"]) == [intent_id for intent_id, _ in rows]
    assert all(re.fullmatch(rf"{decision['intent_id']}\.t\d+:uav_\d+", intent_id) for intent_id, _ in rows)
    assert {json.loads(body)["team_id"] for _, body in rows} == {decision["intent_id"]}


@pytest.mark.parametrize(
    ("instruction", "asks"),
    [
        (
            "Split four bags of 2 kg each evenly among three drones from the sandbag depot to the flood site.",
            "part of one",
        ),
        ("Take two bags weighing 4 kg from the sandbag depot to the flood site.", "4 kg each, or in all?"),
        ("Bring sandbags of 4 kg each from the sandbag depot to the flood site.", "what one item weighs"),
        ("Film the flood site with uav_04.", "uav_04 carries no camera"),
    ],
)
def test_what_the_words_leave_open_or_the_fleet_cannot_keep_asks_the_operator(instruction, asks):
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "human_confirm" and asks in out.decision["reason"], out.decision["reason"]


@pytest.mark.parametrize("instruction", ["Film the flood site.", "Take thermal pictures of the flood site."])
def test_one_uav_asked_to_film_carries_the_sensor(instruction):
    world = _world("examples/fleet_city.json")
    out = run_task(world, instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    wanted = "thermal" if "thermal" in instruction else "camera"
    assert wanted in world.uav_index[out.decision["uav_id"]].sensors


def test_a_uav_the_words_say_not_to_load_is_not_flown():
    text = "Do not load sandbags onto uav_01, it is reserved; take 3 kg from the sandbag depot to the flood site."
    out = run_task(_world("examples/fleet_city.json"), text, context=CONTEXT, db=None)
    assert out.status == "execute" and out.decision["uav_id"] != "uav_01", out.decision.get("reason")


@pytest.mark.parametrize(
    ("instruction", "not_flown", "sensor"),
    [
        # written by hand 2026-11-28: each flew the UAV named here before
        (
            "uav_06's camera is broken. Send a drone from the hospital to film the crash on the eastern ring road.",
            "uav_06",
            "camera",
        ),
        ("uav_06的摄像头坏了，派一架无人机去东环路事故现场拍摄。", "uav_06", "camera"),
        (
            "Send an AED from the hospital to the crash on the eastern ring road, except with uav_05, which is low on "
            "props.",
            "uav_05",
            None,
        ),
        # the left-out UAV made the first idle other the one to start from: a depot too far for the camera UAVs
        ("Don't use uav_07; get photos of the old bridge pier in the river.", "uav_07", "camera"),
        ("The camera on uav_07 is broken; get photos of the old bridge pier in the river.", "uav_07", "camera"),
    ],
)
def test_a_uav_left_out_or_without_a_working_sensor_does_not_fly(instruction, not_flown, sensor):
    world = _world("examples/fleet_city.json")
    out = run_task(world, instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    assert out.decision["uav_id"] != not_flown, out.decision
    assert sensor is None or sensor in world.uav_index[out.decision["uav_id"]].sensors


def test_a_team_is_not_limited_to_a_uav_named_in_a_remark_nor_films_with_a_broken_camera():
    text = (
        "Take 2 kg of medicine from City General Hospital to the rescue camp on the east ridge and film the drop with "
        "a second drone; uav_06's camera isn't working, uav_05 is charged and ready."
    )
    world = _world("examples/fleet_city.json")
    out = run_task(world, text, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    team = out.decision["team"]
    filming = [m["uav_id"] for m in team if m["role"] == "film"]
    assert filming and "uav_06" not in filming and all("camera" in world.uav_index[u].sensors for u in filming)


@pytest.mark.parametrize(
    ("instruction", "flown"),
    [
        ("用1号无人机把2公斤药品从西区无人机库送到西门地铁站。", "uav_01"),
        ("让三号机把3公斤药品从西区无人机库送到西门地铁站。", "uav_03"),
        ("Use drone #2 to take 3 kg of medicine from the west drone depot to the West Gate metro station.", "uav_02"),
    ],
)
def test_a_uav_named_by_its_fleet_number_flies(instruction, flown):
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "execute" and out.decision["uav_id"] == flown, out.decision


def test_a_uav_named_to_film_with_its_camera_said_broken_asks():
    text = "uav_06's camera is broken, so have uav_06 film the crash on the eastern ring road."
    out = run_task(_world("examples/fleet_city.json"), text, context=CONTEXT, db=None)
    assert out.status == "human_confirm" and "said not to work" in out.decision["reason"], out.decision["reason"]


@pytest.mark.parametrize(
    "instruction",
    [
        # written by hand 2026-11-28: each asked before ("'3 kg' is not reflected in the plan")
        "uav_01 carries 5 kg and uav_02 carries 3 kg of sandbags from the sandbag depot to the flood site.",
        "Put 5 kg on uav_01 and 3 kg on uav_02: sandbags from the sandbag depot to the flood site.",
        "把8公斤沙袋从沙袋仓库运到内涝点，1号机运5公斤，2号机运3公斤。",
    ],
)
def test_each_uav_given_its_own_share_carries_it(instruction):
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    shares = {m["uav_id"]: m["share_kg"] for m in out.decision["team"]}
    assert shares == {"uav_01": 5.0, "uav_02": 3.0}, out.decision["team"]


def test_shares_that_do_not_add_up_to_the_load_ask():
    text = "Take 9 kg of sandbags from the sandbag depot to the flood site: uav_01 takes 5 kg, uav_02 the other 3 kg."
    out = run_task(_world("examples/fleet_city.json"), text, context=CONTEXT, db=None)
    assert out.status == "human_confirm" and "add up to 8 kg" in out.decision["reason"], out.decision["reason"]


# --- an independent hunt of hand-written requests, 2026-11-28: each executed against its words before ------------
@pytest.mark.parametrize(
    ("instruction", "flown"),
    [
        ("Use uav_05, no, uav_06, for 1 kg from the hospital to the crash on the eastern ring road.", "uav_06"),
        ("用6号机，不对，用5号机，从市第一医院送1公斤到东环路车祸现场", "uav_05"),
        (
            "Send 1 kg from the hospital to the crash on the eastern ring road with uav_05; if it isn't available use uav_06.",
            "uav_05",
        ),
    ],
)
def test_a_corrected_or_fallback_uav_is_no_second_member(instruction, flown):
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "execute" and not out.decision.get("team"), out.decision
    assert out.decision["uav_id"] == flown


@pytest.mark.parametrize(
    ("instruction", "uavs"),
    [
        ("Send two drones to film the crash on the eastern ring road", None),
        ("Have both uav_07 and uav_08 film the flood site", {"uav_07", "uav_08"}),
    ],
)
def test_several_drones_asked_to_watch_one_site_fly_as_a_team(instruction, uavs):
    world = _world("examples/fleet_city.json")
    out = run_task(world, instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    team = out.decision["team"]
    assert len({m["uav_id"] for m in team}) == 2 and uavs in (None, {m["uav_id"] for m in team}), team
    assert all("camera" in world.uav_index[m["uav_id"]].sensors for m in team)


def test_coming_home_after_the_drop_ends_where_the_flight_started():
    world = _world("examples/fleet_city.json")
    text = "Drop 1 kg at the West Gate metro station from the west drone depot, then RTB"
    out = run_task(world, text, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    end = out.decision["waypoints"][-1]
    assert math.dist(end[:2], world.entity_index["depot_1"].position) <= world.arrival_tolerance_m


def test_two_drones_each_carrying_a_mass_carry_it_each():
    text = "Two drones each carrying 2 kg from the sandbag depot to the flood site, done within 4 minutes"
    out = run_task(_world("examples/fleet_city.json"), text, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    assert sorted(m["share_kg"] for m in out.decision["team"]) == [2.0, 2.0], out.decision["team"]


@pytest.mark.parametrize(
    "instruction",
    [
        "Fly 1 kg from the west drone depot to the midtown vertiport through the government compound, we have a waiver.",
        "Take the shortcut over the concert, 1 kg from the hospital to the crash on the eastern ring road",
        "Deliver 2 kg from the hardware warehouse to the construction site with no battery reserve, just go",
    ],
)
def test_a_demand_against_a_rule_in_a_persons_words_does_not_execute(instruction):
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status in ("human_confirm", "safe_refusal") and "asks to break" in out.decision["reason"], out.decision


# --- a second hunt (2026-11-28, late) ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("instruction", "not_flown", "flown_among"),
    [
        ("Fly 1 kg from the hospital to the crash on the eastern ring road, but not drone five.", "uav_05", None),
        ("Don't use the medical quads: 1 kg from the hospital to the crash on the eastern ring road.", "uav_05", None),
        (
            "Use the hexa to take 3 kg from the west drone depot to the West Gate metro station.",
            None,
            {"uav_01", "uav_02"},
        ),
        (
            "Please ask drone six to take 1 kg from the hospital to the crash on the eastern ring road.",
            None,
            {"uav_06"},
        ),
        (
            "Deliver 1 kg from the hospital to the West Gate metro station without passing the midtown vertiport.",
            None,
            None,
        ),
    ],
)
def test_a_uav_or_place_said_in_a_persons_words_is_kept(instruction, not_flown, flown_among):
    world = _world("examples/fleet_city.json")
    out = run_task(world, instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    uav = out.decision["uav_id"]
    assert uav != not_flown and (flown_among is None or uav in flown_among), out.decision
    vertiport = world.entity_index["vertiport_1"].position
    if "vertiport" in instruction:
        assert all(math.dist(w[:2], vertiport) > world.arrival_tolerance_m for w in out.decision["waypoints"])


def test_shares_said_as_bare_numbers_are_flown_as_said():
    text = "Take 7 kg of sandbags from the sandbag depot to the flood site: uav_01 takes 4, uav_03 takes 3."
    out = run_task(_world("examples/fleet_city.json"), text, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    assert {m["uav_id"]: m["share_kg"] for m in out.decision["team"]} == {"uav_01": 4.0, "uav_03": 3.0}


def test_one_drone_per_site_flies_a_uav_to_each_site():
    text = "Inspect the sluice gate, pumping station and old bridge pier, one drone per site."
    out = run_task(_world("examples/fleet_city.json"), text, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    assert len({m["uav_id"] for m in out.decision["team"]}) == 3, out.decision["team"]


def test_sites_the_words_give_each_uav_are_that_uavs():
    text = "Inspect the sluice gate and the pumping station with uav_07, and the old bridge pier and east levee with uav_08."
    world = _world("examples/fleet_city.json")
    out = run_task(world, text, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    for member in out.decision["team"]:
        sites = [
            e.id
            for e in world.entities
            if e.id.startswith("inspection_site")
            and any(math.dist(w[:2], e.position) <= world.arrival_tolerance_m for w in member["waypoints"])
        ]
        wanted = {
            "uav_07": ["inspection_site_1", "inspection_site_2"],
            "uav_08": ["inspection_site_3", "inspection_site_4"],
        }
        assert sorted(sites) == wanted[member["uav_id"]], (member["uav_id"], sites)


@pytest.mark.parametrize(
    "instruction",
    [
        "Inspect the old bridge pier, then the pumping station, in that order, using uav_08.",
        "Split 5 kg of sandbags from the sandbag depot to the flood site across three drones.",
        "Take 1 kg from the hospital to the rescue camp on the east ridge. Don't come back, stay at the camp.",
    ],
)
def test_clear_requests_that_asked_before_execute(instruction):
    """Each asked before (a second site dropped; shares rounded to the gram read as 4.999 of 5 kg; "don't come back"
    read as a return leg)."""
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")


@pytest.mark.parametrize(
    ("instruction", "visits"),
    [
        (
            "End at the hospital after topping up at the south charging pad; carry 1 kg from the hardware warehouse.",
            ["warehouse_2", "charging_pad_1", "hospital_1"],
        ),
        (
            "Land at the vertiport after dropping 1 kg at the metro station, starting from the west drone depot.",
            ["depot_1", "metro_station_1", "vertiport_1"],
        ),
    ],
)
def test_a_stop_said_after_the_end_is_flown_before_it(instruction, visits):
    """The first asked (the metro station never reached), the second ended at the charging pad (2026-11-29)."""
    world = _world("examples/fleet_city.json")
    out = run_task(world, instruction, context=CONTEXT, db=None)
    assert out.status == "execute", out.decision.get("reason")
    waypoints, at = out.decision["waypoints"], 0
    for ref in visits:  # each place reached after the one before it, by the world's own tolerance
        x, y = world.entity_index[ref].position[:2]
        at = next(
            (i for i in range(at, len(waypoints)) if math.dist((x, y), waypoints[i][:2]) <= world.arrival_tolerance_m),
            None,
        )
        assert at is not None, (ref, waypoints)


@pytest.mark.parametrize(
    ("instruction", "sensor"),
    [
        (
            "A drone with a winch to lower 2 kg at the construction site on Harbour Street, from the south charging pad",
            "winch",
        ),
        ("From the south charging pad, lower a 1 kg buoy on a line at the old bridge pier in the river", "winch"),
        ("From the south charging pad, do an infrared check of the east levee at the river bend", "thermal"),
        (
            "From the west drone depot, use a drone with a thermal camera to look for people at the flood site",
            "thermal",
        ),
    ],
)
def test_one_drone_asked_for_equipment_flies_with_it_or_asks(instruction, sensor):
    """Each flew a UAV without it before (the third hunt, 2026-11-29)."""
    world = _world("examples/fleet_city.json")
    out = run_task(world, instruction, context=CONTEXT, db=None)
    if out.status == "execute":
        assert sensor in world.uav_index[out.decision["uav_id"]].sensors, out.decision["uav_id"]
    else:
        assert out.status == "human_confirm" and "sensor_not_carried" in out.decision["reason"], out.decision["reason"]
    if sensor == "winch":
        assert out.status == "execute", out.decision.get("reason")


@pytest.mark.parametrize(
    "instruction",
    [
        "Take off in 10 minutes from the west depot and fly to the hospital",
        "10分钟后从西区无人机基地起飞，飞到市第一医院",
        "Fly from the west drone depot to the pumping station by the river, not before 2 pm",
        "Fly from the west depot to the rescue camp on the east ridge no later than ten past two",
        "West depot to the crash on the eastern ring road by 1430 hrs",
        "Bring a couple of kilos of supplies from the hardware warehouse to the construction site on Harbour Street",
    ],
)
def test_a_time_to_leave_a_spoken_clock_time_or_a_mass_without_a_number_is_asked_about(instruction):
    """Each executed at t = 0 with no deadline, or with none of the load, before (the third hunt, 2026-11-29)."""
    out = run_task(_world("examples/fleet_city.json"), instruction, context=CONTEXT, db=None)
    assert out.status == "human_confirm", out.decision.get("reason")


def test_an_altitude_said_as_a_maximum_is_never_exceeded():
    out = run_task(
        _world("examples/fleet_city.json"),
        "Fly from the west drone depot to the crash on the eastern ring road at 55m max",
        context=CONTEXT,
        db=None,
    )
    assert out.status == "execute", out.decision.get("reason")
    assert max(w[2] for w in out.decision["waypoints"]) <= 55.0
