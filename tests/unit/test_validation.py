"""Layered IR validation on examples/downtown.json with the real tool registry: one failing input per error type."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from ir.validation import STAGES, validate_ir
from tools.catalog import default_registry
from tools.rules import RULE_IDS


@pytest.fixture(scope="module")
def registry():
    return default_registry()


def valid_ir() -> dict[str, Any]:
    return {
        "task_id": "seed-001",
        "intent": "emergency",
        "priority": "high",
        "entities": {
            "origin": "hospital_A",
            "destination": "accident_site_3",
            "candidate_uavs": ["uav_03"],
            "avoid_zones": ["nfz_temp_1", "school_zone_2"],
        },
        "constraints": {"deadline_sec": 600, "payload_kg": 1.5},
        "tool_plan": [
            {"id": "airspace", "tool": "query_airspace"},
            {"id": "assign", "tool": "assign_uav", "depends_on": ["airspace"]},
            {"id": "route", "tool": "plan_route", "depends_on": ["assign"]},
            {"id": "verify", "tool": "verify_ltl_stl", "depends_on": ["route"]},
            {"id": "sim", "tool": "simulate_scenario", "depends_on": ["verify"]},
        ],
        "verification_specs": {
            "ltl": ["G !in_nfz_temp_1", "G !in_school_zone_2", "F at_goal"],
            "program_rules": ["R1", "R2", "R3", "R4", "R5", "R6"],
        },
        "fallback_policy": "human_confirm",
    }


def envelope(ir: dict[str, Any], **uncertainty: Any) -> dict[str, Any]:
    return {"low_altitude_ir": ir, "rationale_summary": "shortest safe route", "uncertainty": uncertainty}


def mutated(change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    ir = copy.deepcopy(valid_ir())
    change(ir)
    return ir


def step(ir: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in ir["tool_plan"] if s["id"] == step_id)


# --- valid inputs -----------------------------------------------------------------------------------------


def test_valid_ir_passes_every_stage(world, registry):
    report = validate_ir(valid_ir(), world, registry)
    assert report.valid, report.message
    assert report.stage is None and report.error_type is None
    assert report.ir is not None and report.ir.entities.destination == "accident_site_3"


def test_envelope_inside_markdown_and_prose_is_accepted(world, registry):
    answer = envelope(valid_ir(), needs_human_confirmation=False)
    text = f"Here is the plan {{as asked}}:\n```json\n{json.dumps(answer, indent=1)}\n```\nDone."
    report = validate_ir(text, world, registry)
    assert report.valid, report.message
    assert report.uncertainty is not None and report.uncertainty.needs_human_confirmation is False


def test_first_ir_like_object_is_extracted_from_prose(world, registry):
    text = 'Format {"like": "}{this"}. The IR is ' + json.dumps(valid_ir()) + " and that {is all}."
    assert validate_ir(text, world, registry).valid


def _forget_nfz_temp_1(ir: dict[str, Any]) -> None:
    ir["entities"]["avoid_zones"] = ["school_zone_2"]
    ir["verification_specs"]["ltl"] = ["G !in_school_zone_2", "F at_goal"]


def test_forgotten_nfz_passes_validation_with_a_warning(world, registry):
    """The repair story: for a non-critical task the verifier, not the validator, catches nfz_temp_1 (R1)."""
    report = validate_ir(mutated(_forget_nfz_temp_1), world, registry)
    assert report.valid
    assert any("nfz_temp_1" in w for w in report.warnings)
    assert validate_ir(valid_ir(), world, registry).warnings == []


def test_empty_program_rules_keep_the_verifiers_default_rules(world, registry):
    assert validate_ir(mutated(_set("verification_specs.program_rules", [])), world, registry).valid


# --- one failing input per error type ---------------------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(ir: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = ir
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[last] = value

    return change


def _plan(*steps: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return _set("tool_plan", list(steps))


CASES: list[tuple[str, str, Any, str | None, list[Any]]] = [
    # (stage, error_type, raw input, field, values that must be in `allowed`)
    ("json", "invalid_json", "sure! {intent: emergency, oops", None, []),
    ("json", "invalid_json", "x" + json.dumps(valid_ir())[:-1], None, []),  # truncated: inner objects ignored
    ("json", "not_an_object", "[1, 2, 3]", None, []),
    ("schema", "missing_field", mutated(lambda ir: ir.pop("intent")), "intent", []),
    ("schema", "wrong_enum", mutated(_set("intent", "rescue")), "intent", ["emergency", "delivery"]),
    ("schema", "wrong_type", mutated(_set("constraints.deadline_sec", "ten minutes")), "constraints.deadline_sec", []),
    (
        "schema",
        "altitude_range_inverted",
        mutated(_set("constraints", {"altitude_min_m": 100, "altitude_max_m": 50})),
        "constraints.altitude_min_m",
        [],
    ),
    ("schema", "unknown_field", mutated(_set("entities.destinaton", "x")), "entities.destinaton", ["destination"]),
    ("schema", "empty_field", mutated(_set("tool_plan", [])), "tool_plan", []),
    (
        "entity_grounding",
        "unknown_entity",
        mutated(_set("entities.destination", "hospital_C")),
        "entities.destination",
        ["hospital_A", "hospital_B"],
    ),
    (
        "entity_grounding",
        "unknown_entity",
        mutated(_set("tool_plan.2.args", {"goal": "acident_site_3"})),
        "tool_plan.2.args.goal",
        ["accident_site_3"],
    ),
    (
        "entity_grounding",
        "unknown_uav",
        mutated(_set("entities.candidate_uavs", ["uav_3"])),
        "entities.candidate_uavs.0",
        ["uav_03"],
    ),
    (
        "entity_grounding",
        "uav_unavailable",
        mutated(_set("entities.candidate_uavs", ["uav_05"])),
        "entities.candidate_uavs.0",
        ["uav_03"],
    ),
    (
        "entity_grounding",
        "unknown_zone",
        mutated(_set("entities.avoid_zones", ["nfz_temp_2"])),
        "entities.avoid_zones.0",
        ["nfz_temp_1"],
    ),
    (
        "entity_grounding",
        "unknown_zone",
        mutated(_set("verification_specs.ltl", ["G !in_nfz_tmp_1"])),
        "verification_specs.ltl.0",
        ["in_nfz_temp_1"],
    ),
    (
        "entity_grounding",
        "unknown_atom",
        mutated(_set("verification_specs.ltl", ["G !in_school_zone_2", "G !nfz_temp_1"])),
        "verification_specs.ltl.1",
        ["in_nfz_temp_1"],
    ),
    (
        "entity_grounding",
        "unknown_region",
        mutated(_set("tool_plan.0.args", {"region": "downtwn"})),
        "tool_plan.0.args.region",
        ["downtown"],
    ),
    (
        "constraint_grounding",
        "deadline_not_positive",
        mutated(_set("constraints.deadline_sec", 0)),
        "constraints.deadline_sec",
        [],
    ),
    (
        "constraint_grounding",
        "altitude_outside_airspace",
        mutated(_set("constraints.altitude_max_m", 150)),
        "constraints.altitude_max_m",
        [0.0, 120.0],
    ),
    (
        "constraint_grounding",
        "no_flight_layer_in_band",
        mutated(_set("constraints", {"altitude_min_m": 45, "altitude_max_m": 55})),
        "constraints.altitude_min_m",
        [40.0, 60.0],
    ),
    (
        "constraint_grounding",
        "reserve_out_of_range",
        mutated(_set("constraints.battery_reserve_ratio", 1.5)),
        "constraints.battery_reserve_ratio",
        [0.0, 1.0],
    ),
    (
        "constraint_grounding",
        "payload_above_capacity",
        mutated(_set("constraints.payload_kg", 4.0)),
        "entities.candidate_uavs",
        ["uav_09"],
    ),
    (
        "tool_dependency",
        "unknown_tool",
        mutated(_set("tool_plan.0.tool", "qurey_airspace")),
        "tool_plan.0.tool",
        ["query_airspace"],
    ),
    (
        "tool_dependency",
        "bad_arguments",
        mutated(_set("tool_plan.2.args", {"max_alt": 100})),
        "tool_plan.2.args.max_alt",
        ["altitude_max_m"],
    ),
    (
        "tool_dependency",
        "bad_arguments",
        mutated(_set("tool_plan.2.args", {"altitude_max_m": "high"})),
        "tool_plan.2.args.altitude_max_m",
        [],
    ),
    (
        "tool_dependency",
        "dependency_missing",
        mutated(
            _plan(
                {"id": "route", "tool": "plan_route"},
                {"id": "assign", "tool": "assign_uav"},
                {"id": "verify", "tool": "verify_ltl_stl", "depends_on": ["route"]},
            )
        ),
        "tool_plan.0.depends_on",
        ["assign_uav"],
    ),
    (
        "tool_dependency",
        "dependency_missing",
        mutated(_plan({"id": "verify", "tool": "verify_ltl_stl"})),
        "tool_plan.0.depends_on",
        ["plan_route"],
    ),
    (
        "tool_dependency",
        "dependency_missing",
        mutated(_set("tool_plan.3.depends_on", ["rout"])),
        "tool_plan.3.depends_on",
        ["route"],
    ),
    (
        "tool_dependency",
        "cycle",
        mutated(_set("tool_plan.1.depends_on", ["route"])),
        "tool_plan.1.depends_on",
        [],
    ),
    (
        "constraint_grounding",
        "unknown_rule",
        mutated(_set("verification_specs.program_rules", ["R1", "R2", "R3", "R9"])),
        "verification_specs.program_rules.3",
        [],
    ),
    (
        "policy",
        "critical_overrides_safety",
        mutated(lambda ir: ir.update(priority="critical", constraints={"min_separation_m": 5.0})),
        "constraints.min_separation_m",
        [10.0],
    ),
    (
        "policy",
        "critical_overrides_safety",
        mutated(
            lambda ir: (
                ir.update(priority="critical"),
                step(ir, "route").update(args={"altitude_max_m": 110, "min_separation_m": 4}),
            )
        ),
        "tool_plan.2.args.min_separation_m",
        [10.0],
    ),
    (
        "policy",
        "critical_overrides_safety",
        mutated(lambda ir: (ir.update(priority="critical"), _forget_nfz_temp_1(ir))),
        "entities.avoid_zones",
        ["nfz_temp_1"],
    ),
    (
        "policy",
        "missing_mandatory_rule",
        mutated(_set("verification_specs.program_rules", ["R1", "R4"])),
        "verification_specs.program_rules",
        ["R2", "R3"],
    ),
    (
        "policy",
        "malformed_spec",
        mutated(_set("verification_specs.ltl", ["G (!in_nfz_temp_1", "F at_goal"])),
        "verification_specs.ltl.0",
        [],
    ),
    (
        "policy",
        "missing_human_confirm",
        envelope(mutated(_set("fallback_policy", "safe_refusal")), missing_information=["payload weight"]),
        "fallback_policy",
        ["human_confirm"],
    ),
]


@pytest.mark.parametrize(
    ("stage", "error_type", "raw", "field", "expected_allowed"),
    CASES,
    ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)],
)
def test_each_error_type_is_caught_at_its_stage(world, registry, stage, error_type, raw, field, expected_allowed):
    report = validate_ir(raw, world, registry)
    assert not report.valid
    assert (report.stage, report.error_type, report.field) == (stage, error_type, field), report.message
    assert all(value in report.allowed for value in expected_allowed), report.allowed
    assert len(report.allowed) <= (7 if error_type == "wrong_enum" else 5)  # an enum lists all its values
    assert report.message
    parsed_ir_expected = STAGES.index(stage) > STAGES.index("schema")
    assert (report.ir is not None) == parsed_ir_expected


def test_every_spec_error_type_has_a_case():
    spec_types = {
        "invalid_json", "not_an_object", "missing_field", "wrong_enum", "wrong_type", "altitude_range_inverted",
        "unknown_entity", "unknown_uav", "uav_unavailable", "unknown_zone", "deadline_not_positive",
        "altitude_outside_airspace", "reserve_out_of_range", "unknown_tool", "bad_arguments", "dependency_missing",
        "cycle", "critical_overrides_safety", "missing_mandatory_rule", "missing_human_confirm",
    }  # fmt: skip
    assert spec_types <= {c[1] for c in CASES}


def test_unknown_rule_suggests_rule_ids(world, registry):
    raw = mutated(_set("verification_specs.program_rules", ["R1", "R2", "R3", "R9"]))
    report = validate_ir(raw, world, registry)
    assert report.value == "R9" and report.allowed and set(report.allowed) <= set(RULE_IDS)


def test_uav_unavailable_suggests_idle_uavs_nearest_the_origin(world, registry):
    report = validate_ir(mutated(_set("entities.candidate_uavs", ["uav_05"])), world, registry)
    assert report.allowed[0] == "uav_03"
    assert all(world.uav_index[u].status.value == "idle" for u in report.allowed)


def test_missing_arguments_are_filled_not_rejected(world, registry):
    """Every step of valid_ir() has empty args: execution fills them, so validation must not complain."""
    assert all(not s["args"] for s in valid_ir()["tool_plan"] if "args" in s)
    assert validate_ir(valid_ir(), world, registry).valid


def test_required_argument_nothing_can_fill_is_rejected(world, registry):
    report = validate_ir(mutated(_set("entities.destination", None)), world, registry)
    assert (report.stage, report.error_type) == ("tool_dependency", "bad_arguments")
    assert report.field is not None and report.field.startswith("tool_plan.")
