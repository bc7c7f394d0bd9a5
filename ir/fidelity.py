"""Intent fidelity: an execute flies the UAV the request pins, to the places the request names,
within the deadline and the altitude band it states, and back where it asks for a return leg.

The request's mentions are grounded from the world alone, lexically, and only where the grounding is certain: an
entity or UAV id written in the request, an entity's name ("the maternity hospital on the south side"), or its
name without the trailing locative phrase ("the maternity hospital") when no other entity shares that short name;
likewise the names the world gives an entity in other languages (`Entity.names`: "南侧的妇产医院", "妇产医院").
A phrase that grounds to nothing constrains nothing here (the model's own reading stands and the verifier still
judges safety); a phrase that does ground is binding. Numbers (deadline, altitude) are read from the request by
the caller (language.stated.stated_constraints), which grounds mentions with language.grounding. The gate never
looks at benchmark labels.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import shapely
from pydantic import BaseModel, Field

from ir.finding import Finding
from ir.model import DELIVERING_ROLES, OBSERVING_ROLES, Intent
from tools.items import is_whole_items
from tools.rules import RULE_TEXT
from tools.trajectory import flight_phases
from tools.world import UAVStatus, World

SHARE_ROUNDING_KG = 0.0005  # a member's share_kg is rounded to the gram (tools/team.py): 5 kg in thirds is 4.999
# A stated cruise altitude ("at 60 m") holds a route to within this: half a planning layer, so a layer always fits.
STATED_ALTITUDE_TOLERANCE_M = 10.0
CONTRADICTORY = "stated_constraints_contradictory"
UNRESOLVED = "unresolved_reference"  # a bare kind the world has several of: ask which one
UNACCOUNTED = "unaccounted_span"  # a stated quantity or UAV no reading maps to a field: ask what it means
MISSING = "missing_information"  # a fact no plan can do without that the request does not give: ask for it
_R3 = RULE_TEXT["R3"]
AGAINST_RULE = "rule_violating_demand"  # the request demands what a safety rule forbids: quote it, name the rule
# The request needs several UAVs at once (a load no one UAV lifts, sites served in parallel, roles, a relay) but the IR
# plans one UAV: the operator's to plan as a team (issue 42). An IR that carries a team is planned and flown as one.
TEAM_MISSION = "team_mission_not_planned"
# A place the request names to keep away from ("don't route over the park") is passed no closer than this.
AVOIDED_PLACE_CLEARANCE_M = 50.0


class SalientSpan(BaseModel):
    """One span of the request the reading accounts for, with its role and polarity."""

    text: str = Field(description="the request's words")
    start: int = Field(description="character offset in the request (whitespace runs as one space, lower-cased)")
    kind: Literal["place", "zone", "uav", "quantity", "demand"]
    ids: list[str] = Field(default_factory=list, description="the world ids it names (several: ambiguous)")
    role: str | None = Field(default=None, description="origin, destination, via, handoff, avoid, landmark, pinned...")
    polarity: Literal["wanted", "excluded", "against_rule"] = "wanted"
    assumed_from: str | None = Field(default=None, description="read as this id despite a typing error")


class Mentions(BaseModel):
    """What the request names, grounded to world ids in the order they appear."""

    places: list[str] = Field(default_factory=list, description="entity ids to visit")
    uavs: list[str] = Field(default_factory=list, description="UAV ids")
    avoided: list[str] = Field(default_factory=list, description="entity ids named as places to keep away from")
    unresolved: list[str] = Field(
        default_factory=list, description="bare references ('the hospital') that fit two or more entities"
    )
    origins: list[str] = Field(default_factory=list, description="places named right after 'from', 'start at'...")
    destinations: list[str] = Field(default_factory=list, description="places named right after 'to', 'land at'...")
    handoff_points: list[str] = Field(
        default_factory=list, description="places named as where the cargo is handed to ground transport"
    )


class StatedConstraints(Mentions):
    """What the request states, apart from defaults: binding on every execute (repair may tighten, never relax)."""

    deadline_sec: float | None = Field(default=None, description="arrive within this many seconds")
    payload_kg: float | None = Field(default=None, description="the cargo's mass the request states")
    payload_item_kg: float | None = Field(
        default=None,
        exclude_if=lambda item: item is None,
        description="the cargo is whole items of this mass ('four bags of 3 kg': 3): no member carries part of one",
    )
    battery_reserve_ratio: float | None = Field(default=None, description="battery share to keep on arrival")
    altitude_min_m: float | None = Field(default=None, description="fly no lower than this")
    altitude_max_m: float | None = Field(default=None, description="fly no higher than this")
    cruise_altitude_m: float | None = Field(default=None, description="fly at this altitude ('at 60 m')")
    min_separation_m: float | None = Field(default=None, description="keep at least this far from obstacles")
    excluded_uavs: list[str] = Field(default_factory=list, description="UAVs the request asks not to use")
    offered_uavs: list[str] = Field(
        default_factory=list,
        exclude_if=lambda offered: not offered,
        description="UAVs the request offers as a choice ('uav_05 or uav_06, whichever has more battery'): one of "
        "them flies",
    )
    spans: dict[str, str] = Field(
        default_factory=dict,
        description="each quantity field and the request's words for it ('cruise_altitude_m': "
        "'400 metres'), for reasons that quote the request",
    )
    unaccounted: list[str] = Field(
        default_factory=list,
        description="salient spans (a quantity with a unit, a UAV) no field holds, each quoted with why",
    )
    team_needs: list[str] = Field(
        default_factory=list,
        description="what asks for several UAVs at once (a split load, sites in parallel, roles, a relay), quoted: "
        "an IR that plans one UAV for it is asked once for the team (nodes/validate.py), then ends with the operator",
    )
    uav_shares_kg: dict[str, float] = Field(
        default_factory=dict,
        exclude_if=lambda shares: not shares,
        description="each UAV the request gives its own share of the load ('uav_01 carries 5 kg and uav_02 3 kg'), "
        "and that share in kg: the member it flies carries exactly that",
    )
    uav_sites: dict[str, str] = Field(
        default_factory=dict,
        exclude_if=lambda pins: not pins,
        description="each UAV the request names for one site of a team ('uav_05 takes it to A'), and that site: the "
        "member it flies serves that site",
    )
    team_size: int | None = Field(
        default=None,
        exclude_if=lambda size: size is None,
        description="how many UAVs the words ask to fly a team ('two drones', 'a second drone': 2; '三架': 3); the "
        "team flies exactly that many",
    )
    team_min_uavs: int | None = Field(
        default=None,
        exclude_if=lambda size: size is None,
        description="a team request: the fewest UAVs its words and the idle fleet's capacity ask for (two sites at "
        "once: 2); a team of fewer is not the team asked for",
    )
    observing_sensors: list[str] = Field(
        default_factory=list,
        exclude_if=lambda sensors: not sensors,
        description="a team request: the sensors its filming or inspecting sub-tasks need (language.team's sketch: "
        "'a thermal camera', a camera to film): on every filming or inspecting member's UAV",
    )
    cargo_sensors: list[str] = Field(
        default_factory=list,
        exclude_if=lambda sensors: not sensors,
        description="a team request: the sensors its delivering sub-tasks need (the sketch's: 'an AED', a "
        "defibrillator bay): on every delivering member's UAV; one UAV: the cargo equipment the words name ('a drone "
        "with a winch')",
    )
    return_leg: bool = Field(default=False, description="the request asks the UAV to come back")
    corridors_only: bool = Field(default=False, description="the request allows flight only inside drone corridors")
    handoff: bool = Field(default=False, description="the request allows a hand-off to ground transport")
    referenced: list[str] = Field(
        default_factory=list,
        description="every place the request points to: the certain `places` plus a kind the world has one of "
        "('the stadium'); what an IR's places may come from besides a documented default",
    )
    pointed: list[str] = Field(
        default_factory=list,
        description="places beyond `places` the request points to for certain (a descriptive name matched loosely, "
        "a singular kind word the world has one of: 'the accident'): an execute reaches them too",
    )
    missing: list[str] = Field(
        default_factory=list, description="facts the request must still give, each 'field: why' (R8, before tools)"
    )
    unread_duration: bool = Field(
        default=False, description="the request has a time unit ('fifteen minutes') the reader turned into no deadline"
    )
    intent: Intent | None = Field(default=None, description="the errand the request's words name, which fixes defaults")
    enter_and_keep_out: list[str] = Field(
        default_factory=list, description="places or zones the request names both to enter and to keep out of"
    )
    avoided_zones: list[str] = Field(
        default_factory=list,
        description="no-fly and sensitive zones the request names to keep out of: never entered, active or not",
    )
    final_place: str | None = Field(
        default=None, description="where the flight must end, by an order cue ('..., then park it at X', 'finish at X')"
    )
    rule_demands: list[str] = Field(
        default_factory=list,
        description="each clause that demands a rule break, quoted with the rule: no execute (R8, before tools)",
    )
    permissions_not_used: list[str] = Field(
        default_factory=list,
        description="each clause that permits a rule break ('if that is faster'): the plan keeps the rule and says so",
    )
    assumed: list[str] = Field(
        default_factory=list, description="ids and names read despite a typing error, each 'written' -> id"
    )
    salient: list[SalientSpan] = Field(
        default_factory=list, description="every span the reading accounts for, with its role and polarity"
    )

    @property
    def sensors_asked(self) -> list[str]:
        """Every sensor the words ask for, to observe with and for the cargo, in that order: what one UAV carries."""
        return list(dict.fromkeys([*self.observing_sensors, *self.cargo_sensors]))

    def blockers(self, ceiling_m: float) -> list[tuple[str, str]]:
        """(error type, message) for what no plan can meet or resolve, known before any tool runs (R8): demands that
        contradict each other or the airspace (spec-level UNSAT), references that fit several places, facts the
        request leaves out (no place to fly to, a time with no anchor)."""
        found = []
        low, high = self.altitude_min_m, self.altitude_max_m
        if low is not None and high is not None and low >= high:
            found.append((CONTRADICTORY, f"the request asks to fly above {low:g} m and below {high:g} m"))
        if low is not None and low >= ceiling_m:
            message = (
                f"the request asks to fly above {low:g} m, at or over the airspace ceiling {ceiling_m:g} m (R3: {_R3})"
            )
            found.append((CONTRADICTORY, message))
        cruise = self.cruise_altitude_m
        if cruise is not None and not 0 < cruise <= ceiling_m:
            said = self.spans.get("cruise_altitude_m", f"{cruise:g} m")
            found.append(
                (CONTRADICTORY, f"'{said}' is outside the airspace: its ceiling is {ceiling_m:g} m (R3: {_R3})")
            )
        if self.deadline_sec is not None and self.deadline_sec <= 0:
            found.append((CONTRADICTORY, "the request's deadline is not in the future"))
        found += [
            (CONTRADICTORY, f"the request asks to enter {ref} and never to enter it") for ref in self.enter_and_keep_out
        ]
        found += [(AGAINST_RULE, demand) for demand in self.rule_demands]
        found += [(TEAM_MISSION, need) for need in self.team_needs]
        found += [(UNRESOLVED, f"which one is meant by {ref}?") for ref in self.unresolved]
        found += [(UNACCOUNTED, span) for span in self.unaccounted]
        return found + [(MISSING, fact) for fact in self.missing]


def _tolerance(world: World) -> float:
    return world.arrival_tolerance_m + 1e-9


def _near(world: World, xy: Sequence[float], refs: Iterable[str]) -> list[str]:
    return [ref for ref in refs if math.dist(xy, world.entity_index[ref].position) <= _tolerance(world)]


def _touched(world: World, track: shapely.LineString | shapely.Point, refs: Iterable[str]) -> list[str]:
    return [ref for ref in refs if track.distance(_point(world, ref)) <= _tolerance(world)]


def fidelity_findings(
    world: World, stated: StatedConstraints, candidate: dict[str, Any], ir: dict[str, Any] | None = None
) -> list[Finding]:
    """What the candidate plan (uav_id, waypoints) does other than the request says; empty when faithful.

    Every place named to visit is on the route; with two or more, the route ends at one of them (or at a hand-off
    point the IR declares for a named destination). A return leg ends where the route started."""
    findings: list[Finding] = []
    uav = candidate.get("uav_id")
    if stated.uavs and uav not in stated.uavs:
        message = f"the request pins {', '.join(stated.uavs)}, the plan flies {uav}"
        findings.append(Finding("pinned_uav_replaced", "uav_id", uav, message, allowed=list(stated.uavs)))
    elif len(stated.uavs) > 1:  # "have uav_07 and uav_08 film it": one UAV is not the UAVs named to fly
        message = f"the request names {', '.join(stated.uavs)} to fly; the plan flies {uav} alone"
        findings.append(Finding("pinned_uav_replaced", "uav_id", uav, message, allowed=list(stated.uavs)))
    if stated.offered_uavs and uav not in stated.offered_uavs:
        message = f"the request offers {' or '.join(stated.offered_uavs)}, the plan flies {uav}"
        findings.append(Finding("offered_uav_not_flown", "uav_id", uav, message, allowed=list(stated.offered_uavs)))
    if uav in stated.excluded_uavs:
        message = f"the request asks not to use {uav}, the plan flies it"
        others = [u.id for u in world.fleet if u.status is UAVStatus.idle and u.id not in stated.excluded_uavs]
        findings.append(Finding("excluded_uav_flown", "uav_id", uav, message, allowed=others))
    findings += _sensors(world, stated, uav) + _payload(world, stated, uav, ir) + _separation(stated, ir)
    waypoints = [list(map(float, wp)) for wp in candidate.get("waypoints") or []]
    if not waypoints:
        return findings
    findings += _band_and_deadline(stated, waypoints)
    if stated.corridors_only and not _inside_corridors(world, waypoints):
        message = "the request allows flight only inside the drone corridors; the route leaves them"
        findings.append(Finding("corridor_left", "waypoints", None, message, allowed=[c.id for c in world.corridors]))
    named = [ref for ref in stated.places if ref in world.entity_index]
    xy = [wp[:2] for wp in waypoints]
    if stated.return_leg and len(xy) > 1 and not _back_at_start(world, stated, xy):
        findings.append(
            Finding(
                "return_leg_dropped",
                "waypoints[-1]",
                _rounded(xy[-1]),
                f"the request asks to come back; the route ends {math.dist(xy[0], xy[-1]):.0f} m from where it started",
            )
        )
        return findings
    # A place the request points to by a fuzzy name or by a kind the world has one of ("the accident") is on the
    # route too; where a hand-off is allowed the courier may reach it, so there only the certain names count.
    pointed = [] if stated.handoff else [r for r in stated.pointed if r in world.entity_index and r not in named]
    findings += _avoided_places(world, stated, xy) + _avoided_zones(world, stated, xy)
    final = stated.final_place
    if final in world.entity_index and not (stated.return_leg or stated.handoff) and not _near(world, xy[-1], [final]):
        findings.append(_place_finding("wrong_destination", "waypoints[-1]", [final], xy[-1], world))
        return findings
    if not named:
        return findings + _not_reached(world, xy, pointed, pointed)
    entities = (ir or {}).get("entities") or {}
    ends_at = _near(world, xy[-1], named + pointed)
    handoffs = [h for h in entities.get("handoff_points") or [] if h in world.entity_index]
    # A hand-off point the IR declares stands in for the destination only where the request allows a hand-off.
    handed_off = stated.handoff and entities.get("destination") in named and bool(_near(world, xy[-1], handoffs))
    if not (stated.return_leg or len(named) == 1 or ends_at or handed_off):
        findings.append(_place_finding("wrong_destination", "waypoints[-1]", named, xy[-1], world))
        return findings
    ends_as_ordered = final is not None and final in ends_at
    if not (stated.return_leg or stated.handoff or handed_off or ends_as_ordered) and _reversed(stated, ends_at):
        expected = stated.destinations or [ref for ref in named if ref not in stated.origins] or named
        findings.append(_place_finding("wrong_destination", "waypoints[-1]", expected, xy[-1], world))
        return findings
    # Every named place is on the route (a round trip's start is its end; a hand-off stands in for the destination).
    to_reach = [ref for ref in named if not (handed_off and ref == entities.get("destination"))]
    if not handed_off and stated.handoff and ends_at and len(set(named) - set(_touched(world, _track(xy), named))) == 1:
        to_reach = []  # the destination the request lets a courier reach
    unreached = _not_reached(world, xy, named + pointed, to_reach + pointed)
    return findings + (unreached or _stop_order(world, stated, named, xy))


def team_fidelity_findings(
    world: World, stated: StatedConstraints, members: list[dict[str, Any]], ir: dict[str, Any] | None = None
) -> list[Finding]:
    """What a fleet mission (members: uav_id, role, share_kg, waypoints) does other than the request says; empty
    when faithful. The team serves every place the request names to visit (each on some member's route) and carries
    the whole stated mass (a relay leg carries on a load already counted), flies no UAV the request leaves out and
    every UAV it pins; and each member, as a one-UAV route would, keeps the request's deadline, altitude band,
    corridors and the places and zones it names to keep away from."""
    findings: list[Finding] = []
    flown = [m.get("uav_id") for m in members]
    excluded = [u for u in flown if u in stated.excluded_uavs]
    if excluded:
        message = f"the request asks not to use {', '.join(excluded)}; the team flies {', '.join(excluded)}"
        others = [u.id for u in world.fleet if u.status is UAVStatus.idle and u.id not in stated.excluded_uavs]
        findings.append(Finding("excluded_uav_flown", "team.subtasks", excluded[0], message, allowed=others))
    if stated.offered_uavs and not set(stated.offered_uavs) & set(flown):
        message = f"the request offers {' or '.join(stated.offered_uavs)}; the team flies {', '.join(map(str, flown))}"
        findings.append(Finding("offered_uav_not_flown", "team.subtasks", None, message, list(stated.offered_uavs)))
    left_out = [u for u in stated.uavs if u not in flown and u not in stated.excluded_uavs]
    if left_out:
        message = f"the request pins {', '.join(stated.uavs)}; the team flies {', '.join(map(str, flown))}"
        findings.append(
            Finding("pinned_uav_replaced", "team.subtasks", left_out[0], message, allowed=list(stated.uavs))
        )
    distinct = list(dict.fromkeys(flown))
    if stated.team_size is not None and len(distinct) != stated.team_size:
        message = f"the request asks for {stated.team_size} UAVs; the team flies {len(distinct)} ({', '.join(map(str, distinct))})"
        findings.append(Finding("team_size_not_kept", "team.subtasks", len(distinct), message, [stated.team_size]))
    elif stated.team_min_uavs is not None and len(distinct) < stated.team_min_uavs:  # "one split share" for two sites
        message = (
            f"{stated.team_needs[0] if stated.team_needs else 'the request needs a team'}; the team flies "
            f"{len(distinct)} ({', '.join(map(str, distinct))})"
        )
        findings.append(Finding("team_too_small", "team.subtasks", len(distinct), message, [stated.team_min_uavs]))
    findings += _uavs_at_their_sites(stated, members, skip=left_out) + _team_sensors(world, stated, members)
    findings += _team_payload(world, stated, members, ir) + _shares_as_stated(stated, members) + _separation(stated, ir)
    tracks = []
    for member in members:
        waypoints = [list(map(float, wp)) for wp in member.get("waypoints") or []]
        if not waypoints:
            continue
        xy = [wp[:2] for wp in waypoints]
        tracks.append(_track(xy))
        own = (
            _band_and_deadline(stated, waypoints)
            + _avoided_places(world, stated, xy)
            + _avoided_zones(world, stated, xy)
        )
        if stated.corridors_only and not _inside_corridors(world, waypoints):
            message = "the request allows flight only inside the drone corridors; the route leaves them"
            own.append(Finding("corridor_left", "waypoints", None, message, allowed=[c.id for c in world.corridors]))
        label = f"member {member.get('subtask_id')} ({member.get('uav_id')})"
        findings += [dataclasses.replace(f, message=f"{label}: {f.message}") for f in own]
    named = [ref for ref in (*stated.places, *stated.pointed) if ref in world.entity_index]
    missing = [ref for ref in dict.fromkeys(named) if not any(_touched(world, track, [ref]) for track in tracks)]
    if missing:
        message = f"the request names {', '.join(dict.fromkeys(named))}; no member's route reaches {', '.join(missing)}"
        findings.append(
            Finding("place_not_visited", "team.subtasks", None, message, allowed=list(dict.fromkeys(named)))
        )
    return findings


def _team_sensors(world: World, stated: StatedConstraints, members: list[dict[str, Any]]) -> list[Finding]:
    """The sensors the words ask for fly where they are needed: an observing one (a camera, a thermal camera) on
    every filming or inspecting member's UAV, a cargo one (a defibrillator bay, a winch) on every delivering
    member's; with no member in that role, on some member's."""

    def carried(member: dict[str, Any]) -> set[str]:
        uav = world.uav_index.get(member.get("uav_id") or "")
        return set(uav.sensors) if uav is not None else set()

    findings = []
    for sensors, roles, doing in (
        (stated.observing_sensors, OBSERVING_ROLES, "observes"),
        (stated.cargo_sensors, DELIVERING_ROLES, "carries the cargo"),
    ):
        wanted = set(sensors)
        if not wanted:
            continue
        group = [m for m in members if m.get("role") in roles]
        short = [m for m in group if not wanted <= carried(m)]
        if not group and not any(wanted <= carried(m) for m in members):
            short = members[:1]
        for member in short:
            lacking = ", ".join(sorted(wanted - carried(member)))
            message = (
                f"the request asks for {', '.join(sensors)}; member {member.get('subtask_id')} "
                f"({member.get('uav_id')}) {doing if group else 'flies'} without {lacking}"
            )
            findings.append(
                Finding("sensor_not_carried", "team.subtasks", member.get("uav_id"), message, sorted(wanted))
            )
    return findings


def _uavs_at_their_sites(stated: StatedConstraints, members: list[dict[str, Any]], skip: list[str]) -> list[Finding]:
    """A UAV the request names for a site flies the member that serves it ("uav_05 takes it to A and uav_06 to B":
    not uav_06 to A); a UAV it names that flies no member at all is pinned_uav_replaced's (`skip`)."""
    findings = []
    for uav, site in stated.uav_sites.items():
        flown = [m for m in members if m.get("uav_id") == uav]
        if uav in skip or uav in stated.excluded_uavs or any(_serves(m, site) for m in flown):
            continue
        served_by = [str(m.get("uav_id")) for m in members if _serves(m, site)]
        went = ", ".join(dict.fromkeys(str(m.get("goal")) for m in flown)) or "nowhere"
        message = f"the request names {uav} for {site}; {uav} flies to {went}" + (
            f" and {site} is served by {', '.join(dict.fromkeys(served_by))}" if served_by else ""
        )
        findings.append(Finding("pinned_uav_swapped", "team.subtasks", uav, message, allowed=[site]))
    return findings


def _shares_as_stated(stated: StatedConstraints, members: list[dict[str, Any]]) -> list[Finding]:
    """A UAV the request gives its own share ("uav_01 carries 5 kg") carries that share, no other; a named UAV that
    flies no member is pinned_uav_replaced's."""
    findings = []
    for uav, kg in stated.uav_shares_kg.items():
        flown = [m for m in members if m.get("uav_id") == uav and m.get("role") != "relay_leg"]
        carried = sum(float(m.get("share_kg") or 0.0) for m in flown)
        if flown and abs(carried - kg) > 1e-6:
            message = f"the request gives {uav} {kg:g} kg to carry; the team loads it with {carried:g} kg"
            findings.append(Finding("share_not_as_stated", "team.subtasks", uav, message, allowed=[kg]))
    return findings


def _serves(member: dict[str, Any], site: str) -> bool:
    """The member's sub-task ends at the site or passes it on the way."""
    return member.get("goal") == site or site in (member.get("stops") or [])


def _team_payload(
    world: World, stated: StatedConstraints, members: list[dict[str, Any]], ir: dict[str, Any] | None
) -> list[Finding]:
    """The IR was checked for the stated cargo, the members that take it from where it waits carry all of it
    together, and each lifts its share."""
    payload = stated.payload_kg
    if not payload:
        return []
    findings = [f for f in _payload(world, stated, None, ir) if f.error_type == "payload_understated"]
    carried = sum(float(m.get("share_kg") or 0.0) for m in members if m.get("role") != "relay_leg")
    if carried < payload - SHARE_ROUNDING_KG * len(members) - 1e-9:  # each share is said to the gram
        message = f"the request states {payload:g} kg of cargo; the team carries {carried:g} kg"
        findings.append(Finding("payload_understated", "team.subtasks", carried, message, allowed=[payload]))
    for member in members:
        flying = world.uav_index.get(member.get("uav_id") or "")
        share = float(member.get("share_kg") or 0.0)
        if flying is not None and flying.payload_capacity_kg < share - 1e-9:
            message = f"{flying.id} lifts {flying.payload_capacity_kg:g} kg; its share is {share:g} kg"
            findings.append(Finding("payload_over_capacity", "team.subtasks", flying.id, message))
        item = stated.payload_item_kg
        if item and member.get("role") != "relay_leg" and not is_whole_items(share, item):
            message = (
                f"the request's cargo is {item:g} kg items; {member.get('uav_id')}'s share of {share:g} kg would "
                f"carry part of one (a split of whole items sets the sub-task's item_kg: {item:g})"
            )
            findings.append(Finding("payload_items_split", "team.subtasks", share, message))
    return findings


def _avoided_places(world: World, stated: StatedConstraints, xy: list[list[float]]) -> list[Finding]:
    """A place the request names to keep away from is passed no closer than AVOIDED_PLACE_CLEARANCE_M (it may be
    where the flight starts or ends only if the request also names it so)."""
    track = _track(xy)
    ends = {*stated.origins, *stated.destinations, *stated.places}
    close = [
        ref
        for ref in stated.avoided
        if ref in world.entity_index
        and ref not in ends
        and track.distance(_point(world, ref)) < AVOIDED_PLACE_CLEARANCE_M
    ]
    if not close:
        return []
    message = (
        f"the request says to keep away from {', '.join(close)}; the route passes within "
        f"{AVOIDED_PLACE_CLEARANCE_M:g} m of it"
    )
    return [Finding("avoided_place_visited", "waypoints", None, message)]


def _avoided_zones(world: World, stated: StatedConstraints, xy: list[list[float]]) -> list[Finding]:
    """A zone the request names to keep out of is never entered in plan view, whether or not it is active then
    (the request's words bind beyond the rules)."""
    track = _track(xy)
    entered = [z for z in stated.avoided_zones if z in world.zone_index and track.intersects(world.zone_index[z].shape)]
    if not entered:
        return []
    message = f"the request says to keep out of {', '.join(entered)}; the route enters it"
    return [Finding("avoided_zone_entered", "entities.avoid_zones", None, message, allowed=entered)]


def _not_reached(world: World, xy: list[list[float]], named: list[str], to_reach: list[str]) -> list[Finding]:
    reached = set(_touched(world, _track(xy), to_reach))
    missing = [ref for ref in to_reach if ref not in reached]
    if not missing:
        return []
    message = f"the request names {', '.join(named)}; the route never reaches {', '.join(missing)}"
    return [Finding("place_not_visited", "waypoints", _rounded(xy[0]), message, allowed=named)]


def _back_at_start(world: World, stated: StatedConstraints, xy: list[list[float]]) -> bool:
    """A round trip ends where it began: where the UAV took off, or where the task starts (the place named after
    "from", else the first named place it reaches) when it first flew there to pick up."""
    if math.dist(xy[0], xy[-1]) <= _tolerance(world):
        return True
    track = _track(xy)
    reached = sorted(_touched(world, track, stated.places), key=lambda ref: track.project(_point(world, ref)))
    return bool(_near(world, xy[-1], stated.origins or reached[:1]))


def _stop_order(world: World, stated: StatedConstraints, named: list[str], xy: list[list[float]]) -> list[Finding]:
    """With both ends fixed by cues ("from X", "finishing at Y"), the places named between them are passed in the
    order the request names them (a hand-off or a round trip leaves the order to the plan)."""
    if not (stated.origins and stated.destinations) or stated.handoff or stated.return_leg or len(xy) < 2:
        return []
    ends = {*stated.origins, *stated.destinations}
    stops = [ref for ref in named if ref not in ends]
    if len(stops) < 2:
        return []
    track = shapely.LineString(xy)
    along = [track.project(_point(world, ref)) for ref in stops]
    if all(a <= b for a, b in zip(along, along[1:])):
        return []
    passed = [ref for _, ref in sorted(zip(along, stops))]
    message = f"the request names {', '.join(stops)} in this order; the route passes {', '.join(passed)}"
    return [Finding("stops_out_of_order", "waypoints", None, message, allowed=stops)]


def equipped_uavs(world: World, stated: StatedConstraints) -> list[str]:
    """The idle UAVs that carry every sensor the words ask for (to observe with, or for the cargo: "a drone with a
    winch") and that the request does not leave out."""
    return [
        u.id
        for u in world.fleet
        if u.status is UAVStatus.idle
        and set(stated.sensors_asked) <= set(u.sensors)
        and u.id not in stated.excluded_uavs
    ]


def _sensors(world: World, stated: StatedConstraints, uav: Any) -> list[Finding]:
    """The one UAV carries the sensors the words ask for ("film the flood site": a camera; "a drone with a winch")."""
    flying = world.uav_index.get(uav) if isinstance(uav, str) else None
    wanted = stated.sensors_asked
    lacking = [s for s in wanted if flying is not None and s not in flying.sensors]
    if not lacking:
        return []
    able = equipped_uavs(world, stated)
    message = f"the request asks for a {' and a '.join(wanted)}; {uav} carries no {', '.join(lacking)}"
    return [Finding("sensor_not_carried", "uav_id", uav, message, allowed=able)]


def _payload(world: World, stated: StatedConstraints, uav: Any, ir: dict[str, Any] | None) -> list[Finding]:
    """The stated cargo is what the plan was checked for (energy, simulation) and what the flying UAV can lift."""
    payload = stated.payload_kg
    if not payload:
        return []
    findings = []
    lifters = [u.id for u in world.fleet if u.status is UAVStatus.idle and u.payload_capacity_kg >= payload]
    written = float(((ir or {}).get("constraints") or {}).get("payload_kg") or 0.0)
    if ir is not None and written < payload - 1e-9:
        message = f"the request states {payload:g} kg of cargo; the plan was checked for {written:g} kg"
        findings.append(Finding("payload_understated", "constraints.payload_kg", written, message, allowed=[payload]))
    flying = world.uav_index.get(uav) if isinstance(uav, str) else None
    if flying is not None and flying.payload_capacity_kg < payload - 1e-9:
        message = f"{uav} lifts {flying.payload_capacity_kg:g} kg; the request states {payload:g} kg of cargo"
        findings.append(Finding("payload_over_capacity", "uav_id", uav, message, allowed=lifters))
    return findings


def _separation(stated: StatedConstraints, ir: dict[str, Any] | None) -> list[Finding]:
    """The plan was verified with at least the separation the request states."""
    if stated.min_separation_m is None or ir is None:
        return []
    written = float(((ir.get("constraints") or {}).get("min_separation_m")) or 0.0)
    if written >= stated.min_separation_m - 1e-9:
        return []
    message = f"the request states {stated.min_separation_m:g} m of separation; the plan was checked for {written:g} m"
    return [Finding("separation_relaxed", "constraints.min_separation_m", written, message, [stated.min_separation_m])]


def _band_and_deadline(stated: StatedConstraints, waypoints: list[list[float]]) -> list[Finding]:
    findings = []
    # stated heights bind en route, between the take-off climb and the landing
    altitudes = [wp[2] for wp in waypoints[flight_phases(waypoints).en_route]]
    cruise = stated.cruise_altitude_m
    if cruise is not None and any(abs(a - cruise) > STATED_ALTITUDE_TOLERANCE_M + 1e-6 for a in altitudes):
        flown = ", ".join(f"{a:g}" for a in sorted(set(altitudes)))
        said = stated.spans.get("cruise_altitude_m", f"{cruise:g} m")
        message = f"'{said}' is not reflected in the plan: the route flies at {flown} m"
        findings.append(Finding("altitude_not_as_stated", "waypoints", max(altitudes), message))
    if stated.altitude_max_m is not None and max(altitudes) > stated.altitude_max_m + 1e-6:
        findings.append(
            Finding(
                "altitude_above_stated",
                "waypoints",
                max(altitudes),
                f"the route climbs to {max(altitudes):g} m; the request says below {stated.altitude_max_m:g} m",
            )
        )
    if stated.altitude_min_m is not None and min(altitudes) < stated.altitude_min_m - 1e-6:
        findings.append(
            Finding(
                "altitude_below_stated",
                "waypoints",
                min(altitudes),
                f"the route descends to {min(altitudes):g} m; the request says above {stated.altitude_min_m:g} m",
            )
        )
    if stated.deadline_sec is not None and len(waypoints[-1]) > 3 and waypoints[-1][3] > stated.deadline_sec + 1e-6:
        findings.append(
            Finding(
                "deadline_relaxed",
                "waypoints[-1]",
                waypoints[-1][3],
                f"arrival at {waypoints[-1][3]:.1f} s; the request says within {stated.deadline_sec:g} s",
            )
        )
    return findings


def _reversed(stated: StatedConstraints, ends_at: list[str]) -> bool:
    """The route ends where the request starts ("from X"), or not where it says to go ("to Y")."""
    if stated.destinations and not set(ends_at) & set(stated.destinations):
        return True
    return bool(ends_at) and all(ref in stated.origins and ref not in stated.destinations for ref in ends_at)


def _inside_corridors(world: World, waypoints: list[list[float]]) -> bool:
    """Every straight piece lies, in plan and in altitude, inside one corridor (a corridor's band is constant, so a
    piece whose ends are in it stays in it)."""
    for a, b in zip(waypoints, waypoints[1:]):
        piece = shapely.LineString([a[:2], b[:2]]) if a[:2] != b[:2] else shapely.Point(a[:2])
        if not any(
            c.shape.covers(piece) and c.alt_min_m <= min(a[2], b[2]) and max(a[2], b[2]) <= c.alt_max_m
            for c in world.corridors
        ):
            return False
    return True


def _point(world: World, ref: str) -> shapely.Point:
    return shapely.Point(world.entity_index[ref].position)


def _rounded(xy: Sequence[float]) -> list[float]:
    return [round(float(v), 1) for v in xy]


def _track(xy: list[list[float]]) -> shapely.LineString | shapely.Point:
    return shapely.LineString(xy) if len(xy) > 1 else shapely.Point(xy[0])


def _place_finding(error_type: str, field: str, named: list[str], xy: Sequence[float], world: World) -> Finding:
    nearest = min(world.entity_index, key=lambda ref: math.dist(xy, world.entity_index[ref].position))
    gap = math.dist(xy, world.entity_index[nearest].position)
    return Finding(
        error_type,
        field,
        _rounded(xy),
        f"the request names {', '.join(named)}; the route's point there is {gap:.0f} m from {nearest}",
        allowed=list(named),
    )
