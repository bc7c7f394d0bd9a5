"""plan_route: a 4D route (x, y, z, t) from start through waypoints to goal with the 3D A* planner.

Masked: buildings (+ min_separation_m), the altitude band, congested corridors (load >= capacity) unless told
otherwise, and ONLY the zones named in avoid_zones. No-fly zones that are not named are deliberately left
unmasked: the verifier is what catches a plan that forgot an active zone, and that failure drives the repair. A
sensitive zone whose buffer holds the route's start or goal (a delivery to the school) is not masked: the task
cannot keep clear of it, and the verifier's R2 exempts it likewise.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tools.city import unknown_id_failure
from tools.contract import ToolFailure, ToolOutput
from tools.grid_masks import MaskSpec, build_occupancy
from tools.planner import DEFAULT_SPEED_MPS, NoPathError, plan_through
from tools.registry import ToolSpec
from tools.signals import zones_containing
from tools.world import XY, World


class PlanRouteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    start: str = Field(description="entity or UAV id")
    goal: str = Field(description="entity or UAV id")
    waypoints: list[str] = Field(default_factory=list, description="entity ids to pass, in order")
    avoid_zones: list[str] = Field(default_factory=list, description="no-fly / sensitive zone ids to keep out of")
    altitude_min_m: float = Field(default=30.0, ge=0)
    altitude_max_m: float = Field(default=120.0, gt=0)
    min_separation_m: float = Field(default=10.0, ge=0)
    uav_id: str | None = Field(default=None, description="flying UAV; if not at start, the route picks up at start")
    depart_time_sec: float = Field(default=0.0, ge=0)
    deadline_sec: float | None = Field(default=None, gt=0, description="arrival deadline on the same clock")
    payload_kg: float = Field(default=0.0, ge=0)
    avoid_congested_corridors: bool = True

    @model_validator(mode="after")
    def _altitude_order(self) -> PlanRouteArgs:
        if self.altitude_min_m >= self.altitude_max_m:
            raise ValueError("altitude_min_m must be lower than altitude_max_m")
        return self


def _check_ids(world: World, args: PlanRouteArgs) -> None:
    places = {**world.entity_index, **world.uav_index}
    for ref in (args.start, *args.waypoints, args.goal):
        if ref not in places:
            raise unknown_id_failure("entity", ref, places)
    for zone_id in args.avoid_zones:
        if zone_id not in world.zone_index:
            raise unknown_id_failure("zone", zone_id, world.zone_index)
    if args.uav_id is not None and args.uav_id not in world.uav_index:
        raise unknown_id_failure("uav", args.uav_id, world.uav_index)


def _flight_bound_sec(stops: list[tuple[str, XY]], speed_mps: float) -> float:
    """A generous bound on the flight's duration: three times the straight legs at cruise speed, plus two
    minutes (take-off waits, holds)."""
    straight = sum(math.dist(a, b) for (_, a), (_, b) in zip(stops, stops[1:]))
    return 3.0 * straight / speed_mps + 120.0


def _no_path_actions(error: NoPathError, args: PlanRouteArgs, masked_corridors: list[str]) -> list[str]:
    unexplained = not error.blockers  # the ends are free but nothing connects them
    actions = [
        f"{z} (named in avoid_zones) blocks the way: use a hand-off point outside it or ask a human"
        for z in error.blockers
        if z in args.avoid_zones
    ]
    if masked_corridors and (unexplained or set(error.blockers) & set(masked_corridors)):
        actions.append("retry with avoid_congested_corridors=false once corridor capacity frees up")
    if unexplained or "altitude_band" in error.blockers:
        actions.append("widen the altitude band within the airspace limits")
    actions.append("choose another start / goal, or a ground transfer")
    return actions


def _plan_route(world: World, args: PlanRouteArgs) -> ToolOutput:
    _check_ids(world, args)
    uav = world.uav_index[args.uav_id] if args.uav_id else None
    stops = [(ref, world.position_of(ref)) for ref in (args.start, *args.waypoints, args.goal)]
    payloads = [args.payload_kg] * (len(stops) - 1)
    if uav is not None and math.dist(uav.position, stops[0][1]) > world.arrival_tolerance_m:
        stops.insert(0, (uav.id, uav.position))  # pickup leg: the UAV flies empty to the start first
        payloads.insert(0, 0.0)
    elif uav is not None:
        # at the start already: it takes off where it stands, so that is the ground the take-off is judged over
        stops[0] = (args.start, uav.position)
    congested = [c.id for c in world.corridors if c.load >= c.capacity] if args.avoid_congested_corridors else []
    ends = [world.position_of(args.start), world.position_of(args.goal)]
    own = [z for z in zones_containing(world, ends) if z in args.avoid_zones]
    spec = MaskSpec(
        avoid_zones=tuple(sorted(set(args.avoid_zones) - set(own))),
        avoid_corridors=tuple(congested),
        altitude_min_m=args.altitude_min_m,
        altitude_max_m=args.altitude_max_m,
        min_separation_m=args.min_separation_m,
        time_window=(args.depart_time_sec, math.inf),
        reservation_horizon_sec=_flight_bound_sec(stops, uav.cruise_speed_mps if uav else DEFAULT_SPEED_MPS),
    )
    try:
        route = plan_through(
            world,
            build_occupancy(world, spec),
            stops,
            speed_mps=uav.cruise_speed_mps if uav else DEFAULT_SPEED_MPS,
            depart_time_sec=args.depart_time_sec,
            leg_payloads_kg=payloads,
        )
    except NoPathError as error:
        raise ToolFailure(
            "no_path",
            str(error),
            recoverable=True,
            suggested_actions=_no_path_actions(error, args, congested),
            blockers=list(error.blockers),
        ) from None
    result = {
        "waypoints": [[round(float(v), 3) for v in row] for row in route.waypoints],
        "length_m": round(route.length_m, 2),
        "eta_sec": round(route.eta_sec, 2),
        "energy_wh": round(route.energy_wh, 2),
        "uav_id": args.uav_id,
        "start": args.start,
        "goal": args.goal,
        "stops": [label for label, _ in stops],
        "avoided_zones": list(spec.avoid_zones),
        "avoided_corridors": congested,
        "cruise_speed_mps": uav.cruise_speed_mps if uav else DEFAULT_SPEED_MPS,
    }
    warnings = [f"congested corridor(s) kept clear: {', '.join(congested)}"] if congested else []
    warnings += [
        f"{z} holds the route's start or goal: its buffer is not kept (the verifier's R2 exempts it too)" for z in own
    ]
    if args.deadline_sec is not None and route.eta_sec > args.deadline_sec:
        raise ToolFailure(
            "deadline_risk",
            f"arrival at {route.eta_sec:.0f} s is after the deadline {args.deadline_sec:g} s",
            recoverable=True,
            suggested_actions=["assign a faster or closer UAV", "renegotiate the deadline", "ground transfer"],
            result=result,
        )
    return ToolOutput(result=result, warnings=warnings)


SPEC = ToolSpec(
    name="plan_route",
    description=(
        "3D A* route start -> waypoints -> goal as 4D waypoints [x, y, z, t] with length_m, eta_sec, energy_wh. "
        "Masks buildings + min_separation_m, the altitude band, congested corridors and ONLY the zones named in "
        "avoid_zones. With uav_id, times follow its cruise speed and a pickup leg is added if it is not at start."
    ),
    args_model=PlanRouteArgs,
    body=_plan_route,
    data_sources=("world.buildings", "world.no_fly_zones", "world.sensitive_zones", "world.corridors", "world.fleet"),
    needs=("assign_uav",),
)
