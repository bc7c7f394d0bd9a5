"""verify: the candidate route against R1-R6 (STL via rtamt) and the IR's LTL specs; the first safety gate.

A fleet mission's every member is verified by the same call, in a world where every other member is known traffic:
the verifier's separation from traffic (R2) is then exactly the members' pairwise separation. The verdict of a team
is {"members": [{subtask_id, uav_id, ...the member's verdict}]}; the first failing member ends the gate, named."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from nodes.context import Context
from nodes.failures import failure_from_tool
from nodes.gates import gate_args
from nodes.run_world import world_from_state
from nodes.state import State
from nodes.team import carries_team, member_gate_args, member_named, member_world, team_members
from tools.catalog import default_registry

READS = ("candidate", "ir", "world", "team_candidates")
TOOL = "verify_ltl_stl"


def _verify_team(state: State, ctx: Context) -> dict[str, Any]:
    members = team_members(state)
    verdicts: list[dict[str, Any]] = []
    update: dict[str, Any] = {"verdict": {"members": verdicts}, "tool_results": [], "failure": None}
    for member in members:
        result = default_registry().call(
            TOOL, member_world(state, members, member), member_gate_args(state, ctx, TOOL, member, members)
        )
        dumped = result.model_dump(mode="json")
        verdicts.append({"subtask_id": member.subtask_id, "uav_id": member.uav_id, **dumped})
        update["tool_results"].append(dumped)
        if not result.ok:
            return {**update, "failure": member_named(state, failure_from_tool("verify", result), member)}
    return update


def verify(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    if carries_team(state):
        return _verify_team(state, runtime.context)
    result = default_registry().call(TOOL, world_from_state(state), gate_args(state, runtime.context, TOOL))
    dumped = result.model_dump(mode="json")
    return {
        "verdict": dumped,
        "tool_results": [dumped],
        "failure": None if result.ok else failure_from_tool("verify", result),
    }
