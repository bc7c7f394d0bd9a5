"""repair: closes the failed round, then either hands the counterexample back to the LLM or gives up.

The round cap is the graph's own (Context.max_repairs, default 3): LangGraph's recursion limit is no guard.
Similar past repairs come from the safety memory, filtered by failure type, as few-shot examples.

A failure whose cause lies in the world (ir/repairs.py: a zone in the way, a UAV that cannot cover the route, traffic
or a roof too close, a risk above the task's limit) gets its repair candidates, derived here and handed to the model
in the counterexample (`repairs`) to choose from; when none is left that an earlier round has not tried, the run goes
to fallback now: another round could only fail the same way.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from ir.model import LowAltitudeIR
from ir.repairs import RepairCandidate, addressable, derive_candidates, tried_repairs
from language.defaults import handoff_hub
from nodes.attempts import ATTEMPT_READS, close_attempt
from nodes.context import Context
from nodes.reading import reading_of
from nodes.run_world import world_from_state
from nodes.state import State

READS = tuple(
    dict.fromkeys(("failure", "instruction", "retrieved", "world", "candidate", "attempts", "reading", *ATTEMPT_READS))
)


def _similar_repairs(state: State, ctx: Context, failure: dict[str, Any]) -> list[str]:
    if ctx.memory is None:
        return []
    counterexample = failure.get("counterexample") or {}
    query = (
        f"{state.get('instruction', '')} | {failure.get('error_type')}: {counterexample.get('suggested_repair', '')}"
    )
    hits = ctx.memory.search_cases(query, failure_type=failure.get("error_type"), k=ctx.top_k_cases)
    return [ctx.memory.format_case_for_prompt(hit) for hit in hits]


def _candidates(state: State, failure: dict[str, Any]) -> list[RepairCandidate]:
    world = world_from_state(state)
    ir = LowAltitudeIR.model_validate(state["ir"])
    instruction = (state.get("instruction") or "").lower()
    candidate = state.get("candidate") or {}
    risk = ((state.get("simulation") or {}).get("risk_assess") or [{}])[-1]
    return derive_candidates(
        world,
        ir,
        failure,
        route=candidate.get("waypoints"),
        flying_uav=candidate.get("uav_id"),
        risk_factors=(risk.get("result") or {}).get("factors") or [] if not risk.get("ok", True) else [],
        stated=reading_of(state, world),
        tried=tried_repairs(state.get("attempts") or [], state["ir"]),
        violated=((state.get("verdict") or {}).get("result") or {}).get("violations") or [],
        handoff_hub=handoff_hub(world, ir.entities.destination, ir.constraints, instruction),
    )


# What an IR says beyond the plan the gates run: where a failed run goes, what its explanation cites.
_BESIDE_THE_PLAN = ("fallback_policy", "explanation_plan")


def _plan_of(ir: dict[str, Any] | None) -> dict[str, Any]:
    return {key: value for key, value in (ir or {}).items() if key not in _BESIDE_THE_PLAN}


def _ran_before(state: State) -> bool:
    """The round's IR plans what an earlier round's already ran: the repair between them changed nothing the
    gates check (a fallback policy turned to human_confirm is no change to the plan)."""
    earlier = [a for a in state.get("attempts") or [] if a.get("round") != state.get("round", 0) and a.get("ir")]
    return any(_plan_of(attempt["ir"]) == _plan_of(state.get("ir")) for attempt in earlier)


def repair(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    failure = state.get("failure") or {}
    next_round = state.get("round", 0) + 1
    if next_round > ctx.max_repairs:
        return {**close_attempt(state), "round": next_round, "repair_exhausted": True}
    # a fleet mission's failure names its member and the repair to make (ir/repairs.py derives one-UAV repairs);
    # a team IR an earlier round already ran can only fail the same way again
    team_rerun = bool(state.get("ir") and state["ir"].get("team") and _ran_before(state))
    if team_rerun or (state.get("ir") and addressable(failure) and not state["ir"].get("team")):
        candidates = [] if team_rerun else _candidates(state, failure)
        if not candidates:
            message = f"{failure.get('message', '')} (no repair left that changes the plan's cause)".strip()
            failure = {**failure, "message": message}
            return {
                **close_attempt({**state, "failure": failure}),
                "round": next_round,
                "repair_exhausted": True,
                "failure": failure,
            }
        # the offer is part of the round's record: `trace --verbose` shows what the model could choose from
        counterexample = {**failure.get("counterexample", {}), "repairs": [c.model_dump() for c in candidates]}
        failure = {**failure, "counterexample": counterexample}
    counterexample = failure.get("counterexample") or {}
    retrieved = dict(state.get("retrieved") or {})
    retrieved["repair_cases"] = _similar_repairs(state, ctx, failure)
    return {
        **close_attempt({**state, "failure": failure}),
        "round": next_round,
        "repair_exhausted": False,
        "retrieved": retrieved,
        "feedback": {
            "counterexample": counterexample,
            "allowed": counterexample.get("allowed", []),
            "previous_ir": state.get("ir"),
        },
    }
