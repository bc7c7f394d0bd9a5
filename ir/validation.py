"""Layered validation of an LLM's LowAltitudeIR answer.

Stages run in order json -> schema -> entity_grounding -> constraint_grounding -> tool_dependency -> policy and
stop at the first failure. The report names the stage, an error type, the offending field and value, and the
nearest valid values (`allowed`): that is what lets a small model repair a hallucinated id.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, ValidationError

from ir.answer_text import NoAnswerObject, answer_object
from ir.finding import Finding
from ir.model import HUMAN_CONFIRM_POLICIES, LLMAnswer, LowAltitudeIR, SubTask, TeamPlan, Uncertainty
from ir.plan_execution import MAX_SUGGESTIONS, PlannedStep, analyse_plan, nearest
from ir.policy import check_r7, safety_relaxations
from tools.ltl import LtlSyntaxError, default_engine
from tools.registry import ToolRegistry
from tools.rules import PROTECTED_RULES, RULE_IDS
from tools.world import EntityKind, UAVStatus, World

Stage = Literal["json", "schema", "entity_grounding", "constraint_grounding", "tool_dependency", "policy"]
STAGES: tuple[Stage, ...] = get_args(Stage)


class ValidationReport(BaseModel):
    valid: bool
    stage: Stage | None = Field(default=None, description="the first failing stage; None when valid")
    error_type: str | None = None
    field: str | None = Field(default=None, description="dotted path, list indices as numbers: entities.waypoints.1")
    value: Any = None
    allowed: list[Any] = Field(default_factory=list, description="nearest valid values, best first")
    message: str = ""
    ir: LowAltitudeIR | None = Field(default=None, description="the parsed IR once the schema stage passed")
    uncertainty: Uncertainty | None = Field(default=None, description="from the LLMAnswer envelope, if given")
    warnings: list[str] = Field(default_factory=list, description="R1-R3 relaxations left to the verifier")


# --- json -------------------------------------------------------------------------------------------------


def _parse_json(raw: str | dict) -> tuple[dict | None, Finding | None]:
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return None, Finding("not_an_object", None, type(raw).__name__, "the answer must be a JSON object")
    try:
        return answer_object(raw), None
    except NoAnswerObject as exc:
        return None, Finding(exc.error_type, None, exc.text, str(exc))


# --- schema -----------------------------------------------------------------------------------------------


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that owns the fields at `loc` (list indices skipped)."""
    model = root
    for part in (p for p in loc if isinstance(p, str)):
        info = model.model_fields.get(part)
        inner = _nested_model(info.annotation) if info else None
        if inner is None:
            return None
        model = inner
    return model


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_nested_model, get_args(annotation)) if m is not None), None)


def _schema_failure(error: dict[str, Any], root: type[BaseModel], loc: tuple[Any, ...]) -> Finding:
    path = ".".join(map(str, loc)) or None
    kind, message, value = error["type"], error["msg"], error.get("input")
    context = error.get("ctx") or {}
    if {"field", "value", "allowed"} <= context.keys():  # a shape rule's own finding (ir.model.shape_error)
        field, value, allowed = ".".join(filter(None, (path, context["field"]))), context["value"], context["allowed"]
        if isinstance(value, str) and all(isinstance(a, str) for a in allowed):
            allowed = nearest(value, allowed)
        return Finding(kind, field, value, message, allowed)
    if kind == "missing":
        return Finding("missing_field", path, None, f"required field {path} is missing")
    if kind in ("enum", "literal_error"):
        allowed = re.findall(r"'([^']*)'", error.get("ctx", {}).get("expected", ""))
        return Finding("wrong_enum", path, value, f"{path}: {message}", allowed)
    if kind == "extra_forbidden":
        owner = _model_at(root, loc[:-1])
        allowed = nearest(str(loc[-1]), list(owner.model_fields)) if owner else []
        return Finding("unknown_field", path, value, f"{path} is not a field of the IR", allowed)
    if kind in ("too_short", "string_too_short"):
        return Finding("empty_field", path, value, f"{path} must not be empty")
    if kind.startswith(("greater_than", "less_than")):
        return Finding("out_of_range", path, value, f"{path}: {message}")
    if kind == "value_error":
        return Finding("invalid_value", path, value, f"{path}: {message.removeprefix('Value error, ')}")
    return Finding("wrong_type", path, value, f"{path}: {message}")


def _parse_schema(data: dict) -> tuple[LowAltitudeIR | None, Uncertainty | None, Finding | None]:
    envelope = "low_altitude_ir" in data
    try:
        if envelope:
            answer = LLMAnswer.model_validate(data)
            return answer.low_altitude_ir, answer.uncertainty, None
        return LowAltitudeIR.model_validate(data), None, None
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(error["loc"])
        if envelope and len(loc) > 1 and loc[0] == "low_altitude_ir":
            return None, None, _schema_failure(error, LowAltitudeIR, loc[1:])
        return None, None, _schema_failure(error, LLMAnswer if envelope else LowAltitudeIR, loc)


# --- entity grounding -------------------------------------------------------------------------------------


class _Grounder:
    """Checks ids against the world; every failure carries the nearest valid ids."""

    def __init__(self, world: World, origin: str | None):
        self.world = world
        self.origin = world.entity_index[origin].position if origin in world.entity_index else None

    def entity(self, value: str, path: str) -> Finding | None:
        if value in self.world.entity_index:
            return None
        lowered = value.lower()
        kinds = {k for k in EntityKind if k is not EntityKind.other and k.value in lowered}
        same_kind = [e.id for e in self.world.entities if e.kind in kinds]
        allowed = nearest(value, list(self.world.entity_index), same_kind)
        return Finding("unknown_entity", path, value, f"{path}: no entity {value!r} in this world", allowed)

    def place(self, value: str, path: str) -> Finding | None:
        """An entity or a UAV (a route may start where a UAV is)."""
        return None if value in self.world.uav_index else self.entity(value, path)

    def uav(self, value: str, path: str) -> Finding | None:
        uav = self.world.uav_index.get(value)
        idle = [u.id for u in self.world.fleet if u.status is UAVStatus.idle]
        if uav is None:
            allowed = nearest(value, idle or list(self.world.uav_index))
            return Finding("unknown_uav", path, value, f"{path}: no UAV {value!r} in the fleet", allowed)
        if uav.status is not UAVStatus.idle:
            message = f"{path}: {value} is {uav.status.value}, only idle UAVs can take a task"
            return Finding("uav_unavailable", path, value, message, self._closest_idle(value, idle))
        return None

    def _closest_idle(self, value: str, idle: list[str]) -> list[str]:
        if self.origin is None:
            return nearest(value, idle)
        ox, oy = self.origin

        def distance(uav_id: str) -> float:
            x, y = self.world.uav_index[uav_id].position
            return (x - ox) ** 2 + (y - oy) ** 2

        return sorted(idle, key=distance)[:MAX_SUGGESTIONS]

    def zone(self, value: str, path: str) -> Finding | None:
        if value in self.world.zone_index:
            return None
        allowed = nearest(value, list(self.world.zone_index))
        return Finding("unknown_zone", path, value, f"{path}: no no-fly or sensitive zone {value!r}", allowed)

    def sensor(self, value: str, path: str) -> Finding | None:
        known = sorted({s for u in self.world.fleet for s in u.sensors})
        if value in known:
            return None
        return Finding(
            "unknown_sensor", path, value, f"{path}: no UAV of the fleet has a {value!r}", nearest(value, known)
        )

    def region(self, value: str, path: str) -> Finding | None:
        if value in self.world.region_index:
            return None
        allowed = nearest(value, list(self.world.region_index))
        return Finding("unknown_region", path, value, f"{path}: no region {value!r}", allowed)


# Tool arguments that name world objects, and what kind of object each names.
ARG_KINDS = {
    "origin": "entity",
    "destination": "entity",
    "goal": "entity",
    "start": "place",
    "waypoints": "entity",  # plan_route's entity ids; coordinate lists elsewhere are skipped (not strings)
    "uav_id": "uav",
    "candidates": "uav",
    "avoid_zones": "zone",
    "region": "region",
}
_SPECIAL_AT_ATOMS = ("goal", "origin")
_PLAIN_ATOMS = ("airborne",)


def _id_refs(ir: LowAltitudeIR) -> Iterator[tuple[str, str, str]]:
    """(kind, value, field) for every world id the IR names."""
    ents = ir.entities
    for name in ("origin", "destination"):
        value = getattr(ents, name)
        if value is not None:
            yield "entity", value, f"entities.{name}"
    for name, kind in (
        ("waypoints", "entity"),
        ("handoff_points", "entity"),
        ("candidate_uavs", "uav"),
        ("avoid_zones", "zone"),
        ("sensitive_zones", "zone"),
    ):
        for i, value in enumerate(getattr(ents, name)):
            yield kind, value, f"entities.{name}.{i}"
    for i, sub in enumerate(ir.team.subtasks if ir.team else []):
        path = f"team.subtasks.{i}"
        yield "entity", sub.origin, f"{path}.origin"
        yield "entity", sub.destination, f"{path}.destination"
        for name, kind in (("waypoints", "entity"), ("uavs", "uav"), ("required_sensors", "sensor")):
            for j, value in enumerate(getattr(sub, name)):
                yield kind, value, f"{path}.{name}.{j}"
    for i, step in enumerate(ir.tool_plan):
        for arg, kind in ARG_KINDS.items():
            given = step.args.get(arg)
            values = [given] if isinstance(given, str) else given if isinstance(given, list) else []
            for j, value in enumerate(values):
                if isinstance(value, str):
                    suffix = f".{j}" if isinstance(given, list) else ""
                    yield kind, value, f"tool_plan.{i}.args.{arg}{suffix}"


def _valid_atoms(world: World) -> list[str]:
    entities = [*_SPECIAL_AT_ATOMS, *world.entity_index]
    return [*(f"in_{z}" for z in world.zone_index), *(f"at_{e}" for e in entities), *_PLAIN_ATOMS]


def _spec_atom_failure(ir: LowAltitudeIR, world: World) -> Finding | None:
    """LTL atoms must be in_<zone>, at_<entity>, at_origin, at_goal or airborne, naming real zones and entities.

    A formula that does not parse is skipped here: the policy stage reports it as malformed_spec.
    """
    engine = default_engine()
    valid = _valid_atoms(world)
    for i, text in enumerate(ir.verification_specs.ltl):
        try:
            atoms = sorted(engine.atoms(engine.parse(text)))
        except LtlSyntaxError:
            continue
        path = f"verification_specs.ltl.{i}"
        for atom in (a for a in atoms if a not in valid):
            error_type = {"in_": "unknown_zone", "at_": "unknown_entity"}.get(atom[:3], "unknown_atom")
            message = f"{path}: {atom!r} is not an atom of this world (in_<zone>, at_<entity>, at_goal, ...)"
            return Finding(error_type, path, atom, message, nearest(atom, valid))
    return None


def _check_entities(ir: LowAltitudeIR, world: World) -> Finding | None:
    grounder = _Grounder(world, ir.entities.origin)
    checks: dict[str, Callable[[str, str], Finding | None]] = {
        "entity": grounder.entity,
        "place": grounder.place,
        "uav": grounder.uav,
        "zone": grounder.zone,
        "region": grounder.region,
        "sensor": grounder.sensor,
    }
    for kind, value, path in _id_refs(ir):
        failure = checks[kind](value, path)
        if failure:
            return failure
    return _spec_atom_failure(ir, world)


# --- constraint grounding ---------------------------------------------------------------------------------


def _check_constraints(ir: LowAltitudeIR, world: World) -> Finding | None:
    cons = ir.constraints
    ceiling = world.grid.ceiling_m
    if cons.deadline_sec is not None and cons.deadline_sec <= 0:
        return Finding(
            "deadline_not_positive", "constraints.deadline_sec", cons.deadline_sec, "a deadline must be > 0 s or null"
        )
    if cons.altitude_max_m > ceiling:
        return Finding(
            "altitude_outside_airspace",
            "constraints.altitude_max_m",
            cons.altitude_max_m,
            f"the altitude band must lie within [0, {ceiling:g}] m (the airspace ceiling of this world)",
            [0.0, ceiling],
        )
    layers = [world.grid.layer_altitude(k) for k in range(world.grid.nz)]
    if not any(cons.altitude_min_m <= z <= cons.altitude_max_m for z in layers):
        return Finding(
            "no_flight_layer_in_band",
            "constraints.altitude_min_m",
            [cons.altitude_min_m, cons.altitude_max_m],
            "the planner flies on fixed altitude layers and none lies inside the altitude band",
            sorted(layers, key=lambda z: abs(z - (cons.altitude_min_m + cons.altitude_max_m) / 2))[:MAX_SUGGESTIONS],
        )
    if not 0.0 <= cons.battery_reserve_ratio <= 1.0:
        return Finding(
            "reserve_out_of_range",
            "constraints.battery_reserve_ratio",
            cons.battery_reserve_ratio,
            "battery_reserve_ratio is a share of the battery, between 0 and 1",
            [0.0, 1.0],
        )
    return (_team_failure(ir, ir.team, world) if ir.team else _payload_failure(ir, world)) or _check_rule_ids(ir)


def _payload_failure(ir: LowAltitudeIR, world: World) -> Finding | None:
    """Named candidates that cannot lift the payload while some idle fleet UAV can: an IR mistake to repair.

    If nobody in the fleet can lift it, the task itself is unsatisfiable: that is assign_uav's
    no_available_uav (unrecoverable -> fallback), not something a repair of the IR could fix.
    """
    payload = ir.constraints.payload_kg
    named = [world.uav_index[u] for u in ir.entities.candidate_uavs]
    if not named or any(u.payload_capacity_kg >= payload for u in named):
        return None
    able = [u.id for u in world.fleet if u.status is UAVStatus.idle and u.payload_capacity_kg >= payload]
    if not able:
        return None
    return Finding(
        "payload_above_capacity",
        "entities.candidate_uavs",
        ir.entities.candidate_uavs,
        f"no named candidate can carry {payload:g} kg (max {max(u.payload_capacity_kg for u in named):g} kg)",
        able[:MAX_SUGGESTIONS],
    )


# Shares written to two decimals (8 kg as 2.67 + 2.67 + 2.66) still add up to the whole mass.
PAYLOAD_SUM_TOLERANCE_KG = 0.05


def _team_failure(ir: LowAltitudeIR, team: TeamPlan, world: World) -> Finding | None:
    """A team does the whole request, books no UAV twice at once and names only UAVs able to fly their share.

    In a team IR, `entities` keeps its single-UAV meaning, the request's view: destination (or the ground hand-off
    point) and waypoints are the sites the request names, which every gate reads; the sub-tasks must serve each of
    them and may add places of their own (a relay pad, a pick-up point). No single UAV carries the whole
    constraints.payload_kg, so the shares replace _payload_failure's check.
    """
    return (
        _subtask_deadline_failure(ir, team)
        or _uav_count_failure(team)
        or _coverage_failure(ir, team)
        or _double_booking_failure(team, world)
        or _assignment_failure(team, world)
    )


def _subtask_deadline_failure(ir: LowAltitudeIR, team: TeamPlan) -> Finding | None:
    mission = ir.constraints.deadline_sec
    for i, sub in enumerate(team.subtasks):
        path = f"team.subtasks.{i}.deadline_sec"
        if sub.deadline_sec is None:
            continue
        if sub.deadline_sec <= 0:
            return Finding("deadline_not_positive", path, sub.deadline_sec, "a deadline must be > 0 s or null")
        if mission is not None and sub.deadline_sec > mission:
            message = (
                f"{path}: {sub.deadline_sec:g} s is later than the mission's deadline (constraints.deadline_sec, "
                f"{mission:g} s); null keeps the mission's"
            )
            return Finding("deadline_beyond_mission", path, sub.deadline_sec, message, [mission])
    return None


def _uav_count_failure(team: TeamPlan) -> Finding | None:
    """A stated number of UAVs shares a split sub-task only (one UAV flies any other), and where the sub-task names
    its UAVs it names that many: the team tool flies exactly uav_count of them, so fewer cannot be flown and more
    leave it unsaid which."""
    for i, sub in enumerate(team.subtasks):
        path = f"team.subtasks.{i}.uav_count"
        if sub.uav_count is None:
            continue
        if sub.uav_count > 1 and not sub.split:
            message = f"sub-task {sub.id!r} asks for {sub.uav_count} UAVs but is not split: set split, or uav_count 1"
            return Finding("uav_count_not_split", path, sub.uav_count, message, [1])
        if sub.uavs and sub.uav_count != len(sub.uavs):
            message = (
                f"sub-task {sub.id!r} asks for {sub.uav_count} UAVs but names {len(sub.uavs)} in uavs: name as many "
                "as it asks for, or leave uavs empty (the team tool then chooses)"
            )
            return Finding("uav_count_mismatch", path, sub.uav_count, message, [len(sub.uavs)])
    return None


def _coverage_failure(ir: LowAltitudeIR, team: TeamPlan) -> Finding | None:
    """Every site `entities` names is a sub-task's destination or waypoint, and the shares carry the whole mass."""
    ents = ir.entities
    landing_path = "entities.handoff_points.0" if ents.handoff_points else "entities.destination"
    sites = [(landing_path, ents.landing)] if ents.landing else []
    if ents.destination and ents.destination != ents.landing:  # a relay's pad is a landing; the site is beyond it
        sites.append(("entities.destination", ents.destination))
    sites += [(f"entities.waypoints.{i}", site) for i, site in enumerate(ents.waypoints)]
    served = {place for sub in team.subtasks for place in (sub.destination, *sub.waypoints)}
    for path, site in sites:
        if site not in served:
            message = (
                f"no sub-task serves {site} ({path}): give it a sub-task, or add it to one's destination or waypoints"
            )
            return Finding("team_coverage_gap", "team.subtasks", site, message)
    whole = ir.constraints.payload_kg
    # A relay leg carries on a load an earlier leg already carries: counted once.
    carried = sum(sub.payload_kg for sub in team.subtasks if sub.role != "relay_leg")
    if whole > 0 and abs(carried - whole) > PAYLOAD_SUM_TOLERANCE_KG:
        short_or_over = "short of" if carried < whole else "more than"
        message = (
            f"the sub-tasks' payload_kg sum to {carried:g} kg, {short_or_over} the whole {whole:g} kg "
            "(constraints.payload_kg); relay legs are not counted again"
        )
        return Finding("team_payload_mismatch", "team.subtasks", carried, message, [whole])
    return None


def _double_booking_failure(team: TeamPlan, world: World) -> Finding | None:
    """A UAV serves one sub-task of a team, as the team tool assigns them (tools/team.py: a relay is two UAVs
    meeting at a pad), so a UAV named in two sub-tasks is refused, in order or not."""
    subtasks = team.subtasks
    for i, sub in enumerate(subtasks):
        for k, uav in enumerate(sub.uavs):
            clash = next((o for o in subtasks[:i] if uav in o.uavs), None)
            if clash is None:
                continue
            message = (
                f"{uav} is named for sub-tasks {clash.id!r} and {sub.id!r}: a UAV serves one sub-task of a team; "
                "name another UAV (or none: the team tool then chooses)"
            )
            booked = {u for other in subtasks for u in other.uavs}
            allowed = _able_uavs(world, sub, _lift_alone_kg(sub), booked)
            return Finding("uav_double_booked", f"team.subtasks.{i}.uavs.{k}", uav, message, allowed)
    return None


def _assignment_failure(team: TeamPlan, world: World) -> Finding | None:
    """A named UAV carries the sub-task's sensors, and the named UAVs together lift its payload.

    As in _payload_failure, a share that all idle UAVs together cannot lift is the team tool's failure (the task
    cannot be done), not an IR mistake a repair could fix.
    """
    idle_capacity = sum(u.payload_capacity_kg for u in world.fleet if u.status is UAVStatus.idle)
    for i, sub in enumerate(team.subtasks):
        path = f"team.subtasks.{i}.uavs"
        named = [world.uav_index[u] for u in sub.uavs]
        for k, uav in enumerate(named):
            missing = [s for s in sub.required_sensors if s not in uav.sensors]
            if missing:
                message = f"{uav.id} has no {', '.join(missing)}, which sub-task {sub.id!r} requires"
                allowed = _able_uavs(world, sub, _lift_alone_kg(sub), set(sub.uavs))
                return Finding("uav_lacks_sensor", f"{path}.{k}", uav.id, message, allowed)
        capacity = sum(u.payload_capacity_kg for u in named)
        if not named or capacity >= sub.payload_kg or idle_capacity < sub.payload_kg:
            continue
        alone = [] if sub.split else _able_uavs(world, sub, _lift_alone_kg(sub), set(sub.uavs))
        if alone:
            message = f"{named[0].id} lifts {capacity:g} kg, sub-task {sub.id!r} carries {sub.payload_kg:g} kg"
            return Finding("payload_above_capacity", f"{path}.0", named[0].id, message, alone)
        fix = "name more UAVs" if sub.split else "no idle UAV lifts it alone: set split and name several (or none)"
        message = f"the UAVs of sub-task {sub.id!r} lift {capacity:g} kg, it carries {sub.payload_kg:g} kg: {fix}"
        return Finding("payload_above_capacity", path, sub.uavs, message, _able_uavs(world, sub, 0.0, set(sub.uavs)))
    return None


def _lift_alone_kg(sub: SubTask) -> float:
    """What one UAV of the sub-task must lift by itself: a non-split payload whole; a split one has no fixed share."""
    return 0.0 if sub.split else sub.payload_kg


def _able_uavs(world: World, sub: SubTask, lift_kg: float, taken: set[str]) -> list[str]:
    """Idle UAVs outside `taken` that carry the sub-task's sensors and lift `lift_kg`: what a repair may name."""
    return [
        u.id
        for u in world.fleet
        if u.status is UAVStatus.idle
        and u.id not in taken
        and set(sub.required_sensors) <= set(u.sensors)
        and u.payload_capacity_kg >= lift_kg
    ][:MAX_SUGGESTIONS]


def _check_rule_ids(ir: LowAltitudeIR) -> Finding | None:
    cited = ir.explanation_plan.cite_rules if ir.explanation_plan else []
    for path, rules in (
        ("verification_specs.program_rules", ir.verification_specs.program_rules),
        ("explanation_plan.cite_rules", cited),
    ):
        for i, rule in enumerate(rules):
            if rule not in RULE_IDS:
                allowed = nearest(rule, list(RULE_IDS))
                return Finding("unknown_rule", f"{path}.{i}", rule, f"{rule!r} is not a rule id (R1-R8)", allowed)
    return None


# --- tool dependency --------------------------------------------------------------------------------------


def _argument_failures(step: PlannedStep, registry: ToolRegistry) -> tuple[list[Finding], list[Finding]]:
    """(problems with the arguments the IR wrote, problems with the ones it left to filling).

    Arguments an earlier step provides at run time are absent here; their errors are not problems.
    """
    model = registry.spec(step.tool).args_model
    try:
        model.model_validate({**step.from_ir, **step.given})
    except ValidationError as exc:
        errors = exc.errors()
    else:
        return [], []
    given: list[Finding] = []
    filled: list[Finding] = []
    for error in errors:
        key = error["loc"][0] if error["loc"] else None
        path = f"tool_plan.{step.index}.args.{'.'.join(map(str, error['loc']))}"
        if error["type"] == "extra_forbidden":
            message, allowed = f"{step.tool} has no argument {key!r}", nearest(str(key), list(model.model_fields))
            given.append(Finding("bad_arguments", path, error["input"], message, allowed))
        elif key in step.given:
            given.append(Finding("bad_arguments", path, step.given[key], f"{step.tool}: {path}: {error['msg']}"))
        elif key in step.from_steps:
            continue
        elif error["type"] == "missing":
            message = f"{step.tool} needs {key!r}: give it in args (nothing in the IR fills it)"
            filled.append(Finding("bad_arguments", path, None, message))
        else:
            message = f"{step.tool}: {path}: the value filled from the IR does not fit: {error['msg']}"
            filled.append(Finding("bad_arguments", path, step.from_ir.get(key), message))
    return given, filled


def _check_tool_plan(ir: LowAltitudeIR, registry: ToolRegistry) -> Finding | None:
    for i, step in enumerate(ir.tool_plan):
        if step.tool not in registry:
            allowed = nearest(step.tool, registry.names())
            return Finding("unknown_tool", f"tool_plan.{i}.tool", step.tool, f"no tool named {step.tool!r}", allowed)
    analysis = analyse_plan(ir, registry)
    checked = [_argument_failures(step, registry) for step in sorted(analysis.steps, key=lambda s: s.index)]
    given = [f for failures, _ in checked for f in failures]
    if given:
        return given[0]
    if analysis.problem:
        p = analysis.problem
        return Finding(p.error_type, p.field, p.value, p.message, p.allowed)
    return next((f for _, failures in checked for f in failures), None)


# --- policy -----------------------------------------------------------------------------------------------


def _check_mandatory_rules(ir: LowAltitudeIR) -> Finding | None:
    # Only the rule IDS are demanded here, not that every nearby NFZ is in avoid_zones: with R1 in the program
    # rules the verifier checks every active NFZ on the actual trajectory and returns a counterexample with time
    # and robustness. An IR that forgets nfz_temp_1 must reach the verifier (whose counterexample drives the repair);
    # a static "NFZ near the straight line" test would also reject routes that clear the zone anyway. The
    # validator only warns about such zones (see _relaxation_warnings), except for a critical IR, where R7
    # (_check_r7, run before this) makes them errors.
    # An empty list leaves the verifier's own rule set (R1-R6) in force (see ir/plan_execution.py), as
    # tools/rules.py also reads it; only an explicit list that leaves a mandatory rule out fails.
    listed = ir.verification_specs.program_rules
    missing = [r for r in PROTECTED_RULES if listed and r not in listed]
    if not missing:
        return None
    return Finding(
        "missing_mandatory_rule",
        "verification_specs.program_rules",
        listed,
        f"program_rules must include {', '.join(PROTECTED_RULES)}; missing {', '.join(missing)}",
        missing,
    )


def _check_specs_parse(ir: LowAltitudeIR) -> Finding | None:
    engine = default_engine()
    for i, text in enumerate(ir.verification_specs.ltl):
        try:
            engine.parse(text)
        except LtlSyntaxError as exc:
            path = f"verification_specs.ltl.{i}"
            return Finding("malformed_spec", path, text, f"{path}: not an LTL formula in Spot syntax: {exc}")
    return None


def _check_specs_satisfiable(ir: LowAltitudeIR) -> Finding | None:
    """Contradictory specs (e.g. `G !in_z` with `F in_z`) are a spec-level UNSAT: caught here, before any tool
    runs. Undecided (the fallback's bounded search gave up) is left to the verifier, which says so."""
    engine = default_engine()
    specs = ir.verification_specs.ltl
    if not specs or engine.satisfiable([engine.parse(text) for text in specs]) is not False:
        return None
    return Finding(
        "spec_unsat",
        "verification_specs.ltl",
        specs,
        f"the LTL specs are jointly unsatisfiable ({engine.name}): no flight can meet them all; remove or correct "
        "the contradictory spec(s)",
    )


def _check_human_confirm(ir: LowAltitudeIR, uncertainty: Uncertainty | None) -> Finding | None:
    if uncertainty is None or ir.fallback_policy in HUMAN_CONFIRM_POLICIES:
        return None
    if not (uncertainty.needs_human_confirmation or uncertainty.missing_information):
        return None
    return Finding(
        "missing_human_confirm",
        "fallback_policy",
        ir.fallback_policy.value,
        "the answer is uncertain (needs_human_confirmation / missing_information) but the fallback policy "
        "does not involve a human",
        [p.value for p in HUMAN_CONFIRM_POLICIES],
    )


def _dotted(path: str) -> str:
    """program_rules writes list indices as [n]; reports use dotted paths everywhere."""
    return re.sub(r"\[(\d+)\]", r".\1", path)


def _check_r7(ir: LowAltitudeIR, world: World) -> Finding | None:
    findings = check_r7(ir, world)
    if not findings:
        return None
    return dataclasses.replace(findings[0], field=_dotted(findings[0].field))


def _check_policy(ir: LowAltitudeIR, world: World, uncertainty: Uncertainty | None) -> Finding | None:
    return (
        _check_r7(ir, world)
        or _check_mandatory_rules(ir)
        or _check_specs_parse(ir)
        or _check_specs_satisfiable(ir)
        or _check_human_confirm(ir, uncertainty)
    )


def _relaxation_warnings(ir: LowAltitudeIR, world: World) -> list[str]:
    """R1-R3 relaxations of a non-critical IR (e.g. an NFZ on the way left out of avoid_zones): warnings only.

    The verifier judges them on the actual trajectory; for a critical IR they are errors already (R7).
    """
    return [f"{_dotted(f.field)}: {f.message}" for f in safety_relaxations(ir, world)]


# --- entry point ------------------------------------------------------------------------------------------


def validate_ir(raw: str | dict, world: World, registry: ToolRegistry) -> ValidationReport:
    """Validate an LLM answer (raw text, an LLMAnswer envelope or a bare IR); stop at the first failing stage."""
    data, failure = _parse_json(raw)
    if failure:
        return _failed("json", failure)
    ir, uncertainty, failure = _parse_schema(data)
    if failure:
        return _failed("schema", failure)
    stages: list[tuple[Stage, Callable[[], Finding | None]]] = [
        ("entity_grounding", lambda: _check_entities(ir, world)),
        ("constraint_grounding", lambda: _check_constraints(ir, world)),
        ("tool_dependency", lambda: _check_tool_plan(ir, registry)),
        ("policy", lambda: _check_policy(ir, world, uncertainty)),
    ]
    for stage, check in stages:
        failure = check()
        if failure:
            return _failed(stage, failure, ir, uncertainty)
    return ValidationReport(valid=True, ir=ir, uncertainty=uncertainty, warnings=_relaxation_warnings(ir, world))


def _failed(
    stage: Stage, failure: Finding, ir: LowAltitudeIR | None = None, uncertainty: Uncertainty | None = None
) -> ValidationReport:
    return ValidationReport(
        valid=False,
        stage=stage,
        error_type=failure.error_type,
        field=failure.field,
        value=failure.value,
        allowed=failure.allowed,
        message=failure.message,
        ir=ir,
        uncertainty=uncertainty,
    )
