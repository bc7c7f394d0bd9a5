"""execute_tools: run the IR's action steps (city, airspace, UAV assignment, route) in dependency order.

Verification, simulation and explanation steps of the plan are not run here: the graph's own gates do them.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.failures import failure_from_tool
from graph.gates import ACTION_TOOLS
from graph.ir import LowAltitudeIR
from graph.plan_execution import execute_plan
from graph.state import Counterexample, Failure, State
from graph.worlds import world_from_state
from tools.catalog import default_registry

READS = ("ir", "world")


def execute_tools(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    ir = LowAltitudeIR.model_validate(state["ir"])
    run = execute_plan(
        ir, world_from_state(state), default_registry(), seed=ctx.sim_seed, stress_level=ctx.stress_level, only_tools=ACTION_TOOLS
    )
    records = [r.result.model_dump(mode="json") for r in run.results]
    candidate = run.decision.model_dump() if run.decision else None
    update: dict[str, Any] = {"tool_results": records, "candidate": candidate, "failure": None}
    if not run.ok:
        failed = next((r for r in run.results if r.step_id == run.failed_step), None)
        if failed is not None:
            update["failure"] = failure_from_tool("execute_tools", failed.result, step_id=run.failed_step)
        else:  # a plan defect found before any tool ran
            update["failure"] = Failure(
                stage="execute_tools",
                error_type=run.failure.type,
                recoverable=bool(run.recoverable),
                message=run.failure.message,
                counterexample=Counterexample(
                    failure_stage="execute_tools.plan",
                    failure_type=run.failure.type,
                    field=f"tool_plan[{run.failed_step}]",
                    suggested_repair="; ".join(run.failure.suggested_actions),
                ),
            ).model_dump(mode="json")
    elif candidate is None:
        update["failure"] = Failure(
            stage="execute_tools",
            error_type="no_route_in_plan",
            recoverable=True,
            message="the tool plan produced no route to verify",
            counterexample=Counterexample(
                failure_stage="execute_tools.plan",
                failure_type="no_route_in_plan",
                field="tool_plan",
                suggested_repair="add a plan_route step (after assign_uav) to the tool_plan",
            ),
        ).model_dump(mode="json")
    return update
