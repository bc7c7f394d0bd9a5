"""The documented defaults: what a request that leaves a fact out implies (a returning UAV's nearest base, a site
visit's nearest depot, the hand-off hub nearest a closed destination). A gate accepts these beside the places the
request names."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from pydantic import ValidationError
from shapely.geometry import Point

from ir.fidelity import StatedConstraints
from ir.model import Intent, OperationConstraints
from language.mentions import find_mentions
from tools.rules import DEFAULT_HORIZON_SEC
from tools.world import EntityKind, NoFlyZone, World

HANDOFF_ALLOWED = re.compile(
    r"\bhand (?:it |the parcel |the cargo )?(?:over|off|to)\b|\bground courier\b|交给地面|地面配送|转交"
)


# Places with ground access where a courier can take the cargo over; one this close to a closed zone is no place to
# hover and hand over.
HANDOFF_HUB_KINDS = ("metro_station", "vertiport", "park", "police", "fire_station")


HANDOFF_ZONE_CLEARANCE_M = 35.0


def _nearest_entity(world: World, kinds: tuple[str, ...], position: tuple[float, float]) -> str | None:
    options = [e for e in world.entities if e.kind.value in kinds]
    if not options:
        return None
    return min(options, key=lambda e: (Point(position).distance(e.point), e.id)).id


def active_in_window(world: World, constraints: OperationConstraints) -> list[NoFlyZone]:
    """NFZs active at any time of the mission window (the deadline, else DEFAULT_HORIZON_SEC)."""
    return world.active_no_fly_zones(0.0, constraints.deadline_sec or DEFAULT_HORIZON_SEC)


CARGO_INTENTS = (Intent.delivery, Intent.emergency)


SITE_VISITS = (Intent.inspection, Intent.patrol, Intent.monitoring)


# Where a returning or charging UAV goes when the request names no place: the nearest one of these kinds.
BASE_KINDS = {Intent.return_: ("depot", "vertiport"), Intent.charge: ("charging_pad",)}


ANY_KIND = tuple(k.value for k in EntityKind)


def default_origin(world: World, intent: Intent, uav: str | None, destination: str | None) -> tuple[str, str] | None:
    """The origin a request that names none implies, with why (the documented defaults): a UAV on any errand but
    cargo flies from where it is (the entity nearest it); a site visit starts at the depot nearest the site."""
    if uav in world.uav_index and intent not in CARGO_INTENTS:
        nearest = _nearest_entity(world, ANY_KIND, world.position_of(uav))  # type: ignore[arg-type]
        return (nearest, f"the place nearest {uav}") if nearest else None
    if destination in world.entity_index and intent in SITE_VISITS:
        depot = _nearest_entity(world, ("depot", "vertiport"), world.position_of(destination))  # type: ignore[arg-type]
        return (depot, f"the depot nearest {destination}") if depot else None
    return None


def default_destination(world: World, intent: Intent, origin: str | None) -> tuple[str, str] | None:
    """The destination a return or charge request implies: the base or pad nearest where the UAV starts."""
    kinds = BASE_KINDS.get(intent)
    if not kinds or origin is None or not (origin in world.entity_index or origin in world.uav_index):
        return None
    nearest = _nearest_entity(world, kinds, world.position_of(origin))
    return (nearest, f"the {kinds[0].replace('_', ' ')} nearest {origin}") if nearest else None


def documented_defaults(
    world: World, stated: StatedConstraints, ir: dict[str, Any], uav: str | None, text: str
) -> dict[str, dict[str, str]]:
    """The places the documented defaults allow in each IR entity field for this request, with why: what the gate's
    converse accounting (ir.provenance) accepts beside the places the request points to. `uav` is the flying one."""
    intent = stated.intent or Intent.delivery
    entities = ir.get("entities") or {}
    uavs = [u for u in dict.fromkeys([uav, *(entities.get("candidate_uavs") or [])]) if u in world.uav_index]
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for start in [*uavs, None]:
        if origin := default_origin(world, intent, start, entities.get("destination")):
            found["origin"][origin[0]] = origin[1]
    for start in [entities.get("origin"), *uavs]:
        if destination := default_destination(world, intent, start):
            found["destination"][destination[0]] = destination[1]
    try:
        constraints = OperationConstraints.model_validate(ir.get("constraints") or {})
    except ValidationError:
        constraints = OperationConstraints()
    if hub := handoff_hub(world, entities.get("destination"), constraints, text.lower()):
        found["handoff_points"][hub] = "the hub nearest the closed destination, as the request allows a hand-off"
    return dict(found)


def handoff_hub(world: World, destination_id: str | None, constraints: OperationConstraints, text: str) -> str | None:
    """Where the request allows a ground hand-off and the destination lies in a no-fly zone active in the mission
    window: the hand-off point the request names, else the hub nearest the destination that keeps clear of the
    zones over it and lies in no other active zone (one near another zone is still reachable: the planner keeps
    out of it); None where either does not hold."""
    destination = world.entity_index.get(destination_id or "")
    if destination is None or not HANDOFF_ALLOWED.search(text):
        return None
    zones = active_in_window(world, constraints)
    covering = [z for z in zones if z.shape.covers(destination.point)]
    if not covering:
        return None
    named = [m.ids[0] for m in find_mentions(text, world) if m.role == "handoff" and len(m.ids) == 1]
    hubs = [
        e
        for e in world.entities
        if e.kind.value in HANDOFF_HUB_KINDS
        and all(z.shape.distance(e.point) >= HANDOFF_ZONE_CLEARANCE_M for z in covering)
        and not any(z.shape.covers(e.point) for z in zones)
    ]
    nearest = min(hubs, key=lambda e: (e.point.distance(destination.point), e.id), default=None)
    return named[0] if named else (nearest.id if nearest else None)
