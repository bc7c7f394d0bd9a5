"""A rule-based instruction parser: the classic semantic-parser baseline, no LLM.

It reads English or Chinese requests through the language layer (keyword tables and fuzzy matching against the
world's ids and descriptive names: language.mentions, language.quantities), writes the standard tool plan, and on repair rounds applies the counterexample's suggested repair
deterministically. Safety priors (every NFZ active during the mission, sensitive zones near the straight line)
are added whatever the request says, so "ignore the no-fly zone" never removes a safety spec.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from shapely.geometry import LineString

from ir.model import (
    EntityRefs,
    ExplanationPlan,
    FallbackPolicy,
    Intent,
    LLMAnswer,
    LowAltitudeIR,
    OperationConstraints,
    Priority,
    Uncertainty,
    VerificationSpecs,
)
from ir.templates import standard_tool_plan
from language.defaults import CARGO_INTENTS, active_in_window, default_destination, default_origin, handoff_hub
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
    uav_roles_in,
)
from models.base import GenerationRequest, GenerationResult, IRGenerator, RepairFeedback
from models.factory import Gold, ModelProvider, ModelSettings
from models.options import ModelSpec
from models.repair_choice import offered, repaired_answer
from tools.rules import MONITORED_RULES
from tools.signals import zones_containing
from tools.world import World

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from tools.registry import ToolRegistry

RULES_VERSION = "rules-v2"  # v2: stops before a landing cue, short names, verbatim names first

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


def parse_instruction(instruction: str, world: World) -> ParsedTask:
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
        payload_kg=parse_payload(quantities) or 0.0,
        battery_reserve_ratio=max(parse_reserve(quantities) or 0.0, defaults.battery_reserve_ratio),
        **parse_altitude_and_separation(quantities, defaults),
    )
    task = ParsedTask(intent, parse_priority(rest, intent), EntityRefs(), constraints)
    uav_roles = uav_roles_in(text, mentions)
    _fill_entities(task, mentions, world, uav_roles)
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
    if re.search(INJECTION_CUES, rest):
        task.notes.append("the request asked to relax safety rules; ignored (R1-R3 always hold)")
    return task


def _fill_entities(task: ParsedTask, mentions: list[Mention], world: World, uav_roles: dict[str, str]) -> None:
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
            and uav_roles.get(m.ids[0]) in ("pinned", "reported")
            and m.ids[0] not in refs.candidate_uavs
        ):
            refs.candidate_uavs.append(m.ids[0])
    excluded = [u for u, role in uav_roles.items() if role == "excluded"]
    if excluded:  # a hard exclusion: assignment chooses among the others
        keep_exclusions(task, excluded, world)
        task.notes.append(f"not {', '.join(excluded)}, as the request says")
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
    refs.handoff_points = [m.ids[0] for m in places if m.role == "handoff" and len(m.ids) == 1]
    _default_endpoints(task, world)
    _keep_clear(refs, world, task.constraints, avoid)


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


def build_answer(task: ParsedTask, task_id: str, world: World) -> LLMAnswer:
    _note_missing_endpoints(task)
    rules = [*MONITORED_RULES, *(["R7"] if task.priority is Priority.critical else [])]
    ltl = [f"G !in_{zone}" for zone in task.entities.avoid_zones]
    ltl += [f"F at_{w}" for w in task.entities.waypoints] + ["F at_goal"]
    ir = LowAltitudeIR(
        task_id=task_id,
        intent=task.intent,
        priority=task.priority,
        entities=task.entities,
        constraints=task.constraints,
        tool_plan=standard_tool_plan(world, task.entities, start=_route_start(task)),
        verification_specs=VerificationSpecs(ltl=ltl, program_rules=rules),
        fallback_policy=_fallback(task),
        explanation_plan=ExplanationPlan(
            cite_tools=["assign_uav", "plan_route", "verify_ltl_stl", "simulate_scenario"], cite_rules=rules
        ),
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


def apply_repair(task: ParsedTask, feedback: RepairFeedback, world: World) -> list[str]:
    """Applies what the counterexample suggests; returns what was changed (empty = nothing applicable)."""
    cx = feedback.counterexample
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
    if rule == "R5" or "battery" in failure:
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
        task = parse_instruction(request.instruction, request.world)
    changes = apply_repair(task, feedback, request.world)
    excluded = request.reading.excluded_uavs if request.reading else _excluded_uavs(request.instruction, request.world)
    keep_exclusions(task, excluded, request.world)
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


def keep_exclusions(task: ParsedTask, excluded: Sequence[str], world: World) -> None:
    """A UAV the request leaves out stays out whatever a parse or a repair did to the candidates (none left, or none
    named: the idle others, so that assignment cannot fall back on it)."""
    if not excluded:
        return
    refs = task.entities
    refs.candidate_uavs = [u for u in refs.candidate_uavs if u not in excluded] or [
        u.id for u in world.fleet if u.id not in excluded and u.status.value == "idle"
    ]


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
                parse_instruction(request.instruction, request.world)
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
