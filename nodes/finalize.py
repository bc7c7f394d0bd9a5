"""finalize: the candidate passed every enabled check; issue the decision with an explanation that cites only
tool results and rule ids, and remember the repair (if the run needed one) in the safety memory.

R8: an answer that itself says it needs human confirmation, or lacks information, never leaves as `execute`.

A fleet mission's execute lists its members (ir.decision: `team`, with `uav_id` / `waypoints` empty) and carries one
certificate for the whole team (tools.certificate: `members`).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from ir.decision import Decision, team_fields
from ir.fidelity import StatedConstraints
from ir.policy import check_r8
from memory.from_runs import cases_from_run
from nodes.attempts import ATTEMPT_READS, close_attempt
from nodes.context import Context
from nodes.gates import gate_args
from nodes.reading import reading_of
from nodes.run_world import world_from_state
from nodes.state import State
from nodes.team import carries_team, member_gate_args, team_members
from tools.catalog import default_registry
from tools.certificate import MemberCertificate, SafetyCertificate, issue_certificate, issue_team_certificate

# task_id and scenario_type: read when the run's repair cases go to memory.
# reading, or instruction where a run checkpointed before readings were kept
READS = tuple(
    dict.fromkeys(
        (
            "candidate",
            "world",
            "attempts",
            "task_id",
            "scenario_type",
            "reading",
            "instruction",
            "team_candidates",
            *ATTEMPT_READS,
        )
    )
)


def _remember(state: State, runtime: Runtime[Context], closing_attempts: list[dict[str, Any]], status: str) -> None:
    """Store the run's repairs in the safety memory (idempotent per thread and round)."""
    memory = runtime.context.memory
    attempts = [*(state.get("attempts") or []), *closing_attempts]
    if memory is None or len(attempts) < 2:
        return
    thread_id = (runtime.execution_info.thread_id if runtime.execution_info else None) or state.get("task_id") or "run"
    values = {**state, "attempts": attempts, "status": status}
    cases = cases_from_run(
        values, thread_id=str(thread_id), model=runtime.context.model, scenario_type=state.get("scenario_type", "")
    )
    memory.store_cases(cases)


def _certificate(state: State, ctx: Context) -> SafetyCertificate | None:
    """The certificate of the route both gates passed; None when a gate was ablated (nothing to certify)."""
    verdict = (state.get("verdict") or {}).get("result")
    simulations = [r.get("result") for r in ((state.get("simulation") or {}).get("simulate_scenario") or [])]
    if not verdict or not simulations or not all(simulations):
        return None
    return issue_certificate(
        world_from_state(state),
        gate_args(state, ctx, "verify_ltl_stl"),
        verdict,
        gate_args(state, ctx, "simulate_scenario"),
        simulations,
        state.get("ir"),
    )


def _team_certificate(state: State, ctx: Context) -> SafetyCertificate | None:
    """One certificate for every member both gates passed, each judged with the others as traffic; None when a gate
    was ablated."""
    world = world_from_state(state)
    verdicts = {
        (v["subtask_id"], v["uav_id"]): v.get("result") for v in (state.get("verdict") or {}).get("members", [])
    }
    flown = {
        (s["subtask_id"], s["uav_id"]): [r.get("result") for r in s.get("simulate_scenario") or []]
        for s in (state.get("simulation") or {}).get("members", [])
    }
    certified = []
    members = team_members(state)
    for member in members:
        verdict, simulations = (
            verdicts.get((member.subtask_id, member.uav_id)),
            flown.get((member.subtask_id, member.uav_id)),
        )
        if not verdict or not simulations or not all(simulations):
            return None
        certificate = issue_certificate(
            world,
            member_gate_args(state, ctx, "verify_ltl_stl", member, members),
            verdict,
            member_gate_args(state, ctx, "simulate_scenario", member, members),
            simulations,
            state.get("ir"),
        )
        certified.append(
            MemberCertificate(
                subtask_id=member.subtask_id, role=member.role, share_kg=member.share_kg, certificate=certificate
            )
        )
    return issue_team_certificate(world, certified, state.get("ir")) if certified else None


def _team_plan(state: State) -> dict[str, Any]:
    """A fleet mission's decision fields: the members, the mission's arrival and energy, no single route."""
    return team_fields(team_members(state))


def _as_read(reading: StatedConstraints) -> list[str]:
    """What the execute rests on beyond the request's plain words: ids read despite a typo, UAVs left out as asked,
    permissions to break a rule that the plan did not use."""
    notes = [f"assumed {', '.join(reading.assumed)}"] if reading.assumed else []
    if reading.excluded_uavs:
        notes.append(f"not {', '.join(reading.excluded_uavs)}, as the request says")
    if reading.avoided:
        notes.append(f"kept away from {', '.join(reading.avoided)}, as the request says")
    return notes + reading.permissions_not_used


def finalize(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    team = carries_team(state)
    candidate = _team_plan(state) if team else state.get("candidate") or {}
    checks = {"verified": state.get("verdict") is not None, "simulated": state.get("simulation") is not None}
    findings = check_r8("execute", uncertainty=(state.get("answer") or {}).get("uncertainty"))
    if findings:
        reason = "R8: " + "; ".join(f.message for f in findings)
        proposal = {"team": state.get("team_candidates") or []} if team else candidate
        decision = Decision(status="human_confirm", reason=reason, proposal=proposal, **checks)
    else:
        certificate = _team_certificate(state, runtime.context) if team else _certificate(state, runtime.context)
        reason = "; ".join(["all enabled checks passed", *_as_read(reading_of(state, world_from_state(state)))])
        decision = Decision(status="execute", reason=reason, **candidate, **checks, certificate=certificate)
    closing = close_attempt(state)
    _remember(state, runtime, closing.get("attempts", []), decision.status)
    rules = ((state.get("ir") or {}).get("verification_specs") or {}).get("program_rules") or []
    explanation = default_registry().call(
        "explain_decision",
        world_from_state(state),
        {"decision": decision.model_dump(mode="json"), "tool_results": state.get("tool_results") or [], "rules": rules},
    )
    return {
        **closing,
        "status": decision.status,
        "decision": decision.model_dump(mode="json"),
        "explanation": explanation.model_dump(mode="json"),
    }
