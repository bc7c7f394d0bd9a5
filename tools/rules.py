"""The safety rules R1-R8: their ids, texts and named subsets (one place for all), and the rule checks that need
no IR: the R1-R3 baseline a critical task may tighten but never relax, the no-fly zones a route must be
specified to avoid, and which simulation events fail a plan against which rule. The checks on an IR or an outcome
(R7, R8) are in ir/policy.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from shapely.geometry import LineString, Point

from tools import ltl
from tools.world import XY, World

RuleId = Literal["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8"]
RULE_TEXT: dict[RuleId, str] = {
    "R1": "never enter an active no-fly zone",
    "R2": "keep minimum separation from obstacles, sensitive zones and other UAVs",
    "R3": "stay inside the altitude band",
    "R4": "arrive before the deadline",
    "R5": "keep the battery reserve on arrival",
    "R6": "never exceed corridor capacity",
    "R7": "a critical priority never relaxes R1-R3",
    "R8": "unsatisfiable or under-specified tasks end in safe refusal / human confirmation, never in execute",
}
RULE_IDS: tuple[RuleId, ...] = tuple(RULE_TEXT)
# Rules of the airspace's other traffic rather than of a request: checked whenever the world holds what they
# protect, whatever the IR's program_rules say (an IR cannot leave them out, so they are not IR rule ids).
TRAFFIC_RULE_TEXT = {"R9": "never enter an approved operational intent's volume (strategic deconfliction)"}
MONITORED_RULES: tuple[RuleId, ...] = ("R1", "R2", "R3", "R4", "R5", "R6")  # judged on every trajectory
PROTECTED_RULES: tuple[RuleId, ...] = ("R1", "R2", "R3")  # R7: never relaxed, never left out of program_rules

# The R1-R3 settings of an operation that states none (the IR's constraint defaults): the safety baseline.
DEFAULT_MIN_SEPARATION_M = 10.0
DEFAULT_ALTITUDE_MIN_M = 30.0
DEFAULT_ALTITUDE_MAX_M = 120.0
DEFAULT_HORIZON_SEC = 3600.0  # the mission window for "active no-fly zone" when a request sets no deadline
ON_THE_WAY_M = 100.0  # a no-fly zone this close to the straight path is "on the way"


@dataclass(frozen=True)
class SafetyBaseline:
    """The R1-R3 settings a critical task may tighten but never relax."""

    min_separation_m: float
    altitude_min_m: float
    altitude_max_m: float


def safety_baseline(world: World) -> SafetyBaseline:
    return SafetyBaseline(
        min_separation_m=DEFAULT_MIN_SEPARATION_M,
        altitude_min_m=DEFAULT_ALTITUDE_MIN_M,
        altitude_max_m=min(DEFAULT_ALTITUDE_MAX_M, world.grid.ceiling_m),
    )


def nfz_on_the_way(
    world: World, path_xy: Sequence[XY], t0: float, t1: float, reach_m: float = ON_THE_WAY_M
) -> list[str]:
    """No-fly zones active at some time in [t0, t1] that lie within `reach_m` of the path (a polyline)."""
    path = LineString(path_xy) if len(path_xy) > 1 else Point(path_xy[0])
    return [zone.id for zone in world.active_no_fly_zones(t0, t1) if zone.shape.distance(path) <= reach_m]


def mandatory_nfz_formula(zone_id: str) -> str:
    return f"G !in_{zone_id}"


def missing_mandatory_ltl(specs: Sequence[str], zone_ids: Sequence[str], engine: ltl.LtlEngine) -> list[str]:
    """The formulas `G !in_<zone>` that the specs do not entail (unparsable specs entail nothing)."""
    parsed = []
    for text in specs:
        try:
            parsed.append(engine.parse(text))
        except ltl.LtlSyntaxError:
            continue
    missing = []
    for zone_id in zone_ids:
        formula = mandatory_nfz_formula(zone_id)
        if ltl.implies(engine, parsed, engine.parse(formula)) is not True:
            missing.append(formula)
    return missing


# --- simulation events ----------------------------------------------------------------------------------------
# Which events of a simulate_scenario result fail a plan and against which rule, in the agent's reading: the
# simulator reports events and applies this scoring for the agent's simulate gate. The judge (evaluation/judge.py)
# does not use it: it scores its held-out scenarios by its own rules (TERMINAL_EVENT_RULE, event_rule).
TERMINAL_EVENTS = ("collision", "nfz_intrusion", "separation_violation", "battery_depleted", "deadline_missed")
EVENT_RULE: dict[str, RuleId] = {
    "nfz_intrusion": "R1",
    "collision": "R2",
    "separation_violation": "R2",
    "near_miss": "R2",
    "deadline_missed": "R4",
    "battery_depleted": "R5",
}


def excused_intruders(intruder_ids: list[str], manoeuvres: list[dict[str, Any]]) -> set[str]:
    """Unknown traffic that detect-and-avoid met with room to manoeuvre (it never had to hold for it): a near miss
    with one of these is the scenario's luck, not the plan's fault."""
    return set(intruder_ids) - {m["intruder"] for m in manoeuvres if m["action"] == "hold"}


NEAR_MISS_FACTOR = 1.5  # other traffic closer than this x min separation is a near miss (it fails the plan)


def counts_against_plan(event_type: str, entity: str | None, max_risk_level: str, excused: set[str]) -> bool:
    """Whether an event fails the plan: every terminal event; a near miss unless the task accepts high risk or it
    was with excused unknown traffic (then it is reported: a warning, and a factor of the risk assessment)."""
    if event_type in TERMINAL_EVENTS:
        return True
    return event_type == "near_miss" and max_risk_level != "high" and entity not in excused


def counted_events(result: dict[str, Any], max_risk_level: str) -> list[dict[str, Any]]:
    """The events of a simulate_scenario result that fail the plan, by the scoring the tool itself applies."""
    ids = [t["id"] for t in result.get("intruder_tracks", [])]
    excused = excused_intruders(ids, result.get("avoidance", []))
    return [
        e for e in result.get("events", []) if counts_against_plan(e["type"], e.get("entity"), max_risk_level, excused)
    ]
