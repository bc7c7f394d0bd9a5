"""simulate: stress-simulate the verified route (wind gusts, traffic, pop-up NFZ), then assess its risk;
the second safety gate."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context
from graph.state import State
from nodes.failures import failure_from_tool
from nodes.gates import gate_args
from nodes.run_world import world_from_state
from tools.catalog import default_registry

READS = ("candidate", "ir", "world")


def simulate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    world, registry, ctx = world_from_state(state), default_registry(), runtime.context
    sim = registry.call("simulate_scenario", world, gate_args(state, ctx, "simulate_scenario"))
    results = [sim.model_dump(mode="json")]  # appended to the round's tool_results by the state's reducer
    update: dict[str, Any] = {"simulation": {"simulate_scenario": results[0]}, "tool_results": results}
    if not sim.ok:
        return {**update, "failure": failure_from_tool("simulate", sim)}
    risk_args = {**gate_args(state, ctx, "risk_assess"), "sim_events": (sim.result or {}).get("events", [])}
    risk = registry.call("risk_assess", world, risk_args)
    results.append(risk.model_dump(mode="json"))
    update["simulation"]["risk_assess"] = results[-1]
    return {**update, "failure": None if risk.ok else failure_from_tool("simulate", risk)}
