"""Arguments of the two safety gates (verify, simulate) from the IR, the candidate and the run context.

The gates are the graph's, not the LLM's: whatever rules the IR lists, R1-R6 are always checked, and the
simulation seeds and stress level come from the run context.
"""

from __future__ import annotations

from typing import Any

from ir.model import LowAltitudeIR
from ir.plan_execution import ir_tool_args
from nodes.context import Context
from nodes.state import State
from tools.rules import MONITORED_RULES


def _ir(state: State) -> LowAltitudeIR | None:
    return LowAltitudeIR.model_validate(state["ir"]) if state.get("ir") else None


def gate_args(state: State, ctx: Context, tool: str) -> dict[str, Any]:
    """IR-derived args for `tool` (its validated constraints and specs), then the route under test.

    The IR's own step args for the gate tools are ignored on purpose: a step could loosen what the validated
    constraints say (e.g. a lower altitude floor), and the gate must judge by the constraints."""
    ir = _ir(state)
    candidate = state.get("candidate") or {}
    args: dict[str, Any] = {}
    if ir is not None:
        args.update(ir_tool_args(tool, ir, seed=ctx.sim_seed, stress_level=ctx.stress_level))
    else:  # the IR-free path: the route's own ends are all that is known
        args.update({k: candidate[k] for k in ("goal", "origin") if candidate.get(k) and tool == "verify_ltl_stl"})
    if ir is not None and tool == "verify_ltl_stl" and candidate.get("goal") in ir.entities.handoff_points:
        args["goal"] = candidate["goal"]  # a multimodal plan: the UAV leg ends at a declared ground hand-off
    args["waypoints"] = candidate.get("waypoints") or []
    args["uav_id"] = candidate.get("uav_id")
    if tool == "verify_ltl_stl":
        args["rules"] = sorted(set(args.get("rules") or []) | set(MONITORED_RULES))
    if tool == "simulate_scenario":
        args["seed"], args["stress_level"] = ctx.sim_seed, ctx.stress_level
    return args


def stress_seeds(ctx: Context) -> list[int]:
    """The seeds of the simulate gate's scenarios: sim_seed and the next ones, stress_scenarios in all."""
    return list(range(ctx.sim_seed, ctx.sim_seed + ctx.stress_scenarios))
