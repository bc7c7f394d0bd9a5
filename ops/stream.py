"""Operations mode: a stream of requests on one airspace. Each request is run through the graph with the ledger's
active intents as reservations the planner keeps out of and the verifier checks (rule R9); an execute becomes an
operational intent, admitted to the ledger atomically with its certificate's digest.

- Times: a request arriving at `at_sec` on the stream's clock is planned with t = 0 at its arrival; the intents it
  must respect are shifted onto that clock, and its decision's waypoints shifted back.
- Reservations are the approved volumes widened by the new flight's own planning allowance (`PLANNING`), so a
  route that keeps out of them gives volumes that keep out of the approved ones. The admitted volumes use the
  buffers the simulator measured; where they exceed the allowance and conflict, the request is planned once more
  with the measured buffers, then refused naming the intents in the way.
- A refusal names the approved intents in the way when they are what blocks it: the plan is run again without
  them, and the intents that plan would conflict with are named.
- Priority: an emergency whose only plans conflict with lower-priority intents that have not started may pre-empt
  them, only when the operator approves; the pre-empted intents end in the same transaction that admits the
  emergency, and each pre-empted mission is re-planned at once, its owner told why.
- A fleet mission (a team execute) is one intent per member, admitted all or none in one transaction
  (`Ledger.admit_all`), with the same re-plans as one flight's (the measured buffers, later starts, pre-emption);
  a conflict names the member and the approved intent, and members that conflict with each other are a defect
  upstream: nothing is admitted. A member's legs are held in time slices (standards.volumes.member_volumes, as its
  F3548 export holds them), fine enough to show the time separation the team planner kept between members.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field
from shapely.geometry import Polygon

from graph.runner import run_task_values
from ir.model import LowAltitudeIR
from ir.plan_execution import execute_plan
from ir.team_execution import execute_team, subtask_deadline
from nodes.context import Context
from ops.ledger import PRIORITIES, Conflict, Ledger, MembersConflict, OperationalIntent, conflicts, priority_words
from standards.volumes import Buffers, LegVolume, leg_volumes, member_volumes, simulated_buffers
from tools.catalog import ACTION_TOOLS, ONE_UAV_TOOLS, default_registry, team_registry
from tools.certificate import SafetyCertificate
from tools.team_traffic import member_track_id, with_members_as_traffic
from tools.world import Reservation, TimeWindow, UAVStatus, World

PLANNING = Buffers(
    lateral_m=10.0,
    vertical_m=10.0,
    delay_sec=30.0,
    basis="the planning allowance of a new flight: kept clear of approved volumes by this much",
)
LATER_STARTS = 3  # attempts at departing later, each after what blocked the one before
MAX_WAIT_SEC = 1800.0  # a request is never held back longer than this
DIGITS = 3


class OpsRequest(BaseModel):
    at_sec: float = Field(ge=0, le=1e9, allow_inf_nan=False, description="arrival on the stream's clock")
    instruction: str = Field(min_length=1)
    priority: Literal["normal", "emergency"] = "normal"
    request_id: str | None = None
    owner: str | None = None
    gold_ir: dict[str, Any] | None = Field(default=None, description="the oracle model's answer (benchmark streams)")


class OpsMember(BaseModel):
    """One member of an admitted fleet mission: its own intent in the ledger."""

    subtask_id: str
    role: str
    uav_id: str | None
    intent_id: str
    waypoints: list[list[float]] = Field(description="[x, y, z, t], t on the stream's clock")


class OpsDecision(BaseModel):
    request_id: str
    status: str = Field(description="execute | human_confirm | safe_refusal | pre_empted")
    reason: str
    uav_id: str | None = Field(default=None, description="None for a fleet mission: its members' are in `team`")
    waypoints: list[list[float]] = Field(
        default_factory=list, description="[x, y, z, t], t on the stream's clock; empty for a fleet mission"
    )
    intent_id: str | None = Field(
        default=None, description="the admitted intent; for a fleet mission the team id its member intents share"
    )
    team: list[OpsMember] = Field(
        default_factory=list,
        exclude_if=lambda team: not team,
        description="an admitted fleet mission's members, each with its own intent",
    )
    blocked_by: list[str] = Field(default_factory=list, description="approved intents in the way")
    pre_empted: list[str] = Field(default_factory=list, description="intents this emergency ended")
    replaces: str | None = Field(default=None, description="the pre-empted intent this re-plan stands for")
    at_sec: float = 0.0
    active_intents: int = Field(description="intents in the ledger holding airspace when the request arrived")
    latency_sec: float
    thread_id: str | None = None


# The operator's answer to a pre-emption: (the emergency, the lower-priority intents in its way) -> pre-empt them?
# Asked between runs, over the ledger; a run's own question goes through the graph's interrupt() (docs/operations.md,
# "The operator").
Approver = Callable[[OpsRequest, list[OperationalIntent]], bool]


@dataclass
class OpsRunner:
    world: World
    ledger: Ledger
    context: Context
    db: str
    approve_pre_emption: Approver = lambda request, intents: False

    # --- one request --------------------------------------------------------------------------------------------
    def decide(self, request: OpsRequest) -> list[OpsDecision]:
        """The decision on `request`, plus those it caused (pre-empted missions and their re-plans)."""
        request = request.model_copy(update={"request_id": request.request_id or f"r-{uuid.uuid4().hex[:8]}"})
        started = time.perf_counter()
        self.ledger.advance_clock(request.at_sec)
        approved = self.ledger.active(request.at_sec)
        outcome = self._plan_and_admit(request, approved, pre_empting=[])
        if outcome.admitted or not outcome.blocked_by_intents:
            return [outcome.decision(request, len(approved), started)]
        if request.priority == "emergency":
            lower = [
                i for i in outcome.blocked_by_intents
                if i.priority < PRIORITIES["emergency"] and i.t_start > request.at_sec
            ]  # fmt: skip
            teams = self._with_teams(lower)  # a team is pre-empted whole: the operator is asked about every member
            free = all(i.priority < PRIORITIES["emergency"] and i.t_start > request.at_sec for i in teams)
            if len(lower) == len(outcome.blocked_by_intents) and free and self.approve_pre_emption(request, teams):
                ended = [i.intent_id for i in teams]
                taking_over = self._plan_and_admit(request, approved, pre_empting=ended)
                if taking_over.admitted:
                    decisions = [taking_over.decision(request, len(approved), started)]
                    withdrawn = [i for i in teams if i.intent_id in taking_over.pre_empted]
                    for intent in {i.team_id or i.intent_id: i for i in withdrawn}.values():  # a team re-planned once
                        decisions += self._replan(intent, request)
                    return decisions
        # a later start: once the intents in the way have released the airspace, or the first busy UAV has landed;
        # the airspace then may hold others that start later still, so a few times, never past MAX_WAIT_SEC
        attempt, delay = outcome, 0.0
        for _ in range(LATER_STARTS):
            release = max([i.t_end for i in attempt.in_the_way], default=request.at_sec)
            landing = min([i.t_end for i in attempt.flying], default=request.at_sec)
            next_delay = max(release, landing) - request.at_sec
            if next_delay <= delay or next_delay > MAX_WAIT_SEC:
                break
            delay = next_delay
            attempt = self._plan_and_admit(request, approved, pre_empting=[], delay=delay)
            if attempt.admitted:
                return [attempt.decision(request, len(approved), started)]
            outcome.later_starts.append(attempt)
            if not attempt.blocked_by_intents:
                break
        return [outcome.decision(request, len(approved), started)]

    def _with_teams(self, intents: list[OperationalIntent]) -> list[OperationalIntent]:
        """`intents` with every other member of the fleet missions among them (held in the ledger)."""
        found = {i.intent_id: i for i in intents}
        for team_id in dict.fromkeys(i.team_id for i in intents if i.team_id is not None):
            found.update({m.intent_id: m for m in self.ledger.team(team_id) if not m.note})
        return list(found.values())

    def _replan(self, intent: OperationalIntent, by: OpsRequest) -> list[OpsDecision]:
        """The pre-empted mission again, from its own instruction and arrival (so its own deadline), departing no
        earlier than the emergency that took its airspace; its owner is told why. A fleet mission (any one member's
        intent given) is told and re-planned once, as the team."""
        started = time.perf_counter()
        name = intent.team_id or intent.intent_id
        told = OpsDecision(
            request_id=intent.request_id,
            status="pre_empted",
            reason=f"{'fleet mission' if intent.team_id else 'intent'} {name} was pre-empted by emergency request "
            f"{by.request_id} at t={by.at_sec:g} s (operator approved); the mission is re-planned around it",
            uav_id=None if intent.team_id else intent.uav_id,
            intent_id=name,
            at_sec=by.at_sec,
            active_intents=0,
            latency_sec=0.0,
        )
        again = OpsRequest(
            at_sec=min(intent.requested_at, by.at_sec),
            instruction=intent.instruction,
            request_id=f"{intent.request_id}_replan",
            owner=intent.owner,
        )
        approved = self.ledger.active(by.at_sec)
        replanned = self._plan_and_admit(again, approved, pre_empting=[], delay=by.at_sec - again.at_sec)
        decision = replanned.decision(again, len(approved), started)
        decision.replaces = name
        return [told, decision]

    # --- planning ---------------------------------------------------------------------------------------------
    def _plan_and_admit(
        self, request: OpsRequest, approved: list[OperationalIntent], pre_empting: list[str], delay: float = 0.0
    ) -> _Run:
        """Plan departing `delay` seconds after the request arrives, and admit the plan if it executes."""
        kept = [i for i in approved if i.intent_id not in pre_empting]
        allowance = PLANNING
        for _ in range(2):  # the planning allowance, then the measured buffers where they are larger
            run = self._run(request, kept, allowance, delay)
            if run.status != "execute":
                # in the way: what the plan flown without them would conflict with, and what the planner or the
                # verifier named (the planner's grid keeps a cell's width more clear than the exact volumes do)
                named = _named_by_decision(run, kept)
                found = {i.intent_id: i for i in [*self._in_the_way(request, run, kept), *named]}
                run.in_the_way, run.flying = list(found.values()), self._flying(run, kept)
                return run
            if (late := _misses_deadline(run, delay)) is not None:
                run.status, run.reason = "human_confirm", late
                return run
            intents, measured = self._intents(request, run)
            try:
                admitted = self.ledger.admit_all(intents, pre_empting=pre_empting)
            except MembersConflict as exc:  # never admitted, never re-planned: the team's own gates let it through
                run.status = "human_confirm"
                run.reason = (
                    f"a defect upstream: the fleet mission's members passed the team's planner and verifier, yet {exc}; "
                    "nothing is admitted to the ledger"
                )
                return run
            if not admitted.conflicts:
                run.intents, run.pre_empted = intents, admitted.pre_empted
                return run
            run.conflicts = admitted.conflicts
            dims = ("lateral_m", "vertical_m", "delay_sec")
            if all(getattr(measured, d) <= getattr(allowance, d) for d in dims):
                break  # planning again with the same allowance finds the same plan
            allowance = Buffers(
                lateral_m=max(allowance.lateral_m, measured.lateral_m),
                vertical_m=max(allowance.vertical_m, measured.vertical_m),
                delay_sec=max(allowance.delay_sec, measured.delay_sec),
                basis="the buffers the simulator measured for this flight",
            )
        run.status = "human_confirm"
        run.reason = "every plan found conflicts with approved intents: " + "; ".join(
            dict.fromkeys(_conflict_words(c) for c in run.conflicts)
        )
        # read again: the intent in the way may be one another process admitted after this request looked
        named = {c.intent_id for c in run.conflicts}
        run.in_the_way = [i for i in self.ledger.active(request.at_sec) if i.intent_id in named]
        return run

    def _fleet_at(self, approved: list[OperationalIntent], at_sec: float, world: World) -> World:
        """The fleet as it stands at `at_sec`: a UAV flying (or about to fly) an approved intent is busy; one whose
        last intent has ended waits where it landed, with the battery it landed with."""
        busy = {i.uav_id for i in approved if i.uav_id and i.t_end > at_sec}
        ended = sorted(
            [*self.ledger.ended_before(at_sec), *(i for i in approved if i.t_end <= at_sec)], key=lambda i: i.t_end
        )
        landed = {i.uav_id: i for i in ended if i.uav_id}
        fleet = []
        for uav in world.fleet:
            update: dict[str, Any] = {}
            if uav.id in landed and landed[uav.id].landing_xy is not None:
                update["position"] = landed[uav.id].landing_xy
                if landed[uav.id].battery_after is not None:
                    update["battery_ratio"] = landed[uav.id].battery_after
            if uav.id in busy:
                update["status"] = UAVStatus.busy
            fleet.append(uav.model_copy(update=update) if update else uav)
        return world.updated(fleet=fleet)

    def _world_at(self, approved: list[OperationalIntent], departs: float) -> World:
        """The world on the clock of a flight departing at `departs` on the stream's clock (its t = 0): the fleet
        as it stands then, the world's own timed zones and traffic shifted onto it."""
        return on_clock(self._fleet_at(approved, departs, self.world), departs)

    def _run(self, request: OpsRequest, approved: list[OperationalIntent], allowance: Buffers, delay: float) -> _Run:
        departs = request.at_sec + delay
        world = with_reservations(self._world_at(approved, departs), approved, departs, allowance)
        thread_id = f"ops-{request.request_id}-{uuid.uuid4().hex[:8]}"
        out, values = run_task_values(
            world, request.instruction, context=self.context, thread_id=thread_id, db=self.db,
            task_id=request.request_id, gold_ir=request.gold_ir,
        )  # fmt: skip
        return _Run(
            world=world, status=out.status, reason=_reason(out.decision), values=values, thread_id=thread_id,
            departs=departs,
        )  # fmt: skip

    def _intents(self, request: OpsRequest, run: _Run) -> tuple[list[OperationalIntent], Buffers]:
        """The execute's intents and the buffers measured for them: one intent, or one per member of a fleet
        mission (`<team id>.<sub-task>:<UAV>`, the member as counterexamples name it), each member's buffers
        measured in the world it was certified in (the other members as traffic), its legs held in time slices
        (standards.volumes.member_volumes, as its F3548 export holds them); the largest buffers returned."""
        certificate = SafetyCertificate.model_validate(run.values["decision"]["certificate"])
        if certificate.members is None:
            intent, measured = self._intent(request, run.world, certificate, run.departs)
            return [intent], measured
        team_id = f"oi_{uuid.uuid4().hex[:12]}"
        intents, buffers = [], []
        for member in certificate.members:
            others = [m.track_of() for m in certificate.members if m is not member]
            world = with_members_as_traffic(run.world, others)
            intent, measured = self._intent(request, world, member.certificate, run.departs, member_volumes)
            name = member_track_id(member.subtask_id, member.certificate.trajectory.uav_id)
            update = {"intent_id": f"{team_id}.{name}", "team_id": team_id, "subtask_id": member.subtask_id}
            intents.append(intent.model_copy(update=update))
            buffers.append(measured)
        largest = Buffers(
            lateral_m=max(b.lateral_m for b in buffers),
            vertical_m=max(b.vertical_m for b in buffers),
            delay_sec=max(b.delay_sec for b in buffers),
            basis="the largest of the members' measured buffers",
        )
        return intents, largest

    def _intent(
        self,
        request: OpsRequest,
        world: World,
        certificate: SafetyCertificate,
        departs: float,
        volumes_of: Callable[[list[list[float]], Buffers], list[LegVolume]] = leg_volumes,
    ) -> tuple[OperationalIntent, Buffers]:
        """One UAV's intent; `volumes_of` member_volumes for a fleet mission's member."""
        measured = simulated_buffers(world, certificate)
        volumes = [shifted(v, departs) for v in volumes_of(certificate.trajectory.waypoints, measured)]
        reserve, left = certificate.rule_set.get("battery_reserve_ratio"), certificate.verdicts.get("R5", {})
        intent = OperationalIntent(
            request_id=request.request_id or "",
            owner=request.owner or request.request_id or "",
            priority=PRIORITIES[request.priority],
            uav_id=certificate.trajectory.uav_id,
            volumes=volumes,
            certificate_sha256=certificate.digests.trajectory_sha256,
            instruction=request.instruction,
            requested_at=request.at_sec,
            landing_xy=tuple(certificate.trajectory.waypoints[-1][:2]),
            battery_after=None if reserve is None or left.get("robustness") is None else reserve + left["robustness"],
        )
        return intent, measured

    def _in_the_way(self, request: OpsRequest, run: _Run, approved: list[OperationalIntent]) -> list[OperationalIntent]:
        """The approved intents the run's own plan would conflict with, flown as if they were not there."""
        last_ir = _last_ir(run)
        if not approved or last_ir is None:
            return []
        try:
            ir = LowAltitudeIR.model_validate(last_ir)
        except ValueError:
            return []
        world = self._world_at(approved, run.departs)
        if ir.team is not None:  # every member's route, planned as the team's run plans them
            excluded = (run.values.get("reading") or {}).get("excluded_uavs") or ()
            team = execute_team(
                ir, world, team_registry(), excluded=excluded, only_tools=ACTION_TOOLS - ONE_UAV_TOOLS
            )  # fmt: skip
            routes = [m.waypoints for m in team.members] if team.ok else []
            volumes_of = member_volumes  # as the members' intents would hold them
        else:
            free = execute_plan(ir, world, default_registry(), only_tools=ACTION_TOOLS)
            route = next((r for r in reversed(free.results) if r.tool == "plan_route" and r.result.ok), None)
            routes = [(route.result.result or {}).get("waypoints") or []] if route is not None else []
            volumes_of = leg_volumes
        # no plan even with the airspace to itself: the intents are not what blocks it
        named = {
            c.intent_id
            for waypoints in routes
            if len(waypoints) >= 2
            for c in conflicts([shifted(v, run.departs) for v in volumes_of(waypoints, PLANNING)], approved)
        }
        return [i for i in approved if i.intent_id in named]

    def _flying(self, run: _Run, approved: list[OperationalIntent]) -> list[OperationalIntent]:
        """Where no UAV could be assigned, the intents of the UAVs that were busy flying them."""
        failure = (run.values.get("attempts") or [{}])[-1].get("failure") or {}
        if failure.get("error_type") != "no_available_uav":
            return []
        busy = {u.id for u in run.world.fleet if u.status is UAVStatus.busy}
        return [i for i in approved if i.uav_id in busy]

    # --- a stream ---------------------------------------------------------------------------------------------
    def run_stream(self, requests: Iterable[OpsRequest]) -> list[OpsDecision]:
        decisions = []
        for request in sorted(requests, key=lambda r: r.at_sec):
            decisions += self.decide(request)
        return decisions


@dataclass
class _Run:
    world: World
    status: str
    reason: str
    values: dict[str, Any]
    thread_id: str
    departs: float = 0.0
    intents: list[OperationalIntent] = field(default_factory=list)  # admitted: one, or a fleet mission's members
    pre_empted: list[str] = field(default_factory=list)  # what the admission withdrew for it
    conflicts: list[Conflict] = field(default_factory=list)
    in_the_way: list[OperationalIntent] = field(default_factory=list)  # their volumes block the plan
    flying: list[OperationalIntent] = field(default_factory=list)  # their UAVs were the ones that could fly it
    later_starts: list[_Run] = field(default_factory=list)  # departing later, tried and refused too

    @property
    def admitted(self) -> bool:
        return bool(self.intents)

    @property
    def blocked_by_intents(self) -> list[OperationalIntent]:
        tried = [self, *self.later_starts]
        return list({i.intent_id: i for run in tried for i in [*run.in_the_way, *run.flying]}.values())

    def decision(self, request: OpsRequest, active: int, started: float) -> OpsDecision:
        waypoints: list[list[float]] = []
        uav_id = intent_id = None
        team = []
        if self.admitted:
            decision = self.values["decision"]
            trajectory = decision["certificate"]["trajectory"]
            if decision.get("team"):
                intent_id = self.intents[0].team_id
                by_name = {i.intent_id.removeprefix(f"{intent_id}."): i.intent_id for i in self.intents}
                team = [
                    OpsMember(
                        subtask_id=m["subtask_id"],
                        role=m["role"],
                        uav_id=m["uav_id"],
                        intent_id=by_name[member_track_id(m["subtask_id"], m["uav_id"])],
                        waypoints=[[x, y, z, t + self.departs] for x, y, z, t in m["waypoints"]],
                    )
                    for m in decision["team"]
                ]
            else:
                waypoints = [[x, y, z, t + self.departs] for x, y, z, t in trajectory["waypoints"]]  # as its volumes
                uav_id, intent_id = trajectory["uav_id"], self.intents[0].intent_id
        blocked = [i.intent_id for i in self.blocked_by_intents]
        reason = self.reason
        if self.admitted and self.departs > request.at_sec:
            reason = f"departs at t={self.departs:g} s, once the approved intents in the way have released the airspace"
        if self.admitted and team:
            reason = f"a fleet mission of {len(team)} UAVs, one intent each, admitted together; {reason}"
        if blocked and not self.admitted:
            names = ", ".join(
                f"{i.intent_id} ({i.owner}, {priority_words(i.priority)})" for i in self.blocked_by_intents
            )
            reason = f"{reason}; approved intents in the way: {names}"
            if self.later_starts:
                reason += (
                    f"; later starts tried up to t={self.later_starts[-1].departs:g} s: {self.later_starts[-1].reason}"
                )
        return OpsDecision(
            request_id=request.request_id or "",
            status="execute" if self.admitted else ("human_confirm" if self.status == "execute" else self.status),
            reason=reason,
            uav_id=uav_id,
            waypoints=waypoints,
            intent_id=intent_id,
            team=team,
            blocked_by=blocked,
            pre_empted=self.pre_empted,
            at_sec=request.at_sec,
            active_intents=active,
            latency_sec=round(time.perf_counter() - started, DIGITS),
            thread_id=self.thread_id,
        )


def _misses_deadline(run: _Run, delay: float) -> str | None:
    """A later start must still meet the request's own deadline, which counts from its arrival: for a fleet
    mission, every member its own sub-task's deadline (else the IR's)."""
    if delay <= 0:
        return None
    last_ir = _last_ir(run) or {}
    decision = run.values["decision"]
    if decision.get("team"):
        ir = LowAltitudeIR.model_validate(last_ir)  # a team execute's own IR: valid, or it would not have flown
        subtasks = {s.id: s for s in (ir.team.subtasks if ir.team else [])}
        ends = [
            (f"member {member_track_id(m['subtask_id'], m['uav_id'])} ", m["waypoints"][-1][3],
             subtask_deadline(ir, subtasks[m["subtask_id"]]) if m["subtask_id"] in subtasks
             else ir.constraints.deadline_sec)
            for m in decision["team"]
        ]  # fmt: skip
    else:
        deadline = (last_ir.get("constraints") or {}).get("deadline_sec")
        ends = [("", decision["certificate"]["trajectory"]["waypoints"][-1][3], deadline)]
    for who, end, deadline in ends:
        arrival = end + delay
        if deadline is not None and arrival > deadline:
            return (
                f"departing once the approved intents in the way have passed ({delay:g} s later) {who}arrives at "
                f"t={arrival:g} s, after the deadline of {deadline:g} s"
            )
    return None


def _conflict_words(conflict: Conflict) -> str:
    """A conflict as a reason says it: for a fleet mission's member, which member."""
    member = conflict.of.partition(".")[2] if conflict.of and "." in conflict.of else ""
    return f"member {member} ({conflict.of}) with {conflict.describe()}" if member else conflict.describe()


def _named_by_decision(run: _Run, approved: list[OperationalIntent]) -> list[OperationalIntent]:
    """The approved intents whose reservations the run's decision names as blocking it (its `blocked_by`)."""
    blockers = set((run.values.get("decision") or {}).get("blocked_by") or [])
    named = {r.intent_id for r in run.world.reservations if r.id in blockers}
    return [i for i in approved if i.intent_id in named]


def _last_ir(run: _Run) -> dict[str, Any] | None:
    return next((a["ir"] for a in reversed(run.values.get("attempts") or []) if a.get("ir")), None)


def _reason(decision: dict[str, Any]) -> str:
    return str(decision.get("reason") or decision.get("summary") or decision.get("status") or "")


def shifted(volume: LegVolume, by_sec: float) -> LegVolume:
    return volume.model_copy(update={"t_start": volume.t_start + by_sec, "t_end": volume.t_end + by_sec})


def with_reservations(world: World, approved: list[OperationalIntent], at_sec: float, allowance: Buffers) -> World:
    """The world as a request arriving at `at_sec` sees it: each approved volume still to come, widened by the
    allowance, on the request's clock."""
    reservations = []
    for intent in approved:
        for volume in intent.volumes:
            end = volume.t_end - at_sec
            if end <= 0:
                continue
            footprint = Polygon(volume.ring).buffer(allowance.lateral_m, join_style="mitre")
            # built unvalidated: the ring is shapely's buffer of a validated rectangle (valid by construction),
            # and validating thousands of rings here and again when the graph reads its state was most of a
            # request's cost on a full ledger
            reservations.append(
                Reservation.model_construct(
                    id=f"{intent.intent_id}_leg{volume.label}",
                    polygon=[(round(x, DIGITS), round(y, DIGITS)) for x, y in list(footprint.exterior.coords)[:-1]],
                    alt_min_m=max(0.0, volume.lower_m - allowance.vertical_m),
                    alt_max_m=volume.upper_m + allowance.vertical_m,
                    active_window=TimeWindow.model_construct(
                        start_sec=max(0.0, volume.t_start - at_sec - allowance.delay_sec), end_sec=end
                    ),
                    reason=f"approved operational intent {intent.intent_id} ({intent.owner})",
                    temporary=True,
                    source=None,
                    intent_id=intent.intent_id,
                    owner=intent.owner,
                    priority=intent.priority,
                )
            )
    return world.updated(reservations=[*world.reservations, *reservations])


def on_clock(world: World, origin_sec: float) -> World:
    """`world` with its own timed parts (no-fly windows, other traffic) on a clock whose t = 0 is `origin_sec` of
    its own: a request planned from its departure must meet the zones and traffic as they are then."""
    if origin_sec == 0:
        return world
    zones = []
    for zone in world.no_fly_zones:
        window = zone.active_window
        if window is None:
            zones.append(zone)
        elif window.end_sec > origin_sec:  # a window that has closed by then is gone
            shifted_window = TimeWindow(
                start_sec=max(0.0, window.start_sec - origin_sec), end_sec=window.end_sec - origin_sec
            )
            zones.append(zone.model_copy(update={"active_window": shifted_window}))
    traffic = [
        track.model_copy(update={"waypoints": [(x, y, z, t - origin_sec) for x, y, z, t in track.waypoints]})
        for track in world.traffic
        if track.waypoints[-1][3] > origin_sec  # a track flown by then is gone
    ]
    return world.updated(no_fly_zones=zones, traffic=traffic)
