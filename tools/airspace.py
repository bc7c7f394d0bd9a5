"""query_airspace: active no-fly zones, corridors (capacity / load / free), ceiling, within an area and window."""

from __future__ import annotations

import math

from pydantic import Field, model_validator
from shapely.geometry import Point, Polygon, box

from tools.city import AreaArgs, resolve_area, unknown_id_failure
from tools.contract import ToolFailure, ToolOutput
from tools.registry import ToolSpec
from tools.world import Corridor, NoFlyZone, World


class QueryAirspaceArgs(AreaArgs):
    alt_min_m: float = Field(default=0.0, ge=0)
    alt_max_m: float | None = Field(default=None, gt=0, description="None = no upper limit")
    time_sec: float = Field(default=0.0, ge=0, description="start of the time window, seconds")
    horizon_sec: float | None = Field(default=None, ge=0, description="window length; None = the instant time_sec")
    destination: str | None = Field(default=None, description="entity id checked against active no-fly zones")
    require_corridor: bool = False
    capacity_required: int = Field(default=1, ge=1, description="free corridor slots needed")

    @model_validator(mode="after")
    def _altitude_order(self) -> QueryAirspaceArgs:
        if self.alt_max_m is not None and self.alt_max_m <= self.alt_min_m:
            raise ValueError("alt_max_m must be greater than alt_min_m")
        return self


def _bands_overlap(lo: float, hi: float, other_lo: float, other_hi: float) -> bool:
    return lo <= other_hi and other_lo <= hi


def _nfz_summary(zone: NoFlyZone) -> dict:
    window = zone.active_window
    return {
        "id": zone.id,
        "bounds": [round(v, 2) for v in zone.shape.bounds],
        "alt_min_m": zone.alt_min_m,
        "alt_max_m": zone.alt_max_m,
        "active_window": [window.start_sec, window.end_sec] if window else None,
        "temporary": zone.temporary,
        "reason": zone.reason,
    }


def _corridor_summary(corridor: Corridor) -> dict:
    return {
        "id": corridor.id,
        "polyline": [list(p) for p in corridor.polyline],
        "width_m": corridor.width_m,
        "alt_min_m": corridor.alt_min_m,
        "alt_max_m": corridor.alt_max_m,
        "capacity": corridor.capacity,
        "load": corridor.load,
        "free": corridor.free_capacity,
    }


def _active_nfzs(world: World, t0: float, t1: float, alt_min: float, alt_max: float) -> list[NoFlyZone]:
    """No-fly zones active at some time of [t0, t1] whose altitude band meets [alt_min, alt_max]."""
    return [z for z in world.active_no_fly_zones(t0, t1) if _bands_overlap(alt_min, alt_max, z.alt_min_m, z.alt_max_m)]


def _query_airspace(world: World, args: QueryAirspaceArgs) -> ToolOutput:
    area, reaches_out = resolve_area(world, args)
    region = box(*area) if area else Polygon()
    t0, t1 = args.time_sec, args.time_sec + (args.horizon_sec or 0.0)
    alt_max = math.inf if args.alt_max_m is None else args.alt_max_m
    active = _active_nfzs(world, t0, t1, args.alt_min_m, alt_max)
    corridors = [
        c
        for c in world.corridors
        if region.intersects(c.shape) and _bands_overlap(args.alt_min_m, alt_max, c.alt_min_m, c.alt_max_m)
    ]
    result = {
        "area": list(area) if area else None,
        "altitude_range_m": [args.alt_min_m, args.alt_max_m],
        "time_window_sec": [t0, t1],
        "ceiling_m": world.grid.ceiling_m,
        "no_fly_zones": [_nfz_summary(z) for z in active if region.intersects(z.shape)],
        "corridors": [_corridor_summary(c) for c in corridors],
        "congested_corridors": [c.id for c in corridors if c.load >= c.capacity],
    }
    warnings = ["the requested bbox reaches outside the map; only the part inside is described"] if reaches_out else []
    if args.destination is not None:
        _check_destination(world, args.destination, active, result)
    if args.require_corridor and not any(c.free_capacity >= args.capacity_required for c in corridors):
        raise ToolFailure(
            "capacity_low",
            f"no corridor in the area has {args.capacity_required} free slot(s) "
            f"(free: {', '.join(f'{c.id}={c.free_capacity}' for c in corridors) or 'no corridor at all'})",
            recoverable=True,
            suggested_actions=["wait for corridor capacity", "plan outside corridors", "query a wider area"],
            result=result,
        )
    return ToolOutput(result=result, warnings=warnings)


def _check_destination(world: World, destination: str, active: list[NoFlyZone], result: dict) -> None:
    if destination not in world.entity_index:
        raise unknown_id_failure("entity", destination, world.entity_index)
    spot = Point(world.entity_index[destination].position)
    inside = [z.id for z in active if z.shape.covers(spot)]
    if inside:
        raise ToolFailure(
            "restricted_airspace",
            f"destination {destination} lies inside active no-fly zone(s) {', '.join(inside)} in the time window",
            recoverable=False,
            suggested_actions=["ground transfer to the destination", "ask a human operator", "safe refusal"],
            result=result,
        )


SPEC = ToolSpec(
    name="query_airspace",
    description=(
        "Active no-fly zones, corridors (capacity, load, free slots), ceiling and congested corridors inside a "
        "region / bbox, altitude range and time window; checks a destination against active no-fly zones."
    ),
    args_model=QueryAirspaceArgs,
    body=_query_airspace,
    data_sources=("world.no_fly_zones", "world.corridors", "world.grid"),
)
