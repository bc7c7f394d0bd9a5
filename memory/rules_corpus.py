"""The texts retrieved as rule context: safety rules R1-R8 and airspace operating rules.

Each text says what the rule demands and how it is checked, in words an instruction would use, so that
"keep out of the temporary no-fly zone" finds R1 by meaning.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict


class RuleText(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: Literal["safety_rule", "airspace_rule"]
    title: str
    text: str

    def embedding_text(self) -> str:
        return f"{self.title}. {self.text}"


def _safety(rule_id: str, title: str, text: str) -> RuleText:
    return RuleText(id=rule_id, kind="safety_rule", title=title, text=text)


def _airspace(rule_id: str, title: str, text: str) -> RuleText:
    return RuleText(id=rule_id, kind="airspace_rule", title=title, text=text)


RULES: tuple[RuleText, ...] = (
    _safety(
        "R1",
        "Never enter an active no-fly zone",
        "The trajectory must never enter a no-fly zone (restricted airspace) while that zone is active, at any "
        "altitude inside the zone's band. Checked by STL always (nfz_margin >= 0) and LTL G !in_nfz_<id>.",
    ),
    _safety(
        "R2",
        "Keep minimum separation",
        "Keep at least the minimum separation distance from buildings and obstacles, from sensitive zones such as "
        "schools (including their buffer), and from other UAVs and traffic tracks. "
        "Checked by STL always (clearance - d_min >= 0).",
    ),
    _safety(
        "R3",
        "Stay inside the altitude band",
        "Fly between the minimum and maximum permitted altitude for the whole flight: never below the floor, "
        "never above the ceiling. Checked by STL always (alt >= a_min and alt <= a_max).",
    ),
    _safety(
        "R4",
        "Arrive before the deadline",
        "Reach the goal (within the arrival tolerance) before the task's deadline. "
        "Checked by STL eventually[0:deadline] (goal_dist <= tol) and LTL F at_goal.",
    ),
    _safety(
        "R5",
        "Keep the battery reserve on arrival",
        "The battery must never drop below the reserve ratio; the UAV lands with its reserve intact, counting "
        "payload, wind and detours. Checked by STL always (battery - reserve >= 0).",
    ),
    _safety(
        "R6",
        "Never exceed corridor capacity",
        "Entering a corridor must not push it above its capacity; a congested corridor (load equal to capacity) "
        "cannot take another UAV. Checked by STL always (capacity - load >= 0).",
    ),
    _safety(
        "R7",
        "Critical priority never relaxes R1-R3",
        "An urgent or critical-priority task (medical emergency, defibrillator, accident) may trade energy or "
        "delay, but never relaxes the no-fly zone, separation or altitude rules. Program check on the IR.",
    ),
    _safety(
        "R8",
        "Unsatisfiable or under-specified tasks end safely",
        "A task that cannot be done safely, whose constraints contradict each other, or that is under-specified "
        "ends in a safe refusal or a request for human confirmation, never in execute. Program check on the outcome.",
    ),
    _airspace(
        "AS-temporary-nfz",
        "Temporary no-fly zones",
        "Temporary no-fly zones (accidents, events, police or fire operations) are restricted only during their "
        "active time window; plans must check the window against the flight's times and route around them.",
    ),
    _airspace(
        "AS-permanent-nfz",
        "Permanent no-fly zones",
        "Government, airport and military no-fly zones are always active and must be avoided at every altitude "
        "inside their band.",
    ),
    _airspace(
        "AS-school-buffer",
        "School and sensitive-zone buffers",
        "Keep clear of schools, kindergartens and other sensitive zones laterally, at any altitude, including the "
        "zone's buffer distance (30 m by default).",
    ),
    _airspace(
        "AS-corridor-capacity",
        "Corridor capacity and congestion",
        "Use air corridors only where free capacity remains; prefer an uncongested corridor or a free-flight route "
        "when the corridor is full.",
    ),
    _airspace(
        "AS-ceiling",
        "Altitude ceiling and floor",
        "Urban low-altitude flights stay below the airspace ceiling (120 m by default) and above the minimum "
        "altitude over buildings.",
    ),
    _airspace(
        "AS-battery-reserve",
        "Battery reserve policy",
        "Assign only UAVs whose battery covers the flight to the pickup, the delivery leg and a 20% reserve; "
        "low-battery or charging UAVs are not assigned.",
    ),
    _airspace(
        "AS-wind-limit",
        "Wind and weather limits",
        "Do not fly a UAV in wind or gusts above its rated wind limit; gusty regions raise the flight's risk.",
    ),
    _airspace(
        "AS-critical-priority",
        "Critical and emergency missions",
        "Emergency medical deliveries get priority in assignment and corridor access, but safety rules still "
        "apply in full; no exemption from no-fly zones or separation.",
    ),
    _airspace(
        "AS-refusal-policy",
        "Refusal and human confirmation policy",
        "If no safe plan exists after repair, or the destination lies inside an active no-fly zone, refuse safely "
        "or ask a human operator to confirm; never execute an unverified plan.",
    ),
)

RULE_INDEX: dict[str, RuleText] = {rule.id: rule for rule in RULES}


def corpus_fingerprint() -> str:
    """Changes whenever any rule text changes, so a stored index can tell it is stale."""
    joined = "\n".join(rule.model_dump_json() for rule in RULES)
    return hashlib.sha256(joined.encode()).hexdigest()[:16]
