"""Fleet missions (issue 42) end to end on the `oracle` model, which writes a hand-built team IR: on the fleet world
the four kinds of team (a split load, parallel sites, roles, a relay) are assigned, routed, verified and simulated
member by member and executed with one certificate that re-checks. The members' separation is checked here by the
test's own geometry, not the verifier's, over the whole mission: a member waiting to depart or landed is parked
traffic. A team the fleet cannot form ends with the binding constraint named; a
one-UAV run keeps its decision and certificate shape."""

from __future__ import annotations

import copy
import json
from itertools import combinations
from typing import Any

import numpy as np
import pytest

from graph.runner import RunOutput, run_task
from ir.model import LowAltitudeIR
from ir.team_execution import execute_team
from models.base import GenerationRequest, GenerationResult, IRGenerator
from nodes import generate_ir as generate_ir_node
from nodes.context import Context
from tests.support.cli import run_json
from tests.support.ir_fixtures import GOOD_IR, SEED_INSTRUCTION
from tests.support.paths import DOWNTOWN, ROOT
from tests.support.team_geometry import closest_approach_in_the_world
from tools.catalog import ACTION_TOOLS, ONE_UAV_TOOLS, team_registry
from tools.certificate import SafetyCertificate, check_certificate, issue_team_certificate
from tools.world import World

FLEET_CITY = ROOT / "examples" / "fleet_city.json"
REQUESTS = {
    r["id"]: r for r in map(json.loads, (ROOT / "examples" / "fleet_requests.jsonl").read_text("utf-8").splitlines())
}
CONTEXT = Context(model="oracle", without=frozenset({"memory"}))
TOOL_PLAN = [
    {"id": "s1", "tool": "query_airspace", "args": {}},
    {"id": "s2", "tool": "assign_uav", "args": {}, "depends_on": ["s1"]},
    {"id": "s3", "tool": "plan_route", "args": {}, "depends_on": ["s2"]},
]


def _team_ir(
    task_id: str,
    origin: str,
    destination: str,
    subtasks: list[dict[str, Any]],
    *,
    intent: str = "delivery",
    deadline_sec: float | None = None,
    payload_kg: float = 0.0,
    waypoints: tuple[str, ...] = (),
    fallback_policy: str = "human_confirm",
) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "intent": intent,
        "priority": "high",
        "entities": {"origin": origin, "destination": destination, "waypoints": list(waypoints)},
        "constraints": {
            "deadline_sec": deadline_sec,
            "altitude_min_m": 30,
            "altitude_max_m": 120,
            "payload_kg": payload_kg,
        },
        "tool_plan": copy.deepcopy(TOOL_PLAN),
        "verification_specs": {"ltl": ["F at_goal"], "program_rules": ["R1", "R2", "R3", "R4", "R5", "R6"]},
        "fallback_policy": fallback_policy,
        "team": {"subtasks": subtasks, "objective": "min_makespan"},
    }


AED = ["defibrillator_bay"]
TEAMS = {
    "split-1": _team_ir(
        "split-1",
        "warehouse_1",
        "flood_site_1",
        [{"id": "sandbags", "origin": "warehouse_1", "destination": "flood_site_1", "payload_kg": 8.0, "split": True}],
        payload_kg=8.0,
    ),
    "parallel-1": _team_ir(
        "parallel-1",
        "hospital_1",
        "accident_site_1",
        [
            {"id": "aed_crash", "origin": "hospital_1", "destination": "accident_site_1", "required_sensors": AED},
            {"id": "aed_metro", "origin": "hospital_1", "destination": "metro_station_1", "required_sensors": AED},
        ],
        intent="emergency",
        deadline_sec=120.0,
        waypoints=("metro_station_1",),
    ),
    "roles-1": _team_ir(
        "roles-1",
        "warehouse_2",
        "construction_site_1",
        [
            {
                "id": "film",
                "role": "film",
                "origin": "charging_pad_1",
                "destination": "construction_site_1",
                "required_sensors": ["camera"],
            },
            {"id": "tools", "origin": "warehouse_2", "destination": "construction_site_1", "payload_kg": 3.0},
        ],
        payload_kg=3.0,
    ),
    "relay-1": _team_ir(
        "relay-1",
        "depot_1",
        "rescue_camp_1",
        [
            {"id": "leg_1", "origin": "depot_1", "destination": "vertiport_1", "payload_kg": 3.0},
            {
                "id": "leg_2",
                "role": "relay_leg",
                "origin": "vertiport_1",
                "destination": "rescue_camp_1",
                "payload_kg": 3.0,
                "after": ["leg_1"],
            },
        ],
        payload_kg=3.0,
        waypoints=("vertiport_1",),
    ),
}


@pytest.fixture(scope="module")
def fleet_city() -> World:
    return World.model_validate_json(FLEET_CITY.read_text("utf-8"))


@pytest.fixture(scope="module")
def team_runs(fleet_city: World, tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunOutput]:
    db = tmp_path_factory.mktemp("team") / "runs.sqlite"
    return {
        request_id: run_task(fleet_city, REQUESTS[request_id]["instruction"], context=CONTEXT, db=db, gold_ir=ir)
        for request_id, ir in TEAMS.items()
    }


@pytest.mark.parametrize("request_id", list(TEAMS))
def test_a_team_executes_with_members_apart_verified_simulated_and_certified(request_id, team_runs, fleet_city):
    out = team_runs[request_id]
    expect = REQUESTS[request_id]["expect"]
    assert out.status == "execute", out.decision.get("reason")
    team = out.decision["team"]
    assert len(team) >= expect["min_uavs"] and len({m["uav_id"] for m in team}) == len(team)
    # a team decision flies its members only: no single route beside them
    assert out.decision["uav_id"] is None and out.decision["waypoints"] == []
    assert out.decision["eta_sec"] == max(m["eta_sec"] for m in team)
    reached = {
        site
        for m in team
        for site in expect["sites"]
        if np.linalg.norm(np.asarray(m["waypoints"][-1][:2]) - fleet_city.entity_index[site].position) <= 15
    }
    assert reached == set(expect["sites"])
    carried = sum(m["share_kg"] for m in team if m["role"] != "relay_leg")
    assert carried == pytest.approx(expect.get("payload_kg", 0.0), abs=1e-3)
    separation = out.ir["constraints"]["min_separation_m"]
    for first, second in combinations(team, 2):
        gap = closest_approach_in_the_world(first["waypoints"], second["waypoints"], fleet_city)
        assert gap >= separation, f"{first['uav_id']} and {second['uav_id']} come {gap:.1f} m close"
        landed = np.linalg.norm(np.subtract(first["waypoints"][-1][:2], second["waypoints"][-1][:2]))
        assert landed >= separation, f"{first['uav_id']} and {second['uav_id']} land {landed:.1f} m apart"

    certificate = SafetyCertificate.model_validate(out.decision["certificate"])
    members = certificate.members or []
    assert [(m.subtask_id, m.certificate.trajectory.uav_id) for m in members] == [
        (m["subtask_id"], m["uav_id"]) for m in team
    ]
    for member in members:  # every member verified and simulated in every stress scenario
        assert member.certificate.verdicts and all(v["status"] != "fail" for v in member.certificate.verdicts.values())
        assert len(member.certificate.simulations) == CONTEXT.stress_scenarios
        assert all(s.success for s in member.certificate.simulations)
    assert check_certificate(certificate, fleet_city, out.ir).valid


def test_a_relay_leg_departs_after_the_first_leg_has_landed(team_runs):
    team = {m["subtask_id"]: m for m in team_runs["relay-1"].decision["team"]}
    assert team["leg_2"]["waypoints"][0][3] >= team["leg_1"]["waypoints"][-1][3]


def test_a_subtasks_uavs_pin_its_member_and_excluded_uavs_never_fly(fleet_city):
    pinned = copy.deepcopy(TEAMS["roles-1"])
    pinned["team"]["subtasks"][0]["uavs"], pinned["team"]["subtasks"][1]["uavs"] = ["uav_07"], ["uav_09"]
    run = execute_team(
        LowAltitudeIR.model_validate(pinned), fleet_city, team_registry(), only_tools=ACTION_TOOLS - ONE_UAV_TOOLS
    )
    assert run.ok and [(m.subtask_id, m.uav_id) for m in run.members] == [("film", "uav_07"), ("tools", "uav_09")]
    split = LowAltitudeIR.model_validate(TEAMS["split-1"])
    run = execute_team(split, fleet_city, team_registry(), excluded=["uav_01"], only_tools=ACTION_TOOLS - ONE_UAV_TOOLS)
    assert run.ok and len(run.members) >= 2 and "uav_01" not in {m.uav_id for m in run.members}


def test_a_moved_member_no_longer_re_checks(team_runs, fleet_city):
    out = team_runs["split-1"]
    certificate = SafetyCertificate.model_validate(out.decision["certificate"])
    moved = certificate.model_copy(deep=True)
    moved.members[1].certificate.trajectory.waypoints[3][0] += 40.0
    check = check_certificate(moved, fleet_city, out.ir)
    assert not check.valid and any(d.startswith("team:") for d in check.differences)


def test_cloudbrain_certify_re_checks_a_stored_team_run(team_runs, capsys):
    out = team_runs["roles-1"]
    code, report = run_json(capsys, "certify", "--db", out.db, "--thread", out.thread_id, "--world", str(FLEET_CITY))
    assert code == 0 and report["valid"], report


def test_a_team_the_fleet_cannot_form_ends_with_the_binding_constraint():
    request = REQUESTS["downtown-split"]
    ir = _team_ir(
        "downtown-split",
        "fire_station_1",
        "accident_site_3",
        [
            {
                "id": "sandbags",
                "origin": "fire_station_1",
                "destination": "accident_site_3",
                "payload_kg": 12.0,
                "split": True,
            }
        ],
        payload_kg=12.0,
        fallback_policy="safe_refusal",
    )
    world = World.model_validate_json(DOWNTOWN.read_text("utf-8"))
    out = run_task(world, request["instruction"], context=CONTEXT, db=None, gold_ir=ir)
    assert out.status in ("safe_refusal", "human_confirm") and out.status == request["expect"]["decision"]
    assert "binding constraint: payload" in out.decision["reason"], out.decision["reason"]
    assert not out.decision.get("team") and not out.decision.get("waypoints")


def test_a_one_uav_request_on_a_team_world_is_still_the_operators_when_the_ir_has_no_team(fleet_city):
    one_uav = copy.deepcopy(TEAMS["split-1"])
    del one_uav["team"]
    out = run_task(fleet_city, REQUESTS["split-1"]["instruction"], context=CONTEXT, db=None, gold_ir=one_uav)
    assert out.status == "human_confirm" and out.failure["error_type"] == "team_mission_not_planned"
    # one repair round asked the model for the team (the oracle wrote the one-UAV IR again), then the operator
    assert out.rounds == 1, out.decision["reason"]
    assert not out.failure["recoverable"]


class _TeamOnRequestWriter(IRGenerator):
    """A model that answers a team request with one UAV, and with the team once the repair feedback asks for it."""

    model = "team-on-request"

    def __init__(self, one_uav: dict[str, Any], team: dict[str, Any]):
        self.answers = {False: one_uav, True: team}
        self.requests: list[GenerationRequest] = []

    def generate(self, request: GenerationRequest) -> GenerationResult:
        self.requests.append(request)
        asked = request.feedback is not None and "team" in request.feedback.counterexample.get("suggested_repair", "")
        answer = {"low_altitude_ir": self.answers[asked]}
        return GenerationResult(raw_text=json.dumps(answer), answer=answer, model=self.model, prompt_version="test")


def test_a_model_asked_for_the_team_in_a_repair_round_gets_it_planned(monkeypatch, fleet_city):
    one_uav = copy.deepcopy(TEAMS["split-1"])
    del one_uav["team"]
    writer = _TeamOnRequestWriter(one_uav, TEAMS["split-1"])
    monkeypatch.setattr(generate_ir_node, "init_ir_writer", lambda *args, **kwargs: writer)
    out = run_task(fleet_city, REQUESTS["split-1"]["instruction"], context=CONTEXT, db=None)
    assert [r.feedback is None for r in writer.requests] == [True, False]
    asked = writer.requests[1].feedback.counterexample
    assert asked["failure_type"] == "team_mission_not_planned" and "at least 2 UAVs" in asked["suggested_repair"], asked
    assert out.status == "execute" and out.rounds == 1, out.decision.get("reason")
    assert len({m["uav_id"] for m in out.decision["team"]}) == 2


class _ScriptedWriter(IRGenerator):
    """A model that writes the given IRs in turn, one a round, and the last one again after them."""

    model = "scripted"

    def __init__(self, *irs: dict[str, Any]):
        self.irs = list(irs)
        self.requests: list[GenerationRequest] = []

    def generate(self, request: GenerationRequest) -> GenerationResult:
        self.requests.append(request)
        answer = {"low_altitude_ir": self.irs[min(len(self.requests), len(self.irs)) - 1]}
        return GenerationResult(raw_text=json.dumps(answer), answer=answer, model=self.model, prompt_version="test")


def test_a_malformed_team_is_repaired_for_its_own_error_not_sent_to_the_operator(monkeypatch, fleet_city):
    malformed = copy.deepcopy(TEAMS["parallel-1"])
    malformed["team"]["subtasks"][1]["after"] = ["t9"]  # no such sub-task: the schema stage fails
    writer = _ScriptedWriter(malformed, TEAMS["parallel-1"])
    monkeypatch.setattr(generate_ir_node, "init_ir_writer", lambda *args, **kwargs: writer)
    out = run_task(fleet_city, REQUESTS["parallel-1"]["instruction"], context=CONTEXT, db=None)
    feedback = writer.requests[1].feedback.counterexample
    assert feedback["failure_type"] != "team_mission_not_planned" and "t9" in json.dumps(feedback), feedback
    assert out.status == "execute" and out.rounds == 1, out.decision.get("reason")


def test_a_team_request_never_answered_with_a_valid_team_ends_with_the_operator_naming_the_team(
    monkeypatch, fleet_city
):
    malformed = copy.deepcopy(TEAMS["parallel-1"])
    malformed["team"]["subtasks"][1]["after"] = ["t9"]
    monkeypatch.setattr(generate_ir_node, "init_ir_writer", lambda *args, **kwargs: _ScriptedWriter(malformed))
    out = run_task(fleet_city, REQUESTS["parallel-1"]["instruction"], context=CONTEXT, db=None)
    assert out.status == "human_confirm" and out.rounds == CONTEXT.max_repairs, out.decision["reason"]
    assert "the request needs a team of at least 2 UAVs" in out.decision["reason"]


def test_a_one_member_team_for_two_sites_at_once_is_not_the_team_asked_for(fleet_city):
    """A lone split sub-task through both sites ("2+, or 1 split"): one UAV serves 'at the same time' sites in turn."""
    text = (
        "The construction site on Harbour Street and the old bridge pier in the river each need a first-aid kit at "
        "the same time, both within 3 minutes. Send them from the hardware warehouse on the south side."
    )
    one = _team_ir(
        "one-member",
        "warehouse_2",
        "inspection_site_3",
        [
            {
                "id": "both",
                "origin": "warehouse_2",
                "destination": "construction_site_1",
                "waypoints": ["inspection_site_3"],
                "split": True,
            }
        ],
        waypoints=("construction_site_1",),
    )
    out = run_task(fleet_city, text, context=CONTEXT, db=None, gold_ir=one)
    assert out.status == "human_confirm", out.decision["reason"]
    assert out.failure["error_type"] == "team_too_small" and "at least 2 UAVs" in out.decision["reason"]


def test_a_one_uav_decision_and_certificate_keep_their_shape():
    world = World.model_validate_json(DOWNTOWN.read_text("utf-8"))
    out = run_task(world, SEED_INSTRUCTION, context=CONTEXT, db=None, gold_ir=GOOD_IR)
    assert out.status == "execute", out.decision.get("reason")
    assert "team" not in out.decision and out.decision["uav_id"] and out.decision["waypoints"]
    certificate = out.decision["certificate"]
    assert "members" not in certificate
    assert set(certificate) == set(SafetyCertificate.model_fields) - {"members"}
    assert check_certificate(SafetyCertificate.model_validate(certificate), world, out.ir).valid


def test_a_dropped_member_with_recomputed_digests_no_longer_re_checks(team_runs, fleet_city):
    out = team_runs["split-1"]
    certificate = SafetyCertificate.model_validate(out.decision["certificate"])
    kept = certificate.members[:-1]
    forged = issue_team_certificate(fleet_city, kept, out.ir)  # every digest recomputed over the members kept
    check = check_certificate(forged, fleet_city, out.ir)
    assert not check.valid and any("payload" in d for d in check.differences), check.differences
