"""verify_ltl_stl: the trajectory against rules R1-R6 (STL, monitored by rtamt) and the IR's own LTL / STL specs.

Rules as monitored (signals from tools/signals.py, constants from the arguments). The signals are sampled on the
exact time grid of tools/exact_grid (each segment's minimum of every distance signal and every membership switch
besides the waypoints and whole seconds) and monitored with rtamt's dense-time semantics, so a route that cuts a
zone's corner between two seconds fails with its true depth:
  R1 always (nfz_margin >= 0)
  R2 always ((obstacle_clearance - d_min >= 0) and (separation - d_min >= 0) and (sensitive_clearance >= 0))
     (sensitive zones keep their own buffer; zones that contain the task's origin or goal are exempt)
  R3 always (alt_margin >= 0)            (the band; the floor is waived on the take-off / landing verticals)
  R4 eventually[0:D] (goal_dist <= tol)  (D = the deadline, seconds from now: specs are monitored on the mission clock)
  R5 always (battery - reserve >= 0)     (not_applicable without uav_id)
  R6 always (capacity - load >= 0)       (load counts us with corridor_capacity_required slots)
rtamt gives each rule's robustness; the first violating instant and the offending entity are read from the same
signals. The counterexample reports the first failing rule in the order R1..R6, then the IR's STL, then its LTL.
A critical-priority request never relaxes R1-R3 (R7): its separation and altitude band are raised to the safety
baseline and R1-R3 are always checked, with a warning.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from rapidfuzz import process

from tools import exact_grid, ltl, signals
from tools.contract import ToolFailure, ToolOutput
from tools.registry import ToolSpec
from tools.rules import (
    MONITORED_RULES,
    PROTECTED_RULES,
    RULE_TEXT,
    TRAFFIC_RULE_TEXT,
    RuleId,
    missing_mandatory_ltl,
    nfz_on_the_way,
    safety_baseline,
)
from tools.stl_monitor import StlSpecError, StlVerdict, monitor
from tools.trajectory import Trajectory
from tools.world import UAV, XY, XYZT, SensitiveZone, World

STL_ENGINE = "rtamt"
DIGITS = 3
# An approved intent's volume further than this from the route at every instant cannot decide R9; nearer ones are
# judged exactly (R9's robustness is then the margin to the nearest, or this reach when none is near).
RESERVATION_REACH_M = 200.0


class WaypointArgs(BaseModel):
    """A 4D trajectory argument, as plan_route returns it."""

    model_config = ConfigDict(extra="forbid")

    waypoints: list[XYZT] = Field(min_length=1, description="[[x, y, z, t], ...] metres and seconds, t non-decreasing")
    uav_id: str | None = None

    @field_validator("waypoints")
    @classmethod
    def _finite_and_ordered(cls, waypoints: list[XYZT]) -> list[XYZT]:
        if not all(math.isfinite(v) for point in waypoints for v in point):
            raise ValueError("waypoint coordinates must be finite numbers")
        for i, (a, b) in enumerate(zip(waypoints, waypoints[1:]), start=1):
            if b[3] < a[3]:
                raise ValueError("waypoint times must be non-decreasing")
            if b[3] == a[3] and math.dist(a[:3], b[:3]) > 1e-6:  # a jump has no path in between to check
                raise ValueError(f"waypoint {i} moves {math.dist(a[:3], b[:3]):.3g} m in zero time")
        return waypoints


class VerifyArgs(WaypointArgs):
    goal: str | None = Field(default=None, description="entity or UAV id; default: the last waypoint")
    origin: str | None = Field(default=None, description="entity or UAV id; default: the first waypoint")
    ltl: list[str] = Field(default_factory=list, description="Spot syntax over in_<zone>, at_<entity>, at_goal ...")
    stl: list[str] = Field(default_factory=list, description="rtamt expressions over the signals of tools/stl_monitor")
    rules: list[RuleId] = Field(default_factory=lambda: list(MONITORED_RULES))
    altitude_min_m: float = Field(default=30.0, ge=0)
    altitude_max_m: float = Field(default=120.0, gt=0)
    min_separation_m: float = Field(default=10.0, ge=0)
    deadline_sec: float | None = Field(default=None, gt=0)
    battery_reserve_ratio: float = Field(default=0.2, ge=0, le=1)
    payload_kg: float = Field(default=0.0, ge=0)
    corridor_capacity_required: int = Field(default=1, ge=1)
    priority: Literal["low", "normal", "high", "critical"] = "normal"

    @model_validator(mode="after")
    def _band_ordered(self) -> VerifyArgs:
        if self.altitude_min_m >= self.altitude_max_m:
            raise ValueError("altitude_min_m must be lower than altitude_max_m")
        return self


# --- shared with the simulator -------------------------------------------------------------------------------------
def resolve_uav(world: World, uav_id: str | None) -> UAV | None:
    if uav_id is None:
        return None
    if uav_id not in world.uav_index:
        raise _unknown_id("uav_id", uav_id, list(world.uav_index))
    return world.uav_index[uav_id]


def resolve_position(world: World, field: str, ref: str | None, fallback: XY) -> XY:
    """Position of an entity or UAV id; `fallback` when no id is given."""
    if ref is None:
        return fallback
    if ref not in world.entity_index and ref not in world.uav_index:
        raise _unknown_id(field, ref, [*world.entity_index, *world.uav_index])
    return world.position_of(ref)


def _unknown_id(field: str, value: str, known: list[str]) -> ToolFailure:
    nearest = [match for match, _, _ in process.extract(value, known, limit=3)]
    return ToolFailure(
        "bad_arguments",
        f"{field}: unknown id {value!r}",
        recoverable=True,
        suggested_actions=[f"use one of: {', '.join(nearest)}"] if nearest else [],
    )


def offending_segment(waypoints: np.ndarray, point: np.ndarray) -> list[list[float]]:
    """The straight piece of the track that holds `point` (x, y, z, t): [start, point, end] rows, never the whole
    trajectory (the point is left out where it is one of the ends)."""
    k = int(np.clip(np.searchsorted(waypoints[:, 3], point[3], side="right") - 1, 0, max(len(waypoints) - 2, 0)))
    rows = [waypoints[k], point, waypoints[min(k + 1, len(waypoints) - 1)]]
    rounded = [[round(float(v), 1) for v in row] for row in rows]
    return [row for i, row in enumerate(rounded) if i == 0 or row != rounded[i - 1]]


def suggest_repair(world: World, rule: str, entity: str | None) -> str:
    """One concrete repair an LLM can apply to the IR for a violation of `rule` caused by `entity`."""
    if rule == "R1":
        return f"add {entity} to entities.avoid_zones (plan_route avoid_zones) and re-plan"
    if rule == "R2":
        zone = world.zone_index.get(entity or "")
        if isinstance(zone, SensitiveZone):
            return f"add {entity} to entities.avoid_zones (the planner then keeps its {zone.buffer_m:g} m buffer)"
        if entity in {t.id for t in world.traffic}:
            return f"separate from traffic {entity}: change depart_time_sec or the altitude band"
        return f"re-plan with plan_route keeping min_separation_m from {entity}, or raise altitude_min_m above it"
    if rule == "R3":
        if entity == "altitude_max_m":
            return "lower the route's altitude_max_m to the allowed ceiling and re-plan"
        return "raise the route's altitude_min_m to the allowed floor and re-plan"
    if rule == "R4":
        return "choose a faster UAV or a shorter route, or ask a human to confirm a later deadline"
    if rule == "R5":
        return "choose a UAV with more battery (assign_uav objective max_reserve) or reduce the payload"
    if rule == "R6":
        return f"keep out of {entity} (plan_route avoid_congested_corridors=true) or depart later"
    if rule == "R9":
        return f"keep clear of the approved operational intent's volume {entity}: another altitude band, another route or a later start"
    return f"re-plan so that {rule} holds"


def build_counterexample(
    *,
    failure_stage: str,
    failure_type: str,
    violated_rule: str,
    time_sec: float,
    robustness: float | None,
    offending_segment: list[list[float]],
    offending_entity: str | None,
    suggested_repair: str,
) -> dict[str, Any]:
    """The short failure summary the repair prompt gets."""
    return {
        "failure_stage": failure_stage,
        "failure_type": failure_type,
        "violated_rule": violated_rule,
        "time_sec": round(float(time_sec), 1),
        "robustness": None if robustness is None else round(float(robustness), DIGITS),
        "offending_segment": offending_segment,
        "offending_entity": offending_entity,
        "suggested_repair": suggested_repair,
    }


# --- rule monitoring -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RuleCheck:
    rule: str
    spec: str
    margin: np.ndarray  # per-sample margin (negative = violated at that instant)
    entities: Sequence[str | None]
    deadline_index: int | None = None  # R4: the violation is "not there by this sample"


@dataclass(frozen=True)
class Settings:
    """The thresholds actually checked (after R7's tightening of critical requests)."""

    rules: list[str]
    min_separation_m: float
    altitude_min_m: float
    altitude_max_m: float


def effective_settings(world: World, args: VerifyArgs) -> tuple[Settings, list[str]]:
    ordered = sorted(set(args.rules), key=list(RULE_TEXT).index)
    settings = Settings(ordered, args.min_separation_m, args.altitude_min_m, args.altitude_max_m)
    if args.priority != "critical":
        return settings, []
    base = safety_baseline(world)
    tightened = Settings(
        rules=sorted({*PROTECTED_RULES, *settings.rules}, key=list(RULE_TEXT).index),
        min_separation_m=max(settings.min_separation_m, base.min_separation_m),
        altitude_min_m=max(settings.altitude_min_m, base.altitude_min_m),
        altitude_max_m=min(settings.altitude_max_m, base.altitude_max_m),
    )
    warnings = [
        f"R7: critical priority checks {name}={getattr(tightened, name)} instead of {getattr(settings, name)}"
        for name in ("rules", "min_separation_m", "altitude_min_m", "altitude_max_m")
        if getattr(tightened, name) != getattr(settings, name)
    ]
    return tightened, warnings


def _rule_checks(sig: signals.SignalSet, settings: Settings, args: VerifyArgs, goal_id: str | None) -> dict:
    d_min = settings.min_separation_m
    obstacle, separation = sig.obstacle.values - d_min, sig.separation.values - d_min
    r2_parts = np.vstack([obstacle, separation, sig.sensitive.values])
    r2_source = np.argmin(r2_parts, axis=0)
    r2_entities = [(sig.obstacle, sig.separation, sig.sensitive)[s].entities[i] for i, s in enumerate(r2_source)]
    floor_side = sig.altitude_margin < settings.altitude_max_m - sig.samples[:, 2]
    checks = {
        "R1": RuleCheck("R1", "always (nfz_margin >= 0)", sig.nfz.values, sig.nfz.entities),
        "R2": RuleCheck(
            "R2",
            "always ((obstacle_clearance - d_min >= 0) and (separation - d_min >= 0) and (sensitive_clearance >= 0))",
            r2_parts.min(axis=0),
            r2_entities,
        ),
        "R3": RuleCheck(
            "R3",
            "always (alt_margin >= 0)",
            sig.altitude_margin,
            ["altitude_min_m" if low else "altitude_max_m" for low in floor_side],
        ),
        "R6": RuleCheck("R6", "always (capacity - load >= 0)", sig.corridor.margin.values, sig.corridor.entities),
    }
    if args.deadline_sec is not None and sig.goal_dist is not None:
        in_time = int(np.count_nonzero(sig.times <= args.deadline_sec + 1e-9))
        checks["R4"] = RuleCheck(
            "R4",
            f"eventually[0:{max(args.deadline_sec, 0.0):.6f}] (goal_dist <= tol)",  # from now: the monitor's clock
            np.full(len(sig.samples), np.nan),
            [goal_id] * len(sig.samples),
            deadline_index=max(in_time - 1, 0),
        )
    if sig.battery is not None:
        reserve = args.battery_reserve_ratio
        uav_ids = [args.uav_id] * len(sig.samples)
        checks["R5"] = RuleCheck("R5", "always (battery - reserve >= 0)", sig.battery - reserve, uav_ids)
    if sig.reservation is not None:
        checks["R9"] = RuleCheck("R9", "always (intent_margin >= 0)", sig.reservation.values, sig.reservation.entities)
    return checks


def _not_applicable_reason(rule: str) -> str:
    return {
        "R4": "no deadline_sec",
        "R5": "no uav_id",
        "R7": "program check on the IR (ir.policy.check_r7)",
        "R8": "program check on the outcome (ir.policy.check_r8)",
    }[rule]


def _first_violation(check: RuleCheck) -> int:
    if check.deadline_index is not None:
        return check.deadline_index
    below = np.flatnonzero(check.margin < 0)
    return int(below[0]) if len(below) else int(np.argmin(check.margin))


def _violation(
    run: Monitored, rule: str, index: int, robustness: float | None, entity: str | None, **extra: Any
) -> dict[str, Any]:
    return {
        "rule": rule,
        "time_sec": round(float(run.samples[index, 3]), 1),
        "robustness": None if robustness is None else round(robustness, DIGITS),
        "segment": offending_segment(run.waypoints, run.samples[index]),
        "entity": entity,
        **extra,
    }


# --- LTL -----------------------------------------------------------------------------------------------------------
def _parse_ltl(world: World, engine: ltl.LtlEngine, specs: list[str]) -> list[Any]:
    known = signals.known_atoms(world)
    parsed = []
    for text in specs:
        try:
            formula = engine.parse(text)
        except ltl.LtlSyntaxError as exc:
            raise ToolFailure("invalid_spec", f"LTL spec {text!r} does not parse: {exc}", recoverable=False) from None
        unknown = sorted(engine.atoms(formula) - known)
        if unknown:
            nearest = [m for m, _, _ in process.extract(unknown[0], sorted(known), limit=3)]
            raise ToolFailure(
                "invalid_spec",
                f"LTL spec {text!r} uses unknown atom(s) {', '.join(unknown)}",
                recoverable=False,
                suggested_actions=[f"atoms look like: {', '.join(nearest)}"],
            )
        parsed.append(formula)
    return parsed


def _ltl_rule(atoms: set[str], world: World) -> str:
    """The safety rule an LTL spec expresses, read from its atoms (R1 zones, R2 sensitive zones, R4 the goal)."""
    zones = [world.zone_index.get(atom[3:]) for atom in atoms if atom.startswith("in_")]
    if any(zone is not None and not isinstance(zone, SensitiveZone) for zone in zones):
        return "R1"
    if any(isinstance(zone, SensitiveZone) for zone in zones):
        return "R2"
    return "R4" if "at_goal" in atoms else "LTL"


# --- the tool --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Monitored:
    """One sampled trajectory with everything the checks read."""

    world: World
    waypoints: np.ndarray
    samples: np.ndarray
    signals: signals.SignalSet
    constants: dict[str, float]
    origin_xy: XY
    goal_xy: XY

    def stl(self, spec: str) -> StlVerdict:
        return monitor(spec, self.signals.stl_dataset(), self.signals.times, self.constants)


def _status(satisfied: bool) -> str:
    return "pass" if satisfied else "fail"


def _check_rules(run: Monitored, settings: Settings, args: VerifyArgs) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rules: dict[str, dict[str, Any]] = {}
    violations = []
    checks = _rule_checks(run.signals, settings, args, args.goal)
    traffic_rules = [rule for rule in TRAFFIC_RULE_TEXT if rule in checks]  # checked whatever the IR lists
    for rule in [*settings.rules, *traffic_rules]:
        check = checks.get(rule)
        if check is None:
            rules[rule] = {"status": "not_applicable", "robustness": None, "reason": _not_applicable_reason(rule)}
            continue
        verdict = run.stl(check.spec)
        rules[rule] = {"status": _status(verdict.satisfied), "robustness": round(verdict.robustness, DIGITS)}
        if not verdict.satisfied:
            index = _first_violation(check)
            violations.append(_violation(run, rule, index, verdict.robustness, check.entities[index]))
    return rules, violations


def _check_stl(run: Monitored, specs: list[str], engines: dict[str, str]) -> tuple[list, list[dict[str, Any]]]:
    results, violations = [], []
    for text in specs:
        try:
            verdict = run.stl(text)
        except StlSpecError as exc:
            raise ToolFailure("invalid_spec", f"STL spec: {exc}", recoverable=False, engine=engines) from None
        robustness = round(verdict.robustness, DIGITS)
        results.append({"spec": text, "status": _status(verdict.satisfied), "robustness": robustness})
        if not verdict.satisfied:
            index = _first_stl_violation(run, text)
            violations.append(_violation(run, "STL", index, verdict.robustness, None, spec=text))
    return results, violations


_UNBOUNDED_ALWAYS = re.compile(r"^\s*(?:always|G)\s*\((?P<body>.*)\)\s*$")


def _first_stl_violation(run: Monitored, spec: str) -> int:
    """For `always (phi)`, the first second where phi fails; for any other shape, the start."""
    match = _UNBOUNDED_ALWAYS.match(spec)
    if match is None:
        return 0
    try:
        body = run.stl(match.group("body"))
    except StlSpecError:  # the parentheses did not enclose the whole formula, e.g. always (a) and always (b)
        return 0
    failing = body.first_negative_time()
    return 0 if failing is None else int(np.argmin(np.abs(run.samples[:, 3] - failing)))


def _check_ltl(
    run: Monitored, engine: ltl.LtlEngine, specs: list[str], parsed: list[Any], goal_id: str | None
) -> tuple[list, list[dict[str, Any]]]:
    needed = sorted(set().union(*(engine.atoms(f) for f in parsed))) if parsed else []
    trace = {atom: signals.atom_values(run.world, run.samples, atom, run.origin_xy, run.goal_xy) for atom in needed}
    results, violations = [], []
    for text, formula in zip(specs, parsed):
        holds = engine.check_trace(formula, trace)
        results.append({"spec": text, "status": _status(holds)})
        if not holds:
            atoms = engine.atoms(formula)
            index = engine.first_violation(formula, trace)  # where an invariant first broke
            zone = next((atom[3:] for atom in sorted(atoms) if atom.startswith("in_")), None)
            entity = zone or (goal_id if "at_goal" in atoms else None)
            violations.append(_violation(run, _ltl_rule(atoms, run.world), index, None, entity, spec=text))
    return results, violations


def _unsat(engines: dict[str, str], specs: list[str]) -> ToolFailure:
    return ToolFailure(
        "spec_unsat",
        "the LTL specs are jointly unsatisfiable: no flight can meet them all",
        recoverable=True,
        suggested_actions=["remove or correct the contradictory LTL spec(s) in verification_specs.ltl"],
        result={"pass": False, "engine": engines, "ltl": [{"spec": s, "status": "unsat"} for s in specs]},
        engine=engines,
    )


def _monitored(world: World, args: VerifyArgs, settings: Settings, atoms: set[str]) -> tuple[Monitored, list[str]]:
    uav = resolve_uav(world, args.uav_id)
    track = Trajectory(waypoints=args.waypoints)
    waypoints = track.array()
    origin_xy = resolve_position(world, "origin", args.origin, tuple(waypoints[0, :2]))
    goal_xy = resolve_position(world, "goal", args.goal, tuple(waypoints[-1, :2]))
    exempt = signals.zones_containing(world, [origin_xy, goal_xy])
    reservations = signals.reservations_near(world, waypoints, RESERVATION_REACH_M)
    times = signals.exact_times(
        world,
        waypoints,
        zones=[*world.no_fly_zones, *reservations],
        exempt_sensitive=exempt,
        goal_xy=goal_xy,
        origin_xy=origin_xy,
        deadline_sec=args.deadline_sec,
        min_separation_m=settings.min_separation_m,
        atoms=atoms,
        stl_specs=args.stl,
    )
    samples = exact_grid.sample_track(waypoints, times)
    sig = signals.compute_signals(
        world,
        samples,
        alt_min_m=settings.altitude_min_m,
        alt_max_m=settings.altitude_max_m,
        goal_xy=goal_xy,
        uav=uav,
        payload_kg=args.payload_kg,
        exempt_sensitive=exempt,
        own_slots=args.corridor_capacity_required,
        energy_track=track.sample(1.0),
        reservations=reservations,
    )
    constants = {
        "d_min": settings.min_separation_m,
        "a_min": settings.altitude_min_m,
        "a_max": settings.altitude_max_m,
        "tol": world.arrival_tolerance_m,
        "reserve": args.battery_reserve_ratio,
    }
    notes = [f"R2: sensitive zone {z} contains the task's origin or goal; its buffer is not checked" for z in exempt]
    return Monitored(world, waypoints, samples, sig, constants, origin_xy, goal_xy), notes


def verify(world: World, args: VerifyArgs) -> ToolOutput:
    settings, warnings = effective_settings(world, args)
    engine = ltl.default_engine()
    engines = {"stl": STL_ENGINE, "ltl": engine.name}
    parsed_ltl = _parse_ltl(world, engine, args.ltl)
    satisfiable = engine.satisfiable(parsed_ltl) if parsed_ltl else True
    if satisfiable is False:
        raise _unsat(engines, args.ltl)
    if satisfiable is None:
        warnings.append(
            f"{engine.name} gave up deciding whether the LTL specs are jointly satisfiable (too many atoms)"
        )
    atoms = set().union(*(engine.atoms(formula) for formula in parsed_ltl))
    run, notes = _monitored(world, args, settings, atoms)
    rules, violations = _check_rules(run, settings, args)
    stl_results, stl_violations = _check_stl(run, args.stl, engines)
    ltl_results, ltl_violations = _check_ltl(run, engine, args.ltl, parsed_ltl, args.goal)
    violations += stl_violations + ltl_violations
    missing = []
    if args.ltl:
        path = [tuple(p) for p in run.samples[:, :2]]
        nearby = nfz_on_the_way(world, path, float(run.samples[0, 3]), float(run.samples[-1, 3]))
        missing = missing_mandatory_ltl(args.ltl, nearby, engine)
    warnings += notes + [f"the LTL specs do not entail the mandatory {m}" for m in missing]
    result = {
        "pass": not violations,
        "engine": engines,
        "rules": rules,
        "stl": stl_results,
        "ltl": ltl_results,
        "ltl_missing_mandatory": missing,
        "violations": violations,
        "counterexample": _counterexample(world, violations[0]) if violations else None,
        "checked": {
            "min_separation_m": settings.min_separation_m,
            "altitude_min_m": settings.altitude_min_m,
            "altitude_max_m": settings.altitude_max_m,
            "samples": len(run.samples),
            "duration_sec": round(float(run.samples[-1, 3] - run.samples[0, 3]), 1),
        },
        "notes": warnings,
    }
    if not violations:
        return ToolOutput(result=result, warnings=warnings, engine=engines)
    first = violations[0]
    raise ToolFailure(
        "spec_violation",
        f"{first['rule']} violated at t={first['time_sec']} s ({first['entity'] or first.get('spec', '')})",
        recoverable=True,
        suggested_actions=[result["counterexample"]["suggested_repair"]],
        result=result,
        engine=engines,
    )


def _counterexample(world: World, first: dict[str, Any]) -> dict[str, Any]:
    rule = first["rule"]
    segment = np.asarray(first["segment"], dtype=float)
    vertical = len(segment) > 1 and np.ptp(segment[:, 0]) == 0 and np.ptp(segment[:, 1]) == 0
    surface = world.surface_height_m((float(segment[0, 0]), float(segment[0, 1]))) if vertical else 0.0
    if rule == "R1" and vertical and segment[:, 2].min() <= surface + 1e-6:
        # re-routing cannot move a pad: only another place, another time or a person can
        end = "take-off" if segment[0, 2] <= surface + 1e-6 else "landing"
        repair = (
            f"the {end} at ({segment[0, 0]:g}, {segment[0, 1]:g}) passes through {first['entity']} while it is "
            f"active: use another {'origin' if end == 'take-off' else 'destination'}, fly outside its active "
            "window, or ask a human"
        )
    elif rule in MONITORED_RULES or rule in TRAFFIC_RULE_TEXT:
        repair = suggest_repair(world, rule, first["entity"])
    else:
        repair = f"re-plan so that {first['spec']} holds"
    return build_counterexample(
        failure_stage="verify",
        failure_type="ltl_violation" if "spec" in first and rule != "STL" else "stl_robustness_negative",
        violated_rule=first["spec"] if rule in ("STL", "LTL") else rule,
        time_sec=first["time_sec"],
        robustness=first["robustness"],
        offending_segment=first["segment"],
        offending_entity=first["entity"],
        suggested_repair=repair,
    )


SPEC = ToolSpec(
    name="verify_ltl_stl",
    description=(
        "Verify a 4D trajectory against safety rules R1-R6 (STL robustness via rtamt) and the IR's LTL specs "
        "(Spot syntax over in_<zone>, at_<entity>, at_origin, at_goal, airborne) and STL specs (rtamt syntax over "
        "nfz_margin, obstacle_clearance, sensitive_clearance, separation, clearance, alt, alt_margin, goal_dist, "
        "battery, load, capacity and constants d_min, a_min, a_max, tol, reserve; bounds in seconds). Returns pass, "
        "per-rule robustness, violations and a short counterexample with a suggested repair."
    ),
    args_model=VerifyArgs,
    body=verify,
    data_sources=("world", "trajectory"),
    needs=("plan_route",),
)
