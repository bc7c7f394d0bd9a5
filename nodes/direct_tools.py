"""direct_tools (the `ir` ablation): run the tool calls found in the model's free text, with no typed IR.

Nothing is validated or grounded first and no argument is filled from entities or constraints: each call
runs with the args the model wrote, plus the outputs of earlier calls it consumes (uav_id, waypoints), in the
order written. This is what the typed IR is measured against.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from ir.answer_text import extract_answer
from ir.failure import failure_record
from ir.plan_execution import FLOWS
from nodes.context import Context
from nodes.failures import failure_from_tool
from nodes.run_world import world_from_state
from nodes.state import State
from tools.catalog import ACTION_TOOLS, default_registry

READS = ("raw_output", "world")


def free_tool_calls(raw_text: str) -> list[dict[str, Any]]:
    """The {tool, args} objects of the answer's tool list, read as untyped JSON."""
    answer = extract_answer(raw_text) or {}
    body = answer.get("low_altitude_ir")
    calls = body.get("tool_plan") if isinstance(body, dict) else None
    return [c for c in calls or [] if isinstance(c, dict) and isinstance(c.get("tool"), str)]


def _chained_args(tool: str, given: dict[str, Any], outputs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    args = dict(given)
    for flow in FLOWS:
        if flow.consumer == tool and flow.arg not in args and flow.key in outputs.get(flow.producer, {}):
            args[flow.arg] = outputs[flow.producer][flow.key]
    return args


def _no_route(message: str) -> dict[str, Any]:
    return failure_record(
        "execute_tools",
        "no_route_in_plan",
        recoverable=True,
        message=message,
        failure_stage="direct_tools",
        suggested_repair="call assign_uav then plan_route with complete arguments",
    )


def direct_tools(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    world, registry = world_from_state(state), default_registry()
    outputs: dict[str, dict[str, Any]] = {}
    records: list[dict[str, Any]] = []
    route_args: dict[str, Any] = {}
    for call in free_tool_calls(state.get("raw_output") or ""):
        tool = call["tool"]
        if tool not in ACTION_TOOLS and tool in registry:
            continue  # the graph's gates verify and simulate; the model does not get to skip or weaken them
        given = call.get("args") if isinstance(call.get("args"), dict) else {}
        args = _chained_args(tool, given, outputs)
        result = registry.call(tool, world, args)
        records.append(result.model_dump(mode="json"))
        if not result.ok:
            return {"tool_results": records, "candidate": None, "failure": failure_from_tool("execute_tools", result)}
        outputs[tool] = result.result or {}
        if tool == "plan_route":
            route_args = args
    route = outputs.get("plan_route")
    if not route or not route.get("waypoints"):
        return {
            "tool_results": records,
            "candidate": None,
            "failure": _no_route("the model's tool calls produced no route"),
        }
    candidate = {
        "uav_id": route.get("uav_id") or outputs.get("assign_uav", {}).get("uav_id"),
        "waypoints": route["waypoints"],
        "eta_sec": route.get("eta_sec"),
        "energy_wh": route.get("energy_wh"),
        "goal": route_args.get("goal"),
        "origin": route_args.get("start"),
    }
    return {"tool_results": records, "candidate": candidate, "failure": None}
