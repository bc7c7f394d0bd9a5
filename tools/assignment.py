"""assign_uav: pick the UAV for a task (origin -> destination) from the candidates or the whole fleet.

A UAV is feasible when it is idle, can lift the payload, keeps the battery reserve after flying to the origin
and on to the destination (straight legs inflated by a detour factor, plus the take-off climb to the lowest cruise
height and the landing; energy from tools/energy.py), and the wind
plus gusts along those legs stay within its limit. Feasible UAVs are ranked by the objective; every
rejected one says why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tools.city import unknown_id_failure
from tools.contract import ToolFailure, ToolOutput
from tools.energy import path_energy_wh
from tools.registry import ToolSpec
from tools.rules import DEFAULT_ALTITUDE_MIN_M as CRUISE_FLOOR_M
from tools.trajectory import vertical_legs_sec
from tools.world import UAV, XY, UAVStatus, World

DETOUR_FACTOR = 1.3  # grid routes around obstacles are longer than the straight line
WIND_SAMPLE_SPACING_M = 10.0

Objective = Literal["min_delay_safe", "min_energy", "max_reserve"]


class AssignUavArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    origin: str = Field(description="entity id where the task starts (pick-up)")
    destination: str = Field(description="entity id where the task ends")
    candidates: list[str] = Field(default_factory=list, description="UAV ids to choose from; empty = whole fleet")
    payload_kg: float = Field(default=0.0, ge=0)
    battery_reserve_ratio: float = Field(default=0.2, ge=0, lt=1)
    objective: Objective = "min_delay_safe"


@dataclass(frozen=True)
class Candidate:
    uav: UAV
    eta_sec: float
    energy_wh: float
    battery_after_ratio: float
    reasons: list[str]  # why it is rejected; empty = feasible

    def metric(self, objective: Objective) -> float:
        """Larger is better."""
        return {
            "min_delay_safe": -self.eta_sec,
            "min_energy": -self.energy_wh,
            "max_reserve": self.battery_after_ratio,
        }[objective]


def strongest_wind(world: World, points: list[XY]) -> tuple[float, str | None]:
    """The strongest wind plus gusts sampled along the polyline through `points` (each sample in the first weather
    region that holds it, as `World.wind_at`), and that region's id: the measure risk_assess holds a UAV's wind limit
    to, so a UAV assigned here is not one the risk gate must then refuse."""
    legs = [
        np.linspace(a, b, max(2, int(math.dist(a, b) // WIND_SAMPLE_SPACING_M) + 1)) for a, b in zip(points, points[1:])
    ]
    if not legs or not world.weather:
        return 0.0, None
    xy = np.concatenate(legs)
    speed = np.zeros(len(xy))
    region_of = np.full(len(xy), -1)
    unassigned = np.ones(len(xy), dtype=bool)
    for index, region in enumerate(world.weather):  # most specific first: a sample takes the first region holding it
        x0, y0, x1, y1 = region.bbox
        inside = unassigned & (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
        speed[inside] = region.wind_speed_mps + region.gust_mps
        region_of[inside] = index
        unassigned &= ~inside
    worst = int(np.argmax(speed))
    return float(speed[worst]), (world.weather[region_of[worst]].id if region_of[worst] >= 0 else None)


def evaluate(
    world: World, uav: UAV, origin: XY, destination: XY, args: AssignUavArgs, via: Sequence[XY] = ()
) -> Candidate:
    """`uav` judged on the task; `via`: points the loaded leg visits in order between origin and destination (a team
    sub-task's waypoints, tools/team.py)."""
    leg = [origin, *via, destination]
    to_origin = np.array([[*uav.position, 0.0], [*origin, 0.0]])
    to_destination = np.array([[*point, 0.0] for point in leg])
    energy = DETOUR_FACTOR * (path_energy_wh(world, to_origin) + path_energy_wh(world, to_destination, args.payload_kg))
    # the flight runs ground to ground: the climb to the lowest cruise height and the descent from it
    energy += path_energy_wh(world, np.array([[*uav.position, 0.0], [*uav.position, CRUISE_FLOOR_M]]))
    distance = DETOUR_FACTOR * (math.dist(uav.position, origin) + sum(math.dist(a, b) for a, b in zip(leg, leg[1:])))
    seconds = distance / uav.cruise_speed_mps + vertical_legs_sec(CRUISE_FLOOR_M)
    after = uav.battery_ratio - energy / uav.battery_capacity_wh
    reasons = []
    if uav.status is not UAVStatus.idle:
        reasons.append(f"status {uav.status.value} (only idle UAVs can be assigned)")
    if args.payload_kg > uav.payload_capacity_kg:
        reasons.append(f"payload {args.payload_kg:g} kg exceeds its capacity {uav.payload_capacity_kg:g} kg")
    if after < args.battery_reserve_ratio:
        reasons.append(
            f"battery {uav.battery_ratio:.2f} minus the task's {energy:.1f} Wh leaves {after:.2f}, "
            f"below the reserve {args.battery_reserve_ratio:.2f}"
        )
    wind, region = strongest_wind(world, [uav.position, *leg])
    if wind > uav.max_wind_mps:
        reasons.append(
            f"wind + gusts {wind:g} m/s in {region} on its way (repositioning leg included) exceed its limit "
            f"{uav.max_wind_mps:g} m/s"
        )
    return Candidate(uav, seconds, energy, after, reasons)


def _ranking(feasible: list[Candidate], objective: Objective) -> list[dict]:
    """Feasible candidates, best first; score = the candidate's share of the best metric, in (0, 1]."""
    ordered = sorted(feasible, key=lambda c: (-c.metric(objective), -c.battery_after_ratio, c.uav.id))
    best = ordered[0].metric(objective)

    def score(c: Candidate) -> float:
        value = c.metric(objective)
        if objective == "max_reserve":
            return value / best if best > 0 else 1.0
        return best / value if value != 0 else 1.0  # both negative: the faster / thriftier, the closer to 1

    return [
        {
            "uav_id": c.uav.id,
            "score": round(score(c), 4),
            "eta_sec": round(c.eta_sec, 1),
            "energy_wh": round(c.energy_wh, 2),
            "battery_after_ratio": round(c.battery_after_ratio, 4),
        }
        for c in ordered
    ]


def _assign_uav(world: World, args: AssignUavArgs) -> ToolOutput:
    for ref in (args.origin, args.destination):
        if ref not in world.entity_index:
            raise unknown_id_failure("entity", ref, world.entity_index)
    for uav_id in args.candidates:
        if uav_id not in world.uav_index:
            raise unknown_id_failure("uav", uav_id, world.uav_index)
    origin, destination = world.position_of(args.origin), world.position_of(args.destination)
    named = [world.uav_index[u] for u in dict.fromkeys(args.candidates)] or list(world.fleet)
    judged = [evaluate(world, uav, origin, destination, args) for uav in named]
    feasible = [c for c in judged if not c.reasons]
    rejected = [{"uav_id": c.uav.id, "reasons": c.reasons} for c in judged if c.reasons]
    if not feasible:
        raise _no_feasible_failure(world, args, origin, destination, rejected)
    ranking = _ranking(feasible, args.objective)
    chosen = next(c for c in feasible if c.uav.id == ranking[0]["uav_id"])
    result = {
        "uav_id": chosen.uav.id,
        "score": ranking[0]["score"],
        "reason": (
            f"{chosen.uav.id}: idle, best for {args.objective} (ETA {chosen.eta_sec:.0f} s, "
            f"{chosen.energy_wh:.1f} Wh, battery {chosen.battery_after_ratio:.2f} on arrival >= reserve "
            f"{args.battery_reserve_ratio:.2f}, payload {args.payload_kg:g}/{chosen.uav.payload_capacity_kg:g} kg)"
        ),
        "ranking": ranking,
        "rejected": rejected,
        "estimated_energy_wh": round(chosen.energy_wh, 2),
        "objective": args.objective,
    }
    return ToolOutput(result=result)


def _no_feasible_failure(
    world: World, args: AssignUavArgs, origin: XY, destination: XY, rejected: list[dict]
) -> ToolFailure:
    others = [
        u.id
        for u in world.fleet
        if args.candidates and u.id not in args.candidates and not evaluate(world, u, origin, destination, args).reasons
    ]
    result = {"uav_id": None, "rejected": rejected}
    if others:
        return ToolFailure(
            "low_battery_candidates",
            f"none of the candidates {', '.join(args.candidates)} can fly the task; other fleet UAVs can",
            recoverable=True,
            suggested_actions=[f"choose from: {', '.join(others)}"],
            result=result,
        )
    why = "; ".join(f"{r['uav_id']}: {r['reasons'][0]}" for r in rejected)
    return ToolFailure(
        "no_available_uav",
        f"no UAV in the fleet can fly this task ({why})",
        recoverable=False,
        suggested_actions=["ground transfer", "wait for a UAV to charge or return", "ask a human operator"],
        result=result,
    )


SPEC = ToolSpec(
    name="assign_uav",
    description=(
        "Choose an idle UAV for origin -> destination: filters status, payload, battery incl. reserve, wind limit; "
        "ranks by objective (min_delay_safe | min_energy | max_reserve); lists rejected UAVs with reasons."
    ),
    args_model=AssignUavArgs,
    body=_assign_uav,
    data_sources=("world.fleet", "world.weather", "world.energy"),
)
