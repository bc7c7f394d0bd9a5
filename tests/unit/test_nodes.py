"""Node functions called directly with a hand-built state and a Runtime, without compiling the graph."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ir.failure import failure_record
from ir.model import HUMAN_CONFIRM_POLICIES, FallbackPolicy
from nodes.context import Context
from nodes.execute_tools import execute_tools
from nodes.failures import failure_from_tool
from nodes.fallback import fallback
from nodes.repair import repair
from nodes.simulate import simulate
from nodes.validate import validate
from nodes.verify import verify
from tests.support.ir_fixtures import GOOD_IR, HALLUCINATED_IR, NFZ_FORGOTTEN_IR, SEED_INSTRUCTION, ir_with
from tests.support.paths import DOWNTOWN
from tests.support.runtime import fake_runtime
from tools import route
from tools.registry import ToolRegistry
from tools.world import World

# hospital_A -> accident_site_3 in a straight line at 60 m: through nfz_temp_1.
THROUGH_NFZ = {"uav_id": "uav_03", "waypoints": [[100, 100, 60, 0], [650, 420, 60, 60]], "goal": "accident_site_3"}
OVER_SITE = [[630, 400], [670, 400], [670, 440], [630, 440]]  # round accident_site_3 (650, 420)
NFZ_FAILURE = failure_record(
    "verify",
    "spec_violation",
    recoverable=True,
    violated_rule="R1",
    offending_entity="nfz_temp_1",
    suggested_repair="add nfz_temp_1 to entities.avoid_zones",
)


@pytest.fixture(scope="module")
def world_json() -> dict[str, Any]:
    """The state carries the world as plain JSON, as run_task puts it there."""
    return json.loads(DOWNTOWN.read_text(encoding="utf-8"))


@pytest.fixture()
def runtime():
    return fake_runtime(Context(without=frozenset({"memory"})))


# validate


def test_validate_passes_a_good_ir_and_parses_it(world_json, runtime):
    update = validate(
        {"raw_output": json.dumps(GOOD_IR), "world": world_json, "instruction": SEED_INSTRUCTION}, runtime
    )
    assert update["failure"] is None
    assert update["validation"]["valid"] is True
    assert update["ir"]["entities"]["destination"] == "accident_site_3"


def test_validate_on_an_unknown_entity_fails_with_the_validators_allowed_values(world_json, runtime):
    update = validate(
        {"raw_output": json.dumps(HALLUCINATED_IR), "world": world_json, "instruction": SEED_INSTRUCTION}, runtime
    )
    failure = update["failure"]
    assert (failure["stage"], failure["error_type"], failure["recoverable"]) == ("validate", "unknown_entity", True)
    ce = failure["counterexample"]
    assert ce["failure_stage"] == "validate.entity_grounding"
    assert (ce["field"], ce["value"]) == ("entities.destination", "accident_site_9")
    assert "accident_site_3" in ce["allowed"] and "accident_site_9" not in ce["allowed"]
    assert "accident_site_3" in ce["suggested_repair"]
    assert update["validation"]["valid"] is False


def test_validate_on_text_that_is_not_json_fails_at_the_json_stage(world_json, runtime):
    update = validate(
        {"raw_output": "I would fly the drone north.", "world": world_json, "instruction": SEED_INSTRUCTION}, runtime
    )
    assert update["ir"] is None
    assert update["failure"]["stage"] == "validate"
    assert update["failure"]["error_type"] == "invalid_json"
    assert update["failure"]["counterexample"]["failure_stage"] == "validate.json"


# execute_tools and verify


def test_verify_flags_a_candidate_through_nfz_temp_1(world_json, runtime):
    update = verify({"ir": GOOD_IR, "candidate": THROUGH_NFZ, "world": world_json}, runtime)
    failure = update["failure"]
    assert (failure["stage"], failure["error_type"], failure["recoverable"]) == ("verify", "spec_violation", True)
    ce = failure["counterexample"]
    assert ce["violated_rule"] == "R1" and ce["offending_entity"] == "nfz_temp_1"
    assert ce["robustness"] < 0 and ce["time_sec"] > 0
    assert "nfz_temp_1" in ce["suggested_repair"]
    assert update["verdict"]["ok"] is False and update["tool_results"] == [update["verdict"]]


def test_verify_checks_r1_even_when_the_ir_forgot_the_zone(world_json, runtime):
    """The gate's rules are the graph's: R1-R6 always, whatever the IR lists."""
    update = verify({"ir": NFZ_FORGOTTEN_IR, "candidate": THROUGH_NFZ, "world": world_json}, runtime)
    assert update["failure"]["counterexample"]["offending_entity"] == "nfz_temp_1"


def test_the_planned_candidate_of_execute_tools_passes_verify(world_json, runtime):
    executed = execute_tools({"ir": GOOD_IR, "world": world_json}, runtime)
    assert executed["failure"] is None and executed["candidate"]["uav_id"] == "uav_03"
    update = verify({"ir": GOOD_IR, "candidate": executed["candidate"], "world": world_json}, runtime)
    assert update["failure"] is None and update["verdict"]["ok"] is True


# simulate


def test_simulate_requires_every_stress_scenario_and_stops_at_the_first_that_fails(world_json):
    """GOOD_IR's route with a deadline 8 s after its planned arrival: the draws of seeds 0 and 1 (gusts, pop-up
    zones to wait out) arrive in time, seed 2's does not. One or two scenarios would pass it; three refuse it with
    seed 2's counterexample."""
    state: dict[str, Any] = {"ir": GOOD_IR, "world": world_json}
    candidate = execute_tools(state, fake_runtime(Context(without=frozenset({"memory"}))))["candidate"]
    deadline = round(candidate["waypoints"][-1][3] + 8, 1)
    state = {"ir": ir_with(**{"constraints.deadline_sec": deadline}), "world": world_json}
    state["candidate"] = candidate

    two = simulate(state, fake_runtime(Context(stress_scenarios=2)))
    assert two["failure"] is None
    assert [r["tool"] for r in two["tool_results"]] == ["simulate_scenario", "risk_assess", "simulate_scenario"]

    three = simulate(state, fake_runtime(Context(stress_scenarios=3)))
    failure = three["failure"]
    assert (failure["stage"], failure["counterexample"]["failure_type"]) == ("simulate", "deadline_missed")
    flown = three["simulation"]["simulate_scenario"]
    assert [(r["result"]["seed"], r["ok"]) for r in flown] == [(0, True), (1, True), (2, False)]

    later = simulate(state, fake_runtime(Context(sim_seed=5, stress_scenarios=1)))
    assert later["failure"] is None and later["simulation"]["simulate_scenario"][0]["result"]["seed"] == 5


# repair


def test_repair_offers_the_candidates_of_a_world_failure(runtime, world_json):
    state = {"round": 0, "failure": NFZ_FAILURE, "ir": NFZ_FORGOTTEN_IR, "world": world_json, "instruction": "Fly."}
    update = repair(state, runtime)
    assert update["repair_exhausted"] is False
    assert [c["id"] for c in update["feedback"]["counterexample"]["repairs"]] == ["avoid:nfz_temp_1"]


def test_repair_ends_the_loop_at_once_when_no_candidate_is_left(runtime, world_json):
    """The IR already keeps out of nfz_temp_1: another round could only fail the same way."""
    state = {"round": 0, "failure": NFZ_FAILURE, "ir": GOOD_IR, "world": world_json, "instruction": "Fly."}
    update = repair(state, runtime)
    assert update["repair_exhausted"] is True and update["round"] == 1
    assert update["failure"]["message"].endswith("(no repair left that changes the plan's cause)")
    assert "feedback" not in update


def test_repair_without_memory_retrieves_no_cases_and_hands_back_the_counterexample(runtime, world_json):
    state = {
        "round": 0,
        "failure": NFZ_FAILURE,
        "ir": NFZ_FORGOTTEN_IR,
        "retrieved": {"rules": ["R1"]},
        "world": world_json,
    }
    update = repair(state, runtime)
    assert update["round"] == 1 and update["repair_exhausted"] is False
    assert update["retrieved"]["repair_cases"] == []
    assert update["retrieved"]["rules"] == ["R1"]  # the retrieved context is kept
    assert update["feedback"]["counterexample"]["offending_entity"] == "nfz_temp_1"
    assert update["feedback"]["previous_ir"] == NFZ_FORGOTTEN_IR
    assert "attempts" not in update  # no round was open


def test_repair_closes_the_open_round_as_an_attempt(runtime, world_json):
    state = {"round": 1, "failure": NFZ_FAILURE, "ir": NFZ_FORGOTTEN_IR, "attempt_open": True, "world": world_json}
    update = repair(state, runtime)
    assert update["attempt_open"] is False
    [attempt] = update["attempts"]
    assert attempt["round"] == 1 and attempt["failure"]["counterexample"]["violated_rule"] == "R1"


def test_repair_past_k_rounds_is_exhausted_and_asks_nothing_of_the_model():
    update = repair({"round": 2, "failure": NFZ_FAILURE}, fake_runtime(Context(max_repairs=2)))
    assert update == {"round": 3, "repair_exhausted": True}


def test_repair_shows_the_memorys_cases_filtered_by_failure_type():
    class RecordingMemory:
        def __init__(self) -> None:
            self.queries: list[tuple[str, str | None, int]] = []

        def search_cases(self, query_text: str, failure_type: str | None = None, k: int = 3) -> list[str]:
            self.queries.append((query_text, failure_type, k))
            return ["past case"]

        def format_case_for_prompt(self, case: str) -> str:
            return f"example: {case}"

    memory = RecordingMemory()
    state = {"round": 0, "failure": NFZ_FAILURE, "instruction": "fly the defibrillator"}
    update = repair(state, fake_runtime(Context(memory=memory, top_k_cases=2)))
    assert update["retrieved"]["repair_cases"] == ["example: past case"]
    [(query, failure_type, k)] = memory.queries
    assert failure_type == "spec_violation" and k == 2 and "fly the defibrillator" in query


# fallback


@pytest.mark.parametrize("policy", [p.value for p in FallbackPolicy])
def test_headless_fallback_decides_by_the_irs_fallback_policy(policy, runtime):
    state = {"ir": ir_with(fallback_policy=policy), "candidate": THROUGH_NFZ, "failure": NFZ_FAILURE, "round": 3}
    update = fallback(state, runtime)
    expected = "human_confirm" if policy in {p.value for p in HUMAN_CONFIRM_POLICIES} else "safe_refusal"
    assert update["status"] == update["decision"]["status"] == expected
    assert not update["decision"].get("waypoints"), "a fallback decision never carries a route to fly"
    assert update["decision"]["proposal"] == (THROUGH_NFZ if expected == "human_confirm" else None)
    assert "verify: spec_violation (R1) after 3 repair round(s)" in update["decision"]["reason"]
    assert update["operator_reply"] is None


def test_a_fallback_decision_names_what_the_failing_tool_found_in_the_way(world_json, runtime):
    """The ids come from the tool, not from the prose: the planner's blockers, else the counterexample's entity."""
    data = {**world_json, "no_fly_zones": [*world_json["no_fly_zones"], {"id": "nfz_site", "polygon": OVER_SITE}]}
    args = {"start": "hospital_A", "goal": "accident_site_3", "avoid_zones": ["nfz_site"]}
    no_path = ToolRegistry([route.SPEC]).call("plan_route", World.model_validate(data), args)
    failure = failure_from_tool("execute_tools", no_path, step_id="route")
    update = fallback({"ir": ir_with(fallback_policy="human_confirm"), "failure": failure, "round": 1}, runtime)
    assert update["decision"]["blocked_by"] == ["nfz_site"]
    update = fallback({"ir": ir_with(fallback_policy="safe_refusal"), "failure": NFZ_FAILURE, "round": 3}, runtime)
    assert update["decision"]["blocked_by"] == []  # a failure record that names no blocker


def test_fallback_without_an_ir_refuses(runtime):
    update = fallback({"failure": failure_record("generate_ir", "llm_transport_error", recoverable=False)}, runtime)
    assert update["status"] == "safe_refusal"
    assert "llm_transport_error" in update["decision"]["reason"]


def test_interactive_fallback_with_a_refusal_policy_does_not_ask_the_operator():
    """interrupt() is only reached for human_confirm; outside a graph it would raise."""
    state = {"ir": ir_with(fallback_policy="safe_refusal"), "candidate": THROUGH_NFZ, "failure": NFZ_FAILURE}
    update = fallback(state, fake_runtime(Context(interactive=True)))
    assert update["status"] == "safe_refusal" and update["decision"]["proposal"] is None


@pytest.mark.parametrize(("route_goal", "verified_goal"), [("depot_1", "depot_1"), ("hospital_A", "accident_site_3")])
def test_verify_gate_checks_a_declared_hand_off_as_the_legs_goal_and_nothing_else(route_goal, verified_goal):
    from nodes.gates import gate_args

    ir = ir_with(**{"entities.handoff_points": ["depot_1"]})
    state = {
        "ir": ir,
        "candidate": {"uav_id": "uav_03", "waypoints": [[0, 0, 60, 0], [10, 0, 60, 2]], "goal": route_goal},
    }
    assert GOOD_IR["entities"]["destination"] == "accident_site_3"
    assert gate_args(state, Context(), "verify_ltl_stl")["goal"] == verified_goal
