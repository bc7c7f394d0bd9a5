"""fallback: the run could not reach a verified plan. Headless: human_confirm or safe_refusal by the IR's
fallback policy. Interactive: pause with interrupt() and let the operator approve, refuse or edit the IR.

Only an operator's explicit approval can turn an unverified candidate into `execute`, and it is recorded.
"""

from __future__ import annotations

import json
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from ir.decision import Decision
from ir.fidelity import AGAINST_RULE, MISSING, TEAM_MISSION, UNACCOUNTED, UNRESOLVED
from ir.model import HUMAN_CONFIRM_POLICIES
from nodes.attempts import ATTEMPT_READS, close_attempt, repair_rounds
from nodes.context import Context
from nodes.fidelity import STAGE as FIDELITY_STAGE
from nodes.state import State

READS = tuple(dict.fromkeys(("candidate", "attempts", "reading", "team_candidates", *ATTEMPT_READS)))


def _status_by_policy(state: State) -> str:
    failure = state.get("failure") or {}
    # A plan that would relax what the operator stated is theirs to approve (with the plan as the proposal), and
    # which place a bare reference means, a fact the request left out or what a span no field holds asks, is theirs
    # to say (R8).
    if failure.get("stage") == FIDELITY_STAGE or failure.get("error_type") in (
        UNRESOLVED,
        MISSING,
        UNACCOUNTED,
        AGAINST_RULE,
        TEAM_MISSION,
    ):
        return "human_confirm"
    if _team_not_planned(state):  # a team request the model never answered with a team: the operator plans it
        return "human_confirm"
    policy = (state.get("ir") or {}).get("fallback_policy")
    return "human_confirm" if policy in {p.value for p in HUMAN_CONFIRM_POLICIES} else "safe_refusal"


def _team_not_planned(state: State) -> bool:
    """The request needs a team (the reading's team_needs) and the last IR, if any, carries none."""
    return bool((state.get("reading") or {}).get("team_needs")) and not (state.get("ir") or {}).get("team")


def _reason(state: State) -> str:
    failure = state.get("failure") or {}
    if not failure:
        return "no verified plan"
    ce = failure.get("counterexample") or {}
    rule = f" ({ce['violated_rule']})" if ce.get("violated_rule") else ""
    rounds = repair_rounds(state)
    said = f": {failure['message']}" if failure.get("message") else ""  # what, where, which limit: in words
    excluded = (state.get("reading") or {}).get("excluded_uavs") or []
    left_out = f"; the request leaves out {', '.join(excluded)}" if excluded else ""
    needs = (state.get("reading") or {}).get("team_needs") or []
    team = f"; {'; '.join(needs)}" if _team_not_planned(state) and not any(n in said for n in needs) else ""
    return f"{failure.get('stage')}: {failure.get('error_type')}{rule} after {rounds} repair round(s){said}{left_out}{team}"


def _best_candidate(state: State) -> dict[str, Any] | None:
    """The latest candidate route, which is what the operator is shown and may approve. A fleet mission's members
    are shown as {"team": [...]}: with no single route to fly, an approval cannot turn them into an execute."""
    if (state.get("ir") or {}).get("team"):
        return {"team": state.get("team_candidates") or []}
    return state.get("candidate")


def fallback(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    status = _status_by_policy(state)
    candidate = _best_candidate(state)
    reason = _reason(state)
    update: dict[str, Any] = {**close_attempt(state), "operator_reply": None}
    if runtime.context.interactive and status == "human_confirm":
        reply = interrupt(
            {
                "question": "The agent could not verify a plan. approve / refuse / edit?",
                "reason": reason,
                "policy": (state.get("ir") or {}).get("fallback_policy"),
                "best_candidate": candidate,
                "options": ["approve", "refuse", "edit"],
            }
        )
        reply = reply if isinstance(reply, dict) else {"action": str(reply)}
        action = reply.get("action")
        if action == "edit" and isinstance(reply.get("ir"), dict):
            return {**update, "operator_reply": reply, "raw_output": json.dumps(reply["ir"]), "attempt_open": True}
        update["operator_reply"] = reply
        if action == "approve" and candidate and candidate.get("waypoints"):
            decision = Decision(
                status="execute", reason=f"operator approved despite: {reason}", approved_by_operator=True, **candidate
            )
            return {**update, "status": "execute", "decision": decision.model_dump(mode="json")}
        status = "safe_refusal"
        if action == "refuse":
            reason = f"operator refused: {reason}"
    # A refusal or a confirmation request carries the candidate only as a proposal, never as waypoints to fly.
    failure = state.get("failure") or {}
    missing = (failure.get("counterexample") or {}).get("missing_information") or []
    decision = Decision(
        status=status,
        reason=reason,
        blocked_by=failure.get("blockers") or [],
        proposal=candidate if status == "human_confirm" else None,
        missing_information=missing if status == "human_confirm" else [],
    )
    return {**update, "status": status, "decision": decision.model_dump(mode="json")}
