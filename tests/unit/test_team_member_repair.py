"""A repair round changes one member of a fleet mission (issue 42): the member a gate failed is re-timed (another
departure of its UAV) or its sub-task reassigned to another idle UAV, and every other member keeps its UAV and its
route byte for byte, planned by no tool again (ir/team_execution.repair_member). The repair node plans which
(nodes/repair.py), the rules model leaves the IR's routes alone for it (models/rules_parser.py), and neither
working ends the run with the operator, naming the member."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ir.model import LowAltitudeIR
from ir.team_execution import (
    STAGGER_STEP_SEC,
    TEAM_SEPARATION_FACTOR,
    MemberRepair,
    TeamExecution,
    TeamMember,
    closest_approach,
    execute_team,
    lateness_at,
)
from models.base import GenerationRequest, RepairFeedback
from models.rules_parser import RuleBasedGenerator
from nodes.context import Context
from nodes.repair import repair
from nodes.team import member_named, member_repair
from tests.integration.test_team_missions import TEAMS
from tests.support.paths import ROOT
from tests.support.runtime import fake_runtime
from tools.catalog import ACTION_TOOLS, ONE_UAV_TOOLS, TEAM_TOOL, team_registry
from tools.world import TrafficTrack, World

TOOLS = ACTION_TOOLS - ONE_UAV_TOOLS
RUNTIME = fake_runtime(Context(model="rules", without=frozenset({"memory"})))


@pytest.fixture(scope="module")
def fleet_city() -> World:
    return World.model_validate_json((ROOT / "examples" / "fleet_city.json").read_text("utf-8"))


def _ir(name: str) -> LowAltitudeIR:
    return LowAltitudeIR.model_validate(copy.deepcopy(TEAMS[name]))


@pytest.fixture(scope="module")
def planned(fleet_city: World) -> dict[str, TeamExecution]:
    """The first round of each team: what a repair round keeps."""
    runs = {name: execute_team(_ir(name), fleet_city, team_registry(), only_tools=TOOLS) for name in TEAMS}
    assert all(run.ok for run in runs.values())
    return runs


def _repair(run: TeamExecution, ir: LowAltitudeIR, uav_id: str, action: str, **fields: Any) -> MemberRepair:
    failed = next(m for m in run.members if m.uav_id == uav_id)
    return MemberRepair(
        subtask_id=failed.subtask_id,
        uav_id=uav_id,
        action=action,
        members=run.members,
        previous_ir=ir.model_dump(mode="json"),
        **fields,
    )


def _routed(run: TeamExecution) -> list[str]:
    """The steps the round ran after the IR's own airspace / city steps: the members it planned, the assignment."""
    return [r.step_id for r in run.results if r.step_id.startswith("team")]


def _member(run: TeamExecution, subtask_id: str, uav_id: str | None = None) -> TeamMember:
    return next(m for m in run.members if m.subtask_id == subtask_id and uav_id in (None, m.uav_id))


def test_a_retimed_member_alone_changes_and_keeps_clear_of_the_others(planned, fleet_city):
    ir = _ir("split-1")
    first = planned["split-1"]
    kept, failed = first.members  # both fly the sandbags leg; the second departs later to keep clear
    run = execute_team(
        ir, fleet_city, team_registry(), only_tools=TOOLS, repair=_repair(first, ir, failed.uav_id, "retime")
    )
    assert run.ok, run.failed_result
    assert run.members[0] == kept  # the kept member is the first round's, every waypoint the same
    retimed = run.members[1]
    assert (retimed.subtask_id, retimed.uav_id, retimed.share_kg) == (failed.subtask_id, failed.uav_id, failed.share_kg)
    assert retimed.depart_sec != failed.depart_sec and retimed.waypoints != failed.waypoints
    assert (retimed.depart_sec - failed.depart_sec) % STAGGER_STEP_SEC == 0  # the stagger rule's grid
    need = TEAM_SEPARATION_FACTOR * ir.constraints.min_separation_m
    assert closest_approach(retimed.waypoints, [kept.flight()], fleet_city, late=lateness_at("medium"))[0] >= need
    # no assignment and no route for the kept member: only the re-timed one was planned
    assert set(_routed(run)) == {f"team.{failed.subtask_id}.{failed.uav_id}"}
    assert run.repair and "re-timed" in run.repair and kept.label in run.repair


def test_a_reassigned_member_flies_another_idle_uav_and_the_others_are_kept(planned, fleet_city):
    ir = _ir("split-1")
    first = planned["split-1"]
    kept, failed = first.members
    run = execute_team(
        ir, fleet_city, team_registry(), only_tools=TOOLS, repair=_repair(first, ir, failed.uav_id, "reassign")
    )
    assert run.ok, run.failed_result
    assert run.members[0] == kept
    new = run.members[1]
    assert new.uav_id not in (kept.uav_id, failed.uav_id)
    assert (new.subtask_id, new.share_kg) == (failed.subtask_id, failed.share_kg)
    [assigned] = [r for r in run.results if r.tool == TEAM_TOOL]
    assert {kept.uav_id, failed.uav_id} <= set(assigned.args["excluded"]) and len(assigned.args["subtasks"]) == 1
    assert set(_routed(run)) == {f"team.{failed.subtask_id}.reassign", f"team.{failed.subtask_id}.{new.uav_id}"}
    assert f"reassigned to {new.uav_id}" in run.repair


def test_a_relay_leg_after_the_changed_one_is_retimed_and_one_before_it_is_kept(planned, fleet_city):
    ir = _ir("relay-1")
    first = planned["relay-1"]
    leg_1, leg_2 = _member(first, "leg_1"), _member(first, "leg_2")
    run = execute_team(ir, fleet_city, team_registry(), only_tools=TOOLS, repair=_repair(first, ir, "uav_03", "retime"))
    assert run.ok, run.failed_result
    new_1, new_2 = _member(run, "leg_1"), _member(run, "leg_2")
    assert new_1.depart_sec > leg_1.depart_sec
    # the second leg waits for the first to land again, on its own UAV: it left as early as the lateness the stagger
    # rule allows the first leg, which now lands later, so it leaves later too
    assert new_2.uav_id == leg_2.uav_id and new_2.waypoints[0][3] >= new_1.waypoints[-1][3]
    assert new_2.depart_sec > leg_2.depart_sec and new_2.waypoints != leg_2.waypoints
    run = execute_team(
        ir, fleet_city, team_registry(), only_tools=TOOLS, repair=_repair(first, ir, leg_2.uav_id, "retime")
    )
    assert run.ok and _member(run, "leg_1") == leg_1 and _member(run, "leg_2").depart_sec != leg_2.depart_sec


def test_a_retime_against_named_traffic_comes_no_closer_to_it(planned, fleet_city):
    ir = _ir("split-1")
    first = planned["split-1"]
    kept, failed = first.members
    # a crossing track through the member's route when it is halfway (the first member has flown past by then)
    middle = failed.waypoints[len(failed.waypoints) // 2]
    track = TrafficTrack(
        id="crossing",
        waypoints=[
            (middle[0] - 80, middle[1] + 80, middle[2], middle[3] - 8),
            (middle[0] + 80, middle[1] - 80, middle[2], middle[3] + 8),
        ],
    )
    world = fleet_city.updated(traffic=[*fleet_city.traffic, track])
    assert closest_approach(kept.waypoints, [track], world)[0] > closest_approach(failed.waypoints, [track], world)[0]
    before = closest_approach(failed.waypoints, [track], world, late=lateness_at("medium"))[0]
    fix = _repair(first, ir, failed.uav_id, "retime", cause="separation", tracks=["crossing"])
    run = execute_team(ir, world, team_registry(), only_tools=TOOLS, repair=fix)
    assert run.ok and run.members[0] == kept
    need = TEAM_SEPARATION_FACTOR * ir.constraints.min_separation_m
    after = closest_approach(run.members[1].waypoints, [track], world, late=lateness_at("medium"))[0]
    assert after > before and after >= need


def test_neither_retime_nor_reassign_ends_the_round_naming_the_member(planned, fleet_city):
    """The two AED bays of the fleet both fly: a member that cannot leave at another time has no other UAV."""
    ir = _ir("parallel-1")
    first = planned["parallel-1"]
    failed = first.members[0]
    deadline = _repair(first, ir, failed.uav_id, "retime", cause="deadline")  # it leaves at 0: nothing earlier
    run = execute_team(ir, fleet_city, team_registry(), only_tools=TOOLS, repair=deadline)
    assert not run.ok and run.subtask_id == failed.subtask_id
    error = run.failed_result.error
    assert not error.recoverable and error.message.startswith(f"{failed.label}: no departure")
    assert "binding constraint: sensors" in error.message
    assert run.members == first.members[1:]


@pytest.mark.parametrize(
    "change",
    [
        lambda ir: ir["constraints"].update(altitude_min_m=60),  # the routes' band changed: every route changes
        lambda ir: ir["team"]["subtasks"][0].update(uavs=["uav_02"]),  # the kept member's sub-task pinned elsewhere
    ],
    ids=["band", "pin"],
)
def test_a_repair_round_whose_ir_changes_the_routes_plans_the_whole_team(planned, fleet_city, change):
    first = planned["roles-1"]
    ir = _ir("roles-1")
    fix = _repair(first, ir, first.members[1].uav_id, "retime")
    edited = copy.deepcopy(TEAMS["roles-1"])
    change(edited)
    run = execute_team(LowAltitudeIR.model_validate(edited), fleet_city, team_registry(), only_tools=TOOLS, repair=fix)
    assert run.repair is None and "team" in _routed(run)  # assign_team ran: the team planned from scratch


# --- the repair node and the rules model ------------------------------------------------------------------------
def _state(ir: dict[str, Any], members: list[TeamMember], failure: dict[str, Any], world: World) -> dict[str, Any]:
    return {
        "round": 0,
        "attempt_open": True,
        "instruction": "",
        "ir": ir,
        "failure": failure,
        "team_candidates": [m.model_dump(mode="json") for m in members],
        "world": world.model_dump(mode="json"),
        "attempts": [],
    }


def _failure(state: dict[str, Any], member: TeamMember, stage: str, **counterexample: Any) -> dict[str, Any]:
    failure = {"stage": stage, "error_type": "spec_violation", "recoverable": True, "message": "failed"}
    failure["counterexample"] = {"failure_stage": stage, "failure_type": "x", **counterexample}
    return member_named(state, failure, member)


def test_the_repair_node_plans_a_retime_then_a_reassign_of_the_member_a_gate_failed(planned, fleet_city):
    first = planned["split-1"]
    kept, failed = first.members
    ir = TEAMS["split-1"]
    state = _state(ir, first.members, {}, fleet_city)
    near_miss = _failure(state, failed, "simulate", violated_rule="R2", offending_entity=kept.track().id)
    update = repair({**state, "failure": near_miss}, RUNTIME)
    planned_repair = update["feedback"]["counterexample"]["team_repair"]
    assert planned_repair["action"] == "retime" and planned_repair["cause"] == "separation"
    assert (planned_repair["subtask_id"], planned_repair["uav_id"]) == (failed.subtask_id, failed.uav_id)
    assert planned_repair["tracks"] == [kept.track().id]
    # the round's record says which member and what
    [closed] = update["attempts"]
    assert closed["failure"]["counterexample"]["suggested_repair"].startswith(f"{failed.label}: re-time it")
    # what the next execution reads back: the failed round's members and IR
    fix = member_repair({**state, "feedback": update["feedback"]})
    assert fix is not None and fix.members == first.members and fix.previous_ir == ir
    # the same member failing again after its re-time: reassigned
    again = {**state, "round": 1, "failure": near_miss, "attempts": [{"round": 0, "ir": ir, "failure": near_miss}]}
    assert repair(again, RUNTIME)["feedback"]["counterexample"]["team_repair"]["action"] == "reassign"
    # a battery failure is no timing one: reassigned at once
    battery = _failure(state, failed, "verify", violated_rule="R5", offending_entity=failed.uav_id)
    assert repair({**state, "failure": battery}, RUNTIME)["feedback"]["counterexample"]["team_repair"]["action"] == (
        "reassign"
    )
    # a failure that names no member (the team's fidelity) plans no one-member repair
    fidelity = {**battery, "stage": "fidelity"}
    assert "team_repair" not in repair({**state, "failure": fidelity}, RUNTIME)["feedback"]["counterexample"]


def test_the_rules_model_keeps_the_routes_for_a_member_repair(fleet_city):
    ir = TEAMS["split-1"]

    def repaired(action: str) -> dict[str, Any]:
        counterexample = {
            "failure_stage": "simulate",
            "failure_type": "near_miss",
            "violated_rule": "R2",  # alone this raises the floor: every route would change
            "field": "team.subtasks.0",
            "value": "uav_03",
            "team_repair": {"subtask_id": "sandbags", "uav_id": "uav_03", "action": action},
        }
        feedback = RepairFeedback(counterexample=counterexample, previous_ir=ir)
        request = GenerationRequest(instruction="", world=fleet_city, task_id="t", feedback=feedback, round=1)
        return RuleBasedGenerator().generate(request).answer["low_altitude_ir"]

    retimed = repaired("retime")
    assert retimed["constraints"] == LowAltitudeIR.model_validate(ir).model_dump(mode="json")["constraints"]
    reassigned = repaired("reassign")
    assert reassigned["constraints"]["altitude_min_m"] == ir["constraints"]["altitude_min_m"]
    assert reassigned["entities"]["candidate_uavs"] and "uav_03" not in reassigned["entities"]["candidate_uavs"]


def test_a_member_no_single_uav_can_replace_has_the_team_planned_again_without_its_uav(planned, fleet_city):
    """Written 2026-11-28: the failed member's 4 kg share is more than any one UAV left lifts (uav_02 made a 3 kg
    UAV, uav_04 left out by the request), so the one-member reassignment finds none; the team is planned again
    without the failed UAV (uav_01 and uav_02 share the 8 kg) instead of the operator being asked."""
    ir = _ir("split-1")
    first = planned["split-1"]
    kept, failed = first.members
    assert (kept.uav_id, failed.uav_id, failed.share_kg) == ("uav_01", "uav_03", 4.0)
    fleet = [u.model_copy(update={"payload_capacity_kg": 3}) if u.id == "uav_02" else u for u in fleet_city.fleet]
    world = fleet_city.updated(fleet=fleet)
    fix = _repair(first, ir, failed.uav_id, "reassign")
    run = execute_team(ir, world, team_registry(), only_tools=TOOLS, excluded=["uav_04"], repair=fix)
    assert run.ok, run.failed_result
    assert {m.uav_id for m in run.members} == {"uav_01", "uav_02"}
    assert sum(m.share_kg for m in run.members) == pytest.approx(8.0)
    reassign = [r for r in run.results if r.step_id == f"team.{failed.subtask_id}.reassign"]
    assert reassign and not reassign[-1].result.ok  # the one-member change was tried first
    assert run.repair.startswith("repair: member") and "planned again without uav_03" in run.repair
    [whole] = [r for r in run.results if r.step_id == "team"]
    assert "uav_03" in whole.args["excluded"] and any("planned again" in w for w in whole.result.warnings)


def test_a_named_member_that_cannot_be_retimed_is_not_replaced_by_another_uav(planned, fleet_city):
    """Review 2026-11-28: a re-time that finds no departure fell back to reassigning the sub-task even where the
    request names the member's UAV for it; now the round fails naming it, and no team is planned again."""
    first = planned["split-1"]
    kept, failed = first.members
    pinned = _ir("split-1").model_dump(mode="json")
    pinned["team"]["subtasks"][0]["uavs"] = [kept.uav_id, failed.uav_id]
    pinned["team"]["subtasks"][0]["uav_count"] = 2
    ir = LowAltitudeIR.model_validate(pinned)
    first_departure = min(m.depart_sec for m in first.members)
    named = min(first.members, key=lambda m: m.depart_sec)  # leaves first: no earlier departure for a deadline
    assert named.depart_sec == first_departure
    fix = _repair(first, ir, named.uav_id, "retime", cause="deadline")
    run = execute_team(ir, fleet_city, team_registry(), only_tools=TOOLS, repair=fix)
    assert not run.ok and run.failed_result.error.type == "named_uav_cannot_fly"
    assert f"the request names {named.uav_id}" in run.failed_result.error.message
    assert not [r for r in run.results if r.tool == TEAM_TOOL]  # neither a reassignment nor a whole new team
