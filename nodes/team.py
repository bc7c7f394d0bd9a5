"""What the gates need of a fleet mission (issue 42): the members of the state's team, and for each the world and
the gate arguments it is judged with (the one-UAV gates' own, its sub-task's ends, deadline and share; every other
member as known traffic)."""

from __future__ import annotations

import re
from typing import Any

from ir.team_execution import TeamMember, others_as_traffic
from nodes.context import Context
from nodes.gates import gate_args
from nodes.run_world import world_from_state
from nodes.state import State
from tools.world import World

PLACE_ATOM = re.compile(r"\bat_([A-Za-z0-9_]+)")


def carries_team(state: State) -> bool:
    """The round's IR is a fleet mission: the gates judge its members, not a single candidate."""
    return bool((state.get("ir") or {}).get("team"))


def team_members(state: State) -> list[TeamMember]:
    return [TeamMember.model_validate(m) for m in state.get("team_candidates") or []]


def member_candidate(member: TeamMember) -> dict[str, Any]:
    """A member in the one-UAV candidate's shape, so the gates' arguments are built by the same code."""
    return {"uav_id": member.uav_id, "waypoints": member.waypoints, "goal": member.goal, "origin": member.origin}


def member_world(state: State, members: list[TeamMember], member: TeamMember) -> World:
    return others_as_traffic(world_from_state(state), members, member)


def member_specs(specs: list[str], member: TeamMember, members: list[TeamMember]) -> list[str]:
    """The IR's specs a member is held to: all but those that name a place (`at_<id>`; `at_goal` and `at_origin` are
    the member's own ends) its sub-task does not visit while another member's does: reaching a site is the team's
    job (fidelity checks that every named site is served), keeping out of a zone is every member's. A spec that
    names a place no member visits stays with every member, so the verifier still fails it."""

    def visits(who: TeamMember, spec: str) -> bool:
        places = set(PLACE_ATOM.findall(spec)) - {"goal", "origin"}
        return places <= set(who.stops)

    return [spec for spec in specs if visits(member, spec) or not any(visits(other, spec) for other in members)]


def member_gate_args(
    state: State, ctx: Context, tool: str, member: TeamMember, members: list[TeamMember]
) -> dict[str, Any]:
    """gate_args for the member's route, with the sub-task's ends, deadline and share in place of the request's,
    and the IR's specs the member is held to (member_specs)."""
    args = gate_args({**state, "candidate": member_candidate(member)}, ctx, tool)
    if tool == "verify_ltl_stl":
        args.update(goal=member.goal, origin=member.origin)
        for kind in ("ltl", "stl"):
            if args.get(kind):
                args[kind] = member_specs(args[kind], member, members)
    if tool in ("verify_ltl_stl", "simulate_scenario", "risk_assess"):
        args["payload_kg"] = member.share_kg
    if tool in ("verify_ltl_stl", "simulate_scenario"):
        args.pop("deadline_sec", None)
        if member.deadline_sec is not None:
            args["deadline_sec"] = member.deadline_sec
    return args


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
