"""Tool-plan execution: dependency order, argument filling, stop at the first failure.

The ordering / filling tests use small fake ToolSpecs (test doubles) whose bodies echo their arguments, so the
assertions are about the executor alone; the end-to-end test runs the real registry on examples/downtown.json.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from ir.model import LowAltitudeIR
from ir.plan_execution import default_args, execute_plan, execution_order, ir_tool_args
from tools.catalog import default_registry
from tools.contract import ToolFailure, ToolOutput
from tools.registry import ToolRegistry, ToolSpec

# --- fakes ------------------------------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AssignArgs(_Args):
    origin: str
    destination: str
    candidates: list[str] = []
    payload_kg: float = 0.0
    battery_reserve_ratio: float = 0.2


class RouteArgs(_Args):
    start: str
    goal: str
    waypoints: list[str] = []
    avoid_zones: list[str] = []
    altitude_min_m: float = 30.0
    altitude_max_m: float = 120.0
    min_separation_m: float = 10.0
    uav_id: str | None = None
    deadline_sec: float | None = None
    payload_kg: float = 0.0


class TrajectoryArgs(_Args):
    waypoints: list[list[float]]
    uav_id: str | None = None
    goal: str | None = None
    ltl: list[str] = []
    rules: list[str] = ["R1", "R2", "R3", "R4", "R5", "R6"]
    seed: int = 0
    stress_level: str = "medium"


class ExplainArgs(_Args):
    decision: dict[str, Any]
    tool_results: list[dict[str, Any]]
    rules: list[str] = []


def _assign(world, args: AssignArgs) -> ToolOutput:
    return ToolOutput(result={"uav_id": (args.candidates or ["uav_09"])[0]})


def _route(world, args: RouteArgs) -> ToolOutput:
    x0, y0 = world.position_of(args.start)
    x1, y1 = world.position_of(args.goal)
    waypoints = [[x0, y0, args.altitude_min_m, 0.0], [x1, y1, args.altitude_min_m, 60.0]]
    result = {"waypoints": waypoints, "uav_id": args.uav_id, "eta_sec": 60.0, "energy_wh": 12.5}
    if args.deadline_sec is not None and args.deadline_sec < 60.0:
        raise ToolFailure("deadline_risk", "eta 60 s > deadline", recoverable=True, result=result)
    return ToolOutput(result=result)


def _echo(world, args: BaseModel) -> ToolOutput:
    return ToolOutput(result={"echo": args.model_dump(), "events": [{"type": "gust", "time_sec": 3.0}]})


def _broken_sim(world, args: TrajectoryArgs) -> ToolOutput:
    raise ToolFailure("collision", "hit traffic", recoverable=False)


def fake_registry(simulate=_echo) -> ToolRegistry:
    return ToolRegistry(
        [
            ToolSpec("assign_uav", "fake", AssignArgs, _assign),
            ToolSpec("plan_route", "fake", RouteArgs, _route, needs=("assign_uav",)),
            ToolSpec("verify_ltl_stl", "fake", TrajectoryArgs, _echo, needs=("plan_route",)),
            ToolSpec("simulate_scenario", "fake", TrajectoryArgs, simulate, needs=("plan_route",)),
            ToolSpec("explain_decision", "fake", ExplainArgs, _echo),
        ]
    )


def make_ir(
    steps: list[dict[str, Any]], program_rules: tuple[str, ...] = ("R1", "R2", "R3", "R4"), **constraints: Any
) -> LowAltitudeIR:
    return LowAltitudeIR.model_validate(
        {
            "task_id": "t1",
            "intent": "emergency",
            "priority": "high",
            "entities": {
                "origin": "hospital_A",
                "destination": "accident_site_3",
                "candidate_uavs": ["uav_03"],
                "avoid_zones": ["nfz_temp_1"],
                "sensitive_zones": ["school_zone_2"],
            },
            "constraints": {"deadline_sec": 600, "payload_kg": 1.5, **constraints},
            "tool_plan": steps,
            "verification_specs": {"ltl": ["G !in_nfz_temp_1"], "program_rules": list(program_rules)},
        }
    )


FULL_PLAN = [
    {"id": "assign", "tool": "assign_uav"},
    {"id": "route", "tool": "plan_route", "depends_on": ["assign"]},
    {"id": "verify", "tool": "verify_ltl_stl", "depends_on": ["route"]},
    {"id": "sim", "tool": "simulate_scenario", "depends_on": ["route"]},
    {"id": "explain", "tool": "explain_decision", "depends_on": ["verify", "sim"]},
]


# --- ordering ---------------------------------------------------------------------------------------------


def test_order_is_topological_and_keeps_the_ir_order_for_ties():
    ir = make_ir(
        [
            {"id": "explain", "tool": "explain_decision", "depends_on": ["verify", "sim"]},
            {"id": "sim", "tool": "simulate_scenario", "depends_on": ["route"]},
            {"id": "verify", "tool": "verify_ltl_stl", "depends_on": ["route"]},
            {"id": "route", "tool": "plan_route", "depends_on": ["assign"]},
            {"id": "assign", "tool": "assign_uav"},
        ]
    )
    ordered, stuck = execution_order(ir.tool_plan)
    assert [s.id for s in ordered] == ["assign", "route", "sim", "verify", "explain"]
    assert stuck == []


def test_executes_every_step_in_dependency_order(world):
    ir = make_ir(list(reversed(FULL_PLAN)))
    run = execute_plan(ir, world, fake_registry())
    assert run.ok and run.failed_step is None
    assert [r.step_id for r in run.results] == ["assign", "route", "sim", "verify", "explain"]


# --- filling ----------------------------------------------------------------------------------------------


def test_fills_arguments_from_the_ir_and_from_earlier_steps(world):
    run = execute_plan(make_ir(FULL_PLAN), world, fake_registry(), seed=7, stress_level="high")
    args = {r.step_id: r.args for r in run.results}
    assert args["assign"] == {
        "origin": "hospital_A",
        "destination": "accident_site_3",
        "candidates": ["uav_03"],
        "payload_kg": 1.5,
        "battery_reserve_ratio": 0.2,
    }
    assert args["route"]["uav_id"] == "uav_03"
    assert (args["route"]["start"], args["route"]["goal"]) == ("hospital_A", "accident_site_3")
    assert args["route"]["avoid_zones"] == ["nfz_temp_1", "school_zone_2"]
    assert args["route"]["deadline_sec"] == 600
    route_waypoints = run.results[1].result.result["waypoints"]
    assert args["verify"]["waypoints"] == route_waypoints
    assert args["verify"]["ltl"] == ["G !in_nfz_temp_1"]
    assert args["verify"]["rules"] == ["R1", "R2", "R3", "R4"]
    assert (args["sim"]["seed"], args["sim"]["stress_level"]) == (7, "high")
    assert [r["request_id"] for r in args["explain"]["tool_results"]] == [r.result.request_id for r in run.results[:4]]
    assert args["explain"]["decision"]["waypoints"] == route_waypoints


def test_given_arguments_win_over_filled_ones(world):
    plan = [dict(step) for step in FULL_PLAN]
    plan[1] = {**plan[1], "args": {"altitude_max_m": 100.0, "avoid_zones": ["nfz_gov_1"], "uav_id": "uav_09"}}
    run = execute_plan(make_ir(plan), world, fake_registry())
    route_args = run.results[1].args
    assert route_args["altitude_max_m"] == 100.0
    assert route_args["avoid_zones"] == ["nfz_gov_1"]
    assert route_args["uav_id"] == "uav_09"
    assert run.decision is not None and run.decision.uav_id == "uav_09"


def test_null_arguments_count_as_not_given(world):
    plan = [dict(step) for step in FULL_PLAN]
    plan[1] = {**plan[1], "args": {"uav_id": None, "goal": None}}
    run = execute_plan(make_ir(plan), world, fake_registry())
    assert (run.results[1].args["uav_id"], run.results[1].args["goal"]) == ("uav_03", "accident_site_3")


def test_empty_ir_lists_leave_the_tool_default(world):
    run = execute_plan(make_ir(FULL_PLAN, program_rules=()), world, fake_registry())
    assert "rules" not in run.results[2].args
    assert run.results[2].result.result["echo"]["rules"] == ["R1", "R2", "R3", "R4", "R5", "R6"]


def test_inputs_come_from_the_declared_ancestor_when_two_steps_could_provide_them(world):
    plan = [
        {"id": "assign", "tool": "assign_uav"},
        {"id": "route_a", "tool": "plan_route", "depends_on": ["assign"]},
        {"id": "route_b", "tool": "plan_route", "args": {"goal": "hospital_B"}, "depends_on": ["assign"]},
        {"id": "verify", "tool": "verify_ltl_stl", "depends_on": ["route_a"]},
    ]
    run = execute_plan(make_ir(plan), world, fake_registry())
    by_id = {r.step_id: r for r in run.results}
    assert by_id["verify"].args["waypoints"] == by_id["route_a"].result.result["waypoints"]
    assert by_id["verify"].args["waypoints"] != by_id["route_b"].result.result["waypoints"]


def test_default_args_preview_shows_run_time_links(world):
    preview = default_args(make_ir(FULL_PLAN), fake_registry())
    assert preview["route"]["uav_id"] == "<assign.uav_id>"
    assert preview["verify"]["waypoints"] == "<route.waypoints>"
    assert preview["explain"]["tool_results"] == "<*>"
    assert preview["assign"]["candidates"] == ["uav_03"]


def test_only_tools_skips_the_other_registered_tools_but_not_unknown_ones(world):
    plan = [*FULL_PLAN, {"id": "typo", "tool": "plan_rout", "depends_on": ["route"]}]
    run = execute_plan(make_ir(plan), world, fake_registry(), only_tools={"assign_uav", "plan_route"})
    assert [r.step_id for r in run.results] == ["assign", "route", "typo"]
    assert run.failure is not None and run.failure.type == "unknown_tool"
    assert run.decision is not None and run.decision.uav_id == "uav_03"


def test_ir_tool_args_name_only_arguments_the_real_tools_accept():
    ir = make_ir(FULL_PLAN)
    registry = default_registry()
    for name in registry.names():
        assert set(ir_tool_args(name, ir)) <= set(registry.spec(name).args_model.model_fields), name
    assert ir_tool_args("plan_route", ir)["avoid_zones"] == ["nfz_temp_1", "school_zone_2"]


# --- failures ---------------------------------------------------------------------------------------------


def test_stops_at_the_first_failing_step_and_keeps_the_route(world):
    run = execute_plan(make_ir(FULL_PLAN, deadline_sec=30), world, fake_registry())
    assert [r.step_id for r in run.results] == ["assign", "route"]
    assert run.failed_step == "route"
    assert run.failure is not None and run.failure.type == "deadline_risk"
    assert run.recoverable is True
    assert run.decision is not None and run.decision.eta_sec == 60.0 and len(run.decision.waypoints) == 2


def test_unrecoverable_failure_is_reported_as_such(world):
    run = execute_plan(make_ir(FULL_PLAN), world, fake_registry(simulate=_broken_sim))
    assert run.failed_step == "sim"
    assert (run.failure.type, run.recoverable) == ("collision", False)
    assert "explain" not in [r.step_id for r in run.results]


def test_unknown_tool_and_bad_arguments_come_back_as_tool_results(world):
    unknown = execute_plan(make_ir([{"id": "q", "tool": "qurey_airspace"}]), world, fake_registry())
    assert unknown.failed_step == "q" and unknown.failure.type == "unknown_tool"
    assert unknown.results[0].result.ok is False
    bad = execute_plan(make_ir([{"id": "a", "tool": "assign_uav", "args": {"payload": 2}}]), world, fake_registry())
    assert bad.failure.type == "bad_arguments" and "payload" in bad.failure.message


@pytest.mark.parametrize(
    ("plan", "error_type", "failed_step"),
    [
        (
            [
                {"id": "a", "tool": "assign_uav", "depends_on": ["b"]},
                {"id": "b", "tool": "assign_uav", "depends_on": ["a"]},
            ],
            "cycle",
            "a",
        ),
        (
            [{"id": "route", "tool": "plan_route"}, {"id": "assign", "tool": "assign_uav"}],
            "dependency_missing",
            "route",
        ),
        ([{"id": "verify", "tool": "verify_ltl_stl"}], "dependency_missing", "verify"),
        ([{"id": "a", "tool": "assign_uav", "depends_on": ["nope"]}], "dependency_missing", "a"),
    ],
)
def test_plan_defects_fail_before_any_tool_runs(world, plan, error_type, failed_step):
    run = execute_plan(make_ir(plan), world, fake_registry())
    assert run.results == []
    assert (run.failed_step, run.failure.type, run.recoverable) == (failed_step, error_type, True)
    assert run.failure.suggested_actions


# --- end to end with the real tools -----------------------------------------------------------------------

SEED_PLAN = [
    {"id": "airspace", "tool": "query_airspace"},
    {"id": "assign", "tool": "assign_uav", "depends_on": ["airspace"]},
    {"id": "route", "tool": "plan_route", "depends_on": ["assign"]},
    {"id": "verify", "tool": "verify_ltl_stl", "depends_on": ["route"]},
    {"id": "sim", "tool": "simulate_scenario", "depends_on": ["verify"]},
]


def test_seed_task_executes_and_the_route_flows_into_verification(world):
    run = execute_plan(make_ir(SEED_PLAN), world, default_registry())
    assert run.ok, run.failure
    by_id = {r.step_id: r for r in run.results}
    assert [r.step_id for r in run.results] == [s["id"] for s in SEED_PLAN]
    assert by_id["assign"].result.result["uav_id"] == "uav_03"
    route = by_id["route"].result.result
    assert by_id["route"].args["uav_id"] == "uav_03"
    assert set(by_id["route"].args["avoid_zones"]) == {"nfz_temp_1", "school_zone_2"}
    assert by_id["verify"].args["waypoints"] == route["waypoints"]
    assert by_id["sim"].args["waypoints"] == route["waypoints"]
    assert by_id["verify"].result.result["pass"] is True
    assert run.decision is not None and run.decision.uav_id == "uav_03"
    assert run.decision.waypoints == [list(map(float, wp)) for wp in route["waypoints"]]
    assert run.decision.eta_sec == route["eta_sec"] <= 600


def test_forgotten_no_fly_zone_is_caught_by_the_verifier_with_the_route_kept(world):
    ir = make_ir(SEED_PLAN)
    ir.entities.avoid_zones = []
    ir.verification_specs.ltl = []
    run = execute_plan(ir, world, default_registry())
    assert run.failed_step == "verify"
    assert (run.failure.type, run.recoverable) == ("spec_violation", True)
    counterexample = run.results[-1].result.result["counterexample"]
    assert (counterexample["violated_rule"], counterexample["offending_entity"]) == ("R1", "nfz_temp_1")
    assert run.decision is not None and run.decision.waypoints
