"""A rule-based instruction parser: the classic semantic-parser baseline, no LLM.

It reads English or Chinese requests through the language layer (keyword tables and fuzzy matching against the
world's ids and descriptive names: language.mentions, language.quantities), writes the standard tool plan, and on repair rounds applies the counterexample's suggested repair
deterministically. Safety priors (every NFZ active during the mission, sensitive zones near the straight line)
are added whatever the request says, so "ignore the no-fly zone" never removes a safety spec.

A request that needs several UAVs at once (language.team reads it: a split load, sites in parallel, coverage, roles,
a relay) gets a `team` too (plan_team): the sub-tasks the words sketch, with every gap the words leave filled by a
documented rule, while `entities` keeps the request-level view every single-UAV check reads.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from shapely.geometry import LineString

from ir.fidelity import StatedConstraints, equipped_uavs
from ir.model import (
    DELIVERING_ROLES,
    OBSERVING_ROLES,
    EntityRefs,
    ExplanationPlan,
    FallbackPolicy,
    Intent,
    LLMAnswer,
    LowAltitudeIR,
    OperationConstraints,
    Priority,
    SubTask,
    TeamPlan,
    Uncertainty,
    VerificationSpecs,
)
from ir.templates import standard_tool_plan
from ir.validation import PAYLOAD_SUM_TOLERANCE_KG
from language.defaults import (
    CARGO_INTENTS,
    SITE_VISITS,
    active_in_window,
    default_destination,
    default_origin,
    handoff_hub,
)
from language.grounding import ground_mentions
from language.mentions import Mention, blank_mentions, find_mentions, id_pattern
from language.quantities import (
    parse_altitude_and_separation,
    parse_deadline,
    parse_payload,
    parse_reserve,
    with_digits,
)
from language.stated import (
    INJECTION_CUES,
    asks_return,
    clock_deadline,
    demands_marking_crossed,
    is_repositioning,
    parse_intent,
    parse_priority,
    stated_constraints,
    uav_roles_in,
)
from language.team import TeamSketch, read_team
from models.base import GenerationRequest, GenerationResult, IRGenerator, RepairFeedback
from models.factory import Gold, ModelProvider, ModelSettings
from models.options import ModelSpec
from models.repair_choice import offered, repaired_answer
from tools.rules import MONITORED_RULES
from tools.signals import zones_containing
from tools.world import UAVStatus, World

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from tools.registry import ToolRegistry

RULES_VERSION = "rules-v3"  # v2: stops before a landing cue, short names, verbatim names first; v3: team IRs

NEAR_LINE_M = 50.0  # a sensitive zone this close to the straight origin->destination line is avoided

# --- keyword tables (searched in the lower-cased request, with id / name mentions blanked out) -----------------


_ALTITUDE_IN_TEXT = re.compile(r"(?:altitude|floor|height|高度)\D{0,25}?(\d+(?:\.\d+)?)")

_GROUNDING_FIELDS = (
    "origin",
    "destination",
    "candidate_uavs",
    "avoid_zones",
    "sensitive_zones",
    "waypoints",
    "handoff_points",
)


@dataclass
class ParsedTask:
    intent: Intent
    priority: Priority
    entities: EntityRefs
    constraints: OperationConstraints
    missing: list[str] = field(default_factory=list)
    ambiguous: bool = False
    notes: list[str] = field(default_factory=list)
    team: TeamPlan | None = None
    avoid_named: list[str] = field(default_factory=list, repr=False)  # zones the request names to keep out of


# --- resolution -----------------------------------------------------------------------------------------------
def _zones_near_entity(world: World, entity_id: str) -> list[str]:
    point = world.entity_index[entity_id].point
    near = [z.id for z in world.sensitive_zones if z.buffered_shape.distance(point) <= NEAR_LINE_M]
    return near + [z.id for z in world.no_fly_zones if z.shape.distance(point) <= NEAR_LINE_M]


def _pick(mentions: list[Mention], role: str) -> Mention | None:
    return next((m for m in mentions if m.role == role), None)


def safety_prior_zones(world: World, entities: EntityRefs, constraints: OperationConstraints) -> list[str]:
    """NFZs active at any time of the mission window, and sensitive zones near the straight-line route except those
    that hold the task's own origin or end (a delivery to the school: the verifier's R2 exempts them too)."""
    zones = [z.id for z in active_in_window(world, constraints)]
    stops = [entities.origin, *entities.waypoints, entities.landing]
    if all(s is not None and (s in world.entity_index or s in world.uav_index) for s in stops):
        points = [world.position_of(s) for s in stops]  # type: ignore[arg-type]
        line = LineString(points)
        own = set(zones_containing(world, [points[0], points[-1]]))
        zones += [
            z.id for z in world.sensitive_zones if z.buffered_shape.distance(line) <= NEAR_LINE_M and z.id not in own
        ]
    return zones


def _keep_clear(refs: EntityRefs, world: World, constraints: OperationConstraints, avoid: Sequence[str] = ()) -> None:
    """The zones to avoid: those already listed, the request's, and the safety priors for the route's ends."""
    refs.avoid_zones = list(dict.fromkeys([*refs.avoid_zones, *avoid, *safety_prior_zones(world, refs, constraints)]))
    refs.sensitive_zones = [z for z in refs.avoid_zones if z in {s.id for s in world.sensitive_zones}]


def _resolve_slot(mention: Mention | None, slot: str, task: ParsedTask) -> str | None:
    if mention is None:
        return None
    if len(mention.ids) > 1:
        task.ambiguous = True
        task.missing.append(f"{slot} is ambiguous: one of {', '.join(mention.ids)}")
        return None
    return mention.ids[0]


def _default_endpoints(task: ParsedTask, world: World) -> None:
    """Origins / destinations implied by the intent (default_origin, default_destination)."""
    refs = task.entities
    uav = refs.candidate_uavs[0] if refs.candidate_uavs else None
    if refs.origin is None and uav is not None and (found := default_origin(world, task.intent, uav, None)):
        refs.origin = found[0]
        task.notes.append(f"origin is {found[1]}: {refs.origin}")
    if refs.destination is None and (found := default_destination(world, task.intent, refs.origin)):
        refs.destination = found[0]
        task.notes.append(f"destination defaults to {found[1]}: {refs.destination}")
    if refs.origin is None and (found := default_origin(world, task.intent, None, refs.destination)):
        refs.origin = found[0]
        task.notes.append(f"origin defaults to {found[1]}: {refs.origin}")


def fly_back(task: ParsedTask) -> None:
    """ "... to B and back": B becomes the last stop and the flight ends where it started."""
    refs = task.entities
    if refs.origin and refs.destination not in (None, refs.origin):
        refs.waypoints, refs.destination = [*refs.waypoints, refs.destination], refs.origin
        task.notes.append(f"return leg: back to {refs.origin} after {refs.waypoints[-1]}")


def plan_hand_off(task: ParsedTask, text: str, world: World) -> None:
    """The flight ends at the hand-off point `handoff_hub` finds, if any; the destination stays the operator's."""
    refs = task.entities
    if refs.handoff_points:
        return
    hub = handoff_hub(world, refs.destination, task.constraints, text)
    if hub is not None:
        refs.handoff_points = [hub]
        _keep_clear(refs, world, task.constraints)


def parse_instruction(instruction: str, world: World, reading: StatedConstraints | None = None) -> ParsedTask:
    """The task the request states; `reading`: the run's reading of it (nodes/reading.py), whose `team_needs` says
    whether the team reader need run at all (None: read it here)."""
    text = instruction.lower().replace("\u2019", "'")
    mentions = find_mentions(text, world)
    demands_marking_crossed(text, world, mentions)
    mentions = [m for m in mentions if m.role != "crossed"]
    rest = blank_mentions(text, mentions)
    intent = parse_intent(rest)
    defaults = OperationConstraints()
    quantities = with_digits(rest)
    constraints = OperationConstraints(
        deadline_sec=min(filter(None, (parse_deadline(quantities), clock_deadline(text, world)[1])), default=None),
        # the reading's load where the words give each UAV its share ("uav_01 carries 5 kg and uav_02 3 kg": 8 kg)
        payload_kg=(reading.payload_kg if reading and reading.uav_shares_kg else parse_payload(quantities)) or 0.0,
        battery_reserve_ratio=max(parse_reserve(quantities) or 0.0, defaults.battery_reserve_ratio),
        **parse_altitude_and_separation(quantities, defaults),
    )
    task = ParsedTask(intent, parse_priority(rest, intent), EntityRefs(), constraints)
    uav_roles = uav_roles_in(text, mentions)
    # the run's reading leaves out what the words alone do not ("uav_06's camera is broken" for a request to film)
    uav_roles.update({u: "excluded" for u in (reading.excluded_uavs if reading else [])})
    _fill_entities(task, mentions, world, uav_roles, text)
    pinned = [u for u, role in uav_roles.items() if role == "pinned"]
    has_origin = any(m.role == "origin" for m in mentions if m.kind == "entity")
    if intent in CARGO_INTENTS and pinned and not has_origin and is_repositioning(text, parse_payload(quantities)):
        task.intent = Intent.return_  # a positioning flight: from where the UAV is to the named place
        task.entities.origin = None
        _default_endpoints(task, world)
    if asks_return(" ".join(text.split()), ground_mentions(world, instruction), mentions):
        fly_back(task)
    plan_hand_off(task, text, world)
    destination = world.entity_index.get(task.entities.destination or "")
    if intent is Intent.delivery and destination is not None and destination.kind.value == "accident_site":
        task.intent = Intent.emergency
        task.priority = parse_priority(rest, Intent.emergency)
    if reading is None or reading.team_needs:
        excluded = [u for u, role in uav_roles.items() if role == "excluded"]
        add_team(task, instruction, world, reading or stated_constraints(instruction, world), excluded)
    if reading is not None:
        keep_offered(task, reading)
    if task.team is None and reading is not None and "pinned" not in uav_roles.values():
        keep_equipped(task, reading, world)
    if re.search(INJECTION_CUES, rest):
        task.notes.append("the request asked to relax safety rules; ignored (R1-R3 always hold)")
    return task


# between two sites of one visit: "A, then B", "A and then B", "A, B"
_THEN_NEXT = re.compile(r"\s*,?\s*(?:and\s+)?(?:then\s+)?(?:on to\s+)?(?:the\s+)?")


def _fill_entities(
    task: ParsedTask, mentions: list[Mention], world: World, uav_roles: dict[str, str], text: str
) -> None:
    """Places by their roles, zones (and places named to keep away from) to avoid, and the UAVs the request pins;
    a UAV it names only to leave out is never a candidate."""
    refs = task.entities
    places = [m for m in mentions if m.kind == "entity"]
    avoid: list[str] = []
    for m in mentions:
        if m.kind == "zone":
            avoid += m.ids
        elif m.kind == "entity" and m.role == "avoid":
            avoid += [z for entity_id in m.ids for z in _zones_near_entity(world, entity_id)]
        # pinned, or named in a remark ("uav_07 is nearest, any drone will do"): a first choice repairs may change
        elif (
            m.kind == "uav"
            and uav_roles.get(m.ids[0]) in ("pinned", "reported", "offered")
            and m.ids[0] not in refs.candidate_uavs
        ):
            refs.candidate_uavs.append(m.ids[0])
    origin, destination = _pick(places, "origin"), _pick(places, "destination")
    unassigned = [m for m in places if m.role is None]
    if origin is None and destination is None and len(unassigned) >= 2:
        origin, destination = unassigned[0], unassigned[1]
    elif origin is None and destination is not None and unassigned and unassigned[0].start < destination.start:
        origin = unassigned[0]
    elif destination is None and unassigned:
        destination = next((m for m in unassigned if m is not origin), None)
    refs.origin = _resolve_slot(origin, "origin", task)
    refs.destination = _resolve_slot(destination, "destination", task)
    refs.waypoints = [m.ids[0] for m in places if m.role == "via" and len(m.ids) == 1]
    ends: list[str] = []  # a site visit's sites: those cued, and those named right after one with no cue ("A, then B")
    for previous, m in zip([None, *places], places):
        then_next = (
            previous is not None and previous.ids[0] in ends and _THEN_NEXT.fullmatch(text, previous.end, m.start)
        )
        if len(m.ids) == 1 and (m.role == "destination" or m.role is None and then_next) and m.ids[0] not in ends:
            ends.append(m.ids[0])
    if task.intent in SITE_VISITS and len(ends) >= 2 and refs.destination == ends[0]:
        # "inspect A and B" with one UAV: every site in the order named, the last the destination
        refs.destination = ends[-1]
        stops = [m for m in places if len(m.ids) == 1 and (m.role == "via" or m.ids[0] in ends[:-1])]
        refs.waypoints = list(dict.fromkeys(m.ids[0] for m in sorted(stops, key=lambda m: m.start)))
    refs.handoff_points = [m.ids[0] for m in places if m.role == "handoff" and len(m.ids) == 1]
    _default_endpoints(task, world)
    # after the defaults: the idle others a left-out UAV leaves as candidates are no choice of one UAV to start from
    excluded = [u for u, role in uav_roles.items() if role == "excluded"]
    if excluded:  # a hard exclusion: assignment chooses among the others
        keep_exclusions(task, excluded, world)
        task.notes.append(f"not {', '.join(excluded)}, as the request says")
    task.avoid_named = avoid
    _keep_clear(refs, world, task.constraints, avoid)


# --- a team (issue 42) ----------------------------------------------------------------------------------------
# Where one UAV can land and wait for another's load: the relay pad when the words name none.
RELAY_PAD_KINDS = ("vertiport", "depot", "charging_pad")


def add_team(
    task: ParsedTask, instruction: str, world: World, stated: StatedConstraints, excluded: Sequence[str]
) -> None:
    """The team the request's words sketch (language.team.read_team), written into the task by `plan_team`; none
    when the words sketch no team. The one way a parsed task gets its team (the rules parser, compiled slots)."""
    if (sketch := read_team(instruction, world, stated)) is not None:
        plan_team(task, sketch, stated, world, instruction.lower().replace("\u2019", "'"), excluded)


def plan_team(
    task: ParsedTask, sketch: TeamSketch, stated: StatedConstraints, world: World, text: str, excluded: Sequence[str]
) -> None:
    """Writes the team the words sketch (language.team) into the task, each gap the words leave filled by the
    documented rule of one helper below (places, shares, deadlines), and re-points `entities` at the team's sites:
    the request-level view, the sites in the order served, the last one the destination, the others waypoints, a
    relay's pad the hand-off point. A gap no rule fills (a cargo with no origin) leaves the task without a team,
    said in `missing`."""
    # sites to group into routes; several UAVs watching one site fly a sub-task each, as sketched
    drafts = (
        _coverage_routes(sketch, stated, world)
        if "coverage" in sketch.kinds and len(sketch.sites) > 1
        else _drafts(sketch)
    )
    if not _fill_places(task, drafts, world):
        return
    for draft in drafts:  # a UAV the request leaves out is never a member; several named share the load
        draft["uavs"] = [u for u in draft["uavs"] if u not in excluded]
        draft["split"] = draft["split"] or len(draft["uavs"]) > 1
    members = [u for d in drafts for u in d["uavs"]]
    # a UAV named only in a remark ("uav_06 is charged and ready") is one UAV's first choice, no limit on a team
    remarked = [u for u in task.entities.candidate_uavs if u not in stated.uavs and u not in members]
    if remarked:  # the team tool picks from the fleet (a UAV the words pin still flies: the fidelity gate holds it)
        task.entities.candidate_uavs = []
        keep_exclusions(task, excluded, world)
    if (
        task.entities.candidate_uavs
        and set(task.entities.candidate_uavs) <= set(members)
        and not all(d["uavs"] for d in drafts)
    ):  # UAVs named for their own sub-tasks pin those alone: the team tool picks the others' from the fleet
        task.entities.candidate_uavs = []
        keep_exclusions(task, excluded, world)
    elif task.entities.candidate_uavs:  # a member the words name is a candidate too (the parse pins the first only)
        task.entities.candidate_uavs = list(dict.fromkeys([*task.entities.candidate_uavs, *members]))
    _fill_payloads(task, drafts)
    _fill_deadlines(task, drafts, stated)
    _keep_stated_size(drafts, sketch)
    _point_entities_at_team(task, drafts, world, text)
    try:
        team = TeamPlan(subtasks=[SubTask(**draft) for draft in drafts])
    except ValidationError as exc:  # a sketch this module cannot make whole: the operator plans the team
        task.missing.append(f"the team the request needs could not be written: {exc.errors()[0]['msg']}")
        return
    task.team = team
    task.notes.append(sketch.need())
    task.notes += [f"team: {note}" for note in sketch.notes]
    _keep_team_clear(task, team, world)


def _keep_stated_size(drafts: list[dict[str, Any]], sketch: TeamSketch) -> None:
    """A load split between as many UAVs as the words say ("between two drones", "分三架"): the count is the sub-task's
    uav_count, so the team tool flies exactly that many. Sites, roles, coverage runs and relay legs are a sub-task per
    UAV already (coverage is cut into sketch.min_uavs runs, the stated size where there is one). Where the words name
    other UAVs than they count, no count is written: ir/fidelity.py's team_size_not_kept then asks the operator."""
    size = sketch.stated_size()
    if size is None or len(drafts) != 1 or not drafts[0]["split"]:
        return
    if not drafts[0]["uavs"] or len(drafts[0]["uavs"]) == size:
        drafts[0]["uav_count"] = size


def _drafts(sketch: TeamSketch) -> list[dict[str, Any]]:
    return [s.model_dump() for s in sketch.subtasks]


def _coverage_routes(sketch: TeamSketch, stated: StatedConstraints, world: World) -> list[dict[str, Any]]:
    """The sites to inspect, grouped into as many routes as the team has UAVs (the sketch's min_uavs, at most one
    per site): the sites ordered along their main axis, then cut into runs of near-equal length, so each UAV flies
    a contiguous stretch (tools/team gives each sub-task its own UAV). Each route ends at its last site, or at the
    place the request says the flights end."""
    first = sketch.subtasks[0]  # coverage sketches share everything but the site (and the UAV the words give it)
    sites = [s.destination for s in sketch.subtasks if s.destination]
    owners = {s.destination: s.uavs[0] for s in sketch.subtasks if s.destination and s.uavs}
    if len(owners) == len(sites):  # "A and B with uav_07, C and D with uav_08": each UAV's own sites
        by_uav: dict[str, list[str]] = {}
        for site in sites:
            by_uav.setdefault(owners[site], []).append(site)
        groups = [_along_main_axis(world, group) for group in by_uav.values()]
    else:
        groups = _runs(_along_main_axis(world, sites), min(len(sites), sketch.min_uavs))
    final = stated.final_place if stated.final_place in world.entity_index else None
    if final is None:
        groups = [_from_the_end_nearer_a_uav(world, group, first.required_sensors) for group in groups]
    return [
        {
            **first.model_dump(),
            "id": f"t{i}",
            "waypoints": group if final else group[:-1],
            "destination": final or group[-1],
            "uavs": [owners[group[0]]] if len(owners) == len(sites) else [],
        }
        for i, group in enumerate(groups, 1)
    ]


def _along_main_axis(world: World, sites: list[str]) -> list[str]:
    """The sites ordered along the line they spread most along (the principal axis of their positions), run the way
    the request names them; ties keep the request's order."""
    points = [world.position_of(s) for s in sites]
    cx, cy = (sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points))
    sxx = sum((x - cx) ** 2 for x, _ in points)
    syy = sum((y - cy) ** 2 for _, y in points)
    sxy = sum((x - cx) * (y - cy) for x, y in points)
    angle = 0.5 * math.atan2(2 * sxy, sxx - syy)
    along = [(x - cx) * math.cos(angle) + (y - cy) * math.sin(angle) for x, y in points]
    if along[0] > along[-1]:
        along = [-t for t in along]
    return [site for _, _, site in sorted(zip(along, range(len(sites)), sites))]


def _from_the_end_nearer_a_uav(world: World, route: list[str], sensors: list[str]) -> list[str]:
    """The route run from its end nearer an idle UAV with the sensors: tools/team times a member from where it stands
    to the route's start, so a start at the far end would cost it the route's length twice."""
    able = [u.position for u in world.fleet if u.status is UAVStatus.idle and set(sensors) <= set(u.sensors)]
    if len(route) < 2 or not able:
        return route

    def reach(site: str) -> float:
        return min(math.dist(world.position_of(site), position) for position in able)

    return route if reach(route[0]) <= reach(route[-1]) else route[::-1]


def _runs(ordered: list[str], count: int) -> list[list[str]]:
    """`ordered` cut into `count` contiguous runs whose sizes differ by one at most (the longer ones first)."""
    size, longer = divmod(len(ordered), count)
    runs, start = [], 0
    for i in range(count):
        end = start + size + (1 if i < longer else 0)
        runs.append(ordered[start:end])
        start = end
    return runs


def _fill_places(task: ParsedTask, drafts: list[dict[str, Any]], world: World) -> bool:
    """Origins and destinations the words leave open. A cargo starts and ends where the request-level parse says
    (its own defaults included); a relay changes UAVs at the pad that makes the longer leg shortest; a UAV that
    films or inspects starts at the first place it watches, so tools/team times it from where it stands to there,
    with no detour to a pad it has no business at. False (and `missing` says why) where no place fills a gap."""
    refs = task.entities
    for draft in drafts:
        if draft["role"] == "deliver":
            draft["origin"] = draft["origin"] or refs.origin
        if draft["role"] in DELIVERING_ROLES and not _is_relay_pad(draft, drafts):
            draft["destination"] = draft["destination"] or refs.destination
    for leg in (d for d in drafts if d["role"] == "relay_leg"):
        first = next(d for d in drafts if d["id"] in leg["after"])
        if first["destination"] is None and first["origin"] and leg["destination"]:
            first["destination"] = _relay_pad(world, first["origin"], leg["destination"])
            task.notes.append(f"team: the relay pad is {first['destination']}, which makes the longer leg shortest")
        leg["origin"] = leg["origin"] or first["destination"]
    for draft in drafts:
        if draft["role"] in OBSERVING_ROLES:
            draft["origin"] = draft["origin"] or next(iter([*draft["waypoints"], draft["destination"]]), None)
    gaps = [f"{d['id']}.{slot}" for d in drafts for slot in ("origin", "destination") if d[slot] is None]
    if gaps:
        task.missing.append(f"the team's {', '.join(gaps)} not found in the request or the world")
    return not gaps


def _is_relay_pad(draft: dict[str, Any], drafts: list[dict[str, Any]]) -> bool:
    return any(draft["id"] in other["after"] for other in drafts)


def _relay_pad(world: World, origin: str, destination: str) -> str | None:
    start, end = world.position_of(origin), world.position_of(destination)
    pads = [e for e in world.entities if e.kind.value in RELAY_PAD_KINDS and e.id not in (origin, destination)]
    longer_leg = {e.id: max(math.dist(start, e.position), math.dist(e.position, end)) for e in pads}
    return min(longer_leg, key=lambda pad: (longer_leg[pad], pad), default=None)


def _fill_payloads(task: ParsedTask, drafts: list[dict[str, Any]]) -> None:
    """Shares the words leave open: a delivery without one carries what the stated mass leaves (split evenly where
    several lack one, which the operator is asked to confirm); a relay leg carries on what its first leg carried;
    filming and inspecting carry nothing. The mission's mass is then the team's whole load (the validator's sum;
    "2 kg to each site" is 4 kg in all)."""
    whole = task.constraints.payload_kg
    carrying = [d for d in drafts if d["role"] != "relay_leg"]
    known = sum(d["payload_kg"] for d in carrying if d["payload_kg"] is not None)
    open_shares = [d for d in carrying if d["payload_kg"] is None and d["role"] == "deliver"]
    left = max(0.0, whole - known)
    for draft in open_shares:
        draft["payload_kg"] = round(left / len(open_shares), 3)
    if len(open_shares) > 1 and left > 0:
        share = open_shares[0]["payload_kg"]
        task.missing.append(f"each site's share of the {left:g} kg is not stated: {share:g} kg each is assumed")
    for draft in drafts:
        if draft["payload_kg"] is None and draft["role"] == "relay_leg":
            draft["payload_kg"] = sum(d["payload_kg"] or 0.0 for d in drafts if d["id"] in draft["after"])
        draft["payload_kg"] = draft["payload_kg"] or 0.0
    carried = sum(d["payload_kg"] for d in carrying)
    if abs(carried - whole) > PAYLOAD_SUM_TOLERANCE_KG:
        task.constraints = task.constraints.model_copy(update={"payload_kg": carried})
        task.notes.append(f"team: {carried:g} kg in all, the sub-tasks' shares together (the request read {whole:g})")


def _fill_deadlines(task: ParsedTask, drafts: list[dict[str, Any]], stated: StatedConstraints) -> None:
    """A sub-task keeps a deadline of its own (a site's, where the sites have their own); one that is the request's
    is left null, the mission's. Sites given later deadlines than the mission's make the mission end with the last."""
    for draft in drafts:
        if draft["deadline_sec"] == stated.deadline_sec:
            draft["deadline_sec"] = None
    own = [d["deadline_sec"] for d in drafts if d["deadline_sec"] is not None]
    mission = task.constraints.deadline_sec
    if own and mission is not None and max(own) > mission:
        for draft in drafts:  # the sites without their own keep the mission's
            draft["deadline_sec"] = draft["deadline_sec"] or mission
        task.constraints = task.constraints.model_copy(update={"deadline_sec": max(own)})
        task.notes.append(f"team: the mission ends with its last sub-task, within {max(own):g} s")
    for draft in drafts:
        if draft["deadline_sec"] == task.constraints.deadline_sec:
            draft["deadline_sec"] = None


def _point_entities_at_team(task: ParsedTask, drafts: list[dict[str, Any]], world: World, text: str) -> None:
    """`entities` as one UAV would see the request: from the cargo's origin (for watching alone, the documented
    default) through the sites in the order the team serves them, ending at the last; a relay hands off at its pad.
    A ground hand-off (a closed destination) ends the sub-tasks bound there at the hand-off point, as it ends the
    single UAV's flight."""
    refs = task.entities
    pads = {d["destination"] for d in drafts if _is_relay_pad(d, drafts)}
    sites = list(dict.fromkeys(p for d in drafts for p in (*d["waypoints"], d["destination"]) if p not in pads))
    # the cargo's origin; for watching alone, one the request states (not a site a watcher starts at)
    origins = {d["origin"] for d in drafts if d["role"] == "deliver"} or {d["origin"] for d in drafts} - set(sites)
    parsed_origin, parsed_destination = refs.origin, refs.destination
    refs.destination, refs.waypoints = sites[-1], sites[:-1]
    refs.origin = origins.pop() if len(origins) == 1 else None
    if refs.origin is None:
        _default_endpoints(task, world)
    if refs.origin is None and drafts[0]["origin"]:
        # no default for this intent (a model's slots may say "monitoring"): as one UAV would see it, the flight
        # starts where the first member does; without it the one-UAV tool plan the IR still carries cannot validate
        refs.origin = drafts[0]["origin"]
        task.notes.append(f"origin is where the team's first member starts: {refs.origin}")
    if refs.origin != parsed_origin:  # the parse's default origin (_default_endpoints' note) no longer holds
        task.notes = [n for n in task.notes if not (n.startswith("origin ") and n.endswith(f": {parsed_origin}"))]
    if pads:
        refs.handoff_points = sorted(pads)
        return
    if refs.destination != parsed_destination:  # the hand-off the parse planned was for another destination
        refs.handoff_points = []
        plan_hand_off(task, text, world)
    if refs.handoff_points:
        for draft in drafts:
            if draft["destination"] == refs.destination:
                draft["destination"] = refs.handoff_points[0]


def _keep_team_clear(task: ParsedTask, team: TeamPlan, world: World) -> None:
    """The zones to avoid, recomputed for the team: those the request names, and the safety priors along the
    request-level route and every sub-task's own."""
    routes = [EntityRefs(origin=s.origin, waypoints=s.waypoints, destination=s.destination) for s in team.subtasks]
    priors = [zone for route in routes for zone in safety_prior_zones(world, route, task.constraints)]
    task.entities.avoid_zones = []
    _keep_clear(task.entities, world, task.constraints, [*task.avoid_named, *priors])


# --- IR building ----------------------------------------------------------------------------------------------
def _route_start(task: ParsedTask) -> str | None:
    """A returning / charging UAV flies from where it is, which is no entity (the IR's origin is the nearest one);
    any other route starts at the origin (None: the plan leaves it to the IR)."""
    uavs = task.entities.candidate_uavs
    if task.intent in (Intent.return_, Intent.charge) and len(uavs) == 1:
        return uavs[0]
    return None


def _fallback(task: ParsedTask) -> FallbackPolicy:
    """Nowhere to go is refused (R8); anything else unclear is for a human to confirm."""
    if task.entities.destination is None and not task.ambiguous:
        return FallbackPolicy.safe_refusal
    if task.entities.handoff_points:
        return FallbackPolicy.ground_transfer
    if task.intent is Intent.emergency and not task.missing:
        return FallbackPolicy.ground_transfer_or_human_confirm
    return FallbackPolicy.human_confirm


def _note_missing_endpoints(task: ParsedTask) -> None:
    for slot in ("origin", "destination"):
        if getattr(task.entities, slot) is None and not any(s.startswith(slot) for s in task.missing):
            task.missing.append(f"{slot} not found in the request or the world")


def _area_view(task: ParsedTask) -> EntityRefs:
    """The entities the tool plan's look at the city covers: a team's every place too, where its members fly."""
    refs = task.entities
    if task.team is None:
        return refs
    places = [p for s in task.team.subtasks for p in (s.origin, *s.waypoints, s.destination)]
    return refs.model_copy(update={"waypoints": list(dict.fromkeys([*refs.waypoints, *places]))})


def build_answer(task: ParsedTask, task_id: str, world: World) -> LLMAnswer:
    _note_missing_endpoints(task)
    rules = [*MONITORED_RULES, *(["R7"] if task.priority is Priority.critical else [])]
    ltl = [f"G !in_{zone}" for zone in task.entities.avoid_zones]
    # A team's sites are shared among its members, each checked on its own flight: no one member visits them all
    # (the validator checks that the sub-tasks serve every site), so only a single UAV is bound to each waypoint.
    stops = task.entities.waypoints if task.team is None else []
    ltl += [f"F at_{w}" for w in stops] + ["F at_goal"]
    ir = LowAltitudeIR(
        task_id=task_id,
        intent=task.intent,
        priority=task.priority,
        entities=task.entities,
        constraints=task.constraints,
        tool_plan=standard_tool_plan(world, _area_view(task), start=_route_start(task)),
        verification_specs=VerificationSpecs(ltl=ltl, program_rules=rules),
        fallback_policy=_fallback(task),
        explanation_plan=ExplanationPlan(
            cite_tools=["assign_uav", "plan_route", "verify_ltl_stl", "simulate_scenario"], cite_rules=rules
        ),
        team=task.team,
    )
    refs = task.entities
    summary = (
        f"{task.intent.value} ({task.priority.value}) from {refs.origin} to {refs.destination}, "
        f"avoiding {', '.join(refs.avoid_zones) or 'no zones'}"
    )
    return LLMAnswer(
        low_altitude_ir=ir,
        rationale_summary="; ".join([summary, *task.notes]),
        uncertainty=Uncertainty(needs_human_confirmation=bool(task.missing), missing_information=list(task.missing)),
    )


# --- repair ---------------------------------------------------------------------------------------------------
def task_from_ir(ir: LowAltitudeIR) -> ParsedTask:
    return ParsedTask(
        intent=ir.intent,
        priority=ir.priority,
        entities=ir.entities.model_copy(deep=True),
        constraints=ir.constraints.model_copy(deep=True),
        team=ir.team.model_copy(deep=True) if ir.team else None,
    )


def _failure_text(cx: dict[str, Any]) -> str:
    parts = [cx.get("suggested_repair"), cx.get("message"), *(cx.get("suggested_actions") or [])]
    return " ".join(json.dumps(p) if not isinstance(p, str) else p for p in parts if p)


def _grounded(slot: str, value: str, world: World) -> bool:
    if slot == "candidate_uavs":
        uav = world.uav_index.get(value)
        return uav is not None and uav.status.value == "idle"
    if slot in ("avoid_zones", "sensitive_zones"):
        return value in world.zone_index
    return value in world.entity_index


def _replace_grounded(
    task: ParsedTask, world: World, field_path: str, bad_value: Any, allowed: list[str]
) -> str | None:
    """Swaps an ungrounded id for the validator's nearest allowed value (list slots also drop other bad ids)."""
    if field_path == "team.subtasks" and isinstance(bad_value, str) and bad_value in world.uav_index:
        return _pin_to_site(task, bad_value, allowed)
    if field_path.startswith("team."):
        return _repair_team(task, world, field_path, allowed)
    slot = next((f for f in _GROUNDING_FIELDS if f in field_path), None)
    if slot is None:
        return None
    refs = task.entities
    current = getattr(refs, slot)
    usable = [a for a in allowed if _grounded(slot, a, world)]
    bad = set(bad_value) if isinstance(bad_value, list) else {bad_value}
    if isinstance(current, list):
        kept = [v for v in current if v not in bad and _grounded(slot, v, world)]
        dropped = [v for v in current if v not in kept]
        replacement = next((a for a in usable if a not in kept), None) if dropped else None
        setattr(refs, slot, kept + ([replacement] if replacement else []))
        return f"{slot}: {', '.join(dropped)} -> {replacement or 'removed'}" if dropped else None
    if usable and usable[0] != current:
        setattr(refs, slot, usable[0])
        return f"{slot}: {current} -> {usable[0]}"
    return None


def _pin_to_site(task: ParsedTask, uav: str, sites: list[str]) -> str | None:
    """A UAV the request names for a site that another member served (fidelity's pinned_uav_swapped, the site
    allowed): it flies the sub-task that ends there, and no other."""
    if task.team is None:
        return None
    sub = next((s for s in task.team.subtasks for site in sites[:1] if s.destination == site), None)
    if sub is None or sub.uavs == [uav]:
        return None
    for other in task.team.subtasks:
        other.uavs = [u for u in other.uavs if u != uav]
    sub.uavs = [*sub.uavs, uav] if sub.split else [uav]
    return f"team {sub.id}.uavs: {uav}, as the request names it for {sub.destination}"


def _repair_team(task: ParsedTask, world: World, field_path: str, allowed: list[str]) -> str | None:
    """A sub-task's place or UAV the validator rejects (team.subtasks.<i>.<slot>[.<j>]): the nearest allowed value
    in its stead; a UAV none may replace leaves the choice to the team tool."""
    match = re.fullmatch(r"team\.subtasks\.(\d+)\.(origin|destination|waypoints|uavs)(?:\.(\d+))?", field_path)
    if task.team is None or match is None or int(match[1]) >= len(task.team.subtasks):
        return None
    sub, slot = task.team.subtasks[int(match[1])], match[2]
    kind = "candidate_uavs" if slot == "uavs" else "waypoints"
    usable = [a for a in allowed if _grounded(kind, a, world)]
    if slot in ("origin", "destination"):
        if not usable:
            return None
        before, after = getattr(sub, slot), usable[0]
        setattr(sub, slot, after)
        return f"team {sub.id}.{slot}: {before} -> {after}"
    values = getattr(sub, slot)
    index = int(match[3]) if match[3] is not None else None
    dropped = values if index is None else values[index : index + 1]
    kept = [v for v in values if v not in dropped]
    replacement = next((a for a in usable if a not in kept), None)
    if slot == "uavs" and (index is None or replacement is None):  # the named UAVs cannot: the team tool picks
        replacement = None
    setattr(sub, slot, kept + ([replacement] if replacement else []))
    return f"team {sub.id}.{slot}: {', '.join(dropped)} -> {replacement or 'removed'}"


def _raise_floor(task: ParsedTask, world: World, text: str) -> str | None:
    c = task.constraints
    numbers = map(float, _ALTITUDE_IN_TEXT.findall(text.lower()))
    stated = [n for n in numbers if c.altitude_min_m < n < c.altitude_max_m]
    target = stated[0] if stated else c.altitude_min_m + world.grid.layer_height_m
    target = min(target, c.altitude_max_m - world.grid.layer_height_m)
    if target <= c.altitude_min_m:
        return None
    task.constraints = c.model_copy(update={"altitude_min_m": target})
    return f"altitude floor raised to {target:g} m"


def _fix_altitude_band(task: ParsedTask, world: World, failure: str, allowed: list[str]) -> str | None:
    """Band errors of constraint grounding: cap at the airspace ceiling, or widen the band to the nearest layer."""
    c = task.constraints
    if failure == "altitude_outside_airspace":
        task.constraints = c.model_copy(update={"altitude_max_m": world.grid.ceiling_m})
        return f"altitude ceiling set to {world.grid.ceiling_m:g} m"
    if failure == "no_flight_layer_in_band" and allowed:
        layer = float(allowed[0])
        band = {"altitude_min_m": min(c.altitude_min_m, layer), "altitude_max_m": max(c.altitude_max_m, layer)}
        task.constraints = c.model_copy(update=band)
        return f"altitude band widened to the {layer:g} m layer"
    return None


def _switch_uavs(task: ParsedTask, world: World, allowed: list[str], text: str) -> str:
    """Moves to the UAVs the feedback names (allowed values, else ids in its text); none named = whole fleet."""
    current = set(task.entities.candidate_uavs)
    named = [u for u in allowed if u in world.uav_index]
    named = named or [u for u in world.uav_index if id_pattern(u).search(text.lower())]
    task.entities.candidate_uavs = [u for u in named if u not in current and _grounded("candidate_uavs", u, world)]
    return f"candidate UAVs -> {', '.join(task.entities.candidate_uavs) or 'whole fleet'}"


_MEMBER_LABEL = re.compile(r"\bmember (\S+) \((\S+)\)")  # nodes/team.member_named: "member t1 (uav_03)"


def _failed_member(task: ParsedTask, cx: dict[str, Any], text: str) -> tuple[SubTask, str] | None:
    """The sub-task and UAV of the team member a gate failed: the counterexample's field (`team.subtasks.<i>`) and
    value (its UAV), as nodes/team.member_named writes them, else the "member <id> (<uav>)" label in its text."""
    assert task.team is not None
    field = re.fullmatch(r"team\.subtasks\.(\d+)", str(cx.get("field") or ""))
    if field and int(field[1]) < len(task.team.subtasks) and isinstance(cx.get("value"), str):
        return task.team.subtasks[int(field[1])], cx["value"]
    if label := _MEMBER_LABEL.search(text):
        sub = next((s for s in task.team.subtasks if s.id == label[1]), None)
        return (sub, label[2]) if sub is not None else None
    return None


def _exclude_failed_member(task: ParsedTask, world: World, cx: dict[str, Any], text: str) -> str | None:
    """A member's battery failure (R5): its UAV flies the team no more. The IR has no per-sub-task exclusion (a
    sub-task's `uavs` are the UAVs that share it, not a choice among them), so the UAV leaves the sub-task's `uavs`
    and the candidates: the idle fleet (or the candidates the IR named) without it, every UAV pinned to a sub-task
    kept. The team tool still picks the rest; pinning the failed UAV again, as the text's ids would, cannot help."""
    found = _failed_member(task, cx, text)
    if found is None or task.team is None:
        return None
    sub, uav = found
    pinned = [u for s in task.team.subtasks for u in s.uavs if u != uav]
    pool = task.entities.candidate_uavs or [u.id for u in world.fleet if _grounded("candidate_uavs", u.id, world)]
    candidates = list(dict.fromkeys(u for u in [*pool, *pinned] if u != uav))
    if uav not in sub.uavs and uav not in task.entities.candidate_uavs and task.entities.candidate_uavs == candidates:
        return None
    sub.uavs = [u for u in sub.uavs if u != uav]
    task.entities.candidate_uavs = candidates
    return f"team {sub.id}: {uav} failed {cx.get('violated_rule') or 'battery'}; candidate UAVs without it"


def _repair_one_member(task: ParsedTask, world: World, cx: dict[str, Any], text: str) -> list[str]:
    """A member the repair node changes alone (`team_repair`: re-time, re-route, or reassign its sub-task): the
    execution keeps every other member's UAV and route, so the IR changes only in who may fly and in the zones kept
    out of. A reassigned member's UAV leaves the team (_exclude_failed_member); a re-routed one's zone is recorded
    among those to avoid (so a later round's plan keeps out of it too); a re-timed one changes nothing here. No
    team-wide repair (a higher floor, the candidates cleared for a deadline) is made: it would re-plan every
    member."""
    planned = cx["team_repair"]
    member = f"team {planned.get('subtask_id')}: {planned.get('uav_id')}"
    zones = [z for z in planned.get("avoid") or [] if z in world.zone_index and z not in task.entities.avoid_zones]
    task.entities.avoid_zones += zones
    task.entities.sensitive_zones = [z for z in task.entities.avoid_zones if z in {s.id for s in world.sensitive_zones}]
    kept_out = f"; avoid {', '.join(zones)}" if zones else ""
    if planned.get("action") == "reassign":
        _exclude_failed_member(task, world, cx, text)
        return [f"{member} reassigned by the execution; candidate UAVs without it{kept_out}; the other members kept"]
    done = "re-routed" if planned.get("action") == "reroute" else "re-timed"
    return [f"{member} {done} by the execution{kept_out}; the other members kept"]


def apply_repair(task: ParsedTask, feedback: RepairFeedback, world: World) -> list[str]:
    """Applies what the counterexample suggests; returns what was changed (empty = nothing applicable)."""
    cx = feedback.counterexample
    if task.team is not None and isinstance(cx.get("team_repair"), dict):
        return _repair_one_member(task, world, cx, _failure_text(cx))
    failure = str(cx.get("failure_type") or cx.get("error_type") or cx.get("type") or "")
    rule = str(cx.get("violated_rule") or "")
    allowed = [str(a) for a in (feedback.allowed or cx.get("allowed") or [])]
    text = _failure_text(cx)
    offending = cx.get("offending_entity")
    changes: list[str] = []

    if cx.get("field") and (change := _replace_grounded(task, world, str(cx["field"]), cx.get("value"), allowed)):
        changes.append(change)
    zones = [z for z in world.zone_index if z == offending or z in text]
    new_zones = [z for z in zones if z not in task.entities.avoid_zones]
    if new_zones:
        task.entities.avoid_zones += new_zones
        changes.append(f"avoid {', '.join(new_zones)}")
    if change := _fix_altitude_band(task, world, failure, allowed):
        changes.append(change)
    obstacle_or_traffic = rule in ("R2", "R3") and not zones
    if obstacle_or_traffic or failure in ("near_miss", "collision") or "altitude" in text.lower():
        if change := _raise_floor(task, world, text):
            changes.append(change)
    if (rule == "R5" or "battery" in failure) and task.team is not None:
        if change := _exclude_failed_member(task, world, cx, text):
            changes.append(change)
    elif rule == "R5" or "battery" in failure:
        changes.append(_switch_uavs(task, world, allowed, text))
    if (rule == "R4" or failure == "deadline_risk") and task.entities.candidate_uavs:
        task.entities.candidate_uavs = []
        changes.append("candidate UAVs cleared so assign_uav can pick the fastest")
    task.entities.sensitive_zones = [z for z in task.entities.avoid_zones if z in {s.id for s in world.sensitive_zones}]
    return changes


def _repaired_task(request: GenerationRequest) -> ParsedTask:
    feedback = request.feedback
    assert feedback is not None
    previous = feedback.previous_ir or {}
    try:
        task = task_from_ir(LowAltitudeIR.model_validate(previous.get("low_altitude_ir", previous)))
    except ValidationError:  # an unusable previous IR: start again from the request
        task = parse_instruction(request.instruction, request.world, request.reading)
    changes = apply_repair(task, feedback, request.world)
    excluded = request.reading.excluded_uavs if request.reading else _excluded_uavs(request.instruction, request.world)
    keep_exclusions(task, excluded, request.world)
    if request.reading is not None:
        keep_offered(task, request.reading)  # a repair chooses among the UAVs the request offers
    if task.team is None and request.reading is not None and not request.reading.uavs:
        keep_equipped(task, request.reading, request.world)  # a repair's other UAVs still carry the sensors
    prior = safety_prior_zones(request.world, task.entities, task.constraints)
    task.entities.avoid_zones = list(dict.fromkeys(task.entities.avoid_zones + prior))
    task.notes.append(f"repair round {request.round}: " + ("; ".join(changes) if changes else "no applicable repair"))
    if not changes and not task.missing:
        failure = feedback.counterexample.get("failure_type") or feedback.counterexample.get("error_type") or "failure"
        task.missing.append(f"no deterministic repair for {failure}")
    return task


def _excluded_uavs(instruction: str, world: World) -> list[str]:
    text = instruction.lower().replace("\u2019", "'")
    return [u for u, role in uav_roles_in(text, find_mentions(text, world)).items() if role == "excluded"]


def keep_equipped(task: ParsedTask, reading: StatedConstraints, world: World) -> None:
    """A one-UAV request that asks for sensors ("film the flood site", "a drone with a winch"): the candidates are
    the idle UAVs that carry them and that the request does not leave out (assign_uav knows no sensors). None
    carrying them: the candidates stay, and the fidelity gate asks the operator (sensor_not_carried)."""
    wanted = reading.sensors_asked
    if not wanted:
        return
    able = equipped_uavs(world, reading)
    able = [u for u in able if u in task.entities.candidate_uavs] or able  # a repair's choice among them, if any
    if able and able != task.entities.candidate_uavs:
        task.entities.candidate_uavs = able
        task.notes.append(f"candidates: the idle UAVs with a {' and a '.join(wanted)}")


def keep_offered(task: ParsedTask, reading: StatedConstraints) -> None:
    """A one-UAV request that offers a choice ("uav_05 or uav_06", "the hexa", "the drone at the hospital"): the
    candidates are those offered (a parse's or a repair's choice among them, if any). A team keeps its candidates:
    the fidelity gate asks that some member is one of them."""
    offered = reading.offered_uavs
    if not offered or task.team is not None or reading.uavs:
        return
    refs = task.entities
    refs.candidate_uavs = [u for u in refs.candidate_uavs if u in offered] or list(offered)


def keep_exclusions(task: ParsedTask, excluded: Sequence[str], world: World) -> None:
    """A UAV the request leaves out stays out whatever a parse or a repair did to the candidates (none left, or none
    named: the idle others, so that assignment cannot fall back on it)."""
    if not excluded:
        return
    refs = task.entities
    refs.candidate_uavs = [u for u in refs.candidate_uavs if u not in excluded] or [
        u.id for u in world.fleet if u.id not in excluded and u.status.value == "idle"
    ]
    for sub in task.team.subtasks if task.team else []:
        sub.uavs = [u for u in sub.uavs if u not in excluded]


class RuleBasedGenerator(IRGenerator):
    """The `rules` backend: parse on the first round; on feedback rounds take the repair node's first candidate
    where it offers some (models/repair_choice.py), else repair deterministically from the counterexample."""

    model = "rules"

    def generate(self, request: GenerationRequest) -> GenerationResult:
        started = time.perf_counter()
        if candidates := offered(request):  # the repair node's candidates, in its order: the first is taken
            answer = repaired_answer(request, candidates[0])
        else:
            task = (
                parse_instruction(request.instruction, request.world, request.reading)
                if request.feedback is None
                else _repaired_task(request)
            )
            answer = build_answer(task, request.task_id, request.world).model_dump(mode="json")
        return GenerationResult(
            raw_text=json.dumps(answer, ensure_ascii=False),
            answer=answer,
            latency_sec=time.perf_counter() - started,
            model=self.model,
            prompt_version=RULES_VERSION,
        )


class RulesProvider(ModelProvider):
    """`rules`: the rule-based parser as an IR writer, and as a chat model over its IR of the task (LangChain's chat
    classes load only for the latter: `cloudbrain run --model rules` does not need them)."""

    def ir_writer(
        self, spec: ModelSpec, settings: ModelSettings, *, registry: ToolRegistry | None, sample_gold: Gold | None
    ) -> RuleBasedGenerator:
        return RuleBasedGenerator()

    def chat_model(self, spec: ModelSpec, settings: ModelSettings, *, world: World, instruction: str) -> BaseChatModel:
        from models.rules_chat import RulesChatModel

        return RulesChatModel(world=world, instruction=instruction)
