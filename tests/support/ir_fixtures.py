"""Hand-written IRs and the seed instruction the tests share: plain data, importable without the graph or any
model (the gates' tests run with the `models` package absent)."""

from __future__ import annotations

import copy
from typing import Any

SEED_INSTRUCTION = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, "
    "keep away from the school and the temporary no-fly zone."
)


GOOD_IR: dict[str, Any] = {
    "task_id": "task_00042",
    "intent": "emergency",
    "priority": "high",
    "entities": {
        "origin": "hospital_A",
        "destination": "accident_site_3",
        "candidate_uavs": ["uav_03"],
        "avoid_zones": ["school_zone_2", "nfz_temp_1"],
    },
    "constraints": {"deadline_sec": 600, "altitude_min_m": 30, "altitude_max_m": 120, "payload_kg": 1.0},
    "tool_plan": [
        {"id": "s1", "tool": "query_airspace", "args": {"region": "downtown_core"}},
        {"id": "s2", "tool": "assign_uav", "args": {"objective": "min_delay_safe"}, "depends_on": ["s1"]},
        {"id": "s3", "tool": "plan_route", "args": {}, "depends_on": ["s2"]},
        {"id": "s4", "tool": "verify_ltl_stl", "args": {}, "depends_on": ["s3"]},
        {"id": "s5", "tool": "simulate_scenario", "args": {}, "depends_on": ["s4"]},
    ],
    "verification_specs": {
        "ltl": ["G !in_nfz_temp_1", "G !in_school_zone_2", "F at_goal"],
        "program_rules": ["R1", "R2", "R3", "R4", "R5", "R6"],
    },
    "fallback_policy": "ground_transfer_or_human_confirm",
}


def ir_with(**changes: Any) -> dict[str, Any]:
    """GOOD_IR with dotted-path changes, e.g. ir_with(**{"entities.destination": "accident_site_9"})."""
    ir = copy.deepcopy(GOOD_IR)
    for path, value in changes.items():
        node = ir
        *parents, last = path.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
    return ir


HALLUCINATED_IR = ir_with(**{"entities.destination": "accident_site_9"})
NFZ_FORGOTTEN_IR = ir_with(
    **{
        "entities.avoid_zones": ["school_zone_2"],
        "verification_specs.ltl": ["G !in_school_zone_2", "F at_goal"],
    }
)
