"""The rules model writes a team IR (issue 42) where language/team.py reads a team: every fleet request of
examples/fleet_requests.jsonl passes the validator with a team that serves its sites and carries its mass, in English
and Chinese; a request one UAV flies, or one that refuses a team, writes none; an excluded UAV is never a member."""

from __future__ import annotations

import json
from functools import cache

import pytest

from ir.model import LowAltitudeIR
from ir.validation import validate_ir
from models.base import GenerationRequest, RepairFeedback
from models.rules_parser import RuleBasedGenerator
from tests.support.paths import EXAMPLES, ROOT
from tools.catalog import default_registry
from tools.world import World, load_world

FLEET_REQUESTS = [json.loads(line) for line in (EXAMPLES / "fleet_requests.jsonl").read_text().splitlines() if line]
REGISTRY = default_registry()


@cache
def _world(path: str) -> World:
    return load_world(ROOT / path)


def _answer(text: str, world: World) -> dict:
    return RuleBasedGenerator().generate(GenerationRequest(instruction=text, world=world, task_id="t")).answer


def _valid_ir(text: str, world: World) -> LowAltitudeIR:
    report = validate_ir(_answer(text, world), world, REGISTRY)
    assert report.valid, (report.error_type, report.field, report.message)
    return report.ir


def _fleet(text: str) -> LowAltitudeIR:
    return _valid_ir(text, _world("examples/fleet_city.json"))


def _relay_pads(ir: LowAltitudeIR) -> set[str]:
    subtasks = ir.team.subtasks
    return {s.destination for s in subtasks if any(s.id in other.after for other in subtasks)}


@pytest.mark.parametrize("request_", FLEET_REQUESTS, ids=[r["id"] for r in FLEET_REQUESTS])
def test_a_fleet_request_writes_a_valid_team_that_matches_its_expectation(request_):
    expect = request_["expect"]
    ir = _valid_ir(request_["instruction"], _world(request_["world"]))
    team = ir.team
    assert team is not None
    pads = _relay_pads(ir)
    served = {p for s in team.subtasks for p in (*s.waypoints, s.destination)} - pads
    assert served == set(expect["sites"])
    assert {*ir.entities.waypoints, ir.entities.destination} == set(expect["sites"])  # the request-level view
    assert len(team.subtasks) >= expect["min_uavs"] or any(s.split for s in team.subtasks)
    if "origin" in expect:
        assert ir.entities.origin == expect["origin"]
        assert {s.origin for s in team.subtasks if s.role == "deliver"} == {expect["origin"]}
    if "handoff" in expect:
        assert pads == {expect["handoff"]} and ir.entities.handoff_points == [expect["handoff"]]
        assert [s.after for s in team.subtasks if s.role == "relay_leg"] == [["t1"]]
    carried = sum(s.payload_kg for s in team.subtasks if s.role != "relay_leg")
    assert carried == pytest.approx(ir.constraints.payload_kg) == pytest.approx(expect.get("payload_kg", 0.0))
    for sensor in expect.get("sensors", []):
        assert any(sensor in s.required_sensors for s in team.subtasks)
    if "deadline_sec" in expect:
        assert {s.deadline_sec or ir.constraints.deadline_sec for s in team.subtasks} == {expect["deadline_sec"]}
    for role, uavs in expect.get("uavs", {}).items():
        assert [u for s in team.subtasks if s.role == role for u in s.uavs] == uavs
    assert ir.tool_plan[2].tool == "assign_uav"  # the single-UAV plan shape: the graph's team path assigns itself


def test_coverage_groups_the_sites_into_one_contiguous_route_per_uav():
    ir = _fleet(FLEET_REQUESTS[6]["instruction"])  # coverage-1: four inspection points, two camera drones
    routes = [[*dict.fromkeys([*s.waypoints, s.destination])] for s in ir.team.subtasks]
    # the west pair and the east pair, each run from the end nearer the camera UAVs (east, at the charging pad)
    assert routes == [["inspection_site_2", "inspection_site_1"], ["inspection_site_3", "inspection_site_4"]]
    # a watcher starts at the first place it watches: tools/team times it from where it stands, with no detour
    assert [s.origin for s in ir.team.subtasks] == ["inspection_site_2", "inspection_site_3"]
    # no single member visits every site: a team IR binds no flight to the request-level waypoints
    assert not any(spec.startswith("F at_inspection") for spec in ir.verification_specs.ltl)
    three = _fleet("Inspect the sluice gate, the old bridge pier and the pumping station with two camera drones.")
    routes = [[*dict.fromkeys([*s.waypoints, s.destination])] for s in three.team.subtasks]
    assert routes == [["inspection_site_2", "inspection_site_1"], ["inspection_site_3"]]  # along the river


def test_a_film_subtask_starts_and_ends_at_the_site_it_films():
    film = next(s for s in _fleet(FLEET_REQUESTS[8]["instruction"]).team.subtasks if s.role == "film")
    assert (film.origin, film.destination, film.payload_kg) == ("construction_site_1", "construction_site_1", 0.0)


def test_each_site_gets_its_own_stated_mass_and_deadline():
    ir = _fleet(
        "Take 1 kg of medicine from City General Hospital to the crash on the eastern ring road and 2 kg to West "
        "Gate metro station, both at once."
    )
    assert [(s.destination, s.payload_kg) for s in ir.team.subtasks] == [
        ("accident_site_1", 1.0),
        ("metro_station_1", 2.0),
    ]
    assert ir.constraints.payload_kg == 3.0  # the whole load the team carries
    zh = _fleet("从市第一医院同时送药：给东环路车祸现场送1公斤，给西门地铁站送2公斤。")
    assert [s.payload_kg for s in zh.team.subtasks] == [1.0, 2.0]
    deadlines = _fleet(
        "Take the crash on the eastern ring road an AED within 2 minutes and West Gate metro station one within 4 "
        "minutes, from City General Hospital, both at once."
    )
    assert deadlines.constraints.deadline_sec == 240.0  # the mission ends with its last sub-task
    assert [s.deadline_sec for s in deadlines.team.subtasks] == [120.0, None]


def test_shares_the_words_do_not_pair_with_sites_are_split_evenly_and_asked_about():
    text = (
        "Take 4 kg of medicine and 1 kg of bandages from City General Hospital to the crash on the eastern ring road "
        "and West Gate metro station, both at once."
    )
    answer = _answer(text, _world("examples/fleet_city.json"))
    team = answer["low_altitude_ir"]["team"]
    assert [s["payload_kg"] for s in team["subtasks"]] == [2.0, 2.0]
    assert any("share" in m for m in answer["uncertainty"]["missing_information"])  # a guess the operator confirms
    assert answer["low_altitude_ir"]["fallback_policy"] == "human_confirm"
    assert validate_ir(answer, _world("examples/fleet_city.json"), REGISTRY).valid


def test_a_relay_without_a_named_pad_changes_uavs_where_the_longer_leg_is_shortest():
    ir = _fleet(
        "Send 3 kg of rope from the west drone depot to the rescue camp on the east ridge; relay it with a second drone."
    )
    first, second = ir.team.subtasks
    assert first.destination == second.origin == "vertiport_1" == ir.entities.handoff_points[0]
    assert (second.role, second.after, second.destination) == ("relay_leg", ["t1"], "rescue_camp_1")


@pytest.mark.parametrize(
    "text, members",
    [
        (
            "Split 8 kg of sandbags from the sandbag depot to the flood site between uav_01 and uav_02.",
            ["uav_01", "uav_02"],
        ),
        ("由uav_01和uav_02分装8公斤沙袋，从沙袋仓库运到滨河路内涝点。", ["uav_01", "uav_02"]),
    ],
)
def test_the_uavs_named_to_share_a_load_fly_it(text, members):
    ir = _fleet(text)
    (split,) = ir.team.subtasks
    assert split.split and split.uavs == members and split.payload_kg == 8.0


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Split 4 kg of sandbags from the sandbag depot between two drones and fly them to the flood site.", 2),
        ("Take 8 kg of sandbags from the sandbag depot to the flood site, use three drones.", 3),
        ("从五金仓库运7公斤工具到港口街工地，不要用uav_09，分两架运。", 2),
        ("Split 8 kg of sandbags from the sandbag depot to the flood site between uav_01 and uav_02.", 2),
        ("Flood site needs 9 kilos of sandbags from the sandbag depot, within 10 minutes please.", None),  # implied
    ],
)
def test_a_split_load_is_shared_by_as_many_uavs_as_the_words_say(text, count):
    """The stated team size is the split sub-task's uav_count (the team tool then flies exactly that many); a split
    the world implies, with no number in the words, leaves it to the team tool."""
    (split,) = _fleet(text).team.subtasks
    assert split.split and split.uav_count == count


def test_coverage_is_cut_into_as_many_runs_as_the_words_ask_for_uavs():
    """Coverage needs no count: one sub-task per UAV (coverage-1 asks for two; here, three), each flown by one."""
    sites = (
        "Flood watch: I need photos of the sluice gate, the pumping station, the old bridge pier and the east levee "
        "inspection points within 2 minutes. Split them between three camera drones."
    )
    ir = _fleet(sites)
    assert len(ir.team.subtasks) == 3 and all(s.uav_count is None for s in ir.team.subtasks)


# --- no team ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "Deliver a small parcel from depot_1 to hospital_1.",
        "Take 2 kg of medicine from hospital_1 to the metro station.",
        "用一架无人机把1公斤的零件从warehouse_2送到construction_site_1。",
        # a team refused in words: one UAV, whatever the mass
        "Move 8 kg of sandbags from the sandbag depot to the flood site with one drone only.",
        "只用一架无人机把8公斤沙袋从沙袋仓库运到滨河路内涝点。",
        "Don't split the 9 kg of sandbags: take them from the sandbag depot to the flood site.",
        "不要拆分，把9公斤沙袋从沙袋仓库运到滨河路内涝点。",
        # a choice of UAVs is not a team
        "Use uav_01 or uav_02 to take 2 kg of sandbags from the sandbag depot to the flood site.",
    ],
)
def test_a_one_uav_request_writes_no_team(text):
    answer = _answer(text, _world("examples/fleet_city.json"))
    assert "team" not in answer["low_altitude_ir"]


def test_the_example_requests_write_no_team():
    downtown = _world("examples/downtown.json")
    for line in (EXAMPLES / "requests.jsonl").read_text().splitlines():
        assert "team" not in _answer(json.loads(line)["instruction"], downtown)["low_altitude_ir"]


# --- polarity ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, excluded",
    [
        (
            "Have one drone film the construction site on Harbour Street while another brings 3 kg of tools over "
            "from the hardware warehouse, but don't use uav_09.",
            "uav_09",
        ),
        (
            "uav_07 films the construction site on Harbour Street while uav_09 drops off 3 kg of tools from the "
            "hardware warehouse; never use uav_08.",
            "uav_08",
        ),
        ("Split 8 kg of sandbags from the sandbag depot to the flood site between two drones, not uav_01.", "uav_01"),
        ("8公斤沙袋分两架无人机从沙袋仓库运到滨河路内涝点，不要用uav_01。", "uav_01"),
    ],
)
def test_an_excluded_uav_is_never_a_member_nor_a_candidate(text, excluded):
    ir = _fleet(text)
    assert ir.team is not None
    assert all(excluded not in s.uavs for s in ir.team.subtasks)
    assert excluded not in ir.entities.candidate_uavs


# --- repair -----------------------------------------------------------------------------------------------------
def test_a_repair_round_replaces_a_member_the_validator_rejects_and_keeps_the_team():
    world = _world("examples/fleet_city.json")
    text = (
        "uav_09 films the construction site on Harbour Street while uav_07 drops off 3 kg of tools from the "
        "hardware warehouse."
    )
    answer = _answer(text, world)
    for round_ in (1, 2, 3):
        report = validate_ir(answer, world, REGISTRY)
        if report.valid:
            break
        assert report.field.startswith("team.subtasks.")
        feedback = RepairFeedback(
            counterexample={"error_type": report.error_type, "field": report.field, "value": report.value},
            allowed=report.allowed,
            previous_ir=answer,
        )
        request = GenerationRequest(instruction=text, world=world, task_id="t", feedback=feedback, round=round_)
        answer = RuleBasedGenerator().generate(request).answer
    assert report.valid, report.message
    film, deliver = report.ir.team.subtasks
    assert "uav_09" not in film.uavs and "uav_07" not in deliver.uavs


# --- UAVs named for one site (review of issue 42) ----------------------------------------------------------------
SWAPPED_PINS = (
    "Two drones: uav_05 takes an AED from City General Hospital to West Gate metro station and uav_06 takes one to "
    "the crash on the eastern ring road, within 2 minutes."
)


@pytest.mark.parametrize(
    "text",
    [
        SWAPPED_PINS,
        "两架无人机：uav_05从市总医院送AED到西门地铁站，uav_06送到东环路车祸现场，2分钟内。",
        "Two drones within 2 minutes: an AED from City General Hospital to West Gate metro station by uav_05 and one "
        "to the crash on the eastern ring road by uav_06.",
        "uav_05 and uav_06 take AEDs from City General Hospital to West Gate metro station and the crash on the "
        "eastern ring road respectively, both within 2 minutes.",
    ],
)
def test_a_uav_named_for_a_site_pins_that_sites_subtask(text):
    team = _fleet(text).team
    assert team is not None
    assert {s.destination: s.uavs for s in team.subtasks} == {
        "metro_station_1": ["uav_05"],
        "accident_site_1": ["uav_06"],
    }


def test_a_uav_named_for_one_subtask_leaves_the_others_to_the_fleet():
    ir = _fleet(
        "Film the construction site on Harbour Street while uav_09 brings 3 kg of tools over from the hardware "
        "warehouse; don't use uav_07."
    )
    film, deliver = ir.team.subtasks
    assert film.uavs == [] and deliver.uavs == ["uav_09"]
    candidates = ir.entities.candidate_uavs
    assert "uav_07" not in candidates and {"uav_08", "uav_09"} <= set(candidates)  # the film sub-task has a camera


def _team_r5_feedback(answer: dict, index: int, uav: str) -> RepairFeedback:
    """A battery failure on a member, as nodes/team.member_named writes it."""
    sub = answer["low_altitude_ir"]["team"]["subtasks"][index]["id"]
    return RepairFeedback(
        counterexample={
            "error_type": "spec_violation",
            "violated_rule": "R5",
            "field": f"team.subtasks.{index}",
            "value": uav,
            "message": f"member {sub} ({uav}): battery reserve below 20% on arrival",
            "suggested_repair": f"member {sub} ({uav}): pick a UAV with more battery",
        },
        previous_ir=answer,
    )


def test_a_team_battery_failure_takes_the_failed_uav_off_and_never_pins_it():
    world = _world("examples/fleet_city.json")
    text = "滨河路内涝点急需12公斤沙袋，沙袋在沙袋仓库，一架无人机装不下，分三架一起运过去，15分钟内送到。"
    answer = _answer(text, world)
    request = GenerationRequest(
        instruction=text, world=world, task_id="t", feedback=_team_r5_feedback(answer, 0, "uav_03"), round=1
    )
    repaired = RuleBasedGenerator().generate(request).answer
    report = validate_ir(repaired, world, REGISTRY)
    assert report.valid, report.message
    sub = report.ir.team.subtasks[0]
    candidates = report.ir.entities.candidate_uavs
    assert "uav_03" not in sub.uavs and candidates and "uav_03" not in candidates
    assert {"uav_01", "uav_02"} <= set(candidates)
    assert not repaired["uncertainty"]["needs_human_confirmation"]


def test_a_team_battery_failure_on_a_pinned_member_unpins_it():
    world = _world("examples/fleet_city.json")
    answer = _answer(SWAPPED_PINS, world)
    request = GenerationRequest(
        instruction=SWAPPED_PINS, world=world, task_id="t", feedback=_team_r5_feedback(answer, 1, "uav_06"), round=1
    )
    repaired = RuleBasedGenerator().generate(request).answer["low_altitude_ir"]
    metro, crash = repaired["team"]["subtasks"]
    assert metro["uavs"] == ["uav_05"] and crash["uavs"] == []
    assert "uav_06" not in repaired["entities"]["candidate_uavs"]
    assert "uav_05" in repaired["entities"]["candidate_uavs"]


def test_a_team_ir_an_earlier_round_ran_ends_the_repair_loop():
    """A repair that left the team IR as it was: another round could only fail the same way."""
    from nodes.context import Context
    from nodes.repair import repair
    from tests.support.runtime import fake_runtime

    world = _world("examples/fleet_city.json")
    ir = _answer(SWAPPED_PINS, world)["low_altitude_ir"]
    failure = {
        "stage": "verify",
        "error_type": "spec_violation",
        "message": "member t2 (uav_06): battery reserve below 20% on arrival",
        "counterexample": {"violated_rule": "R5", "field": "team.subtasks.1", "value": "uav_06"},
    }
    runtime = fake_runtime(Context(without=frozenset({"memory"})))
    state = {"round": 1, "failure": failure, "ir": ir, "world": world.model_dump(mode="json")}
    first = {"round": 0, "ir": ir}
    update = repair({**state, "attempts": [first]}, runtime)
    assert update["repair_exhausted"] is True and "feedback" not in update
    assert update["failure"]["message"].endswith("(no repair left that changes the plan's cause)")
    policy = {**ir, "fallback_policy": "human_confirm"}  # no change to what the gates run
    assert repair({**state, "attempts": [{"round": 0, "ir": policy}]}, runtime)["repair_exhausted"] is True
    changed = {**ir, "entities": {**ir["entities"], "candidate_uavs": ["uav_05"]}}
    update = repair({**state, "attempts": [{"round": 0, "ir": changed}]}, runtime)
    assert update["repair_exhausted"] is False and update["feedback"]["previous_ir"] == ir


def test_a_uav_flown_to_another_site_than_the_request_names_is_pinned_to_its_own():
    world = _world("examples/fleet_city.json")
    answer = _answer(SWAPPED_PINS, world)
    for sub in answer["low_altitude_ir"]["team"]["subtasks"]:  # an IR that left the pins to the team tool
        sub["uavs"] = []
    feedback = RepairFeedback(
        counterexample={
            "error_type": "pinned_uav_swapped",
            "field": "team.subtasks",
            "value": "uav_05",
            "message": "the request names uav_05 for metro_station_1; uav_05 flies to accident_site_1",
        },
        allowed=["metro_station_1"],
        previous_ir=answer,
    )
    request = GenerationRequest(instruction=SWAPPED_PINS, world=world, task_id="t", feedback=feedback, round=1)
    metro, crash = RuleBasedGenerator().generate(request).answer["low_altitude_ir"]["team"]["subtasks"]
    assert (metro["destination"], metro["uavs"], crash["uavs"]) == ("metro_station_1", ["uav_05"], [])
