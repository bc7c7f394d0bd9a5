"""simulate: stress-simulate the verified route (wind gusts, traffic, pop-up NFZ) in each of the run's stress
scenarios, then assess its risk under each; the second safety gate.

One scenario is one random draw of gusts, unknown traffic (met by the simulated UAV's detect-and-avoid) and pop-up
zones; the route must pass every scenario the run context names, and the first failing one is the counterexample
the repair sees.

A fleet mission flies each member through the same scenarios, every other member as known traffic (flying its
plan); the simulation of a team is {"members": [{subtask_id, uav_id, simulate_scenario, risk_assess}]}.
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
from nodes.team import carries_team, member_gate_args, member_named, member_world, team_members
from tools.catalog import default_registry
from tools.contract import ToolResult
from tools.world import World

READS = ("candidate", "ir", "world", "team_candidates")


def _stress(
    world: World, ctx: Context, sim_args: dict[str, Any], risk_args: dict[str, Any], results: list[dict[str, Any]]
) -> tuple[dict[str, list[dict[str, Any]]], ToolResult | None]:
    """Every stress scenario of the run, then the risk under each: the simulation record and the first failing
    result (None when the route passed every one). Each result is appended to `results` too."""
    registry = default_registry()
    simulation: dict[str, list[dict[str, Any]]] = {"simulate_scenario": [], "risk_assess": []}
    assessed: dict[str, ToolResult] = {}  # risk assessments by the scenario's events
    for seed in stress_seeds(ctx):
        sim = registry.call("simulate_scenario", world, {**sim_args, "seed": seed})
        results.append(sim.model_dump(mode="json"))
        simulation["simulate_scenario"].append(results[-1])
        if not sim.ok:
            return simulation, sim
        events = (sim.result or {}).get("events", [])
        key = json.dumps(events, sort_keys=True)
        if key not in assessed:  # the same route with the same events is the same assessment: one call
            assessed[key] = registry.call("risk_assess", world, {**risk_args, "sim_events": events})
            results.append(assessed[key].model_dump(mode="json"))
            simulation["risk_assess"].append(results[-1])
        if not assessed[key].ok:
            return simulation, assessed[key]
    return simulation, None


def _simulate_team(state: State, ctx: Context) -> dict[str, Any]:
    members = team_members(state)
    results: list[dict[str, Any]] = []  # appended to the round's tool_results by the state's reducer
    flown: list[dict[str, Any]] = []
    update: dict[str, Any] = {"simulation": {"members": flown}, "tool_results": results, "failure": None}
    for member in members:
        simulation, failed = _stress(
            member_world(state, members, member),
            ctx,
            member_gate_args(state, ctx, "simulate_scenario", member, members),
            member_gate_args(state, ctx, "risk_assess", member, members),
            results,
        )
        flown.append({"subtask_id": member.subtask_id, "uav_id": member.uav_id, **simulation})
        if failed is not None:
            return {**update, "failure": member_named(state, failure_from_tool("simulate", failed), member)}
    return update


def simulate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    if carries_team(state):
        return _simulate_team(state, ctx)
    results: list[dict[str, Any]] = []  # appended to the round's tool_results by the state's reducer
    simulation, failed = _stress(
        world_from_state(state),
        ctx,
        gate_args(state, ctx, "simulate_scenario"),
        gate_args(state, ctx, "risk_assess"),
        results,
    )
    failure = None if failed is None else failure_from_tool("simulate", failed)
    return {"simulation": simulation, "tool_results": results, "failure": failure}
