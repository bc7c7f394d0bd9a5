"""graph/routers.py as tables: one parametrised test per router, one row per outcome of README "The graph".

Routers are pure functions of the state, so each row is a hand-built state and the node name it must route to.
The last tests check that every router's tables cover every target its return type names, and how the wiring
(graph/builder.py) maps a target that an ablation removed onto the next enabled node.
"""

from __future__ import annotations

from typing import Any, get_args, get_type_hints

import pytest

from graph import routers
from graph.builder import ROUTERS, enabled_nodes, parse_without, resolver
from ir.failure import failure_record
from ir.validation import STAGES
from nodes.context import Context
from nodes.repair import repair
from tests.support.runtime import fake_runtime


def failed(stage: str, error_type: str, *, recoverable: bool, **counterexample: Any) -> dict[str, Any]:
    """A state whose current round failed as `stage` / `error_type` (as the nodes record it)."""
    return {"failure": failure_record(stage, error_type, recoverable=recoverable, **counterexample)}


VALIDATE_TABLE = [
    pytest.param({}, "execute_tools", id="no-failure-key"),
    pytest.param({"failure": None}, "execute_tools", id="passed"),
    *[
        pytest.param(
            failed("validate", "invalid", recoverable=True, failure_stage=f"validate.{stage}", allowed=["x"]),
            "repair",
            id=f"fails-{stage}",
        )
        for stage in STAGES
    ],
    pytest.param(failed("validate", "unknown_entity", recoverable=True), "repair", id="unknown-entity"),
    # Contradictory stated constraints: no IR can meet them, so no repair round is spent (R8, before any tool).
    pytest.param(
        failed("validate", "stated_constraints_contradictory", recoverable=False, violated_rule="R8"),
        "fallback",
        id="contradictory-request",
    ),
]

EXECUTE_TABLE = [
    pytest.param({"failure": None}, "verify", id="passed"),
    pytest.param({}, "verify", id="no-failure-key"),
    *[
        pytest.param(failed("execute_tools", error, recoverable=True), "repair", id=f"recoverable-{error}")
        for error in (
            "no_path",
            "capacity_low",
            "low_battery_candidates",
            "deadline_risk",
            "partial_map",
            "bad_arguments",
            "no_route_in_plan",
        )
    ],
    *[
        pytest.param(failed("execute_tools", error, recoverable=False), "fallback", id=f"unrecoverable-{error}")
        for error in ("restricted_airspace", "no_available_uav", "unknown_region", "internal_error")
    ],
]

VERIFY_TABLE = [
    pytest.param({"failure": None}, "simulate", id="passed"),
    pytest.param({}, "simulate", id="no-failure-key"),
    pytest.param(
        failed("verify", "spec_violation", recoverable=True, violated_rule="R1", offending_entity="nfz_temp_1"),
        "repair",
        id="violation",
    ),
    pytest.param(failed("verify", "spec_unsat", recoverable=True), "repair", id="spec-unsat"),
    pytest.param(failed("verify", "bad_arguments", recoverable=True), "repair", id="recoverable-bad-arguments"),
    pytest.param(failed("verify", "invalid_spec", recoverable=False), "fallback", id="unusable-spec"),
]

SIMULATE_TABLE = [
    pytest.param({"failure": None}, "fidelity", id="passed"),
    pytest.param({}, "fidelity", id="no-failure-key"),
    # Any failing simulation goes to repair, whatever its recoverable flag: a new route or UAV may avoid it.
    pytest.param(failed("simulate", "collision", recoverable=False), "repair", id="terminal-collision"),
    pytest.param(failed("simulate", "near_miss", recoverable=True), "repair", id="near-miss"),
    pytest.param(failed("simulate", "sim_failure", recoverable=True), "repair", id="terminal-battery-or-popup"),
    pytest.param(failed("simulate", "medium_risk", recoverable=True), "repair", id="risk-above-max"),
    pytest.param(failed("simulate", "high_risk_no_override", recoverable=False), "repair", id="high-risk"),
]

FIDELITY_TABLE = [
    pytest.param({"failure": None}, "finalize", id="passed"),
    pytest.param({}, "finalize", id="no-failure-key"),
    *[
        pytest.param(failed("fidelity", error, recoverable=True), "repair", id=error)
        for error in (
            "pinned_uav_replaced",
            "wrong_destination",
            "wrong_origin",
            "place_not_visited",
            "deadline_relaxed",
            "altitude_above_stated",
            "return_leg_dropped",
        )
    ],
]

REPAIR_TABLE = [
    pytest.param({"repair_exhausted": False}, "generate_ir", id="rounds-left"),
    pytest.param({}, "generate_ir", id="flag-unset"),
    pytest.param({"repair_exhausted": True}, "fallback", id="rounds-exhausted"),
]

FALLBACK_TABLE = [
    pytest.param({}, "__end__", id="headless-no-reply"),
    pytest.param({"operator_reply": None}, "__end__", id="reply-none"),
    pytest.param({"operator_reply": {"action": "approve"}}, "__end__", id="approve"),
    pytest.param({"operator_reply": {"action": "refuse"}}, "__end__", id="refuse"),
    pytest.param({"operator_reply": {"action": "edit", "ir": {}}}, "validate", id="edit"),
]


@pytest.mark.parametrize(("state", "expected"), VALIDATE_TABLE)
def test_route_after_validate(state, expected):
    assert routers.route_after_validate(state) == expected


@pytest.mark.parametrize(("state", "expected"), EXECUTE_TABLE)
def test_route_after_execute(state, expected):
    assert routers.route_after_execute(state) == expected


@pytest.mark.parametrize(("state", "expected"), VERIFY_TABLE)
def test_route_after_verify(state, expected):
    assert routers.route_after_verify(state) == expected


@pytest.mark.parametrize(("state", "expected"), SIMULATE_TABLE)
def test_route_after_simulate(state, expected):
    assert routers.route_after_simulate(state) == expected


@pytest.mark.parametrize(("state", "expected"), FIDELITY_TABLE)
def test_route_after_fidelity(state, expected):
    assert routers.route_after_fidelity(state) == expected


@pytest.mark.parametrize(("state", "expected"), REPAIR_TABLE)
def test_route_after_repair(state, expected):
    assert routers.route_after_repair(state) == expected


@pytest.mark.parametrize(("state", "expected"), FALLBACK_TABLE)
def test_route_after_fallback(state, expected):
    assert routers.route_after_fallback(state) == expected


def test_route_on_node_error_is_always_fallback():
    assert routers.route_on_node_error() == "fallback"


@pytest.mark.parametrize(
    ("max_repairs", "round_before", "expected"),
    [
        (0, 0, "fallback"),
        (1, 0, "generate_ir"),
        (1, 1, "fallback"),
        (3, 0, "generate_ir"),
        (3, 2, "generate_ir"),
        (3, 3, "fallback"),
        (3, 7, "fallback"),
    ],
)
def test_repair_round_against_k_then_route(max_repairs, round_before, expected):
    """The repair node counts the round, the router reads its verdict: round <= K -> generate_ir, else fallback."""
    state = {"round": round_before, **failed("verify", "spec_violation", recoverable=True)}
    update = repair(state, fake_runtime(Context(max_repairs=max_repairs)))
    assert update["round"] == round_before + 1
    assert routers.route_after_repair({**state, **update}) == expected


TABLES = {
    "validate": VALIDATE_TABLE,
    "execute_tools": EXECUTE_TABLE,
    "direct_tools": EXECUTE_TABLE,
    "verify": VERIFY_TABLE,
    "simulate": SIMULATE_TABLE,
    "fidelity": FIDELITY_TABLE,
    "repair": REPAIR_TABLE,
    "fallback": FALLBACK_TABLE,
}


@pytest.mark.parametrize("node", sorted(ROUTERS))
def test_every_router_target_has_a_row(node):
    """The tables above cover every target a router's return type allows (what the builder wires)."""
    targets = set(get_args(get_type_hints(ROUTERS[node])["return"]))
    covered = {row.values[1] for row in TABLES[node]}
    assert covered == targets


@pytest.mark.parametrize(
    ("without", "target", "expected"),
    [
        pytest.param("", "repair", "repair", id="nothing-dropped"),
        pytest.param("", "__end__", "__end__", id="end"),
        pytest.param("repair", "repair", "fallback", id="no-repair-goes-to-fallback"),
        pytest.param("verifier", "verify", "simulate", id="no-verifier-goes-to-simulate"),
        pytest.param("simulator", "simulate", "fidelity", id="no-simulator-goes-to-fidelity"),
        pytest.param("verifier,simulator", "verify", "fidelity", id="no-gates-goes-to-fidelity"),
        pytest.param("fidelity", "fidelity", "finalize", id="no-fidelity-goes-to-finalize"),
        pytest.param("verifier,simulator,fidelity", "verify", "finalize", id="no-gates-goes-to-finalize"),
        pytest.param("ir", "validate", "direct_tools", id="no-ir-validate-is-direct-tools"),
        pytest.param("ir", "execute_tools", "direct_tools", id="no-ir-execute-is-direct-tools"),
        pytest.param("rag", "retrieve", "generate_ir", id="no-rag-starts-at-generate"),
        pytest.param("memory", "repair", "repair", id="memory-has-no-node"),
    ],
)
def test_an_ablated_target_resolves_to_the_next_enabled_node(without, target, expected):
    assert resolver(enabled_nodes(parse_without(without)))(target) == expected
