"""The standard tool plan: the one template of every IR writer that does not write its own plan (the rules model,
the local model's slots, the benchmark's gold).

A step carries only what the IR's entities and constraints cannot say (the area looked at, a start that is a UAV
rather than a place, corridors only, the hand-off point a leg is verified to); execution fills every other argument
from them (`ir_tool_args`), so a plan built here cannot disagree with the IR it belongs to.
"""

from __future__ import annotations

from typing import Any

from ir.model import EntityRefs, ToolCallSpec
from tools.world import World

# (step id, tool), in the tools' dependency order: look at the city and the airspace, pick a UAV, plan its route,
# then the gates (verify, simulate, risk) and the explanation.
STANDARD_STEPS = (
    ("city", "query_city_state"),
    ("airspace", "query_airspace"),
    ("assign", "assign_uav"),
    ("route", "plan_route"),
    ("verify", "verify_ltl_stl"),
    ("simulate", "simulate_scenario"),
    ("risk", "risk_assess"),
    ("explain", "explain_decision"),
)
AREA_MARGIN_M = 150.0


def mission_area(world: World, places: list[str]) -> list[float] | None:
    """Bounding box of the mission's places plus a margin, clipped to the map (so no partial_map error); None
    (the whole map) when no place is known."""
    points = [world.position_of(p) for p in places if p in world.entity_index]
    if not points:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    w, d = world.grid.width_m, world.grid.depth_m
    return [
        round(max(0.0, min(xs) - AREA_MARGIN_M), 1),
        round(max(0.0, min(ys) - AREA_MARGIN_M), 1),
        round(min(w, max(xs) + AREA_MARGIN_M), 1),
        round(min(d, max(ys) + AREA_MARGIN_M), 1),
    ]


def _chain(steps: list[tuple[str, str, dict[str, Any]]]) -> list[ToolCallSpec]:
    return [
        ToolCallSpec(id=step_id, tool=tool, args=args, depends_on=[steps[i - 1][0]] if i else [])
        for i, (step_id, tool, args) in enumerate(steps)
    ]


def standard_tool_plan(
    world: World, entities: EntityRefs, *, start: str | None = None, require_corridor: bool = False
) -> list[ToolCallSpec]:
    """`start`: where the route begins when that is not the origin (a returning UAV flies from where it is);
    `require_corridor`: the flight may use drone corridors only, so an airspace without a free one fails."""
    area = mission_area(world, [p for p in (entities.origin, *entities.waypoints, entities.landing) if p])
    look = {"bbox": area} if area else {"region": world.world_id}
    args: dict[str, dict[str, Any]] = {
        "city": look,
        "airspace": {**look, **({"require_corridor": True} if require_corridor else {})},
        "route": {"start": start} if start else {},
        # A plan run outside the graph (the gold's) verifies the leg to the hand-off point; the graph's gate does
        # that itself for a route that ends there (nodes/gates.py).
        "verify": {"goal": entities.landing} if entities.handoff_points else {},
    }
    return _chain([(step_id, tool, args.get(step_id, {})) for step_id, tool in STANDARD_STEPS])


def look_only_plan(world: World) -> list[ToolCallSpec]:
    """A plan for a request with nothing to fly (ambiguous, or contradicting itself): look at the city only."""
    return _chain([("city", "query_city_state", {"region": world.world_id})])
