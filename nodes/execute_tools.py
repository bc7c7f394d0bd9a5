"""execute_tools: run the IR's action steps (city, airspace, UAV assignment, route) in dependency order.

Verification, simulation and explanation steps of the plan are not run here: the graph's own gates do them.

An IR that carries a team (a fleet mission) takes ir.team_execution's path instead: assign_team, then one route per
member; the members go to `team_candidates` and `candidate` stays None. A one-UAV run never writes that key.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from ir.failure import failure_record
from ir.model import LowAltitudeIR
from ir.plan_execution import execute_plan
from ir.team_execution import execute_team
from nodes.context import Context
from nodes.failures import failure_from_tool
from nodes.reading import reading_of
from nodes.run_world import world_from_state
from nodes.state import State
from nodes.team import member_repair, subtask_field
from tools.catalog import ACTION_TOOLS, ONE_UAV_TOOLS, default_registry, team_registry

READS = ("ir", "world", "team_candidates", "reading", "instruction", "feedback")


def _execute_team(state: State, ctx: Context, ir: LowAltitudeIR) -> dict[str, Any]:
    world = world_from_state(state)
    run = execute_team(
        ir,
        world,
        team_registry(),
        excluded=reading_of(state, world).excluded_uavs,
        only_tools=ACTION_TOOLS - ONE_UAV_TOOLS,
        seed=ctx.sim_seed,
        stress_level=ctx.stress_level,
        repair=member_repair(state),  # a repair round's one member: the failed round's others kept
    )
    update: dict[str, Any] = {
        "tool_results": [r.result.model_dump(mode="json") for r in run.results],
        "candidate": None,
        "team_candidates": [m.model_dump(mode="json") for m in run.members],
        "failure": None,
    }
    if not run.ok and run.failed_result is not None:
        failure = failure_from_tool("execute_tools", run.failed_result, step_id=run.failed_step)
        if run.subtask_id is not None:
            failure["counterexample"]["field"] = subtask_field(state, run.subtask_id)
        update["failure"] = failure
    return update


def execute_tools(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    ir = LowAltitudeIR.model_validate(state["ir"])
    if ir.team is not None:
        return _execute_team(state, ctx, ir)
    run = execute_plan(
        ir,
        world_from_state(state),
        default_registry(),
        seed=ctx.sim_seed,
        stress_level=ctx.stress_level,
        only_tools=ACTION_TOOLS,
    )
    records = [r.result.model_dump(mode="json") for r in run.results]
    candidate = run.decision.model_dump() if run.decision else None
    route = next((r for r in reversed(run.results) if r.tool == "plan_route" and r.result.ok), None)
    if candidate is not None and route is not None:
        candidate["goal"] = route.args.get("goal")  # a hand-off point when the UAV leg ends there
    update: dict[str, Any] = {"tool_results": records, "candidate": candidate, "failure": None}
    if state.get("team_candidates"):  # an earlier round planned a team
        update["team_candidates"] = None
    if not run.ok:
        failed = next((r for r in run.results if r.step_id == run.failed_step), None)
        if failed is not None:
            update["failure"] = failure_from_tool("execute_tools", failed.result, step_id=run.failed_step)
        else:  # a plan defect found before any tool ran
            update["failure"] = failure_record(
                "execute_tools",
                run.failure.type,
                recoverable=bool(run.recoverable),
                message=run.failure.message,
                failure_stage="execute_tools.plan",
                field=f"tool_plan[{run.failed_step}]",
                suggested_repair="; ".join(run.failure.suggested_actions),
            )
    elif candidate is None:
        update["failure"] = failure_record(
            "execute_tools",
            "no_route_in_plan",
            recoverable=True,
            message="the tool plan produced no route to verify",
            failure_stage="execute_tools.plan",
            field="tool_plan",
            suggested_repair="add a plan_route step (after assign_uav) to the tool_plan",
        )
    return update
