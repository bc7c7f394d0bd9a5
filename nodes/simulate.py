"""simulate: stress-simulate the verified route (wind gusts, traffic, pop-up NFZ) in each of the run's stress
scenarios, then assess its risk under each; the second safety gate.

One scenario is one random draw of gusts, unknown traffic (met by the simulated UAV's detect-and-avoid) and pop-up
zones; the route must pass every scenario the run context names, and the first failing one is the counterexample
the repair sees.
"""

from __future__ import annotations

import json
from typing import Any

from langgraph.runtime import Runtime

from nodes.context import Context
from nodes.failures import failure_from_tool
from nodes.gates import gate_args, stress_seeds
from nodes.run_world import world_from_state
from nodes.state import State
from tools.catalog import default_registry
from tools.contract import ToolResult

READS = ("candidate", "ir", "world")


def simulate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    world, registry, ctx = world_from_state(state), default_registry(), runtime.context
    sim_args, risk_args = gate_args(state, ctx, "simulate_scenario"), gate_args(state, ctx, "risk_assess")
    results: list[dict[str, Any]] = []  # appended to the round's tool_results by the state's reducer
    simulation: dict[str, list[dict[str, Any]]] = {"simulate_scenario": [], "risk_assess": []}
    update: dict[str, Any] = {"simulation": simulation, "tool_results": results, "failure": None}
    assessed: dict[str, ToolResult] = {}  # risk assessments by the scenario's events
    for seed in stress_seeds(ctx):
        sim = registry.call("simulate_scenario", world, {**sim_args, "seed": seed})
        results.append(sim.model_dump(mode="json"))
        simulation["simulate_scenario"].append(results[-1])
        if not sim.ok:
            return {**update, "failure": failure_from_tool("simulate", sim)}
        events = (sim.result or {}).get("events", [])
        key = json.dumps(events, sort_keys=True)
        if key not in assessed:  # the same route with the same events is the same assessment: one call
            assessed[key] = registry.call("risk_assess", world, {**risk_args, "sim_events": events})
            results.append(assessed[key].model_dump(mode="json"))
            simulation["risk_assess"].append(results[-1])
        risk = assessed[key]
        if not risk.ok:
            return {**update, "failure": failure_from_tool("simulate", risk)}
    return update
