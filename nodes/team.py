"""What the gates need of a fleet mission (issue 42): the members of the state's team, and for each the world and
the gate arguments it is judged with (the one-UAV gates' own, its sub-task's ends, deadline and share; every other
member as known traffic)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ir.team_execution import MemberRepair, TeamMember, others_as_traffic
from ir.team_gates import member_overrides
from nodes.context import Context
from nodes.gates import gate_args
from nodes.run_world import world_from_state
from nodes.state import State
from tools.world import World


def carries_team(state: State) -> bool:
    """The round's IR is a fleet mission: the gates judge its members, not a single candidate."""
    return bool((state.get("ir") or {}).get("team"))


def team_members(state: State) -> list[TeamMember]:
    return [TeamMember.model_validate(m) for m in state.get("team_candidates") or []]


def member_repair(state: State) -> MemberRepair | None:
    """The one member the last repair re-times or reassigns (its feedback's `team_repair`, written by nodes/repair),
    with what the failed round planned: its members (still the state's, as no round has executed since) and its IR.
    None when the last repair planned no such thing: execute_team then plans the whole team."""
    feedback = state.get("feedback") or {}
    planned = (feedback.get("counterexample") or {}).get("team_repair")
    members, previous_ir = state.get("team_candidates"), feedback.get("previous_ir")
    if not isinstance(planned, dict) or not members or not isinstance(previous_ir, dict):
        return None
    try:
        return MemberRepair.model_validate({**planned, "members": members, "previous_ir": previous_ir})
    except ValidationError:  # not this code's record (an edited checkpoint): plan the whole team
        return None


def member_candidate(member: TeamMember) -> dict[str, Any]:
    """A member in the one-UAV candidate's shape, so the gates' arguments are built by the same code."""
    return {"uav_id": member.uav_id, "waypoints": member.waypoints, "goal": member.goal, "origin": member.origin}


def member_world(state: State, members: list[TeamMember], member: TeamMember) -> World:
    return others_as_traffic(world_from_state(state), members, member)


def member_gate_args(
    state: State, ctx: Context, tool: str, member: TeamMember, members: list[TeamMember]
) -> dict[str, Any]:
    """gate_args for the member's route, turned into the member's (ir/team_gates: its sub-task's ends, deadline and
    share, the IR's specs it is held to)."""
    return member_overrides(
        gate_args({**state, "candidate": member_candidate(member)}, ctx, tool), tool, member, members
    )


def subtask_field(state: State, subtask_id: str) -> str:
    """The IR path of a sub-task, which a repair edits (`team.subtasks.1`)."""
    ids = [s.get("id") for s in ((state.get("ir") or {}).get("team") or {}).get("subtasks") or []]
    return f"team.subtasks.{ids.index(subtask_id)}" if subtask_id in ids else "team.subtasks"


def member_named(state: State, failure: dict[str, Any], member: TeamMember) -> dict[str, Any]:
    """A gate's failure naming the member: in the message, the suggested repair, and the counterexample's field
    (its sub-task) and value (its UAV)."""
    counterexample = dict(failure.get("counterexample") or {})
    suggestion = counterexample.get("suggested_repair") or "re-time or reassign it"
    counterexample.update(
        field=subtask_field(state, member.subtask_id),
        value=member.uav_id,
        suggested_repair=f"{member.label}: {suggestion}",
    )
    return {**failure, "message": f"{member.label}: {failure.get('message', '')}", "counterexample": counterexample}
