"""The IR's team (issue 42): a fleet mission's sub-tasks and their UAVs, on examples/downtown.json's fleet.

Downtown's idle UAVs: uav_03 (3 kg, camera and defibrillator bay), uav_07 (3 kg, camera), uav_09 (5 kg, camera and
lidar); uav_05 is busy. A single-UAV IR, with no `team`, must read and dump exactly as before the team existed.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ir.model import IR_VERSION, LLMAnswer, LowAltitudeIR, SubTask
from ir.validation import validate_ir
from tools.catalog import default_registry
from tools.certificate import sha256_of
from tools.dependencies import find_cycle

# The IR commit f2152f7 stored (tests/fixtures/stored_runs_f2152f7.sqlite.gz, thread `stored-run`, its last
# checkpoint), and the ir_sha256 of the safety certificate that run's execute carries.
STORED_IR: dict[str, Any] = {
    "task_id": "stored-run",
    "intent": "emergency",
    "priority": "high",
    "entities": {
        "origin": "hospital_A",
        "destination": "accident_site_3",
        "waypoints": [],
        "candidate_uavs": [],
        "avoid_zones": ["nfz_temp_1", "nfz_gov_1", "school_zone_2"],
        "sensitive_zones": ["school_zone_2"],
        "handoff_points": [],
    },
    "constraints": {
        "deadline_sec": 600.0,
        "altitude_min_m": 30.0,
        "altitude_max_m": 120.0,
        "min_separation_m": 10.0,
        "battery_reserve_ratio": 0.2,
        "max_risk_level": "medium",
        "corridor_capacity_required": 1,
        "payload_kg": 0.0,
    },
    "tool_plan": [
        {"id": "city", "tool": "query_city_state", "args": {"bbox": [0.0, 0.0, 800.0, 570.0]}, "depends_on": []},
        {
            "id": "airspace",
            "tool": "query_airspace",
            "args": {"bbox": [0.0, 0.0, 800.0, 570.0]},
            "depends_on": ["city"],
        },
        {"id": "assign", "tool": "assign_uav", "args": {}, "depends_on": ["airspace"]},
        {"id": "route", "tool": "plan_route", "args": {}, "depends_on": ["assign"]},
        {"id": "verify", "tool": "verify_ltl_stl", "args": {}, "depends_on": ["route"]},
        {"id": "simulate", "tool": "simulate_scenario", "args": {}, "depends_on": ["verify"]},
        {"id": "risk", "tool": "risk_assess", "args": {}, "depends_on": ["simulate"]},
        {"id": "explain", "tool": "explain_decision", "args": {}, "depends_on": ["risk"]},
    ],
    "verification_specs": {
        "ltl": ["G !in_nfz_temp_1", "G !in_nfz_gov_1", "G !in_school_zone_2", "F at_goal"],
        "stl": [],
        "program_rules": ["R1", "R2", "R3", "R4", "R5", "R6"],
    },
    "fallback_policy": "ground_transfer_or_human_confirm",
    "explanation_plan": {
        "cite_tools": ["assign_uav", "plan_route", "verify_ltl_stl", "simulate_scenario"],
        "cite_rules": ["R1", "R2", "R3", "R4", "R5", "R6"],
    },
}
STORED_IR_SHA256 = "66e21ff2a0c4d42ed5634ee0e43645e6826dbcde1721ad956e6c8daeca71d9ec"

# What tools/team.py's assign_team takes per sub-task (issue 42): the IR's sub-task carries these under the same names
# (`uavs`: the UAVs pinned to it).
TEAM_TOOL_SUBTASK_ARGS = {
    "id", "origin", "destination", "waypoints", "payload_kg", "deadline_sec", "required_sensors", "after", "split",
    "uavs", "uav_count", "item_kg",
}  # fmt: skip


@pytest.fixture(scope="module")
def registry():
    return default_registry()


def sandbags_ir() -> dict[str, Any]:
    """8 kg of sandbags from depot_1 to the flood site (accident_site_3) in three shares: two UAVs named, the third
    share left to the team tool."""
    return {
        "task_id": "flood-sandbags",
        "intent": "delivery",
        "priority": "high",
        "entities": {
            "origin": "depot_1",
            "destination": "accident_site_3",
            "avoid_zones": ["nfz_temp_1", "school_zone_2"],
        },
        "constraints": {"deadline_sec": 900, "payload_kg": 8},
        "tool_plan": [
            {"id": "airspace", "tool": "query_airspace"},
            {"id": "assign", "tool": "assign_uav", "depends_on": ["airspace"]},
            {"id": "route", "tool": "plan_route", "depends_on": ["assign"]},
            {"id": "verify", "tool": "verify_ltl_stl", "depends_on": ["route"]},
        ],
        "verification_specs": {"ltl": ["G !in_nfz_temp_1", "G !in_school_zone_2", "F at_goal"]},
        "team": {
            "subtasks": [
                {"id": "bags_a", "origin": "depot_1", "destination": "accident_site_3", "payload_kg": 3.0,
                 "uavs": ["uav_09"]},
                {"id": "bags_b", "origin": "depot_1", "destination": "accident_site_3", "payload_kg": 3.0,
                 "uavs": ["uav_03"]},
                {"id": "bags_c", "origin": "depot_1", "destination": "accident_site_3", "payload_kg": 2.0},
            ],
        },
    }  # fmt: skip


def changed(path: str, value: Any, ir: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of the IR (default: sandbags_ir()) with the value at a dotted path replaced."""
    ir = copy.deepcopy(ir or sandbags_ir())
    *parents, last = path.split(".")
    node: Any = ir
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[int(last) if isinstance(node, list) else last] = value
    return ir


def subtask(**fields: Any) -> dict[str, Any]:
    return {"origin": "depot_1", "destination": "accident_site_3", **fields}


# --- the IR without a team ----------------------------------------------------------------------------------


def test_an_ir_stored_before_the_team_validates_and_dumps_unchanged(world, registry):
    assert IR_VERSION == "0.2"
    report = validate_ir(STORED_IR, world, registry)
    assert report.valid, report.message
    assert report.ir.team is None
    dumped = report.ir.model_dump(mode="json")
    assert dumped == STORED_IR  # no `team: null` for readers that forbid unknown keys
    assert sha256_of(dumped) == STORED_IR_SHA256  # so its certificate's digest still matches
    assert "team" not in report.ir.model_dump_json()
    answer = LLMAnswer(low_altitude_ir=report.ir).model_dump(mode="json")
    assert "team" not in answer["low_altitude_ir"]


def test_a_team_ir_dumps_its_team_and_reads_back_the_same(world, registry):
    report = validate_ir(sandbags_ir(), world, registry)
    assert report.valid, report.message
    dumped = report.ir.model_dump(mode="json")
    assert [s["id"] for s in dumped["team"]["subtasks"]] == ["bags_a", "bags_b", "bags_c"]
    assert dumped["team"]["objective"] == "min_makespan"
    assert LowAltitudeIR.model_validate(dumped) == report.ir


def test_a_subtask_converts_to_the_team_tools_arguments_one_to_one():
    assert set(SubTask.model_fields) - {"role"} == TEAM_TOOL_SUBTASK_ARGS
    team_tool = pytest.importorskip("tools.team")
    assert set(team_tool.TeamSubtask.model_fields) == TEAM_TOOL_SUBTASK_ARGS
    counted = changed("team.subtasks", [subtask(id="bags", payload_kg=8.0, split=True, uav_count=2)])
    for ir in (sandbags_ir(), counted):
        for sub in LowAltitudeIR.model_validate(ir).team.subtasks:
            args = team_tool.TeamSubtask.model_validate(sub.model_dump(exclude={"role"}))
            assert args.model_dump() == sub.model_dump(exclude={"role"})


def test_a_subtask_without_a_team_size_dumps_as_before_it_existed_and_with_one_reads_back(world, registry):
    report = validate_ir(sandbags_ir(), world, registry)
    assert report.valid, report.message
    before = {"id", "role", "origin", "destination", "waypoints", "payload_kg", "deadline_sec", "required_sensors",
              "after", "split", "uavs"}  # fmt: skip
    # no `uav_count: null`: a team IR stored before it existed dumps, and digests, the same
    assert [set(sub) for sub in report.ir.model_dump(mode="json")["team"]["subtasks"]] == [before] * 3
    assert "uav_count" not in report.ir.model_dump_json()
    shared = subtask(id="bags", payload_kg=8.0, split=True, uav_count=2)
    counted = validate_ir(changed("team.subtasks", [shared]), world, registry)
    assert counted.valid, counted.message
    dumped = counted.ir.model_dump(mode="json")
    assert dumped["team"]["subtasks"][0]["uav_count"] == 2
    assert LowAltitudeIR.model_validate(dumped) == counted.ir


# --- teams that validate --------------------------------------------------------------------------------------


def test_split_load_in_three_shares_validates(world, registry):
    report = validate_ir(sandbags_ir(), world, registry)
    assert report.valid, report.message
    assert sum(s.payload_kg for s in report.ir.team.subtasks) == report.ir.constraints.payload_kg


def test_one_split_subtask_flown_by_uavs_that_lift_it_together_validates(world, registry):
    shared = subtask(id="bags", payload_kg=8.0, split=True, uavs=["uav_03", "uav_09"])  # 3 + 5 kg
    assert validate_ir(changed("team.subtasks", [shared]), world, registry).valid


def test_shares_written_to_two_decimals_cover_the_whole_mass(world, registry):
    shares = [subtask(id=f"bags_{k}", payload_kg=kg) for k, kg in enumerate((2.67, 2.67, 2.66))]
    report = validate_ir(changed("team.subtasks", shares), world, registry)
    assert report.valid, report.message


def test_one_uav_named_for_both_legs_of_a_relay_is_refused_as_the_team_tool_would(world, registry):
    """A UAV serves one sub-task of a team (tools/team.py never books one twice, in order or not): a relay is two
    UAVs meeting at a pad, so naming uav_03 for both legs is sent back before any tool runs."""
    ir = changed("constraints.payload_kg", 2.0)
    ir["team"]["subtasks"] = [
        {"id": "leg_1", "origin": "hospital_A", "destination": "charging_pad_1", "payload_kg": 2.0,
         "uavs": ["uav_03"]},
        {"id": "leg_2", "role": "relay_leg", "origin": "charging_pad_1", "destination": "accident_site_3",
         "payload_kg": 2.0, "after": ["leg_1"], "uavs": ["uav_03"]},
    ]  # fmt: skip
    report = validate_ir(ir, world, registry)
    assert (report.error_type, report.field, report.value) == ("uav_double_booked", "team.subtasks.1.uavs.0", "uav_03")


def test_a_relay_must_still_reach_the_stated_destination(world, registry):
    """The pad is where the first leg lands; the request's destination lies beyond it and a sub-task must serve it."""
    ir = changed("constraints.payload_kg", 2.0)
    ir = changed("entities.handoff_points", ["charging_pad_1"], ir)
    ir["team"]["subtasks"] = [
        {"id": "leg_1", "origin": "hospital_A", "destination": "charging_pad_1", "payload_kg": 2.0},
        {"id": "leg_2", "role": "relay_leg", "origin": "charging_pad_1", "destination": "charging_pad_1",
         "payload_kg": 2.0, "after": ["leg_1"]},
    ]  # fmt: skip
    report = validate_ir(ir, world, registry)
    assert (report.error_type, report.value) == ("team_coverage_gap", "accident_site_3")


# --- teams that fail, each with its finding -------------------------------------------------------------------


def _aeds_to_two_sites() -> dict[str, Any]:
    """An AED to the accident and one to the metro station, both within the mission's 8 minutes."""
    ir = changed("entities.waypoints", ["metro_station_4"])
    ir = changed("constraints", {"deadline_sec": 480, "payload_kg": 2.0}, ir)
    ir["team"]["subtasks"] = [
        {"id": "aed_accident", "origin": "hospital_A", "destination": "accident_site_3", "payload_kg": 1.0},
        {"id": "aed_metro", "origin": "hospital_A", "destination": "metro_station_4", "payload_kg": 1.0},
    ]
    return ir


FAILURES: list[tuple[str, str, dict[str, Any], str, Any]] = [
    # (stage, error_type, IR, field, value)
    (
        "constraint_grounding",
        "team_coverage_gap",
        changed("team.subtasks.1.destination", "accident_site_3", _aeds_to_two_sites()),
        "team.subtasks",
        "metro_station_4",
    ),
    ("constraint_grounding", "team_payload_mismatch", changed("team.subtasks.2.payload_kg", 1.0), "team.subtasks", 7.0),
    (
        "constraint_grounding",
        "uav_double_booked",
        changed("team.subtasks.1.uavs", ["uav_09"]),
        "team.subtasks.1.uavs.0",
        "uav_09",
    ),
    (
        "constraint_grounding",
        "payload_above_capacity",
        changed("team.subtasks", [subtask(id="a", payload_kg=5.0, uavs=["uav_03"]), subtask(id="b", payload_kg=3.0)]),
        "team.subtasks.0.uavs.0",
        "uav_03",
    ),
    (
        "constraint_grounding",
        "payload_above_capacity",
        changed("team.subtasks", [subtask(id="bags", payload_kg=8.0, split=True, uavs=["uav_03", "uav_07"])]),
        "team.subtasks.0.uavs",
        ["uav_03", "uav_07"],
    ),
    (
        "constraint_grounding",
        "deadline_beyond_mission",
        changed("team.subtasks.0.deadline_sec", 1200),
        "team.subtasks.0.deadline_sec",
        1200,
    ),
    (
        "constraint_grounding",
        "deadline_not_positive",
        changed("team.subtasks.2.deadline_sec", 0),
        "team.subtasks.2.deadline_sec",
        0,
    ),
    (
        "entity_grounding",
        "unknown_entity",
        changed("team.subtasks.1.destination", "flood_site_3"),
        "team.subtasks.1.destination",
        "flood_site_3",
    ),
    (
        "entity_grounding",
        "unknown_entity",
        changed("team.subtasks.0.waypoints", ["metro_station_9"]),
        "team.subtasks.0.waypoints.0",
        "metro_station_9",
    ),
    ("entity_grounding", "unknown_uav", changed("team.subtasks.2.uavs", ["uav_3"]), "team.subtasks.2.uavs.0", "uav_3"),
    (
        "entity_grounding",
        "uav_unavailable",
        changed("team.subtasks.2.uavs", ["uav_05"]),
        "team.subtasks.2.uavs.0",
        "uav_05",
    ),
    (
        "entity_grounding",
        "unknown_sensor",
        changed("team.subtasks.0.required_sensors", ["camra"]),
        "team.subtasks.0.required_sensors.0",
        "camra",
    ),
    (
        "schema",
        "cycle",
        changed("team.subtasks.2.after", ["bags_a"], changed("team.subtasks.0.after", ["bags_c"])),
        "team.subtasks.0.after",
        ["bags_a", "bags_c", "bags_a"],
    ),
    ("schema", "dependency_missing", changed("team.subtasks.1.after", ["bags_z"]), "team.subtasks.1.after.0", "bags_z"),
    ("schema", "invalid_value", changed("team.subtasks.2.id", "bags_a"), "team.subtasks.2.id", "bags_a"),
    (
        "schema",
        "invalid_value",
        changed("team.subtasks.0.uavs", ["uav_03", "uav_09"]),
        "team.subtasks.0.uavs",
        ["uav_03", "uav_09"],
    ),
    (
        "schema",
        "invalid_value",
        changed("team.subtasks", [subtask(id="bags", payload_kg=8.0)]),
        "team.subtasks",
        ["bags"],
    ),
    ("schema", "invalid_value", changed("team.subtasks.1.role", "relay_leg"), "team.subtasks.1.after", []),
    (
        "schema",
        "invalid_value",
        changed("team.subtasks.1", {**subtask(id="bags_b", payload_kg=3.0), "role": "relay_leg", "after": ["bags_a"]}),
        "team.subtasks.1.origin",
        "depot_1",  # bags_a ends at the site, not at depot_1: the load is not there to carry on
    ),
    (
        "constraint_grounding",
        "uav_count_not_split",
        changed("team.subtasks.2.uav_count", 2),
        "team.subtasks.2.uav_count",
        2,
    ),
    (
        "constraint_grounding",
        "uav_count_mismatch",
        changed(
            "team.subtasks", [subtask(id="bags", payload_kg=8.0, split=True, uavs=["uav_03", "uav_09"], uav_count=3)]
        ),
        "team.subtasks.0.uav_count",
        3,
    ),
    ("schema", "out_of_range", changed("team.subtasks.2.uav_count", 0), "team.subtasks.2.uav_count", 0),
    ("schema", "wrong_enum", changed("team.subtasks.0.role", "carry"), "team.subtasks.0.role", "carry"),
    ("schema", "unknown_field", changed("team.subtasks.0.uav_id", "uav_03"), "team.subtasks.0.uav_id", "uav_03"),
]


@pytest.mark.parametrize(
    ("stage", "error_type", "ir", "field", "value"), FAILURES, ids=[f"{c[1]}-{c[3]}" for c in FAILURES]
)
def test_each_team_mistake_is_found_where_it_is(world, registry, stage, error_type, ir, field, value):
    report = validate_ir(ir, world, registry)
    assert not report.valid
    assert (report.stage, report.error_type, report.field, report.value) == (stage, error_type, field, value), (
        report.message
    )
    assert report.message


def test_a_team_mistake_inside_the_answer_envelope_keeps_its_ir_path(world, registry):
    cyclic = changed("team.subtasks.2.after", ["bags_a"], changed("team.subtasks.0.after", ["bags_c"]))
    report = validate_ir({"low_altitude_ir": cyclic}, world, registry)
    assert (report.stage, report.error_type, report.field) == ("schema", "cycle", "team.subtasks.0.after")


UAV_WITHOUT_CAMERA = "uav_07"  # in a copy of downtown whose uav_07 has lost its camera


def test_a_uav_without_the_required_camera_is_refused_and_camera_uavs_offered(world, registry):
    no_camera = world.updated(
        fleet=[u.model_copy(update={"sensors": []}) if u.id == UAV_WITHOUT_CAMERA else u for u in world.fleet]
    )
    ir = changed(
        "team.subtasks.1",
        {**subtask(id="film", role="film", required_sensors=["camera"]), "uavs": [UAV_WITHOUT_CAMERA]},
    )
    ir = changed("team.subtasks.2.payload_kg", 5.0, ir)
    report = validate_ir(ir, no_camera, registry)
    assert (report.error_type, report.field, report.value) == (
        "uav_lacks_sensor",
        "team.subtasks.1.uavs.0",
        UAV_WITHOUT_CAMERA,
    )
    assert report.allowed == ["uav_03", "uav_09"]  # idle, with a camera


def test_a_double_booked_uav_is_offered_the_uavs_free_at_that_time(world, registry):
    report = validate_ir(changed("team.subtasks.1.uavs", ["uav_09"]), world, registry)
    assert report.allowed == ["uav_03", "uav_07"]  # uav_09 flies bags_a meanwhile; both lift 3 kg


def test_an_unknown_id_inside_a_subtask_gets_the_nearest_ids(world, registry):
    assert (
        "accident_site_3"
        in validate_ir(changed("team.subtasks.1.destination", "acident_site_3"), world, registry).allowed
    )
    assert validate_ir(changed("team.subtasks.0.required_sensors", ["camra"]), world, registry).allowed[0] == "camera"


def test_a_dangling_after_gets_the_nearest_subtask_ids(world, registry):
    report = validate_ir(changed("team.subtasks.2.after", ["bags_A"]), world, registry)
    assert (report.error_type, report.allowed[0]) == ("dependency_missing", "bags_a")
    assert "bags_c" not in report.allowed  # a sub-task cannot come after itself


def test_a_share_no_idle_uav_could_lift_is_left_to_the_team_tool(world, registry):
    """12 kg is more than downtown's idle fleet lifts together (11 kg): the task cannot be done, which the team tool
    reports; no repair of the IR would help, so validation does not send it back."""
    heavy = changed("team.subtasks", [subtask(id="bags", payload_kg=12.0, split=True, uavs=["uav_03", "uav_09"])])
    assert validate_ir(changed("constraints.payload_kg", 12.0, heavy), world, registry).valid


def test_find_cycle_names_one_cycle_or_none():
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) == []
    assert find_cycle({"x": [], "a": ["b"], "b": ["c"], "c": ["b"]}) == ["b", "c", "b"]
    assert find_cycle({"a": ["gone"]}) == []
