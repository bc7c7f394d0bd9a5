"""validate: the layered validator (json -> schema -> grounding -> tool dependencies -> policy).

Before any tool runs it also holds the request itself to R8: stated constraints that contradict each other (fly
above 100 m and below 60 m; above the airspace ceiling) make the task unsatisfiable whatever the IR says, and a bare reference that fits
several places ("to the hospital"), or a request that leaves out what no plan can do without (no place to fly to,
cargo with nowhere to pick it up, "before the meeting"), leaves it under-specified: the run ends in fallback, which
asks the operator for the missing facts, instead of a repair loop that could only relax a demand or guess a place.

A request that needs a team (the reading's team_needs) answered by a valid IR of one UAV gets one repair round that
asks the model for the team (its schema shows `team`); a second such answer ends with the operator (human_confirm,
quoting the words that ask for the team). An answer that fails validation is repaired for its own error first. An IR
that carries a team goes on to execute_tools, which plans it. The rules model and the embedded model's slots write the
team the words sketch whenever they can, so for them the asked round only confirms that they cannot."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from ir.failure import failure_record
from ir.fidelity import AGAINST_RULE, MISSING, TEAM_MISSION
from ir.validation import validate_ir
from nodes.context import Context
from nodes.reading import reading_of
from nodes.run_world import world_from_state
from nodes.state import State
from tools.catalog import default_registry

READS = ("raw_output", "world", "instruction", "reading", "attempts")


def validate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    report = validate_ir(state.get("raw_output") or "", world_from_state(state), default_registry())
    update: dict[str, Any] = {
        "validation": report.model_dump(mode="json", exclude={"ir"}),
        "ir": report.ir.model_dump(mode="json") if report.ir is not None else None,
        "failure": None,
    }
    world = world_from_state(state)
    blockers = reading_of(state, world).blockers(world.grid.ceiling_m)
    others = [(error_type, message) for error_type, message in blockers if error_type != TEAM_MISSION]
    if report.ir is not None and report.ir.team is not None:  # the team the request needs is the IR's to plan
        blockers = others
    elif not report.valid and not others:  # the answer's own error is repaired first; the next valid one is asked
        blockers = []
    if blockers:
        missing = [message for error_type, message in blockers if error_type == MISSING]
        team_only = not others
        # a valid one-UAV IR for a team request: the model is asked for the team once, then the operator is
        ask_for_team = team_only and not _team_asked_before(state)
        update["failure"] = failure_record(
            "validate",
            blockers[0][0],
            recoverable=ask_for_team,
            message="; ".join(message for _, message in blockers),
            failure_stage="validate.policy",
            # R8 (under-specified or contradictory) unless the only blocker is a team the one-UAV IR does not plan
            violated_rule=None if team_only else "R8",
            suggested_repair=_suggestion(blockers, missing, ask_for_team),
            missing_information=missing,
        )
    elif not report.valid:
        allowed = [str(a) for a in report.allowed]
        hint = f"replace {report.value!r} at {report.field} with one of {allowed}" if allowed else report.message
        update["failure"] = failure_record(
            "validate",
            report.error_type or "invalid",
            recoverable=True,
            message=report.message,
            failure_stage=f"validate.{report.stage}",
            field=report.field,
            value=report.value,
            allowed=allowed,
            suggested_repair=hint,
        )
    return update


def _team_asked_before(state: State) -> bool:
    """An earlier round of this run already failed for want of a team."""
    return any(
        (attempt.get("failure") or {}).get("error_type") == TEAM_MISSION for attempt in state.get("attempts") or []
    )


def _suggestion(blockers: list[tuple[str, str]], missing: list[str], ask_for_team: bool) -> str:
    if missing:
        return "ask the operator for it"
    if ask_for_team:  # the need in words: the model reads this
        needs = "; ".join(message for _, message in blockers)
        return f"write `team`, one sub-task per share of the task ({needs})"
    if any(error_type == TEAM_MISSION for error_type, _ in blockers):
        return "ask the operator to plan the team"
    if any(error_type == AGAINST_RULE for error_type, _ in blockers):
        return "ask the operator to approve a plan that keeps every safety rule"
    return "ask the operator which demand holds"
