"""What a fleet mission's member is held to at the gates: the one definition the agent's gates (nodes/team.py) and
the benchmark's gold (benchmark/fleet.py) both build a member's verify / simulate arguments with.

A member is judged as a one-UAV route with the sub-task's ends, deadline and share in place of the request's, and
the IR's specs it is held to (`member_specs`)."""

from __future__ import annotations

import re
from typing import Any

from ir.team_execution import TeamMember

PLACE_ATOM = re.compile(r"\bat_([A-Za-z0-9_]+)")


def member_specs(specs: list[str], member: TeamMember, members: list[TeamMember]) -> list[str]:
    """The IR's specs a member is held to: all but those that name a place (`at_<id>`; `at_goal` and `at_origin` are
    the member's own ends) its sub-task does not visit while another member's does: reaching a site is the team's
    job (fidelity checks that every named site is served), keeping out of a zone is every member's. A spec that
    names a place no member visits stays with every member, so the verifier still fails it."""

    def visits(who: TeamMember, spec: str) -> bool:
        places = set(PLACE_ATOM.findall(spec)) - {"goal", "origin"}
        return places <= set(who.stops)

    return [spec for spec in specs if visits(member, spec) or not any(visits(other, spec) for other in members)]


def member_overrides(args: dict[str, Any], tool: str, member: TeamMember, members: list[TeamMember]) -> dict[str, Any]:
    """A gate's one-UAV arguments (the IR's, with the member's route and UAV) turned into the member's: its sub-task's
    ends, the specs it is held to, its share and its deadline."""
    args = dict(args)
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
