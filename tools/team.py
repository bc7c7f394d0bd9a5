"""assign_team: the best team of UAVs for a request that needs several (issue 42's fleet missions).

A request is a list of sub-tasks (origin -> waypoints -> destination, a payload, a deadline, required sensors, and
sub-tasks it must follow). Each non-split sub-task gets exactly one UAV; a split sub-task's payload is divided among
1..max_uavs_per_split UAVs that each fly the same leg with their share, or among exactly `uav_count` UAVs where the
request states how many (max_uavs_per_split then does not apply). With a stated count every member carries at least
half an even share (payload / uav_count / 2): without a floor the cheapest split would leave a member grams, or
nothing, and the count would be kept in name only. A load of whole items (`item_kg`: "four bags of 3 kg") is shared in
whole items: every share, bound and floor is a multiple of item_kg (the share an integer count of items in the MILP). A UAV serves at most one sub-task: no UAV is booked twice, so a UAV
never chains two sub-tasks (a relay is two UAVs meeting at a pad).

Feasibility of one UAV on one sub-task is exactly assign_uav's (tools/assignment.evaluate: status, payload, battery
reserve, wind + gusts, repositioning leg included), plus the sub-task's sensors. For a split sub-task the share is a
decision: tools/energy.py's energy is affine in the payload (per metre: base + per_kg * payload), so evaluate at 0 kg
and at min(capacity, payload) gives the UAV's energy line exactly, and the battery reserve becomes a linear upper
bound on its share (with its capacity and the payload). This is exact where evaluating at min(capacity, payload)
alone would be only conservative (a UAV too weak to carry that much may still carry a smaller share). The members'
reported numbers are evaluate's at their actual shares.

Timing model (all UAVs are told at t = 0, now, and take off at once from where they stand):
- own arrival `eta(u, s)`: evaluate's ETA, u's position -> origin -> waypoints -> destination, take-off and landing
  included; independent of the payload.
- leg time `leg(u, s)`: evaluate's ETA for u standing on the origin pad: the flight origin -> destination alone.
- a sub-task s whose `after` list is empty finishes when its last member lands: F(s) = max over members u of eta(u, s).
  With `after`, a member flies to the origin, waits there landed until everything in `after` has finished, and only
  then flies the leg: F(s) = max over members u of max(eta(u, s), P(s) + leg(u, s)), P(s) = max of F over `after`.
  (Whenever P(s) + leg(u, s) exceeds eta(u, s), the member is charged a fresh take-off at the origin, even one that
  arrives in the air just after P(s): slightly pessimistic, never optimistic.) The wait costs no energy in assign_uav's model, which charges one climb per task.
- deadlines hold at finish: F(s) <= deadline_sec; makespan = max over s of F(s); energy = the members' energies.
- objective, lexicographic: min_makespan = (makespan, energy), min_energy = (energy, makespan).

Solution: a mixed-integer linear program (scipy.optimize.milp, HiGHS), always, so the one path the tool takes is the
one the reference test checks: x[u, s] binary for feasible pairs only, share[u, s] <= max_share(u, s) * x[u, s] for
split sub-tasks (and share[u, s] >= floor(s) * x[u, s], sum over u of x[u, s] = uav_count, where a count is stated),
finish times F(s) >= eta(u, s) x[u, s] and F(s) >= F(q) + leg(u, s) x[u, s] for q in after(s) (no big-M needed: with
x = 0 the second says F(s) >= F(q), which holds anyway), makespan T >= F(s); the primary objective
is minimised, then the secondary with the primary held at its optimum. `brute_force_team` enumerates every assignment
instead; it lives here, beside the solver, so the benchmark's perf code can use it as a reference too.

No team: the failure names the binding constraint, checked in this order: the named candidates lack a team the rest
of the fleet holds (recoverable, as assign_uav's low_battery_candidates); no idle UAV at all; per sub-task alone,
its sensors, then a stated count against the idle UAVs with those sensors (fleet size), then its payload against the
capable UAVs' capacity, then a stated count against the UAVs able to carry a share (fleet size), then battery or wind
on the leg; then the fleet size (the sub-tasks need more distinct UAVs than can fly them); then the deadline (the
team that minimises the worst lateness still misses sub-task S by N s).
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from tools.assignment import AssignUavArgs, Candidate, evaluate
from tools.city import unknown_id_failure
from tools.contract import ToolFailure, ToolOutput
from tools.dependencies import find_cycle, waiting_order
from tools.items import is_whole_items, whole_items, whole_items_up
from tools.registry import ToolSpec
from tools.world import UAV, UAVStatus, World

MAX_SUBTASKS = 12
MAX_PAIRS = 600  # sub-tasks x considered UAVs: each pair costs a few evaluate calls
SOLVER_TIME_LIMIT_SEC = 10.0
DEADLINE_TOLERANCE_SEC = 1e-6  # finish times are sums of floats; the solver's and the enumeration's agree within it
SHARE_EPSILON_KG = 1e-6  # above the solver's feasibility tolerance, so its covering shares are covering here too
# Shares are held a hair below the battery's exact limit so evaluate, re-run at the share, does not flip on rounding.
BATTERY_SHARE_MARGIN_KG = (
    1e-3  # shares are reported and flown in grams: one at its battery limit, rounded, stays within
)

# With a stated uav_count each member carries at least this fraction of an even share (see the module docstring).
COUNTED_SHARE_FLOOR = 0.5

TeamObjective = Literal["min_makespan", "min_energy"]


class TeamSubtask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="sub-task id, unique in the request; `after` lists refer to it")
    origin: str = Field(description="entity id where the sub-task starts (pick-up, or the hand-off pad of a relay)")
    destination: str = Field(description="entity id where the sub-task ends")
    waypoints: list[str] = Field(
        default_factory=list, description="entity ids visited in order between origin and destination"
    )
    payload_kg: float = Field(default=0.0, ge=0, description="mass carried from origin to destination")
    deadline_sec: float | None = Field(
        default=None, ge=0, description="seconds from now by which the sub-task must be finished (landed)"
    )
    required_sensors: list[str] = Field(
        default_factory=list, description="sensors the UAV must carry, all of them (e.g. camera)"
    )
    after: list[str] = Field(
        default_factory=list,
        description="sub-task ids that must be finished before this one's leg starts (a relay's second leg)",
    )
    split: bool = Field(
        default=False,
        description="the payload may be divided among several UAVs flying the same leg, each within its capacity",
    )
    uavs: list[str] = Field(
        default_factory=list, description="UAV ids that alone may fly it (pinned by the request); empty = any"
    )
    # Left out of a dump when None, as in the IR's sub-task (ir.model.SubTask), which converts to this one to one.
    uav_count: int | None = Field(
        default=None,
        ge=1,
        exclude_if=lambda count: count is None,
        description="split only: exactly this many UAVs share it, each carrying at least half an even share "
        "(max_uavs_per_split does not apply); null = as many as the objective prefers, up to max_uavs_per_split",
    )
    item_kg: float | None = Field(
        default=None,
        gt=0,
        exclude_if=lambda item: item is None,
        description="the payload is whole items of this mass (payload_kg a multiple of it): a split shares items, "
        "never parts of one; null = the payload divides freely",
    )

    @property
    def share_floor_kg(self) -> float:
        """The least share a member carries: half an even share where a count is stated (in whole items, rounded up,
        for a load of items), else nothing."""
        if not self.split or self.uav_count is None:
            return 0.0
        return whole_items_up(COUNTED_SHARE_FLOOR * self.payload_kg / self.uav_count, self.item_kg)

    def group_sizes(self, max_uavs_per_split: int) -> range:
        """How many UAVs may fly it."""
        if not self.split:
            return range(1, 2)
        if self.uav_count is not None:
            return range(self.uav_count, self.uav_count + 1)
        return range(1, max_uavs_per_split + 1)


class AssignTeamArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subtasks: list[TeamSubtask] = Field(min_length=1, description="what the team must do")
    candidates: list[str] = Field(default_factory=list, description="UAV ids to choose from; empty = whole fleet")
    excluded: list[str] = Field(default_factory=list, description="UAV ids never to use")
    battery_reserve_ratio: float = Field(default=0.2, ge=0, lt=1)
    objective: TeamObjective = Field(
        default="min_makespan",
        description="min_makespan: latest finish, then total energy; min_energy: total energy, then latest finish",
    )
    max_uavs_per_split: int = Field(default=4, ge=1, le=8, description="most UAVs sharing one split sub-task")


@dataclass(frozen=True)
class Pairing:
    """One UAV on one sub-task. Energy at share kg = fixed_energy_wh + energy_per_kg_wh * share (a non-split
    sub-task's share is its whole payload, already in fixed_energy_wh)."""

    uav: UAV
    subtask: TeamSubtask
    eta_sec: float
    leg_sec: float
    fixed_energy_wh: float
    energy_per_kg_wh: float
    max_share_kg: float
    reasons: list[str]  # why it cannot fly the sub-task; empty = feasible

    @property
    def feasible(self) -> bool:
        return not self.reasons

    def energy_wh(self, share_kg: float) -> float:
        return self.fixed_energy_wh + self.energy_per_kg_wh * share_kg

    def finish_sec(self, predecessors_done_sec: float | None) -> float:
        if predecessors_done_sec is None:
            return self.eta_sec
        return max(self.eta_sec, predecessors_done_sec + self.leg_sec)


@dataclass(frozen=True)
class TeamInstance:
    args: AssignTeamArgs
    subtasks: list[TeamSubtask]  # dependencies first
    uavs: list[UAV]  # considered: candidates (or the fleet) less the excluded
    excluded: list[UAV]
    pairs: dict[tuple[str, str], Pairing]  # (uav id, sub-task id) -> pairing, every considered UAV x sub-task

    def pairs_of(self, subtask: TeamSubtask, *, feasible: bool = True) -> list[Pairing]:
        found = [self.pairs[u.id, subtask.id] for u in self.uavs]
        return [p for p in found if p.feasible] if feasible else found


@dataclass(frozen=True)
class TeamSolution:
    shares_kg: dict[str, dict[str, float]]  # sub-task id -> {uav id: share}, members in the order chosen
    finish_sec: dict[str, float]
    makespan_sec: float
    energy_wh: float

    def key(self, objective: TeamObjective) -> tuple[float, float]:
        if objective == "min_makespan":
            return self.makespan_sec, self.energy_wh
        return self.energy_wh, self.makespan_sec


@contextmanager
def _c_stdout_to_stderr() -> Iterator[None]:
    """HiGHS prints some of its own debugging lines to the C library's stdout whatever `disp` says: sent to stderr
    while it solves, so that a command's `--json` on stdout stays one JSON object."""
    sys.stdout.flush()
    kept = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(kept, 1)
        os.close(kept)


# --- the instance -------------------------------------------------------------------------------------------------


def _dependency_order(subtasks: list[TeamSubtask]) -> list[TeamSubtask]:
    waits_for = {s.id: s.after for s in subtasks}
    cycle = find_cycle(waits_for)
    if cycle:
        raise ToolFailure(
            "invalid_team_request",
            f"the sub-tasks' `after` lists form a cycle: {' -> '.join(cycle)}",
            recoverable=True,
            suggested_actions=["remove one of the dependencies in the cycle"],
        )
    by_id = {s.id: s for s in subtasks}
    return [by_id[i] for i in waiting_order(waits_for)]


def _validated(world: World, args: AssignTeamArgs) -> tuple[list[TeamSubtask], list[UAV], list[UAV]]:
    ids = [s.id for s in args.subtasks]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ToolFailure(
            "invalid_team_request",
            f"sub-task ids must be unique: {', '.join(repeated)} repeated",
            recoverable=True,
            suggested_actions=["give every sub-task its own id"],
        )
    for subtask in args.subtasks:
        if subtask.uav_count is not None and subtask.uav_count > 1 and not subtask.split:
            raise ToolFailure(
                "invalid_team_request",
                f"sub-task {subtask.id} asks for {subtask.uav_count} UAVs but is not split: one UAV flies it",
                recoverable=True,
                suggested_actions=[f"mark {subtask.id} split to share it, or drop uav_count"],
            )
        if not is_whole_items(subtask.payload_kg, subtask.item_kg):
            raise ToolFailure(
                "invalid_team_request",
                f"sub-task {subtask.id} carries {subtask.payload_kg:g} kg, which is no whole number of "
                f"{subtask.item_kg:g} kg items",
                recoverable=True,
                suggested_actions=[f"give {subtask.id} a payload of whole items, or drop item_kg"],
            )
        for ref in (subtask.origin, *subtask.waypoints, subtask.destination):
            if ref not in world.entity_index:
                raise unknown_id_failure("entity", ref, world.entity_index)
        for earlier in subtask.after:
            if earlier not in ids or earlier == subtask.id:
                raise ToolFailure(
                    "invalid_team_request",
                    f"sub-task {subtask.id} comes after {earlier!r}, which is "
                    + ("itself" if earlier == subtask.id else "no sub-task of this request"),
                    recoverable=True,
                    suggested_actions=[
                        f"`after` names other sub-tasks: {', '.join(i for i in ids if i != subtask.id)}"
                    ],
                )
    for uav_id in (*args.candidates, *args.excluded, *(u for s in args.subtasks for u in s.uavs)):
        if uav_id not in world.uav_index:
            raise unknown_id_failure("uav", uav_id, world.uav_index)
    ordered = _dependency_order(args.subtasks)
    named = [world.uav_index[u] for u in dict.fromkeys(args.candidates)] or list(world.fleet)
    excluded = set(args.excluded)
    considered = [u for u in named if u.id not in excluded]
    if len(ordered) > MAX_SUBTASKS or len(ordered) * len(considered) > MAX_PAIRS:
        raise ToolFailure(
            "team_request_too_large",
            f"{len(ordered)} sub-tasks x {len(considered)} UAVs is beyond what assign_team solves "
            f"(at most {MAX_SUBTASKS} sub-tasks and {MAX_PAIRS} sub-task x UAV pairs)",
            recoverable=True,
            suggested_actions=["name fewer candidate UAVs", "split the request into smaller ones"],
        )
    return ordered, considered, [world.uav_index[u] for u in dict.fromkeys(args.excluded)]


def _pairing(world: World, uav: UAV, subtask: TeamSubtask, reserve: float) -> Pairing:
    if subtask.uavs and uav.id not in subtask.uavs:
        reason = f"not among the UAVs pinned to {subtask.id} ({', '.join(subtask.uavs)})"
        return Pairing(uav, subtask, math.inf, math.inf, math.inf, 0.0, 0.0, [reason])
    missing = [sensor for sensor in subtask.required_sensors if sensor not in uav.sensors]
    if missing:
        reason = f"lacks the sensor{'s' if len(missing) > 1 else ''} {', '.join(missing)} that {subtask.id} requires"
        return Pairing(uav, subtask, math.inf, math.inf, math.inf, 0.0, 0.0, [reason])
    origin, destination = world.position_of(subtask.origin), world.position_of(subtask.destination)
    via = [world.position_of(w) for w in subtask.waypoints]

    def judged(who: UAV, payload_kg: float) -> Candidate:
        task = AssignUavArgs(
            origin=subtask.origin,
            destination=subtask.destination,
            payload_kg=payload_kg,
            battery_reserve_ratio=reserve,
        )
        return evaluate(world, who, origin, destination, task, via)

    leg_sec = judged(uav.model_copy(update={"position": origin}), 0.0).eta_sec
    if not subtask.split:
        whole = judged(uav, subtask.payload_kg)
        return Pairing(uav, subtask, whole.eta_sec, leg_sec, whole.energy_wh, 0.0, subtask.payload_kg, whole.reasons)
    empty = judged(uav, 0.0)
    most = min(uav.payload_capacity_kg, subtask.payload_kg)
    per_kg = (judged(uav, most).energy_wh - empty.energy_wh) / most if most > 0 else 0.0
    headroom_wh = (uav.battery_ratio - reserve) * uav.battery_capacity_wh - empty.energy_wh
    battery_limit = headroom_wh / per_kg - BATTERY_SHARE_MARGIN_KG if per_kg > 0 else math.inf
    max_share = whole_items(min(most, battery_limit), subtask.item_kg)
    reasons = list(empty.reasons)
    if not reasons and subtask.payload_kg > 0 and max_share <= SHARE_EPSILON_KG:
        if subtask.item_kg is not None and most < subtask.item_kg:
            reasons.append(
                f"payload capacity {uav.payload_capacity_kg:g} kg: less than one {subtask.item_kg:g} kg item"
            )
        else:
            reasons.append(f"payload capacity {uav.payload_capacity_kg:g} kg: it cannot carry a share")
    elif not reasons and max_share < subtask.share_floor_kg:
        limit = "its battery reserve" if battery_limit < most else "its payload capacity"
        reasons.append(
            f"share: it carries at most {max_share:.2f} kg ({limit}), less than the {subtask.share_floor_kg:.2f} kg "
            f"each of the {subtask.uav_count} UAVs sharing {subtask.id} carries at least"
        )
    return Pairing(uav, subtask, empty.eta_sec, leg_sec, empty.energy_wh, per_kg, max(max_share, 0.0), reasons)


def team_instance(world: World, args: AssignTeamArgs) -> TeamInstance:
    """The request checked and every considered UAV judged on every sub-task (ToolFailure for a bad request)."""
    subtasks, considered, excluded = _validated(world, args)
    pairs = {(u.id, s.id): _pairing(world, u, s, args.battery_reserve_ratio) for s in subtasks for u in considered}
    return TeamInstance(args, subtasks, considered, excluded, pairs)


# --- evaluating a team ----------------------------------------------------------------------------------------------


def _cheapest_shares(
    pairings: list[Pairing], payload_kg: float, floor_kg: float = 0.0, item_kg: float | None = None
) -> dict[str, float] | None:
    """A split sub-task's shares among `pairings` at the least energy: every member its floor, then the cheapest
    kilogram (or whole item) first (exact: one covering constraint over bounded shares is a fractional knapsack; in
    whole items, with every bound a whole number of items, each item costs its UAV's per-kg energy times its mass, so
    the cheapest items first is still optimal). None if they cannot carry it all."""
    if any(p.max_share_kg < floor_kg - SHARE_EPSILON_KG for p in pairings):
        return None
    shares = {p.uav.id: floor_kg for p in pairings}
    left = payload_kg - floor_kg * len(pairings)
    for p in sorted(pairings, key=lambda p: (p.energy_per_kg_wh, p.uav.id)):
        take = max(0.0, min(p.max_share_kg - floor_kg, whole_items_up(left, item_kg) if left > 0 else 0.0))
        shares[p.uav.id], left = floor_kg + take, left - take
    return shares if left <= SHARE_EPSILON_KG else None


def team_solution(instance: TeamInstance, members: dict[str, list[str]]) -> TeamSolution | None:
    """The finish times, makespan and energy of a team (sub-task id -> its UAV ids; every pair feasible, no UAV
    twice), by the timing model above; None if a split sub-task's members cannot carry its payload."""
    shares_kg: dict[str, dict[str, float]] = {}
    finish: dict[str, float] = {}
    energy = 0.0
    for subtask in instance.subtasks:
        pairings = [instance.pairs[u, subtask.id] for u in members[subtask.id]]
        if subtask.split:
            shares = _cheapest_shares(pairings, subtask.payload_kg, subtask.share_floor_kg, subtask.item_kg)
            if shares is None:
                return None
            if subtask.payload_kg > 0:  # a member carrying nothing only adds its flight (never with a count's floor)
                pairings = [p for p in pairings if shares[p.uav.id] > SHARE_EPSILON_KG]
                shares = {p.uav.id: shares[p.uav.id] for p in pairings}
        else:
            shares = {p.uav.id: subtask.payload_kg for p in pairings}
        done = max((finish[q] for q in subtask.after), default=None)
        finish[subtask.id] = max(p.finish_sec(done) for p in pairings)
        energy += sum(p.energy_wh(shares[p.uav.id] if subtask.split else 0.0) for p in pairings)
        shares_kg[subtask.id] = shares
    return TeamSolution(shares_kg, finish, max(finish.values()), energy)


def meets_deadlines(instance: TeamInstance, solution: TeamSolution) -> bool:
    return all(
        s.deadline_sec is None or solution.finish_sec[s.id] <= s.deadline_sec + DEADLINE_TOLERANCE_SEC
        for s in instance.subtasks
    )


# --- the exact solver -----------------------------------------------------------------------------------------------


class _Program:
    """The MILP's columns and rows; see the module docstring for the model."""

    def __init__(self, instance: TeamInstance, *, deadlines: bool, lateness: bool):
        self.instance = instance
        self.pairings = [p for s in instance.subtasks for p in instance.pairs_of(s)]
        n_pairs = len(self.pairings)
        split_pairs = [i for i, p in enumerate(self.pairings) if p.subtask.split]
        self.share_column = {i: n_pairs + k for k, i in enumerate(split_pairs)}
        self.finish_column = {s.id: n_pairs + len(split_pairs) + k for k, s in enumerate(instance.subtasks)}
        self.makespan_column = n_pairs + len(split_pairs) + len(instance.subtasks)
        self.lateness_column = self.makespan_column + 1
        self.size = self.lateness_column + (1 if lateness else 0)
        self.rows: list[tuple[dict[int, float], float, float]] = []
        lower, upper = np.zeros(self.size), np.full(self.size, np.inf)
        upper[:n_pairs] = 1.0
        # a share column counts kilograms, or whole items (an integer) for a load of items: kg = unit * column
        self.share_unit = {i: self.pairings[i].subtask.item_kg or 1.0 for i in split_pairs}
        self.integrality = np.zeros(self.size)
        self.integrality[:n_pairs] = 1
        for i, column in self.share_column.items():
            upper[column] = self.pairings[i].max_share_kg / self.share_unit[i]
            if self.pairings[i].subtask.item_kg is not None:
                upper[column] = round(upper[column])  # a whole number already (whole_items), held exact
                self.integrality[column] = 1
        if lateness:
            lower[self.lateness_column] = -np.inf
        by_subtask: dict[str, list[int]] = {s.id: [] for s in instance.subtasks}
        by_uav: dict[str, list[int]] = {}
        for i, p in enumerate(self.pairings):
            by_subtask[p.subtask.id].append(i)
            by_uav.setdefault(p.uav.id, []).append(i)
        for subtask in instance.subtasks:
            chosen = by_subtask[subtask.id]
            finish = self.finish_column[subtask.id]
            sizes = subtask.group_sizes(instance.args.max_uavs_per_split)
            self.rows.append(({i: 1.0 for i in chosen}, sizes[0], sizes[-1]))
            if subtask.split:
                shares = {self.share_column[i]: self.share_unit[i] for i in chosen}
                self.rows.append((shares, subtask.payload_kg, subtask.payload_kg))
                for i in chosen:  # a share only on a UAV that flies, and at least the floor on one that does
                    share = {self.share_column[i]: self.share_unit[i]}
                    self.rows.append(({**share, i: -self.pairings[i].max_share_kg}, -np.inf, 0.0))
                    if subtask.share_floor_kg > 0:
                        self.rows.append(({**share, i: -subtask.share_floor_kg}, 0.0, np.inf))
            for i in chosen:
                self.rows.append(({finish: 1.0, i: -self.pairings[i].eta_sec}, 0.0, np.inf))
                for earlier in subtask.after:
                    row = {finish: 1.0, self.finish_column[earlier]: -1.0, i: -self.pairings[i].leg_sec}
                    self.rows.append((row, 0.0, np.inf))
            self.rows.append(({self.makespan_column: 1.0, finish: -1.0}, 0.0, np.inf))
            if deadlines and subtask.deadline_sec is not None:
                upper[finish] = subtask.deadline_sec + DEADLINE_TOLERANCE_SEC
            if lateness and subtask.deadline_sec is not None:
                self.rows.append(({self.lateness_column: 1.0, finish: -1.0}, -subtask.deadline_sec, np.inf))
        for indices in by_uav.values():  # no UAV booked twice
            self.rows.append(({i: 1.0 for i in indices}, 0.0, 1.0))
        self.bounds = Bounds(lower, upper)

    def objective(self, name: str) -> np.ndarray:
        cost = np.zeros(self.size)
        if name == "makespan":
            cost[self.makespan_column] = 1.0
        elif name == "lateness":
            cost[self.lateness_column] = 1.0
        else:  # energy
            for i, p in enumerate(self.pairings):
                cost[i] = p.fixed_energy_wh
                if i in self.share_column:
                    cost[self.share_column[i]] = p.energy_per_kg_wh * self.share_unit[i]
        return cost

    def solve(self, costs: list[np.ndarray]) -> dict[str, list[str]] | None:
        """Minimise costs[0], then each next cost with the earlier ones held at their optimum; the members."""
        if not self.pairings:
            return None
        rows = list(self.rows)
        x = np.zeros(self.size)
        for stage, cost in enumerate(costs):
            if stage:  # hold the objective just minimised at its optimum (a hair above, for the solver's tolerance)
                held = float(costs[stage - 1] @ x)
                rows.append(
                    ({j: c for j, c in enumerate(costs[stage - 1]) if c}, -np.inf, held + 1e-7 * max(1.0, abs(held)))
                )
            with _c_stdout_to_stderr():
                result = milp(
                    cost,
                    constraints=self._constraint(rows),
                    integrality=self.integrality,
                    bounds=self.bounds,
                    options={"time_limit": SOLVER_TIME_LIMIT_SEC, "mip_rel_gap": 1e-9},
                )
            if result.status == 2:  # infeasible
                return None
            if result.status != 0 or result.x is None:
                raise ToolFailure(
                    "team_solver_limit",
                    f"the team solver stopped without a proven optimum ({result.message})",
                    recoverable=True,
                    suggested_actions=["name fewer candidate UAVs or sub-tasks"],
                )
            x = result.x
        members: dict[str, list[str]] = {s.id: [] for s in self.instance.subtasks}
        for i, p in enumerate(self.pairings):
            if x[i] > 0.5:
                members[p.subtask.id].append(p.uav.id)
        return members

    def _constraint(self, rows: list[tuple[dict[int, float], float, float]]) -> LinearConstraint:
        entries = [(r, c, v) for r, (coefs, _, _) in enumerate(rows) for c, v in coefs.items()]
        row_index, column_index, values = zip(*entries) if entries else ((), (), ())
        matrix = coo_array((values, (row_index, column_index)), shape=(len(rows), self.size)).tocsr()
        return LinearConstraint(matrix, [r[1] for r in rows], [r[2] for r in rows])


_OBJECTIVE_ORDER = {"min_makespan": ["makespan", "energy"], "min_energy": ["energy", "makespan"]}


def _solved(instance: TeamInstance, costs: list[str], *, deadlines: bool = True) -> TeamSolution | None:
    program = _Program(instance, deadlines=deadlines, lateness="lateness" in costs)
    members = program.solve([program.objective(name) for name in costs])
    return None if members is None else team_solution(instance, members)


def optimal_team(world: World, args: AssignTeamArgs) -> TeamSolution | None:
    """The optimal team by the MILP (None: no team meets every constraint)."""
    return _solved(team_instance(world, args), _OBJECTIVE_ORDER[args.objective])


def brute_force_team(world: World, args: AssignTeamArgs) -> TeamSolution | None:
    """The optimal team by enumerating every assignment (and every subset of UAVs for a split sub-task): the
    reference the MILP is tested against; exponential, for small instances only."""
    instance = team_instance(world, args)
    best: TeamSolution | None = None

    def choices(subtask: TeamSubtask, free: set[str]) -> list[tuple[str, ...]]:
        usable = [p.uav.id for p in instance.pairs_of(subtask) if p.uav.id in free]
        sizes = subtask.group_sizes(args.max_uavs_per_split)
        return [group for k in sizes for group in itertools.combinations(usable, k)]

    def extend(index: int, free: set[str], members: dict[str, list[str]]) -> None:
        nonlocal best
        if index == len(instance.subtasks):
            solution = team_solution(instance, members)
            if solution is not None and meets_deadlines(instance, solution):
                if best is None or solution.key(args.objective) < best.key(args.objective):
                    best = solution
            return
        subtask = instance.subtasks[index]
        for group in choices(subtask, free):
            extend(index + 1, free - set(group), {**members, subtask.id: list(group)})

    extend(0, {u.id for u in instance.uavs}, {})
    return best


# --- the tool ---------------------------------------------------------------------------------------------------------


def _not_chosen(instance: TeamInstance, solution: TeamSolution) -> list[dict]:
    chosen = {u for shares in solution.shares_kg.values() for u in shares}
    report = [{"uav_id": u.id, "reasons": ["excluded by the request"]} for u in instance.excluded]
    for uav in instance.uavs:
        if uav.id in chosen:
            continue
        pairings = [instance.pairs[uav.id, s.id] for s in instance.subtasks]
        feasible = [p.subtask.id for p in pairings if p.feasible]
        reasons = [f"{p.subtask.id}: {'; '.join(p.reasons)}" for p in pairings if not p.feasible]
        if feasible:
            reasons.insert(
                0,
                f"feasible for {', '.join(feasible)} but not needed: the chosen team is at least as good for "
                f"{instance.args.objective} without it",
            )
        report.append({"uav_id": uav.id, "reasons": reasons})
    return report


def _member(world: World, instance: TeamInstance, solution: TeamSolution, subtask: TeamSubtask, uav_id: str) -> dict:
    """A member's numbers as assign_uav's evaluate gives them at its actual share."""
    pairing = instance.pairs[uav_id, subtask.id]
    share = solution.shares_kg[subtask.id][uav_id]
    task = AssignUavArgs(
        origin=subtask.origin,
        destination=subtask.destination,
        payload_kg=share,
        battery_reserve_ratio=instance.args.battery_reserve_ratio,
    )
    via = [world.position_of(w) for w in subtask.waypoints]
    judged = evaluate(
        world, pairing.uav, world.position_of(subtask.origin), world.position_of(subtask.destination), task, via
    )
    done = max((solution.finish_sec[q] for q in subtask.after), default=None)
    return {
        "uav_id": uav_id,
        "subtask_id": subtask.id,
        "share_kg": round(share, 3),
        "eta_sec": round(judged.eta_sec, 1),
        "finish_sec": round(pairing.finish_sec(done), 1),
        "energy_wh": round(judged.energy_wh, 2),
        "battery_after_ratio": round(judged.battery_after_ratio, 4),
        "payload_capacity_kg": pairing.uav.payload_capacity_kg,
    }


def assign_team(world: World, args: AssignTeamArgs) -> ToolOutput:
    """The tool body: the chosen team, or a ToolFailure raised (the registry turns it into a failed ToolResult, as
    for every tool) that names the binding constraint."""
    instance = team_instance(world, args)
    solution = _solved(instance, _OBJECTIVE_ORDER[args.objective])
    if solution is None:
        raise _no_team_failure(world, instance)
    team = [_member(world, instance, solution, s, u) for s in instance.subtasks for u in solution.shares_kg[s.id]]
    subtasks = [
        {
            "id": s.id,
            "uav_ids": list(solution.shares_kg[s.id]),
            "finish_sec": round(solution.finish_sec[s.id], 1),
            "deadline_sec": s.deadline_sec,
            "slack_sec": None if s.deadline_sec is None else round(s.deadline_sec - solution.finish_sec[s.id], 1),
        }
        for s in args.subtasks  # the request's order
    ]
    flights = ", ".join(
        f"{m['uav_id']} -> {m['subtask_id']}" + (f" ({m['share_kg']:g} kg)" if m["share_kg"] else "") for m in team
    )
    result = {
        "team": team,
        "subtasks": subtasks,
        "makespan_sec": round(solution.makespan_sec, 1),
        "total_energy_wh": round(sum(m["energy_wh"] for m in team), 2),
        "objective": args.objective,
        "reason": (
            f"{flights}: best for {args.objective} (makespan {solution.makespan_sec:.0f} s, "
            f"{solution.energy_wh:.1f} Wh), every member idle, within payload, battery reserve "
            f"{args.battery_reserve_ratio:.2f} and wind limit, every deadline met"
        ),
        "not_chosen": _not_chosen(instance, solution),
    }
    return ToolOutput(result=result, engine={"team": "scipy-milp-highs"})


# --- no team: the binding constraint ----------------------------------------------------------------------------------


def _reason_kind(reason: str) -> str:
    return reason.split(" ", 1)[0]  # evaluate's reasons open with what failed: status, payload, battery, wind


def _subtask_alone_failure(instance: TeamInstance, subtask: TeamSubtask, idle: list[UAV]) -> ToolFailure | None:
    """Why no idle UAV (or, split, no allowed group of them) can fly `subtask` even with the rest of the request
    gone; None if some can."""
    most = subtask.group_sizes(instance.args.max_uavs_per_split)[-1]
    counted = subtask.split and subtask.uav_count is not None
    idle = [u for u in idle if not subtask.uavs or u.id in subtask.uavs]  # a pinned sub-task is its UAVs' alone
    if not idle:
        return ToolFailure(
            "no_available_uav",
            f"none of the UAVs pinned to sub-task {subtask.id} ({', '.join(subtask.uavs)}) is idle",
            recoverable=False,
            suggested_actions=["pin an idle UAV, or none (the team tool then chooses)", "ask a human operator"],
            result={"binding_constraint": "fleet_size", "subtask_id": subtask.id},
        )
    fitted = [u for u in idle if set(subtask.required_sensors) <= set(u.sensors)]
    if not fitted:
        absent = [x for x in subtask.required_sensors if not any(x in u.sensors for u in idle)]
        what = f"carries {', '.join(absent)}" if absent else f"carries all of {', '.join(subtask.required_sensors)}"
        return ToolFailure(
            "missing_sensor",
            f"no idle UAV {what}, which sub-task {subtask.id} requires",
            recoverable=False,
            suggested_actions=[
                "wait for a UAV with the sensor to become idle",
                "drop or change the sensor requirement",
                "ask a human operator",
            ],
            result={"binding_constraint": "sensors", "subtask_id": subtask.id},
        )
    if counted and len(fitted) < most:
        return _count_failure(instance, subtask, [u.id for u in fitted], "idle UAVs" + _with(subtask), {})
    strongest = sorted(fitted, key=lambda u: (-u.payload_capacity_kg, u.id))[:most]
    capacities = [u.payload_capacity_kg for u in strongest]
    if sum(capacities) < subtask.payload_kg:
        kind = "idle UAV" + _with(subtask)
        lift = (
            f"the {kind}s it may share ({', '.join(u.id for u in strongest)}) lift {sum(capacities):g} kg together"
            if subtask.split
            else f"the largest {kind} ({strongest[0].id}) lifts {capacities[0]:g} kg"
        )
        if instance.excluded:
            lift += f"; excluded: {', '.join(u.id for u in instance.excluded)}"
        actions = ["reduce the payload", "ground transfer", "ask a human operator"]
        if sum(u.payload_capacity_kg for u in fitted) >= subtask.payload_kg:
            more = f"share it among more than {most} UAVs" if counted else f"raise max_uavs_per_split above {most}"
            actions.insert(0, more if subtask.split else "mark it split to share the load")
        return ToolFailure(
            "payload_exceeds_capacity",
            f"sub-task {subtask.id}'s payload {subtask.payload_kg:g} kg is more than {lift}",
            recoverable=False,
            suggested_actions=actions,
            result={
                "binding_constraint": "payload",
                "subtask_id": subtask.id,
                "idle_capacity_kg": sum(u.payload_capacity_kg for u in fitted),
            },
        )
    pairings = [instance.pairs[u.id, subtask.id] for u in fitted]
    carried = sorted((p.max_share_kg for p in pairings if p.feasible), reverse=True)
    if counted and 0 < len(carried) < most:  # some fly a share, not as many as asked: the count binds
        able = [p.uav.id for p in pairings if p.feasible]
        why = {p.uav.id: "; ".join(p.reasons) for p in pairings if not p.feasible}
        return _count_failure(instance, subtask, able, "idle UAVs able to carry a share", why)
    if carried and (not subtask.split or sum(carried[:most]) >= subtask.payload_kg - SHARE_EPSILON_KG):
        return None
    lifters = [p for p in pairings if p.uav.payload_capacity_kg >= subtask.payload_kg or subtask.split]
    kinds = Counter(kind for p in lifters for kind in {_reason_kind(r) for r in p.reasons})
    binding = "wind" if kinds["wind"] > kinds["battery"] else "battery"
    details = "; ".join(f"{p.uav.id}: {r}" for p in lifters for r in p.reasons if _reason_kind(r) == binding)
    if binding == "wind":
        return ToolFailure(
            "wind_above_limit",
            f"wind + gusts on sub-task {subtask.id}'s way exceed the limit of the idle UAVs that could fly it "
            f"({details})",
            recoverable=False,
            suggested_actions=["wait for the wind to drop", "ground transfer", "ask a human operator"],
            result={"binding_constraint": "wind", "subtask_id": subtask.id},
        )
    capped = ", ".join(f"{p.uav.id} {p.max_share_kg:.2f} kg" for p in pairings if p.feasible)
    if subtask.split and capped:
        details = "; ".join(filter(None, [details, f"the reserve caps the others' shares: {capped}"]))
    return ToolFailure(
        "battery_reserve",
        f"no idle UAV (or allowed group) that could fly sub-task {subtask.id} keeps the battery reserve "
        f"{instance.args.battery_reserve_ratio:.2f} on it ({details})",
        recoverable=False,
        suggested_actions=["wait for a UAV to charge", "a relay: hand the load over at a pad", "ask a human operator"],
        result={"binding_constraint": "battery", "subtask_id": subtask.id},
    )


def _with(subtask: TeamSubtask) -> str:
    return f" with {', '.join(subtask.required_sensors)}" if subtask.required_sensors else ""


def _count_failure(
    instance: TeamInstance, subtask: TeamSubtask, able: list[str], kind: str, why: dict[str, str]
) -> ToolFailure:
    """A split sub-task asks for more UAVs than can fly it: the fleet size binds (`why`: the others' reasons)."""
    count = subtask.uav_count
    listed = f" ({', '.join(able)})" if able else ""
    message = f"sub-task {subtask.id} asks for exactly {count} UAVs; {kind}: {len(able)}{listed}"
    if subtask.uavs:
        message += f", of those pinned to it ({', '.join(subtask.uavs)})"
    if why:
        message += "; the others: " + "; ".join(f"{u}: {reason}" for u, reason in why.items())
    if instance.excluded:
        message += f"; excluded: {', '.join(u.id for u in instance.excluded)}"
    return ToolFailure(
        "fleet_too_small",
        message,
        recoverable=False,
        suggested_actions=[
            f"share it among {len(able)} UAVs" if len(able) > 1 else "leave the number of UAVs to the team tool",
            "wait for more UAVs to become idle",
            "ask a human operator",
        ],
        result={"binding_constraint": "fleet_size", "subtask_id": subtask.id, "uavs_needed": count, "uavs_able": able},
    )


def _fewest_uavs(instance: TeamInstance, subtask: TeamSubtask) -> int:
    if not subtask.split:
        return 1
    if subtask.uav_count is not None:
        return subtask.uav_count
    carried = sorted((p.max_share_kg for p in instance.pairs_of(subtask)), reverse=True)
    total = itertools.accumulate(carried)
    return next(k for k, kg in enumerate(total, 1) if kg >= subtask.payload_kg - SHARE_EPSILON_KG)


def _no_team_failure(world: World, instance: TeamInstance) -> ToolFailure:
    args = instance.args
    if args.candidates:  # as assign_uav: say so when the fleet beyond the candidates holds a team
        wider = args.model_copy(update={"candidates": []})
        try:
            others = optimal_team(world, wider)
        except ToolFailure:
            others = None
        if others is not None:
            used = sorted({u for shares in others.shares_kg.values() for u in shares} - set(args.candidates))
            return ToolFailure(
                "no_team_among_candidates",
                f"no team of the candidates {', '.join(args.candidates)} can fly the request; the fleet can",
                recoverable=True,
                suggested_actions=[f"add to the candidates: {', '.join(used)}"],
            )
    idle = [u for u in instance.uavs if u.status is UAVStatus.idle]
    if not idle:
        return ToolFailure(
            "no_available_uav",
            f"no idle UAV among the {len(instance.uavs)} considered"
            + (f" ({', '.join(f'{u.id}: {u.status.value}' for u in instance.uavs)})" if instance.uavs else ""),
            recoverable=False,
            suggested_actions=["wait for a UAV to charge or return", "ground transfer", "ask a human operator"],
            result={"binding_constraint": "fleet_size"},
        )
    for subtask in instance.subtasks:
        failure = _subtask_alone_failure(instance, subtask, idle)
        if failure is not None:
            return failure
    if _solved(instance, ["makespan"], deadlines=False) is None:
        flyers = {p.uav.id for s in instance.subtasks for p in instance.pairs_of(s)}
        needed = sum(_fewest_uavs(instance, s) for s in instance.subtasks)
        who = "; ".join(f"{s.id}: {', '.join(p.uav.id for p in instance.pairs_of(s))}" for s in instance.subtasks)
        return ToolFailure(
            "fleet_too_small",
            f"the sub-tasks need at least {needed} distinct UAVs but only {len(flyers)} can fly any of them"
            if needed > len(flyers)
            else f"every sub-task has a UAV that can fly it, but not all at once: they compete for the same UAVs ({who})",
            recoverable=False,
            suggested_actions=["drop or merge a sub-task", "wait for more UAVs to become idle", "ask a human operator"],
            result={"binding_constraint": "fleet_size", "uavs_needed": needed, "uavs_able": sorted(flyers)},
        )
    late = _solved(instance, ["lateness", "makespan"], deadlines=False)
    assert late is not None  # a team exists once deadlines are relaxed
    timed = [s for s in instance.subtasks if s.deadline_sec is not None]
    worst = max(timed, key=lambda s: late.finish_sec[s.id] - s.deadline_sec)
    by = late.finish_sec[worst.id] - worst.deadline_sec
    return ToolFailure(
        "deadline_unreachable",
        f"no team meets every deadline: the team that keeps the worst lateness least still finishes sub-task "
        f"{worst.id} at {late.finish_sec[worst.id]:.0f} s, {by:.0f} s after its deadline {worst.deadline_sec:g} s",
        recoverable=False,
        suggested_actions=[
            f"allow sub-task {worst.id} at least {math.ceil(late.finish_sec[worst.id])} s",
            "drop an `after` dependency that is not needed",
            "ask a human operator",
        ],
        result={
            "binding_constraint": "deadline",
            "subtask_id": worst.id,
            "late_by_sec": round(by, 1),
            "finish_sec": {s: round(f, 1) for s, f in late.finish_sec.items()},
            "team": late.shares_kg,
        },
    )


SPEC = ToolSpec(
    name="assign_team",
    description=(
        "Choose a team of idle UAVs for a request of several sub-tasks (split loads, parallel sites, sensor roles, "
        "relays via `after`): each UAV on one sub-task, a split load shared by exactly `uav_count` UAVs where given, "
        "exact optimum for min_makespan | min_energy; says why each UAV was or was not chosen, or which constraint "
        "leaves no team."
    ),
    args_model=AssignTeamArgs,
    body=assign_team,
    data_sources=("world.fleet", "world.weather", "world.energy"),
)
