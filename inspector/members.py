"""A fleet mission's members (issue 42) as the inspector draws them and `cloudbrain trace` compares them round to
round: which sub-task each UAV serves, when it departs, the route it flies.

An attempt record keeps its round's tool results, not its members. The members a round planned are what its
execute_tools step wrote to the state (`team_candidates`: every member, the ones a one-member repair kept included,
with the routes the gates judged), read from the checkpoint that step wrote on the thread's branch; a member that
assign_team chose and that was not routed (the round failed there) is added without a route. A thread forked from
another starts with the rounds before the fork closed: it holds no such checkpoint for them, and they show no team.

Nothing here imports the agent's nodes or tools: `cloudbrain trace` imports this and stays a fast read of the store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graph.history import stored_history, stored_state

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

# The tools' name (tools.catalog.TEAM_TOOL): importing the catalog loads every tool, seconds that `trace` would spend
# to read one string; tests/unit/test_inspector_members.py checks they agree.
TEAM_TOOL = "assign_team"
TEAM_STEP = "execute_tools"  # the node that plans a round's team and writes it to `team_candidates`
DEPART_TOLERANCE_SEC = 0.05  # departures are planned in whole 5 s steps; anything closer is the same departure
PATH_TOLERANCE_M = 0.05  # the planner's grid is metres: a smaller move is rounding, not another route


@dataclass(frozen=True)
class Member:
    """One member of a team plan: its sub-task, role, UAV and [x, y, z, t] route (empty: not routed this round)."""

    subtask_id: str
    role: str
    uav_id: str
    waypoints: tuple[tuple[float, float, float, float], ...] = ()

    @property
    def name(self) -> str:
        return f"{self.subtask_id} ({self.uav_id})"

    @property
    def depart_sec(self) -> float | None:
        return self.waypoints[0][3] if self.waypoints else None

    @property
    def length_m(self) -> float:
        return sum(math.dist(a[:3], b[:3]) for a, b in zip(self.waypoints, self.waypoints[1:]))

    @property
    def cruise_m(self) -> float:
        return max((w[2] for w in self.waypoints), default=0.0)


def waypoint_rows(value: Any) -> tuple[tuple[float, float, float, float], ...]:
    """[x, y, z, t] rows as floats; () when the value is not such a list (an edited state may hold anything)."""
    try:
        rows = tuple(tuple(float(v) for v in row) for row in value or ())
    except (TypeError, ValueError):
        return ()
    return rows if all(len(row) == 4 and all(map(math.isfinite, row)) for row in rows) else ()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def members_of(entries: Any) -> list[Member]:
    """Members from a list of {subtask_id, role, uav_id, waypoints} (a team decision's `team`, a round's
    `team_candidates`), in its order; entries that are not one (an edited state may hold anything) are left out."""
    members = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and _text(entry.get("subtask_id")) and _text(entry.get("uav_id")):
            role = _text(entry.get("role")) or ""
            members.append(Member(entry["subtask_id"], role, entry["uav_id"], waypoint_rows(entry.get("waypoints"))))
    return members


def decision_members(decision: Any) -> list[Member]:
    """The members of a team decision (`decision.team`); [] for a one-UAV decision."""
    return members_of(decision.get("team")) if isinstance(decision, dict) else []


def planned_teams(saver: BaseCheckpointSaver, thread_id: str, checkpoint_id: str | None = None) -> dict[int, Any]:
    """The `team_candidates` each round's execute_tools step wrote, by the round's place among the attempts, on the
    branch that ends at `checkpoint_id` (the latest checkpoint when None)."""
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in stored_history(saver, thread_id)}
    branch = [stored_state(saver, thread_id, checkpoint_id)]
    while (parent := (branch[-1].parent_config or {}).get("configurable", {}).get("checkpoint_id")) in by_id:
        branch.append(by_id[parent])
    planned = {}
    for before, written in zip(branch[1:], branch):  # `written` is the checkpoint the node `before` awaited wrote
        if before.next == (TEAM_STEP,) and written.metadata.get("source") != "update":  # not an operator's edit
            values = written.values
            planned.setdefault(len(values.get("attempts") or []), values.get("team_candidates"))  # newest first
    return planned


def plans_team(attempt: Any) -> bool:
    """Whether the round's IR plans a team (its plan_route results are then its members', none the round's route)."""
    ir = attempt.get("ir") if isinstance(attempt, dict) else None
    return isinstance(ir, dict) and bool(ir.get("team"))


def round_members(attempt: Any, candidates: Any) -> list[Member] | None:
    """The team a round planned (`candidates`: what its execute_tools step wrote), with any member assign_team chose
    that was not routed (no route); None for a round that planned no team (a one-UAV IR, or a round that ended before
    execute_tools)."""
    if not plans_team(attempt) or candidates is None:
        return None
    ir = attempt["ir"]
    members = members_of(candidates)
    assigned = [r for r in attempt.get("tool_results") or [] if isinstance(r, dict) and r.get("tool") == TEAM_TOOL]
    result = assigned[-1].get("result") if assigned and assigned[-1].get("ok") else None
    subtasks = ir["team"].get("subtasks") if isinstance(ir["team"], dict) else None
    roles = {s.get("id"): s.get("role") for s in subtasks if isinstance(s, dict)} if isinstance(subtasks, list) else {}
    for chosen in members_of(result.get("team") if isinstance(result, dict) else None):
        if all((m.subtask_id, m.uav_id) != (chosen.subtask_id, chosen.uav_id) for m in members):
            members.append(Member(chosen.subtask_id, _text(roles.get(chosen.subtask_id)) or "", chosen.uav_id))
    return members


def team_rounds(
    saver: BaseCheckpointSaver, thread_id: str, checkpoint_id: str | None = None
) -> list[list[Member] | None]:
    """Each closed round's team (round_members), in the order of the thread's attempts."""
    attempts = stored_state(saver, thread_id, checkpoint_id).values.get("attempts") or []
    if not any(map(plans_team, attempts)):  # a one-UAV run: its history is not read
        return [None] * len(attempts)
    planned = planned_teams(saver, thread_id, checkpoint_id)
    return [round_members(attempt, planned.get(i)) for i, attempt in enumerate(attempts)]


def _num(value: float) -> str:
    """'45', '37.5' (a tenth at most, no '.0')."""
    return f"{round(value, 1):g}"


def _same_path(a: Member, b: Member) -> bool:
    """The same places flown through (x, y, z), whenever it departs."""
    return len(a.waypoints) == len(b.waypoints) and all(
        math.dist(p[:3], q[:3]) <= PATH_TOLERANCE_M for p, q in zip(a.waypoints, b.waypoints)
    )


def _route_change(old: Member, new: Member) -> str:
    details = []
    if abs(old.cruise_m - new.cruise_m) > PATH_TOLERANCE_M:
        details.append(f"cruise {_num(old.cruise_m)} -> {_num(new.cruise_m)} m")
    if abs(old.length_m - new.length_m) >= 1.0:
        details.append(f"{_num(old.length_m)} -> {_num(new.length_m)} m long")
    return "route changed" + (f" ({', '.join(details)})" if details else "")


def _pair_change(old: Member, new: Member) -> str | None:
    """What changed for one member between two rounds, or None."""
    parts = []
    if old.role != new.role:
        parts.append(f"role {old.role or '?'} -> {new.role or '?'}")
    if old.waypoints and not new.waypoints:
        parts.append("no route this round")
    elif new.waypoints and not old.waypoints:
        parts.append(f"routed, departs {_num(new.depart_sec or 0.0)} s")
    elif old.waypoints and new.waypoints:
        if abs((old.depart_sec or 0.0) - (new.depart_sec or 0.0)) > DEPART_TOLERANCE_SEC:
            parts.append(f"departs {_num(old.depart_sec or 0.0)} s -> {_num(new.depart_sec or 0.0)} s")
        if not _same_path(old, new):
            parts.append(_route_change(old, new))
    if old.uav_id != new.uav_id:
        return "; ".join([f"{new.subtask_id}: {old.uav_id} -> {new.uav_id}", *parts])
    return f"{new.name}: {'; '.join(parts)}" if parts else None


def _described(member: Member) -> str:
    where = f"departs {_num(member.depart_sec)} s" if member.depart_sec is not None else "no route"
    return f"{member.name} {member.role or '?'}, {where}"


def member_changes(before: Sequence[Member], after: Sequence[Member], stopped: bool = False) -> list[str]:
    """Per member, what changed from one team plan to the next, naming it by sub-task and UAV: 't2: uav_05 ->
    uav_06' (reassigned), 't1 (uav_03): departs 35 s -> 50 s; route changed (cruise 30 -> 50 m)', 't3 (uav_07)
    added', 't3 (uav_07) removed'. A sub-task's members are matched by UAV first (a split load has several), the rest
    in plan order; one left over was added or removed. `stopped`: the round's planning failed part-way, so a member
    missing from `after` was not planned rather than removed."""
    lines = []
    for subtask in dict.fromkeys(m.subtask_id for m in [*before, *after]):
        old = [m for m in before if m.subtask_id == subtask]
        new = [m for m in after if m.subtask_id == subtask]
        kept = {m.uav_id for m in old} & {m.uav_id for m in new}
        gone = [m for m in old if m.uav_id not in kept]
        came = [m for m in new if m.uav_id not in kept]
        pairs = [(next(o for o in old if o.uav_id == n.uav_id), n) for n in new if n.uav_id in kept]
        pairs = sorted([*pairs, *zip(gone, came)], key=lambda pair: new.index(pair[1]))  # the new plan's order
        lines += [line for o, n in pairs if (line := _pair_change(o, n))]
        missing = "not planned (the round's planning failed first)" if stopped else "removed"
        lines += [f"{m.name} {missing}" for m in gone[len(came) :]]
        lines += [f"{_described(m)}: added" for m in came[len(gone) :]]
    return lines


def rounds_member_changes(rounds: Sequence[list[Member] | None], attempts: Sequence[Any] = ()) -> list[list[str]]:
    """For each round, its team against the last team an earlier round planned: the team itself on the first round
    that planned one, then what changed per member; [] for a round that planned no team (a one-UAV round).
    `attempts` (the rounds' records) tell which rounds' planning failed part-way."""
    out: list[list[str]] = []
    previous: list[Member] = []
    padded = [*attempts, *[{}] * (len(rounds) - len(attempts))]
    for members, attempt in zip(rounds, padded):
        if members is None:
            out.append([])
        elif not members:
            had = ", ".join(m.name for m in previous)
            what = "no team assigned" if _unassigned(attempt) else "no member planned"
            out.append([f"{what}{f' (the last team: {had})' if had else ''}"])
        elif not previous:
            out.append(["team: " + "; ".join(_described(m) for m in members)])
        else:
            out.append(member_changes(previous, members, _stopped(attempt)))
        previous = members or previous
    return out


def _stopped(attempt: Any) -> bool:
    """The round failed in its planning step (a member not routed, no team assigned)."""
    failure = attempt.get("failure") if isinstance(attempt, dict) else None
    return isinstance(failure, dict) and failure.get("stage") == TEAM_STEP


def _unassigned(attempt: Any) -> bool:
    """The round's assign_team call found no team."""
    results = attempt.get("tool_results") if isinstance(attempt, dict) else None
    assigned = [r for r in results or [] if isinstance(r, dict) and r.get("tool") == TEAM_TOOL]
    return bool(assigned) and not assigned[-1].get("ok")
