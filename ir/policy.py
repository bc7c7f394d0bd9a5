"""Program checks R7 (priority) and R8 (no execute of a contradictory or unconfirmed request), as pure
functions.

R7: a critical-priority IR never relaxes R1-R3 (separation below the default, an altitude band outside the
airspace, an active no-fly zone on the way left out of avoid_zones or out of the LTL specs, R1-R3 dropped from
program_rules). R8: an unsatisfiable or under-specified task never ends in "execute".
The validator's policy stage calls `check_r7` (or `safety_relaxations` for any priority); the graph's finalize node
calls `check_r8`. The baseline itself (and the zones on the way) are tools/rules.py's: the verifier enforces R7 on
critical requests with it at verification time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shapely.geometry import LineString

from ir.finding import Finding
from ir.model import LowAltitudeIR, Priority, Uncertainty
from tools import ltl
from tools.rules import PROTECTED_RULES, SafetyBaseline, missing_mandatory_ltl, nfz_on_the_way, safety_baseline
from tools.world import XY, World

SLOW_SPEED_MPS = 5.0  # for the flight-time horizon of a task without a deadline (a conservative, slow UAV)
EXECUTE = "execute"
SAFE_OUTCOMES = ["safe_refusal", "human_confirm"]
UNSAT_LABELS = {"unsat"}
AMBIGUOUS_LABELS = {"ambiguous", "underspecified", "under_specified"}


def _ir_path(ir: LowAltitudeIR, world: World) -> list[XY]:
    """Origin (or first candidate UAV), waypoints, destination: the ids that exist in the world, in order."""
    refs = ir.entities
    start = refs.origin or next(iter(refs.candidate_uavs), None)
    ids = [start, *refs.waypoints, refs.destination]
    known = {**world.entity_index, **world.uav_index}
    return [known[i].position for i in ids if i is not None and i in known]


def _relaxed_numbers(where: str, values: Mapping[str, Any], baseline: SafetyBaseline) -> list[Finding]:
    findings = []
    sep, low, high = (values.get(k) for k in ("min_separation_m", "altitude_min_m", "altitude_max_m"))
    if isinstance(sep, int | float) and sep < baseline.min_separation_m:
        findings.append(_relaxation(f"{where}.min_separation_m", sep, baseline.min_separation_m, "R2"))
    if isinstance(low, int | float) and low < baseline.altitude_min_m:
        findings.append(_relaxation(f"{where}.altitude_min_m", low, baseline.altitude_min_m, "R3"))
    if isinstance(high, int | float) and high > baseline.altitude_max_m:
        findings.append(_relaxation(f"{where}.altitude_max_m", high, baseline.altitude_max_m, "R3"))
    return findings


def _relaxation(field: str, value: float, allowed: float, rule: str) -> Finding:
    return Finding(
        rule="R7",
        error_type="critical_overrides_safety",
        field=field,
        value=value,
        allowed=[allowed],
        message=f"{field}={value} relaxes {rule} (the safe setting is {allowed})",
    )


def safety_relaxations(ir: LowAltitudeIR, world: World, engine: ltl.LtlEngine | None = None) -> list[Finding]:
    """Every way the IR relaxes R1-R3, whatever its priority."""
    baseline = safety_baseline(world)
    findings = _relaxed_numbers("constraints", ir.constraints.model_dump(), baseline)
    for index, step in enumerate(ir.tool_plan):
        findings += _relaxed_numbers(f"tool_plan[{index}].args", step.args, baseline)
    path = _ir_path(ir, world)
    if path:
        slow_flight_sec = LineString(path).length / SLOW_SPEED_MPS if len(path) > 1 else 0.0
        horizon = ir.constraints.deadline_sec or slow_flight_sec
        on_the_way = nfz_on_the_way(world, path, 0.0, horizon)
        not_avoided = [z for z in on_the_way if z not in ir.entities.avoid_zones]
        if not_avoided:
            message = f"active no-fly zone(s) on the way not avoided: {', '.join(not_avoided)} (R1)"
            findings.append(
                _r7("critical_overrides_safety", "entities.avoid_zones", ir.entities.avoid_zones, not_avoided, message)
            )
        missing = missing_mandatory_ltl(ir.verification_specs.ltl, on_the_way, engine or ltl.default_engine())
        if missing:
            message = f"the LTL specs do not entail {', '.join(missing)} (R1)"
            findings.append(
                _r7("missing_mandatory_rule", "verification_specs.ltl", ir.verification_specs.ltl, missing, message)
            )
    listed = ir.verification_specs.program_rules
    dropped = [rule for rule in PROTECTED_RULES if listed and rule not in listed]
    if dropped:
        message = f"program_rules leaves out {', '.join(dropped)}"
        findings.append(_r7("missing_mandatory_rule", "verification_specs.program_rules", listed, dropped, message))
    return findings


def _r7(error_type: str, field: str, value: list[str], allowed: list[str], message: str) -> Finding:
    return Finding(rule="R7", error_type=error_type, field=field, value=list(value), allowed=allowed, message=message)


def check_r7(ir: LowAltitudeIR, world: World, engine: ltl.LtlEngine | None = None) -> list[Finding]:
    """R7: findings for a critical-priority IR that relaxes R1-R3; [] for any other priority."""
    if ir.priority != Priority.critical:
        return []
    return safety_relaxations(ir, world, engine)


def check_r8(
    decision: str,
    *,
    label: str | None = None,
    uncertainty: Uncertainty | Mapping[str, Any] | None = None,
    spec_unsat: bool = False,
) -> list[Finding]:
    """R8: an "execute" decision for a task that is UNSAT (gold label or spec_unsat), AMBIGUOUS, flagged for human
    confirmation or missing information is a finding; refusals and confirmations never are."""
    if decision.strip().lower() != EXECUTE:
        return []
    known = Uncertainty.model_validate(uncertainty or {})
    findings = []
    label_key = (label or "").strip().lower()
    if spec_unsat or label_key in UNSAT_LABELS:
        findings.append(_r8("unsat_task_executed", "an unsatisfiable task ended in execute"))
    if label_key in AMBIGUOUS_LABELS or known.missing_information:
        missing = ", ".join(known.missing_information) or "label " + label_key
        findings.append(_r8("underspecified_task_executed", f"an under-specified task ended in execute ({missing})"))
    if known.needs_human_confirmation:
        findings.append(_r8("missing_human_confirm", "the answer asked for human confirmation but was executed"))
    return findings


def _r8(error_type: str, message: str) -> Finding:
    return Finding(
        rule="R8", error_type=error_type, field="decision", value=EXECUTE, allowed=list(SAFE_OUTCOMES), message=message
    )
