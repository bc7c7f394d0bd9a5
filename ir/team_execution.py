"""A fleet mission's tool work (issue 42): the IR's team assigned by assign_team, then each member's route planned in
turn by plan_route, the tool a one-UAV plan uses, with the earlier members as known traffic.

The planner does not route round moving traffic, so a member keeps clear of the earlier ones in time: it departs
later, in STAGGER_STEP_SEC steps, until its planned route stays TEAM_SEPARATION_FACTOR x the IR's minimum separation
from every earlier member all the way (measured by the verifier's own traffic signal), even with either of the two
running late by what the simulate gate may make of it: DELAY_BASE_SEC at take-off (a detect-and-avoid wait), then
DELAY_PER_FLOWN_SEC more per second flown (gust slowdowns, holds at pop-up zones), at most DELAY_TOLERANCE_SEC (the
medium stress level's holds and gust delays stay under these). The simulate gate flies one member at a time while
the others fly their plans; its near miss is at 1.5 x the separation and its avoidance aims at 2 x, hence the factor.
A relay leg departs no earlier than its `after` sub-tasks' members have landed.

A member is traffic for its whole time in the world (tools/team_traffic.member_track): parked at its start until it
departs and where it landed after. Departing later cannot clear a parked member, so a member whose landing point lies
within SLOT_SEPARATION_FACTOR x the minimum separation of another member's start or landing point lands at a slot
within the arrival tolerance that keeps clear of all of them (a short level move before its descent); when none
does, the team fails naming the site and the members. Whether
the members are safe together is the gates' to judge, each member with the others as traffic: nothing here
certifies anything.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from ir.model import LowAltitudeIR, SubTask
from ir.plan_execution import StepRecord, StressLevel, execute_plan, ir_tool_args
from tools import route, signals
from tools.catalog import TEAM_TOOL
from tools.contract import ToolErrorInfo, ToolResult
from tools.registry import ToolRegistry
from tools.team_traffic import (
    flight_track,
    landing_slot,
    member_track,
    move_landing,
    slot_clear_m,
    slot_preferred_m,
    too_close,
    with_members_as_traffic,
)
from tools.trajectory import Trajectory
from tools.world import TrafficTrack, World

ROUTE_TOOL = route.SPEC.name
TEAM_SEPARATION_FACTOR = 3.0
STAGGER_STEP_SEC = 5.0
MAX_STAGGER_SEC = 300.0  # a member that must wait longer than this for the others is the operator's to schedule
SEPARATION_SAMPLE_SEC = 0.25  # fine enough that the check misses no closest approach by more than a metre or two
DELAY_BASE_SEC = 5.0
DELAY_PER_FLOWN_SEC = 0.15
DELAY_TOLERANCE_SEC = 20.0
DELAY_STEP_SEC = 1.0


class TeamMember(BaseModel):
    """One UAV of the team with its planned route: what verify, simulate, fidelity and the decision read."""

    subtask_id: str
    role: str
    uav_id: str
    share_kg: float = Field(description="the payload it carries")
    origin: str = Field(description="the sub-task's origin (where its load waits, or the relay pad)")
    goal: str = Field(description="the sub-task's destination")
    stops: list[str] = Field(default_factory=list, description="the sub-task's places: origin, waypoints, destination")
    waypoints: list[list[float]] = Field(description="[x, y, z, t], t on the mission's clock (0 = now)")
    eta_sec: float | None = None
    energy_wh: float | None = None
    depart_sec: float = Field(default=0.0, description="when it takes off: later for a relay leg or to keep clear")
    deadline_sec: float | None = Field(default=None, description="the sub-task's, else the IR's deadline")

    @property
    def label(self) -> str:
        return f"member {self.subtask_id} ({self.uav_id})"

    def track(self) -> TrafficTrack:
        """The member as the others see it: parked at its start, its flight, parked where it landed."""
        return member_track(self.subtask_id, self.uav_id, self.waypoints)

    def flight(self) -> TrafficTrack:
        """Its flight alone, departure to touchdown (what the staggering times the later members by)."""
        return flight_track(self.subtask_id, self.uav_id, self.waypoints)


class TeamExecution(BaseModel):
    results: list[StepRecord] = Field(default_factory=list)
    members: list[TeamMember] = Field(default_factory=list)
    failed_step: str | None = None
    failed_result: ToolResult | None = Field(default=None, description="the failing step's result, member named")
    subtask_id: str | None = Field(default=None, description="the sub-task of the member that failed")

    @property
    def ok(self) -> bool:
        return self.failed_step is None


def subtask_deadline(ir: LowAltitudeIR, subtask: SubTask) -> float | None:
    return subtask.deadline_sec if subtask.deadline_sec is not None else ir.constraints.deadline_sec


def assign_team_args(ir: LowAltitudeIR, excluded: Collection[str] = ()) -> dict[str, Any]:
    """assign_team's arguments from the IR: its sub-tasks (the IR's deadline where a sub-task gives none, its `uavs`
    as the pinned UAVs), candidate UAVs, battery reserve and objective, and the UAVs the request leaves out."""
    assert ir.team is not None
    subtasks = [
        {
            **subtask.model_dump(exclude={"role"}),
            "deadline_sec": subtask_deadline(ir, subtask),
        }
        for subtask in ir.team.subtasks
    ]
    return {
        "subtasks": subtasks,
        "candidates": list(ir.entities.candidate_uavs),
        "excluded": list(dict.fromkeys(excluded)),
        "battery_reserve_ratio": ir.constraints.battery_reserve_ratio,
        "objective": ir.team.objective,
    }


def others_as_traffic(world: World, members: list[TeamMember], member: TeamMember) -> World:
    """The world `member` is judged in: every other member is known traffic."""
    return with_members_as_traffic(world, [m.track() for m in members if m is not member])


def lateness_allowed(flown_sec: np.ndarray) -> np.ndarray:
    """How late a member may be, by the seconds it has flown of its plan (see the module's docstring)."""
    return np.minimum(DELAY_TOLERANCE_SEC, DELAY_BASE_SEC + DELAY_PER_FLOWN_SEC * np.maximum(flown_sec, 0.0))


def closest_approach(
    waypoints: list[list[float]], tracks: list[TrafficTrack], world: World, *, late: bool = False
) -> tuple[float, str | None]:
    """The least 3D distance from the route to any of `tracks` while both fly, and which track (the verifier's
    traffic signal, sampled finely); with `late`, also with the route or the track running late by what
    lateness_allowed allows. Infinite when none flies at the same time."""
    if not tracks:
        return math.inf, None
    samples = Trajectory(waypoints=waypoints).sample(SEPARATION_SAMPLE_SEC)
    flown = samples[:, 3] - samples[0, 3]
    delays = (
        np.arange(-DELAY_TOLERANCE_SEC, DELAY_TOLERANCE_SEC + DELAY_STEP_SEC / 2, DELAY_STEP_SEC) if late else [0.0]
    )
    closest: tuple[float, str | None] = (math.inf, None)
    for track in tracks:
        track_start = track.waypoints[0][3]
        for delay in delays:
            # the route at its planned point t meets the track at its point t + delay: the route `delay` late, or
            # (delay < 0) the track that much late, each only where its flight so far allows it
            if delay >= 0:
                allowed = lateness_allowed(flown) >= delay
            else:
                allowed = lateness_allowed(samples[:, 3] + delay - track_start) >= -delay
            if not allowed.any():
                continue
            shifted = samples[allowed] + [0.0, 0.0, 0.0, delay]
            _, distance, hit = signals.traffic_separation(world, shifted, [track]).worst()
            if hit is not None and distance < closest[0]:
                closest = (distance, hit)
    return closest


def _delay_to_keep_clear(
    waypoints: list[list[float]], tracks: list[TrafficTrack], world: World, need_m: float, most_sec: float
) -> float | None:
    """The least delay (in STAGGER_STEP_SEC steps, up to most_sec) at which the same route keeps need_m from every
    track, however late either runs; None if no delay that long does."""
    for k in range(int(most_sec // STAGGER_STEP_SEC) + 1):
        delay = k * STAGGER_STEP_SEC
        shifted = (np.asarray(waypoints, dtype=float) + [0.0, 0.0, 0.0, delay]).tolist()
        if closest_approach(shifted, tracks, world, late=True)[0] >= need_m:
            return delay
    return None


def _eta(planned: float | None, routed: list[list[float]], flown: list[list[float]]) -> float | None:
    """plan_route's ETA, later by what a moved landing adds."""
    if planned is None:
        return None
    return round(float(planned) + (flown[-1][3] - routed[-1][3]), 3)


def _named(result: ToolResult, prefix: str, note: str = "") -> ToolResult:
    """The result with its error message naming the member (and the binding constraint or the wait it took)."""
    error = result.error or ToolErrorInfo(type="tool_failed", message="no error info", recoverable=False)
    message = f"{prefix}: {error.message}{note}" if prefix else f"{error.message}{note}"
    return result.model_copy(update={"error": error.model_copy(update={"message": message})})


def _separation_failure(tool_result: ToolResult, member: str, track: str | None, waited: float) -> ToolResult:
    error = ToolErrorInfo(
        type="team_separation",
        message=f"{member} cannot keep clear of {track} by departing up to {waited:g} s later",
        recoverable=True,
        suggested_actions=[
            f"re-time or reassign {member}: pin another UAV to its sub-task or give it a later deadline"
        ],
        blockers=[track] if track else [],
    )
    return tool_result.model_copy(update={"ok": False, "error": error})


def _slot_failure(tool_result: ToolResult, member: str, site: str, near: list[str], clear_m: float) -> ToolResult:
    error = ToolErrorInfo(
        type="team_landing_slot",
        message=f"{member} has no landing spot at {site} within the arrival tolerance that keeps {clear_m:g} m from "
        f"the parked members ({', '.join(near)})",
        recoverable=False,
        suggested_actions=[f"send {member} or the members parked there ({', '.join(near)}) to another site"],
        blockers=near,
    )
    return tool_result.model_copy(update={"ok": False, "error": error})


def _parked_positions(
    world: World, members: list[TeamMember], team: list[dict[str, Any]], uav_id: str
) -> dict[str, tuple[float, float]]:
    """Where the other members stand on the ground at some time: every other member's start (the team's UAVs'
    positions, planned yet or not) and every planned member's landing point, by label."""
    parked: dict[str, tuple[float, float]] = {}
    for chosen in team:
        other = chosen["uav_id"]
        if other != uav_id and other in world.uav_index:
            x, y = world.uav_index[other].position
            parked[f"{other} at its start"] = (float(x), float(y))
    for m in members:
        if m.uav_id != uav_id:
            parked[f"{m.uav_id} landed at {m.goal}"] = (m.waypoints[-1][0], m.waypoints[-1][1])
    return parked


def _slotted(
    world: World,
    waypoints: list[list[float]],
    uav_id: str,
    parked: dict[str, tuple[float, float]],
    min_separation_m: float,
    later: int,
) -> list[list[float]] | None:
    """The route with its landing moved to a slot clear of the parked members and leaving room for the `later`
    members still to land at the same site (the route itself when its landing point already is); None when no slot
    within the arrival tolerance is."""
    land = waypoints[-1]
    clear_m, preferred_m = slot_clear_m(min_separation_m), slot_preferred_m(min_separation_m)
    if not later and not too_close(land, parked.values(), preferred_m):
        return waypoints
    slot = landing_slot(
        world,
        land,
        list(parked.values()),
        clear_m,
        preferred_m=preferred_m,
        later=later,
        at_sec=(waypoints[0][3], math.inf),
    )
    if slot is None:
        return None
    uav = world.uav_index.get(uav_id)
    speed = uav.cruise_speed_mps if uav is not None else 10.0
    return move_landing(waypoints, slot, speed)


def execute_team(
    ir: LowAltitudeIR,
    world: World,
    registry: ToolRegistry,
    *,
    excluded: Collection[str] = (),
    only_tools: Collection[str],
    seed: int = 0,
    stress_level: StressLevel = "medium",
) -> TeamExecution:
    """The IR's own action steps in `only_tools` (airspace, city: the one-UAV assign / route steps left out), then
    assign_team, then every member's route in the team's dependency order. Stops at the first failure, naming the
    member."""
    assert ir.team is not None
    plan = execute_plan(ir, world, registry, seed=seed, stress_level=stress_level, only_tools=only_tools)
    records = list(plan.results)
    if not plan.ok:
        failed = next((r for r in records if r.step_id == plan.failed_step), None)
        return TeamExecution(results=records, failed_step=plan.failed_step, failed_result=failed and failed.result)
    team_args = assign_team_args(ir, excluded)
    assigned = registry.call(TEAM_TOOL, world, team_args)
    records.append(StepRecord(step_id="team", tool=TEAM_TOOL, args=team_args, result=assigned))
    if not assigned.ok:
        binding = (assigned.result or {}).get("binding_constraint")
        note = f" (binding constraint: {binding})" if binding else ""
        return TeamExecution(results=records, failed_step="team", failed_result=_named(assigned, "", note))
    subtasks = {s.id: s for s in ir.team.subtasks}
    route_args = ir_tool_args(ROUTE_TOOL, ir, seed=seed, stress_level=stress_level)
    accepted = set(registry.spec(ROUTE_TOOL).args_model.model_fields)
    need_m = TEAM_SEPARATION_FACTOR * ir.constraints.min_separation_m
    clear_m = slot_clear_m(ir.constraints.min_separation_m)
    members: list[TeamMember] = []
    team = list((assigned.result or {}).get("team") or [])
    for chosen in team:
        subtask = subtasks[chosen["subtask_id"]]
        label = f"member {subtask.id} ({chosen['uav_id']})"
        earliest = max((m.waypoints[-1][3] for m in members if m.subtask_id in subtask.after), default=0.0)
        deadline = subtask_deadline(ir, subtask)
        args = {k: v for k, v in route_args.items() if k in accepted and k not in ("deadline_sec",)}
        args.update(
            start=subtask.origin,
            goal=subtask.destination,
            waypoints=list(subtask.waypoints),
            uav_id=chosen["uav_id"],
            payload_kg=chosen["share_kg"],
            **({"deadline_sec": deadline} if deadline is not None else {}),
        )
        earlier = [m.flight() for m in members]  # a parked member is kept clear of by the landing slot
        parked = _parked_positions(world, members, team, chosen["uav_id"])
        depart = earliest
        while True:
            step_id = f"team.{subtask.id}.{chosen['uav_id']}"
            routed = registry.call(ROUTE_TOOL, world, {**args, "depart_time_sec": depart})
            records.append(
                StepRecord(step_id=step_id, tool=ROUTE_TOOL, args={**args, "depart_time_sec": depart}, result=routed)
            )
            if not routed.ok:
                waited = depart - earliest
                note = f" (it departs {waited:g} s late to keep clear of the earlier members)" if waited else ""
                return TeamExecution(
                    results=records,
                    members=members,
                    failed_step=step_id,
                    failed_result=_named(routed, label, note),
                    subtask_id=subtask.id,
                )
            later = sum(
                1 for c in team[len(members) + 1 :] if subtasks[c["subtask_id"]].destination == subtask.destination
            )
            waypoints = _slotted(
                world, routed.result["waypoints"], chosen["uav_id"], parked, ir.constraints.min_separation_m, later
            )
            if waypoints is None:
                land = routed.result["waypoints"][-1]
                reach = world.arrival_tolerance_m + clear_m
                near = [k for k, p in parked.items() if math.hypot(p[0] - land[0], p[1] - land[1]) < reach]
                failed = _slot_failure(routed, label, subtask.destination, near or list(parked), clear_m)
                records[-1] = records[-1].model_copy(update={"result": failed})
                return TeamExecution(
                    results=records, members=members, failed_step=step_id, failed_result=failed, subtask_id=subtask.id
                )
            budget = MAX_STAGGER_SEC - (depart - earliest)
            delay = _delay_to_keep_clear(waypoints, earlier, world, need_m, budget)
            if delay is None:
                _, nearest = closest_approach(waypoints, earlier, world)
                failed = _separation_failure(routed, label, nearest, MAX_STAGGER_SEC)
                records[-1] = records[-1].model_copy(update={"result": failed})
                return TeamExecution(
                    results=records, members=members, failed_step=step_id, failed_result=failed, subtask_id=subtask.id
                )
            if delay == 0:
                break
            depart += delay  # re-planned at the new departure: the same route unless a timed zone changes it
        members.append(
            TeamMember(
                subtask_id=subtask.id,
                role=subtask.role,
                uav_id=chosen["uav_id"],
                share_kg=chosen["share_kg"],
                origin=subtask.origin,
                goal=subtask.destination,
                stops=[subtask.origin, *subtask.waypoints, subtask.destination],
                waypoints=[list(map(float, wp)) for wp in waypoints],
                eta_sec=_eta(routed.result.get("eta_sec"), routed.result["waypoints"], waypoints),
                energy_wh=routed.result.get("energy_wh"),
                depart_sec=depart,
                deadline_sec=deadline,
            )
        )
    return TeamExecution(results=records, members=members)
