"""A fleet mission's tool work (issue 42): the IR's team assigned by assign_team, then each member's route planned in
turn by plan_route, the tool a one-UAV plan uses, with the earlier members as known traffic.

The planner does not route round moving traffic, so a member keeps clear of the earlier ones in time: it departs
later, in STAGGER_STEP_SEC steps, until its planned route stays TEAM_SEPARATION_FACTOR x the IR's minimum separation
from every earlier member and every known traffic track of the world all the way (measured by the verifier's own traffic signal), even with either of the two
running late by what the run's stress level may make of it (`Lateness`, from the simulator's own stress profile):
DELAY_BASE_SEC (a detect-and-avoid wait at take-off), DELAY_PER_FLOWN_SEC more per second flown (gust slowdowns), at
most GUST_DELAY_MOST_SEC of those, and from 30 % of its flight on the longest hold at a pop-up no-fly zone the level
draws (medium: 25 s). A take-off held back longer by detect-and-avoid (the simulator waits up to 60 s on the ground)
is not covered: the gates fly that. The simulate gate flies one member at a time while
the others fly their plans; its near miss is at 1.5 x the separation and its avoidance aims at 2 x, hence the factor.
A relay leg departs no earlier than its `after` sub-tasks' members have landed.

A member is traffic for its whole time in the world (tools/team_traffic.member_track): parked at its start until it
departs and where it landed after. Departing later cannot clear a parked member, so a member whose landing point lies
within SLOT_SEPARATION_FACTOR x the minimum separation of another member's start or landing point lands at a slot
within the arrival tolerance that keeps clear of all of them (a short level move before its descent); when none
does, the team fails naming the site and the members. Whether
the members are safe together is the gates' to judge, each member with the others as traffic: nothing here
certifies anything.

A repair round after one member failed a gate (MemberRepair, planned by nodes/repair.py) changes that member alone
(repair_member): every other member keeps its UAV and its route as the failed round planned them, byte for byte, as
long as the round's IR plans the same routes (only who may fly differs). The member is re-timed first when its
failure was one of timing (separation from traffic, a deadline): the departure nearest the failed one, later
before earlier (earlier only for a deadline), on the stagger rule's 5 s grid, at which its route keeps the rule's
distance from every other member's flight and from the traffic the failure named, and comes no closer to the track
it failed against. Otherwise, or when no departure does, its sub-task (its share of a split one) is reassigned: the
one sub-task assigned by assign_team with every other member's UAV left out, then routed with the others as
traffic. A member that comes after it (a relay's later leg) is kept while it still leaves after the changed one has
landed and keeps clear of it, else re-timed on its own UAV. When neither works the round fails naming the member,
not recoverable.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
import shapely
from pydantic import BaseModel, Field, ValidationError

from ir.model import LowAltitudeIR, SubTask
from ir.plan_execution import StepRecord, StressLevel, execute_plan, ir_tool_args
from tools import route, signals
from tools.catalog import TEAM_TOOL
from tools.contract import Provenance, ToolErrorInfo, ToolResult, stable_hash
from tools.registry import ToolRegistry
from tools.simulator import STRESS
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
from tools.trajectory import Trajectory, interpolation_knots
from tools.world import TrafficTrack, World

ROUTE_TOOL = route.SPEC.name
TEAM_SEPARATION_FACTOR = 3.0
STAGGER_STEP_SEC = 5.0
MAX_STAGGER_SEC = 300.0  # a member that must wait longer than this for the others is the operator's to schedule
SEPARATION_SAMPLE_SEC = 0.25  # fine enough that the check misses no closest approach by more than a metre or two
DELAY_BASE_SEC = 5.0
DELAY_PER_FLOWN_SEC = 0.15
GUST_DELAY_MOST_SEC = 15.0
HOLD_FROM_FRACTION = 0.3  # a pop-up zone's centre is 35-65 % into the flight: its hold area's edge a little before
HOLD_SLACK_SEC = 5.0  # a hold starts at the hold margin, a little before the zone's planned entry
DELAY_STEP_SEC = 1.0
REASSIGN_TRIES = 3  # UAVs a repair round routes for a failed member's sub-task before it gives up


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
    repair: str | None = Field(default=None, description="a repair round's one change: the member, what, why")

    @property
    def ok(self) -> bool:
        return self.failed_step is None


class MemberRepair(BaseModel):
    """A repair round's one change to a fleet mission, planned by the repair node from the member a gate failed:
    that member is re-timed, re-routed or reassigned, every other member of the failed round keeps its UAV and its
    route."""

    subtask_id: str
    uav_id: str
    action: Literal["retime", "reroute", "reassign"] = Field(
        description="retime: another departure of the same UAV, else reassign; reroute: the same UAV and departure "
        "on a route kept out of `avoid`, else reassign; reassign: another idle UAV"
    )
    cause: Literal["separation", "deadline", "other"] = Field(
        default="other", description="what failed: a re-time tries later and earlier departures, or only earlier"
    )
    why: str = Field(default="", description="the gate's failure, in words (for the round's record)")
    tracks: list[str] = Field(
        default_factory=list, description="the traffic the failure named (a member's or the world's): kept clear of"
    )
    avoid: list[str] = Field(
        default_factory=list,
        description="the zones the failure named (one the route crossed): the changed member's route keeps out of them",
    )
    members: list[TeamMember] = Field(description="the failed round's members, in their planned order")
    previous_ir: dict[str, Any] = Field(description="the failed round's IR, which they were planned from")


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


@dataclass(frozen=True)
class Lateness:
    """How late a member may run at a stress level, by the seconds it has flown of its flight: DELAY_BASE_SEC from
    take-off, gust slowdowns of DELAY_PER_FLOWN_SEC per second flown (at most GUST_DELAY_MOST_SEC), and, from
    HOLD_FROM_FRACTION of its flight on, the longest hold at a pop-up no-fly zone the level draws. The simulator
    (tools/simulator._popup_zone) centres that zone 35-65 % into the flight, makes it active from `notice` before the
    UAV gets there for `duration`, and holds the UAV outside until it lapses: at most the longest duration less the
    shortest notice, plus the seconds the hold margin takes. Before 2026-11-28 the allowance was 5 s + 0.15 s per
    second flown, at most 20 s, whatever the level: the judge found a held member run into by the next one."""

    hold_sec: float

    @property
    def most_sec(self) -> float:
        return DELAY_BASE_SEC + GUST_DELAY_MOST_SEC + self.hold_sec

    def allowed(self, flown_sec: np.ndarray, flight_sec: float) -> np.ndarray:
        flown = np.maximum(flown_sec, 0.0)
        gusts = np.minimum(GUST_DELAY_MOST_SEC, DELAY_PER_FLOWN_SEC * flown)
        return DELAY_BASE_SEC + gusts + np.where(flown >= HOLD_FROM_FRACTION * flight_sec, self.hold_sec, 0.0)

    def delays(self) -> np.ndarray:
        return np.arange(-self.most_sec, self.most_sec + DELAY_STEP_SEC / 2, DELAY_STEP_SEC)


def lateness_at(stress_level: str) -> Lateness:
    profile = STRESS[stress_level]
    if profile.popup_half_size_m is None:
        return Lateness(hold_sec=0.0)
    longest = profile.popup_duration_sec[1] - max(0.0, profile.popup_notice_sec[0])
    return Lateness(hold_sec=longest + HOLD_SLACK_SEC)


def flight_span(waypoints: list[list[float]] | np.ndarray) -> tuple[float, float]:
    """When a track leaves its first position and reaches its last (a member parked before or after its flight)."""
    points = np.asarray(waypoints, dtype=float)
    moving = np.flatnonzero(np.linalg.norm(np.diff(points[:, :3], axis=0), axis=1) > 1e-6)
    if not len(moving):
        return float(points[0, 3]), float(points[0, 3])
    return float(points[moving[0], 3]), float(points[moving[-1] + 1, 3])


def closest_approach(
    waypoints: list[list[float]], tracks: list[TrafficTrack], world: World, *, late: Lateness | None = None
) -> tuple[float, str | None]:
    """The least 3D distance from the route to any of `tracks` while both fly, and which track (the verifier's
    traffic signal, sampled finely); with `late`, also with the route or the track running late by what it
    allows (a track of the world's own traffic flies as published: only the route runs late against it). Infinite
    when none flies at the same time."""
    if not tracks:
        return math.inf, None
    samples = Trajectory(waypoints=waypoints).sample(SEPARATION_SAMPLE_SEC)
    depart, land = flight_span(waypoints)
    flown = samples[:, 3] - depart
    delays = late.delays() if late is not None else [0.0]
    closest: tuple[float, str | None] = (math.inf, None)
    # nearest paths first: a track whose path never comes within the closest distance found so far (in plan, at
    # any time) cannot be closer, so it is skipped unmeasured
    path = shapely.LineString(samples[:, :2]) if len(samples) > 1 else shapely.Point(samples[0, :2])
    apart = {id(t): path.distance(_path(t)) for t in tracks}
    published = {t.id for t in world.traffic}
    for track in sorted(tracks, key=lambda t: apart[id(t)]):
        if apart[id(track)] >= closest[0]:
            break
        track_depart, track_land = flight_span(track.waypoints)
        punctual = track.id in published
        shifted = []
        for delay in delays:
            if delay < 0 and punctual:
                continue
            # the route at its planned point t meets the track at its point t + delay: the route `delay` late, or
            # (delay < 0) the track that much late, each only where its flight so far allows it
            if late is None:
                allowed = np.ones(len(flown), dtype=bool)
            elif delay >= 0:
                allowed = late.allowed(flown, land - depart) >= delay
            else:
                track_flown = samples[:, 3] + delay - track_depart
                allowed = late.allowed(track_flown, track_land - track_depart) >= -delay
            if allowed.any():
                shifted.append(samples[allowed] + [0.0, 0.0, 0.0, delay])
        if not shifted:
            continue
        # every delay's samples in one call: the signal judges each sample on its own
        _, distance, hit = signals.traffic_separation(world, np.concatenate(shifted), [track]).worst()
        if hit is not None and distance < closest[0]:
            closest = (distance, hit)
    return closest


def _path(track: TrafficTrack) -> shapely.Geometry:
    xy = interpolation_knots(np.asarray(track.waypoints, dtype=float))[1][:, :2]  # as positions_at reads it
    return shapely.LineString(xy) if len(xy) > 1 else shapely.Point(xy[0])


def _delay_to_keep_clear(
    waypoints: list[list[float]],
    tracks: list[TrafficTrack],
    world: World,
    need_m: float,
    most_sec: float,
    late: Lateness,
) -> float | None:
    """The least delay (in STAGGER_STEP_SEC steps, up to most_sec) at which the same route keeps need_m from every
    track, however late either runs; None if no delay that long does."""
    for k in range(int(most_sec // STAGGER_STEP_SEC) + 1):
        delay = k * STAGGER_STEP_SEC
        shifted = (np.asarray(waypoints, dtype=float) + [0.0, 0.0, 0.0, delay]).tolist()
        if closest_approach(shifted, tracks, world, late=late)[0] >= need_m:
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


class _Failed(NamedTuple):
    """A member that could not be routed: its plan_route step and the failing result, the member named."""

    step_id: str
    result: ToolResult


@dataclass
class _Router:
    """What routing one member needs, the same for every member of a run; every plan_route call is recorded."""

    ir: LowAltitudeIR
    world: World
    registry: ToolRegistry
    route_args: dict[str, Any]  # plan_route's arguments from the IR, less each sub-task's own
    records: list[StepRecord]
    lateness: Lateness

    @property
    def need_m(self) -> float:
        return TEAM_SEPARATION_FACTOR * self.ir.constraints.min_separation_m

    @property
    def clear_m(self) -> float:
        return slot_clear_m(self.ir.constraints.min_separation_m)

    def with_world_traffic(self, tracks: list[TrafficTrack]) -> list[TrafficTrack]:
        """`tracks` and the world's own known traffic not already among them: what a member keeps clear of (the
        planner keeps that traffic min separation away on time, and a member held back by the stress, a hold or
        gusts, would meet it late)."""
        own = {track.id for track in tracks}
        return [*tracks, *(track for track in self.world.traffic if track.id not in own)]

    def route(
        self,
        subtask: SubTask,
        uav_id: str,
        share_kg: float,
        *,
        earliest: float,
        depart: float,
        tracks: list[TrafficTrack],
        parked: dict[str, tuple[float, float]],
        later: int = 0,
        most_wait: float = MAX_STAGGER_SEC,
        avoid: Collection[str] = (),
    ) -> TeamMember | _Failed:
        """The member's route from `depart` on, departing later in STAGGER_STEP_SEC steps (up to most_wait more)
        until it keeps need_m from every track however late either runs, landing at a slot clear of `parked` and of
        the `later` members still to land at its site, kept out of the IR's zones and `avoid`. `earliest` is when it
        may first leave (for the message)."""
        label = f"member {subtask.id} ({uav_id})"
        tracks = self.with_world_traffic(tracks)
        deadline = subtask_deadline(self.ir, subtask)
        args = dict(self.route_args)
        args.update(
            start=subtask.origin,
            goal=subtask.destination,
            waypoints=list(subtask.waypoints),
            uav_id=uav_id,
            payload_kg=share_kg,
            **({"deadline_sec": deadline} if deadline is not None else {}),
        )
        if avoid:
            args["avoid_zones"] = list(dict.fromkeys([*args.get("avoid_zones", []), *avoid]))
        step_id = f"team.{subtask.id}.{uav_id}"
        start = depart
        while True:
            routed = self.registry.call(ROUTE_TOOL, self.world, {**args, "depart_time_sec": depart})
            self.records.append(
                StepRecord(step_id=step_id, tool=ROUTE_TOOL, args={**args, "depart_time_sec": depart}, result=routed)
            )
            if not routed.ok:
                waited = depart - earliest
                note = f" (it departs {waited:g} s late to keep clear of the other members)" if waited else ""
                return _Failed(step_id, _named(routed, label, note))
            min_separation_m = self.ir.constraints.min_separation_m
            waypoints = _slotted(self.world, routed.result["waypoints"], uav_id, parked, min_separation_m, later)
            if waypoints is None:
                land = routed.result["waypoints"][-1]
                reach = self.world.arrival_tolerance_m + self.clear_m
                near = [k for k, p in parked.items() if math.hypot(p[0] - land[0], p[1] - land[1]) < reach]
                failed = _slot_failure(routed, label, subtask.destination, near or list(parked), self.clear_m)
                self.records[-1] = self.records[-1].model_copy(update={"result": failed})
                return _Failed(step_id, failed)
            delay = _delay_to_keep_clear(
                waypoints, tracks, self.world, self.need_m, most_wait - (depart - start), self.lateness
            )
            if delay is None:
                _, nearest = closest_approach(waypoints, tracks, self.world, late=self.lateness)
                failed = _separation_failure(routed, label, nearest, most_wait)
                self.records[-1] = self.records[-1].model_copy(update={"result": failed})
                return _Failed(step_id, failed)
            if delay == 0:
                break
            depart += delay  # re-planned at the new departure: the same route unless a timed zone changes it
        return TeamMember(
            subtask_id=subtask.id,
            role=subtask.role,
            uav_id=uav_id,
            share_kg=share_kg,
            origin=subtask.origin,
            goal=subtask.destination,
            stops=[subtask.origin, *subtask.waypoints, subtask.destination],
            waypoints=[list(map(float, wp)) for wp in waypoints],
            eta_sec=_eta(routed.result.get("eta_sec"), routed.result["waypoints"], waypoints),
            energy_wh=routed.result.get("energy_wh"),
            depart_sec=depart,
            deadline_sec=deadline,
        )

    def note(self, step_id: str, note: str) -> None:
        """Adds `note` to the warnings of the last record of step_id: why a repair round routed the member."""
        for i in range(len(self.records) - 1, -1, -1):
            if self.records[i].step_id == step_id:
                result = self.records[i].result
                update = {"warnings": [*result.warnings, note]}
                self.records[i] = self.records[i].model_copy(update={"result": result.model_copy(update=update)})
                return


def _router(
    ir: LowAltitudeIR, world: World, registry: ToolRegistry, records: list[StepRecord], seed: int, stress_level: str
) -> _Router:
    route_args = ir_tool_args(ROUTE_TOOL, ir, seed=seed, stress_level=stress_level)
    accepted = set(registry.spec(ROUTE_TOOL).args_model.model_fields)
    args = {k: v for k, v in route_args.items() if k in accepted and k != "deadline_sec"}
    return _Router(
        ir=ir, world=world, registry=registry, route_args=args, records=records, lateness=lateness_at(stress_level)
    )


def execute_team(
    ir: LowAltitudeIR,
    world: World,
    registry: ToolRegistry,
    *,
    excluded: Collection[str] = (),
    only_tools: Collection[str],
    seed: int = 0,
    stress_level: StressLevel = "medium",
    repair: MemberRepair | None = None,
) -> TeamExecution:
    """The IR's own action steps in `only_tools` (airspace, city: the one-UAV assign / route steps left out), then
    assign_team, then every member's route in the team's dependency order. Stops at the first failure, naming the
    member. With `repair` (a repair round after one member failed a gate) whose members the IR still allows, only
    that member is re-timed, re-routed or reassigned (repair_member); every other member is the failed round's.
    When no change of that member alone flies, the whole team is planned again without its UAV."""
    assert ir.team is not None
    plan = execute_plan(ir, world, registry, seed=seed, stress_level=stress_level, only_tools=only_tools)
    records = list(plan.results)
    if not plan.ok:
        failed = next((r for r in records if r.step_id == plan.failed_step), None)
        return TeamExecution(results=records, failed_step=plan.failed_step, failed_result=failed and failed.result)
    router = _router(ir, world, registry, records, seed, stress_level)
    if repair is None or (previous := reusable_members(ir, repair, excluded)) is None:
        return _plan_whole_team(router, excluded)
    repaired = repair_member(router, repair, previous, excluded)
    if repaired.ok or named_for(ir, repair.subtask_id, repair.uav_id):
        return repaired
    # no change of that member alone flies (its share is more than any other UAV left lifts, say): the team is
    # planned again without its UAV before the operator is asked, as a team of the others may exist
    again = _plan_whole_team(router, [*excluded, repair.uav_id], avoid=repair.avoid)
    label = f"member {repair.subtask_id} ({repair.uav_id})"
    if again.ok:
        error = repaired.failed_result.error if repaired.failed_result else None
        summary = (
            f"repair: {label} could not be changed alone{f' ({error.message})' if error else ''}; the team planned "
            f"again without {repair.uav_id}"
        )
        router.note("team", summary)
        return again.model_copy(update={"results": list(router.records), "repair": summary})
    return repaired  # the member's own failure says most: what was tried for it, and the binding constraint


def named_for(ir: LowAltitudeIR, subtask_id: str, uav_id: str) -> bool:
    """The IR pins uav_id to the sub-task (the request named it there): no other UAV may fly it in its place."""
    return ir.team is not None and any(s.id == subtask_id and uav_id in s.uavs for s in ir.team.subtasks)


def _plan_whole_team(router: _Router, excluded: Collection[str], avoid: Collection[str] = ()) -> TeamExecution:
    """assign_team on every sub-task, then every member's route in the team's dependency order, each staggered
    against the members before it and kept out of `avoid` too; stops at the first failure, naming the member."""
    ir, world, registry, records = router.ir, router.world, router.registry, router.records
    assert ir.team is not None
    team_args = assign_team_args(ir, excluded)
    assigned = registry.call(TEAM_TOOL, world, team_args)
    records.append(StepRecord(step_id="team", tool=TEAM_TOOL, args=team_args, result=assigned))
    if not assigned.ok:
        binding = (assigned.result or {}).get("binding_constraint")
        note = f" (binding constraint: {binding})" if binding else ""
        return TeamExecution(results=records, failed_step="team", failed_result=_named(assigned, "", note))
    subtasks = {s.id: s for s in ir.team.subtasks}
    members: list[TeamMember] = []
    team = list((assigned.result or {}).get("team") or [])
    for chosen in team:
        subtask = subtasks[chosen["subtask_id"]]
        earliest = _earliest(subtask, members)
        later = sum(1 for c in team[len(members) + 1 :] if subtasks[c["subtask_id"]].destination == subtask.destination)
        routed = router.route(
            subtask,
            chosen["uav_id"],
            chosen["share_kg"],
            earliest=earliest,
            depart=earliest,
            tracks=[m.flight() for m in members],  # a parked member is kept clear of by the landing slot
            parked=_parked_positions(world, members, team, chosen["uav_id"]),
            later=later,
            avoid=avoid,
        )
        if isinstance(routed, _Failed):
            return TeamExecution(
                results=records,
                members=members,
                failed_step=routed.step_id,
                failed_result=routed.result,
                subtask_id=subtask.id,
            )
        members.append(routed)
    return TeamExecution(results=records, members=members)


# --- a repair round: one member re-timed, re-routed or reassigned, the others kept (issue 42) --------------------
def _route_basis(ir: LowAltitudeIR, repaired_zones: Collection[str] = ()) -> dict[str, Any]:
    """What the members' routes were planned from: the IR less who may fly (the candidates, each sub-task's `uavs`),
    less what lies beside the plan (the fallback policy, the explanation, the specs the gates judge every member by
    each round) and less `repaired_zones`, the zones a re-route keeps the changed member out of (the IR may record
    them; the gates judge the kept members against them again)."""
    basis = ir.model_dump(mode="json", exclude={"fallback_policy", "explanation_plan", "verification_specs"})
    basis["entities"].pop("candidate_uavs", None)
    for field in ("avoid_zones", "sensitive_zones"):
        basis["entities"][field] = [z for z in basis["entities"].get(field) or [] if z not in repaired_zones]
    for subtask in (basis.get("team") or {}).get("subtasks") or []:
        subtask.pop("uavs", None)
    return basis


def _may_fly(ir: LowAltitudeIR, subtask: SubTask, uav_id: str, excluded: Collection[str]) -> bool:
    """Whether the IR still lets uav_id fly the sub-task: not left out, pinned there if the sub-task pins any, else
    among the candidates if the IR names some (assign_team's own reading of the three)."""
    if uav_id in excluded:
        return False
    if subtask.uavs:
        return uav_id in subtask.uavs
    return not ir.entities.candidate_uavs or uav_id in ir.entities.candidate_uavs


def reusable_members(ir: LowAltitudeIR, repair: MemberRepair, excluded: Collection[str]) -> list[TeamMember] | None:
    """The failed round's members, when the repair round's IR plans the same routes (only who may fly changed) and
    still lets every member but the failed one fly its sub-task; None when it does not: the team is planned again."""
    assert ir.team is not None
    try:
        previous_ir = LowAltitudeIR.model_validate(repair.previous_ir)
    except ValidationError:
        return None
    if _route_basis(previous_ir, repair.avoid) != _route_basis(ir, repair.avoid):
        return None
    subtasks = {s.id: s for s in ir.team.subtasks}
    keys = [(m.subtask_id, m.uav_id) for m in repair.members]
    if (repair.subtask_id, repair.uav_id) not in keys or set(subtasks) != {m.subtask_id for m in repair.members}:
        return None
    others = [m for m in repair.members if (m.subtask_id, m.uav_id) != (repair.subtask_id, repair.uav_id)]
    if not all(_may_fly(ir, subtasks[m.subtask_id], m.uav_id, excluded) for m in others):
        return None
    return list(repair.members)


def _depends_on(ir: LowAltitudeIR, subtask_id: str) -> set[str]:
    """The sub-tasks that come after subtask_id, directly or through others (a relay's later legs)."""
    assert ir.team is not None
    found: set[str] = set()
    frontier = {subtask_id}
    while frontier:
        frontier = {s.id for s in ir.team.subtasks if set(s.after) & frontier and s.id not in found}
        found |= frontier
    return found


def _shifted(waypoints: list[list[float]], by_sec: float) -> list[list[float]]:
    return (np.asarray(waypoints, dtype=float) + [0.0, 0.0, 0.0, by_sec]).tolist()


def _earliest(subtask: SubTask, members: list[TeamMember]) -> float:
    """When the sub-task's member may leave: once every member of its `after` sub-tasks has landed."""
    return max((m.waypoints[-1][3] for m in members if m.subtask_id in subtask.after), default=0.0)


def _retime_departures(failed: TeamMember, earliest: float, cause: str) -> list[float]:
    """The departures a re-time tries, nearest the failed one first, later before earlier, in STAGGER_STEP_SEC steps
    within MAX_STAGGER_SEC of the earliest (the stagger rule's own grid); a deadline it missed only earlier ones."""
    steps = range(1, int(MAX_STAGGER_SEC // STAGGER_STEP_SEC) + 1)
    later = [failed.depart_sec + k * STAGGER_STEP_SEC for k in steps]
    earlier = [failed.depart_sec - k * STAGGER_STEP_SEC for k in steps]
    later = [d for d in later if d <= earliest + MAX_STAGGER_SEC] if cause != "deadline" else []
    earlier = [d for d in earlier if d >= earliest - 1e-9]
    order = [d for pair in itertools.zip_longest(later, earlier) for d in pair if d is not None]
    return [round(d, 3) for d in order]


def _retimed(
    router: _Router,
    repair: MemberRepair,
    failed: TeamMember,
    others: list[TeamMember],
    tracks: list[TrafficTrack],
) -> TeamMember | None:
    """The failed member on the same UAV at another departure (_retime_departures) at which its route keeps the
    stagger rule's distance from `tracks` (the flights it must keep clear of), lands clear of the `others`, meets its
    deadline, and, for a separation failure, comes no closer to the track it failed against than it did (under the
    stagger rule's lateness: a track it never meets there leaves the re-time nothing to improve, so none is made)."""
    assert router.ir.team is not None
    subtask = next(s for s in router.ir.team.subtasks if s.id == failed.subtask_id)
    earliest = _earliest(subtask, others)
    named = [t for t in tracks if t.id in repair.tracks]
    before = closest_approach(failed.waypoints, named, router.world, late=router.lateness)[0] if named else math.inf
    parked = _parked_positions(router.world, others, [{"uav_id": m.uav_id} for m in others], failed.uav_id)

    kept_clear = router.with_world_traffic(tracks)  # what the route tool keeps clear of: the cheap check asks the same

    def clear(waypoints: list[list[float]]) -> bool:
        if closest_approach(waypoints, kept_clear, router.world, late=router.lateness)[0] < router.need_m:
            return False
        return not named or closest_approach(waypoints, named, router.world, late=router.lateness)[0] > before

    for depart in _retime_departures(failed, earliest, repair.cause):
        shifted = _shifted(failed.waypoints, depart - failed.waypoints[0][3])
        if failed.deadline_sec is not None and shifted[-1][3] > failed.deadline_sec:
            continue
        if not clear(shifted):  # the same route shifted: cheap, and what a re-plan at that departure flies
            continue
        routed = router.route(
            subtask,
            failed.uav_id,
            failed.share_kg,
            earliest=earliest,
            depart=depart,
            tracks=tracks,
            parked=parked,
            most_wait=0.0,
        )
        if isinstance(routed, TeamMember) and clear(routed.waypoints):
            return routed
    return None


def _rerouted(
    router: _Router, repair: MemberRepair, failed: TeamMember, others: list[TeamMember], tracks: list[TrafficTrack]
) -> TeamMember | None:
    """The failed member on the same UAV, from the same departure (later where the stagger rule needs), on a route
    kept out of the zones the failure named, landing clear of the others."""
    assert router.ir.team is not None
    subtask = next(s for s in router.ir.team.subtasks if s.id == failed.subtask_id)
    routed = router.route(
        subtask,
        failed.uav_id,
        failed.share_kg,
        earliest=_earliest(subtask, others),
        depart=failed.depart_sec,
        tracks=tracks,
        parked=_parked_positions(router.world, others, [{"uav_id": m.uav_id} for m in others], failed.uav_id),
        avoid=repair.avoid,
    )
    return routed if isinstance(routed, TeamMember) else None


def _reassigned(
    router: _Router,
    repair: MemberRepair,
    failed: TeamMember,
    others: list[TeamMember],
    tracks: list[TrafficTrack],
    excluded: Collection[str],
) -> TeamMember | _Failed:
    """The failed member's sub-task (its share of it) on another idle UAV: assign_team on that one sub-task with
    every other member's UAV, the failed UAV and a UAV parked where another member lands left out, then its route
    staggered against `tracks`, landing clear of the others. A UAV whose route fails is left out too and the next best tried, REASSIGN_TRIES in
    all."""
    assert router.ir.team is not None
    subtask = next(s for s in router.ir.team.subtasks if s.id == failed.subtask_id)
    taken = {m.uav_id for m in others} | {failed.uav_id}
    landings = [m.waypoints[-1][:2] for m in others]
    in_the_way = [u.id for u in router.world.fleet if too_close(u.position, landings, router.clear_m)]
    pins = [u for u in subtask.uavs if u not in taken]
    one = {
        **subtask.model_dump(exclude={"role", "uav_count"}),  # one share on one UAV: the team keeps its count
        "payload_kg": failed.share_kg,
        "deadline_sec": subtask_deadline(router.ir, subtask),
        "after": [],  # the members it follows are fixed: it leaves once they have landed (routed below)
        "split": False,
        "uavs": pins,
    }
    left_out = [*excluded, *sorted(taken), *in_the_way]
    last: _Failed | None = None
    for _ in range(REASSIGN_TRIES):
        args = {**assign_team_args(router.ir, left_out), "subtasks": [one]}
        assigned = router.registry.call(TEAM_TOOL, router.world, args)
        step_id = f"team.{subtask.id}.reassign"
        router.records.append(StepRecord(step_id=step_id, tool=TEAM_TOOL, args=args, result=assigned))
        if not assigned.ok:
            binding = (assigned.result or {}).get("binding_constraint")
            note = f" (binding constraint: {binding})" if binding else ""
            return last or _Failed(step_id, _named(assigned, "", note))
        [chosen] = (assigned.result or {}).get("team") or [None]
        if chosen is None:
            return last or _Failed(step_id, _named(assigned, ""))
        earliest = _earliest(subtask, others)
        routed = router.route(
            subtask,
            chosen["uav_id"],
            failed.share_kg,
            earliest=earliest,
            depart=earliest,
            tracks=tracks,
            parked=_parked_positions(router.world, others, [{"uav_id": m.uav_id} for m in others], chosen["uav_id"]),
            avoid=repair.avoid,
        )
        if isinstance(routed, TeamMember):
            return routed
        last = routed
        left_out.append(chosen["uav_id"])
    assert last is not None
    return last


def _dependent(
    router: _Router, member: TeamMember, fixed: list[TeamMember], changed: list[TeamMember]
) -> TeamMember | _Failed:
    """A member that comes after the changed one (a relay's later leg), on its own UAV: kept as it was when it still
    leaves after the members it follows have landed and keeps the stagger rule's distance from the changed members;
    else re-timed (re-routed from when it may first leave, staggered against every other member)."""
    assert router.ir.team is not None
    subtask = next(s for s in router.ir.team.subtasks if s.id == member.subtask_id)
    earliest = _earliest(subtask, fixed)
    moved = [m.flight() for m in changed]
    if member.depart_sec >= earliest - 1e-9 and (
        closest_approach(member.waypoints, moved, router.world, late=router.lateness)[0] >= router.need_m
    ):
        return member
    return router.route(
        subtask,
        member.uav_id,
        member.share_kg,
        earliest=earliest,
        depart=earliest,
        tracks=[m.flight() for m in fixed],
        parked=_parked_positions(router.world, fixed, [{"uav_id": m.uav_id} for m in fixed], member.uav_id),
    )


def _unrepaired(failed: _Failed, label: str, tried: str) -> ToolResult:
    """The repair round's failure: the member, what was tried, the tool's reason; not recoverable (another round
    would try the same), so the run ends with the operator as a team the fleet cannot form does."""
    error = failed.result.error or ToolErrorInfo(type="tool_failed", message="no error info", recoverable=False)
    message = f"{label}: {tried}: {error.message}"
    return failed.result.model_copy(
        update={"error": error.model_copy(update={"message": message, "recoverable": False})}
    )


def repair_member(
    router: _Router, repair: MemberRepair, previous: list[TeamMember], excluded: Collection[str]
) -> TeamExecution:
    """The failed round's team with one member changed: re-timed or re-routed first when the repair asks for it,
    else (or when no departure or route does) its sub-task reassigned, on a route kept out of the zones the failure
    named, unless the request names its UAV for it. Every other member keeps its UAV and route, but a member that
    comes after the changed one (a relay's later leg), which is kept only while it still leaves after it has landed
    and keeps clear of it, else re-timed on its own UAV. Fails, not recoverable, naming the member when nothing
    works."""
    ir, records = router.ir, router.records
    key = (repair.subtask_id, repair.uav_id)
    failed = next(m for m in previous if (m.subtask_id, m.uav_id) == key)
    after = _depends_on(ir, failed.subtask_id)
    kept = [m for m in previous if (m.subtask_id, m.uav_id) != key and m.subtask_id not in after]
    dependents = [m for m in previous if m.subtask_id in after]
    others = [*kept, *dependents]
    # in the air it keeps clear of the kept members and the traffic the failure named; a dependent leaves after it
    # has landed (re-timed below where it must), so its old flight is no constraint, its pads are
    tracks = [*(m.flight() for m in kept), *(t for t in router.world.traffic if t.id in repair.tracks)]
    changed = None
    if repair.action == "retime":
        changed = _retimed(router, repair, failed, others, tracks)
    elif repair.action == "reroute":
        changed = _rerouted(router, repair, failed, others, tracks)
    if changed is None and named_for(
        ir, repair.subtask_id, repair.uav_id
    ):  # a UAV the request names for its sub-task is not replaced
        step_id = f"team.{failed.subtask_id}.{failed.uav_id}"
        error = ToolErrorInfo(
            type="named_uav_cannot_fly",
            message=f"{failed.label}: no other departure or route of {failed.uav_id} works, and the request names "
            f"{failed.uav_id} for sub-task {failed.subtask_id}: no other UAV may fly it in its place",
            recoverable=False,
        )
        result = ToolResult(
            ok=False,
            tool=ROUTE_TOOL,
            request_id=f"{step_id}-named",
            error=error,
            provenance=Provenance(
                input_hash=stable_hash({"step": step_id, "repair": repair.action}), world_version=router.world.version
            ),
        )
        return TeamExecution(
            results=records, members=others, failed_step=step_id, failed_result=result, subtask_id=failed.subtask_id
        )
    if changed is not None and repair.action == "retime":
        done = f"re-timed: departs at {changed.depart_sec:g} s instead of {failed.depart_sec:g} s"
    elif changed is not None:
        done = f"re-routed out of {', '.join(repair.avoid)}, departing at {changed.depart_sec:g} s"
    else:
        tried = {
            "retime": "no departure keeps clear and meets its deadline, then ",
            "reroute": f"no route of {failed.uav_id} keeps out of {', '.join(repair.avoid)}, then ",
        }.get(repair.action, "")
        reassigned = _reassigned(router, repair, failed, others, tracks, excluded)
        if isinstance(reassigned, _Failed):
            result = _unrepaired(reassigned, failed.label, f"{tried}no other UAV could fly its sub-task")
            return TeamExecution(
                results=records,
                members=others,
                failed_step=reassigned.step_id,
                failed_result=result,
                subtask_id=failed.subtask_id,
            )
        changed = reassigned
        done = f"{tried}reassigned to {changed.uav_id}"
    fixed, moved = [*kept, changed], [changed]
    for member in dependents:
        routed = _dependent(router, member, fixed, moved)
        if isinstance(routed, _Failed):
            result = _unrepaired(routed, member.label, f"comes after {failed.label}, changed")
            return TeamExecution(
                results=records,
                members=fixed,
                failed_step=routed.step_id,
                failed_result=result,
                subtask_id=member.subtask_id,
            )
        if routed is not member:
            moved.append(routed)
            router.note(
                f"team.{routed.subtask_id}.{routed.uav_id}", f"{member.label} re-timed: it comes after {failed.label}"
            )
        fixed.append(routed)
    unchanged = [m.label for m in previous if m in fixed]
    summary = f"repair: {failed.label} {done} ({repair.why}); kept as planned: {', '.join(unchanged) or 'none'}"
    router.note(f"team.{changed.subtask_id}.{changed.uav_id}", summary)
    order = {(m.subtask_id, m.uav_id): i for i, m in enumerate(previous)}
    members = sorted(fixed, key=lambda m: order.get((m.subtask_id, m.uav_id), order[key]))
    return TeamExecution(results=records, members=members, repair=summary)
