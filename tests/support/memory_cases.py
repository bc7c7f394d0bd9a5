"""Three repair cases (an NFZ, a school and a battery repair) for the safety-memory tests, unit and CLI."""

from __future__ import annotations

from memory.cases import RepairCase


def repair_case(thread_id: str, **fields) -> RepairCase:
    return RepairCase(thread_id=thread_id, round=1, outcome="repaired", model="mock", **fields)


NFZ_CASE = repair_case(
    "t-nfz",
    instruction="Fly the defibrillator from hospital_A to accident_site_3 as fast as possible",
    scenario_type="medical_emergency",
    failure_stage="verify",
    failure_type="spec_violation",
    violated_rule="R1",
    counterexample={
        "time_sec": 31,
        "robustness": -22.0,
        "offending_entity": "nfz_temp_1",
        "suggested_repair": "add nfz_temp_1 to avoid_zones and re-plan",
    },
    failing_ir_summary="route hospital_A -> accident_site_3, avoid_zones []",
    repaired_ir_diff="+ constraints.avoid_zones: [nfz_temp_1]\n+ ltl: G !in_nfz_temp_1",
)
SCHOOL_CASE = repair_case(
    "t-school",
    instruction="Inspect the roof of the metro station and come back to the depot",
    scenario_type="inspection",
    failure_stage="verify",
    failure_type="spec_violation",
    violated_rule="R2",
    counterexample={
        "time_sec": 88,
        "robustness": -6.0,
        "offending_entity": "school_zone_2",
        "suggested_repair": "keep 30 m from the school buffer",
    },
    repaired_ir_diff="+ constraints.avoid_zones: [school_zone_2]",
)
BATTERY_CASE = repair_case(
    "t-battery",
    instruction="Deliver a blood sample from hospital_B to the central police station",
    scenario_type="medical_logistics",
    failure_stage="execute",
    failure_type="low_battery_candidates",
    violated_rule="R5",
    counterexample={"offending_entity": "uav_07", "suggested_repair": "assign uav_03 instead"},
    repaired_ir_diff="- candidates: [uav_07]\n+ candidates: [uav_03]",
)
THREE_CASES = [NFZ_CASE, SCHOOL_CASE, BATTERY_CASE]
