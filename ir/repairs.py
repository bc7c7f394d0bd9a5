"""Repair candidates: concrete, checkable changes to a failed IR, derived from its counterexample and the world.

A failure of the world-facing stages (a tool's recoverable error, a rule the verifier found violated, an event of
the stress simulation, a risk above the task's limit) has its cause in the world: a zone in the way, a UAV that
cannot cover the route, traffic or a roof at some altitude. Each candidate is one remedy for that cause, written as
changes to the IR's fields, and none relaxes what the request states: a pinned UAV is never swapped, a stated
altitude band never left. The model chooses among them (a grounded choice); a candidate offered in an earlier round
and carried by the round after it (tried) is not offered again; a failure that no candidate addresses ends the loop at once (fallback), since
another round could only repeat it.

Kinds:
- avoid_zone: keep out of the zones the route broke (every violation of the verdict at once) or the risk names
  (entities.avoid_zones, their LTL specs);
- other_uav: fly another idle UAV whose wind limit, battery (repositioning leg included) and payload cover this
  route (entities.candidate_uavs), where the failure is the UAV's (battery, speed, wind limit);
- raise_floor: fly above the traffic or roof in the way, at the first flight layer min separation over it
  (constraints.altitude_min_m), within the band's ceiling.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from ir.fidelity import StatedConstraints
from ir.model import LowAltitudeIR
from ir.plan_execution import ir_tool_args
from tools.assignment import AssignUavArgs, evaluate, strongest_wind
from tools.signals import positions_at
from tools.world import SensitiveZone, UAVStatus, World

RepairKind = Literal["avoid_zone", "other_uav", "raise_floor"]

# The failures whose cause lies in the world, where a candidate can name the remedy (a rule violation: the rules
# about zones, separation, deadline and battery). Anything else (a malformed or ungrounded IR, an IR at odds with
# itself, a plan that drops what the request said, a route the planner found no way for) stays the model's to
# repair freely.
WORLD_FAILURES = frozenset(
    {"near_miss", "collision", "sim_failure", "high_risk_no_override", "medium_risk", "low_battery_candidates"}
)
WORLD_RULES = frozenset({"R1", "R2", "R4", "R5"})
UAV_FAULTS = frozenset({"R4", "R5", "battery_depleted", "deadline_missed", "low_battery_candidates"})
UAV_RISK_FACTORS = frozenset({"wind_limit", "battery"})
ZONE_RISK_FACTORS = frozenset({"nfz", "sensitive_zones"})
SEPARATION_EVENTS = frozenset({"near_miss", "separation_violation", "collision"})
MIN_FACTOR_SHARE = 0.05  # a risk factor below this share is not what made the risk too high


class RepairCandidate(BaseModel):
    id: str = Field(description="stable across rounds, e.g. 'avoid:nfz_temp_1', 'uav:uav_03', 'floor:80'")
    kind: RepairKind
    summary: str = Field(description="what it changes and why, in words")
    changes: dict[str, Any] = Field(description="IR field (dotted path) -> new value")


def addressable(failure: dict[str, Any]) -> bool:
    """Whether the failure is one whose remedies repair candidates name (see WORLD_FAILURES)."""
    rule = (failure.get("counterexample") or {}).get("violated_rule")
    error_type = failure.get("error_type")
    return error_type in WORLD_FAILURES or (error_type == "spec_violation" and rule in WORLD_RULES)


def _get(ir: dict[str, Any], path: str) -> Any:
    node: Any = ir
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def carried_by(ir: dict[str, Any], candidate: RepairCandidate) -> bool:
    """The IR already holds the candidate's changes (lists: every item; numbers: at least as tight)."""
    for path, value in candidate.changes.items():
        current = _get(ir, path)
        if isinstance(value, list):
            if not set(value) <= set(current or []):
                return False
        elif path == "constraints.altitude_min_m":
            if current is None or current < value:
                return False
        elif current != value:
            return False
    return True


def apply_candidate(ir: dict[str, Any], candidate: RepairCandidate) -> dict[str, Any]:
    """The IR with the candidate's changes, and every tool step's argument that those fields set brought in line."""
    before = LowAltitudeIR.model_validate(ir)
    repaired = copy.deepcopy(ir)
    for path, value in candidate.changes.items():
        *parents, last = path.split(".")
        node = repaired
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    after = LowAltitudeIR.model_validate(repaired)
    # A step's own argument overrides the IR's field when the plan is executed: where the changed fields feed an
    # argument the step gives, the step takes the new value (and only there).
    for step in repaired.get("tool_plan") or []:
        old, new = ir_tool_args(step["tool"], before), ir_tool_args(step["tool"], after)
        for arg, value in new.items():
            if arg in step.get("args", {}) and old.get(arg) != value:
                step["args"][arg] = value
    return repaired


def _avoid(world: World, ir: LowAltitudeIR, zones: list[str], why: str, hub: str | None = None) -> RepairCandidate:
    """Keep out of every zone named (all the zones the route broke: one round, not one round per zone); with a
    hand-off hub, land there (the destination lies inside one of them)."""
    sensitive = [z for z in zones if isinstance(world.zone_index[z], SensitiveZone)]
    changes: dict[str, Any] = {
        "entities.avoid_zones": list(dict.fromkeys([*ir.entities.avoid_zones, *zones])),
        "verification_specs.ltl": list(dict.fromkeys([*ir.verification_specs.ltl, *(f"G !in_{z}" for z in zones)])),
    }
    if sensitive:
        changes["entities.sensitive_zones"] = list(dict.fromkeys([*ir.entities.sensitive_zones, *sensitive]))
    summary = f"keep out of {', '.join(zones)} ({why})"
    if hub is not None:
        changes["entities.handoff_points"] = [hub]
        summary += f", and land at {hub} for the ground hand-off the request allows"
    return RepairCandidate(
        id=f"avoid:{','.join(zones)}" + (f"+handoff:{hub}" if hub else ""),
        kind="avoid_zone",
        summary=summary,
        changes=changes,
    )


def _uavs_covering(
    world: World, ir: LowAltitudeIR, route: np.ndarray, flying: str | None, stated: StatedConstraints
) -> list[RepairCandidate]:
    """Idle UAVs other than the one that failed whose limits cover the task (assign_uav's checks on straight legs)
    and, where a route was planned, the wind plus gusts along that route; fastest first."""
    if stated.uavs or not ir.entities.origin or not ir.entities.destination:
        return []  # a pinned UAV is the operator's to change, and without the task's ends there is no task
    try:
        origin, destination = world.position_of(ir.entities.origin), world.position_of(ir.entities.destination)
    except KeyError:
        return []
    args = AssignUavArgs(
        origin=ir.entities.origin,
        destination=ir.entities.destination,
        payload_kg=ir.constraints.payload_kg,
        battery_reserve_ratio=min(ir.constraints.battery_reserve_ratio, 0.99),
    )
    found = []
    for uav in world.fleet:
        if uav.id in (flying, *ir.entities.candidate_uavs, *stated.excluded_uavs) or uav.status is not UAVStatus.idle:
            continue
        judged = evaluate(world, uav, origin, destination, args)
        legs = [tuple(p) for p in route[:, :2]] if len(route) else [origin, destination]
        wind, _ = strongest_wind(world, [uav.position, *legs])
        deadline = ir.constraints.deadline_sec
        if judged.reasons or wind > uav.max_wind_mps or (deadline is not None and judged.eta_sec > deadline):
            continue
        summary = (
            f"fly {uav.id} instead: wind + gusts {wind:g} m/s on this route within its {uav.max_wind_mps:g} m/s "
            f"limit, battery {judged.battery_after_ratio:.2f} on arrival, ETA about {judged.eta_sec:.0f} s"
        )
        found.append(
            (
                judged.eta_sec,
                RepairCandidate(
                    id=f"uav:{uav.id}", kind="other_uav", summary=summary, changes={"entities.candidate_uavs": [uav.id]}
                ),
            )
        )
    return [candidate for _, candidate in sorted(found, key=lambda pair: (pair[0], pair[1].id))]


def _obstacle_top(world: World, entity: str, time_sec: float | None) -> float | None:
    """The altitude of the traffic (at the failure's time) or the roof that the route came too close to."""
    building = next((b for b in world.buildings if b.id == entity), None)
    if building is not None:
        return building.height_m
    track = next((t for t in world.traffic if t.id == entity), None)
    if track is None or time_sec is None:
        return None
    xyz, flying = positions_at(np.asarray(track.waypoints, dtype=float), np.array([time_sec]))
    return float(xyz[0, 2]) if flying[0] else None


def _raise_floor(
    world: World, ir: LowAltitudeIR, entity: str, top: float, stated: StatedConstraints
) -> RepairCandidate | None:
    c = ir.constraints
    wanted = top + c.min_separation_m
    layers = [world.grid.layer_altitude(k) for k in range(world.grid.nz)]
    ceiling = min(c.altitude_max_m, stated.altitude_max_m if stated.altitude_max_m is not None else math.inf)
    floor = next((a for a in layers if a >= wanted), None)
    if floor is None or floor <= c.altitude_min_m or floor >= ceiling:
        return None  # no flight layer above it within the band: flying over it cannot be the repair
    return RepairCandidate(
        id=f"floor:{floor:g}",
        kind="raise_floor",
        summary=f"fly no lower than {floor:g} m, {floor - top:g} m over {entity} (top at {top:g} m)",
        changes={"constraints.altitude_min_m": floor},
    )


def derive_candidates(
    world: World,
    ir: LowAltitudeIR,
    failure: dict[str, Any],
    *,
    route: list[list[float]] | None,
    flying_uav: str | None,
    risk_factors: list[dict[str, Any]],
    stated: StatedConstraints,
    tried: set[str],
    violated: Sequence[dict[str, Any]] = (),
    handoff_hub: str | None = None,
) -> list[RepairCandidate]:
    """The candidates for a world-facing failure, minus those tried in an earlier round (`tried_repairs`).

    `handoff_hub`: where the request allows a ground hand-off and the destination lies in an active no-fly zone,
    the hub to land at instead (language.defaults.handoff_hub); keeping out of a zone that holds the flight's end
    is offered only with it, since the route could not end there."""
    cx = failure.get("counterexample") or {}
    failure_type = str(cx.get("failure_type") or failure.get("error_type") or "")
    rule, entity = cx.get("violated_rule"), cx.get("offending_entity")
    causes = {failure_type, failure.get("error_type"), rule}
    shaped = np.asarray(route or [], dtype=float).reshape(-1, 4)
    found: list[RepairCandidate] = []
    broken = [v.get("entity") for v in violated] + [entity]  # every violation of the verdict, then this failure's
    zones = [z for z in dict.fromkeys(broken) if z in world.zone_index and z not in ir.entities.avoid_zones]
    end = ir.entities.landing
    holds_end = end in world.entity_index and any(
        world.zone_index[z].shape.covers(world.entity_index[end].point) for z in zones
    )
    if zones and (not holds_end or handoff_hub is not None):
        hub = handoff_hub if holds_end else None
        found.append(_avoid(world, ir, zones, f"the route broke {rule or failure_type} there", hub))
    weighty = [f for f in risk_factors if f.get("contribution", 0) >= MIN_FACTOR_SHARE]
    for factor in weighty:
        zone = factor.get("entity")
        if (
            factor.get("factor") in ZONE_RISK_FACTORS
            and zone in world.zone_index
            and zone not in ir.entities.avoid_zones
        ):
            found.append(_avoid(world, ir, [zone], f"risk: {factor.get('detail')}"))
    if causes & UAV_FAULTS or any(f.get("factor") in UAV_RISK_FACTORS for f in weighty):
        found += _uavs_covering(world, ir, shaped, flying_uav, stated)
    separation = failure_type in SEPARATION_EVENTS or (rule == "R2" and entity not in world.zone_index)
    if separation and entity:
        top = _obstacle_top(world, entity, cx.get("time_sec"))
        if top is not None and (candidate := _raise_floor(world, ir, entity, top, stated)) is not None:
            found.append(candidate)
    unique = list({c.id: c for c in found}.values())
    return [c for c in unique if c.id not in tried]


def tried_repairs(attempts: list[dict[str, Any]], current_ir: dict[str, Any] | None) -> set[str]:
    """The candidates offered in some round that the next round's IR carried: the ones already tried."""
    irs = [a.get("ir") for a in attempts[1:]] + [current_ir]
    tried = set()
    for attempt, following in zip(attempts, irs):
        offered = ((attempt.get("failure") or {}).get("counterexample") or {}).get("repairs") or []
        for candidate in map(RepairCandidate.model_validate, offered):
            if following and carried_by(following, candidate):
                tried.add(candidate.id)
    return tried
