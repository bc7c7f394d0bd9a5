"""repair: closes the failed round, then either hands the counterexample back to the LLM or gives up.

The round cap is the graph's own (Context.max_repairs, default 3): LangGraph's recursion limit is no guard.
Similar past repairs come from the safety memory, filtered by failure type, as few-shot examples.

A failure whose cause lies in the world (ir/repairs.py: a zone in the way, a UAV that cannot cover the route, traffic
or a roof too close, a risk above the task's limit) gets its repair candidates, derived here and handed to the model
in the counterexample (`repairs`) to choose from; when none is left that an earlier round has not tried, the run goes
to fallback now: another round could only fail the same way.

A fleet mission's member that fails the verify or simulate gate is repaired alone (`team_repair` in the
counterexample, which execute_team reads back through nodes/team.member_repair): re-timed first when it failed on
timing (separation from traffic, R2 against a track; a deadline, R4) and was not re-timed for it before, else its
sub-task reassigned to another idle UAV; every other member keeps its UAV and route. Such a round runs even when the
model writes the same IR again (a re-time changes no IR field).
"""

from __future__ import annotations

import re
from typing import Any

from langgraph.runtime import Runtime
from pydantic import ValidationError

from ir.model import LowAltitudeIR
from ir.repairs import RepairCandidate, addressable, derive_candidates, tried_repairs
from ir.team_execution import named_for
from language.defaults import handoff_hub
from nodes.attempts import ATTEMPT_READS, close_attempt
from nodes.context import Context
from nodes.reading import reading_of
from nodes.run_world import world_from_state
from nodes.state import State
from nodes.team import team_members

READS = tuple(
    dict.fromkeys(
        (
            "failure",
            "instruction",
            "retrieved",
            "world",
            "candidate",
            "attempts",
            "reading",
            "team_candidates",
            *ATTEMPT_READS,
        )
    )
)
MEMBER_GATES = ("verify", "simulate")  # the gates that judge every member planned: one can be changed alone


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


def _failed_member(ir: dict[str, Any] | None, failure: dict[str, Any]) -> tuple[str, str] | None:
    """(sub-task, UAV) of the member a gate's failure names (nodes/team.member_named: field `team.subtasks.<i>`,
    value the UAV), judged against the IR the failing round ran."""
    cx = failure.get("counterexample") or {}
    field = re.fullmatch(r"team\.subtasks\.(\d+)", str(cx.get("field") or ""))
    subtasks = ((ir or {}).get("team") or {}).get("subtasks") or []
    if failure.get("stage") not in MEMBER_GATES or field is None or int(field[1]) >= len(subtasks):
        return None
    return (str(subtasks[int(field[1])].get("id")), str(cx.get("value"))) if isinstance(cx.get("value"), str) else None


def _member_repair(state: State, failure: dict[str, Any]) -> dict[str, Any] | None:
    """The one change a member's gate failure gets (ir.team_execution.MemberRepair less the members): re-time it
    when it failed on timing, separation from traffic or a deadline, and an earlier round did not already fail on
    the same member (so re-timing was tried); re-route it out of a zone its route crossed (R1, R2) unless an earlier
    round failed it on that zone already; else reassign its sub-task. None when the failure names no member of the
    round's team."""
    key = _failed_member(state.get("ir"), failure)
    members = team_members(state)
    if key is None or key not in {(m.subtask_id, m.uav_id) for m in members}:
        return None
    cx = failure.get("counterexample") or {}
    rule, entity = cx.get("violated_rule"), cx.get("offending_entity")
    world = world_from_state(state)
    tracks = {t.id for t in world.traffic} | {m.track().id for m in members}
    not_traffic = {b.id for b in world.buildings} | set(world.zone_index)
    cause = "other"
    if rule == "R2" and entity and entity not in not_traffic:  # a track, or an intruder met in simulation
        cause = "separation"
    elif rule == "R4":
        cause = "deadline"
    earlier = [
        attempt.get("failure") or {}
        for attempt in state.get("attempts") or []
        if attempt.get("round") != state.get("round", 0)
        and _failed_member(attempt.get("ir"), attempt.get("failure") or {}) == key
    ]
    failed_before = bool(earlier)
    # a zone the planner was not told to keep out of (plan_route masks only the IR's): the same UAV routed round it
    crossed = rule in ("R1", "R2") and entity in world.zone_index
    zone_failed_before = any((f.get("counterexample") or {}).get("offending_entity") == entity for f in earlier)
    what = " ".join(
        str(part)
        for part in (
            f"{failure.get('stage')}: {cx.get('failure_type') or failure.get('error_type')}",
            f"({rule})" if rule else "",
            f"with {entity}" if entity else "",
            f"at t={cx['time_sec']:g} s" if isinstance(cx.get("time_sec"), int | float) else "",
        )
        if part
    )
    if crossed:
        action = "reroute" if not zone_failed_before else "reassign"
    else:
        action = "retime" if cause != "other" and not failed_before else "reassign"
    return {
        "subtask_id": key[0],
        "uav_id": key[1],
        "action": action,
        "cause": cause,
        "why": what,
        "tracks": [entity] if cause == "separation" and entity in tracks else [],
        "avoid": [entity] if crossed else [],
    }


def _named_for(state: State, planned: dict[str, Any]) -> bool:
    """The IR pins the failed member's UAV to its sub-task: reassigning it would fly a UAV the request did not ask for."""
    try:
        ir = LowAltitudeIR.model_validate(state.get("ir"))
    except ValidationError:  # not this code's IR (an edited checkpoint): nothing is pinned for certain
        return False
    return named_for(ir, planned["subtask_id"], planned["uav_id"])


def _with_member_repair(failure: dict[str, Any], planned: dict[str, Any]) -> dict[str, Any]:
    """The failure with its one-member repair: in the counterexample (`team_repair`, what the model and the next
    execution read) and in words (`suggested_repair`, what the round's record keeps)."""
    label = f"member {planned['subtask_id']} ({planned['uav_id']})"
    how = {
        "retime": "re-time it (a later or earlier departure of the same UAV), else reassign its sub-task",
        "reroute": f"re-route it out of {', '.join(planned['avoid'])} (the same UAV), else reassign its sub-task",
    }.get(planned["action"], "reassign its sub-task to another idle UAV")
    suggestion = f"{label}: {how}; every other member keeps its UAV and route ({planned['why']})"
    counterexample = {**(failure.get("counterexample") or {}), "team_repair": planned, "suggested_repair": suggestion}
    return {**failure, "counterexample": counterexample}


def repair(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    failure = state.get("failure") or {}
    next_round = state.get("round", 0) + 1
    if next_round > ctx.max_repairs:
        return {**close_attempt(state), "round": next_round, "repair_exhausted": True}
    # a fleet mission's failure names its member and the repair to make (ir/repairs.py derives one-UAV repairs): a
    # member a gate failed is changed alone, whatever IR the model writes; otherwise a team IR an earlier round
    # already ran can only fail the same way again
    planned = _member_repair(state, failure) if state.get("ir") and state["ir"].get("team") else None
    if planned is not None:
        failure = _with_member_repair(failure, planned)
    named_uav_fails = planned is not None and planned["action"] == "reassign" and _named_for(state, planned)
    team_rerun = bool(state.get("ir") and state["ir"].get("team") and planned is None and _ran_before(state))
    if named_uav_fails or team_rerun or (state.get("ir") and addressable(failure) and not state["ir"].get("team")):
        candidates = [] if team_rerun or named_uav_fails else _candidates(state, failure)
        if not candidates:
            why = (
                f"{planned['uav_id']} is the UAV the request names for sub-task {planned['subtask_id']}: no other may "
                "fly it in its place"
                if named_uav_fails and planned is not None
                else "no repair left that changes the plan's cause"
            )
            message = f"{failure.get('message', '')} ({why})".strip()
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
