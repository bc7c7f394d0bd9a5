"""Intent fidelity end to end: stated constraints are hard, places are the request's, and a plan that only a
relaxation would make work ends in human_confirm, never in execute (scripted model behind the real client)."""

from __future__ import annotations

import pytest

from graph.builder import build_graph
from graph.history import trace
from graph.runner import run_task
from tests.support.graph_fixtures import answer, ran_nodes, scripted_context
from tests.support.ir_fixtures import GOOD_IR, ir_with
from tests.support.openai_stub_server import OpenAIStubServer

ROUTE = "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes"
UNWEIGHED = ROUTE.replace(" (1 kg)", "")  # for requests that state their own cargo mass
AVOID = "keep away from the school and the temporary no-fly zone."
TO_THE_METRO = ir_with(**{"entities.destination": "metro_station_4"})


def _run(world, checkpointer, thread, instruction, *replies, **context):
    with OpenAIStubServer(*replies) as server:
        ctx = scripted_context(server, **context)
        out = run_task(world, instruction, context=ctx, thread_id=thread, checkpointer=checkpointer)
        calls = len(server.requests)
    return build_graph(ctx.without, checkpointer=checkpointer), out, calls


def test_a_pinned_uav_that_cannot_fly_is_never_swapped_silently(world, checkpointer):
    # uav_07 is idle with 15 % battery: only another UAV could do it, and that is the operator's call.
    instruction = f"{ROUTE}, use uav_07, {AVOID}"
    graph, out, calls = _run(
        world, checkpointer, "pinned", instruction, answer(GOOD_IR), answer(GOOD_IR), max_repairs=1
    )
    assert out.status == "human_confirm"
    assert "uav_07" in out.decision["reason"] and "pinned_uav_replaced" in out.decision["reason"]
    assert out.decision["proposal"]["uav_id"] == "uav_03" and not out.decision.get("waypoints")
    rounds = trace(graph.checkpointer, "pinned").rounds
    assert [(r.stage, r.error_type) for r in rounds] == [("fidelity", "pinned_uav_replaced")] * 2
    assert rounds[0].counterexample["allowed"] == ["uav_07"]
    assert calls == 2


def test_a_verified_route_to_an_unrequested_place_is_repaired_to_the_requested_one(world, checkpointer):
    graph, out, _ = _run(world, checkpointer, "place", f"{ROUTE}, {AVOID}", answer(TO_THE_METRO), answer(GOOD_IR))
    assert out.status == "execute" and out.rounds == 1
    first = trace(graph.checkpointer, "place").rounds[0]
    assert (first.stage, first.error_type) == ("fidelity", "wrong_destination")
    assert "accident_site_3" in first.counterexample["allowed"]
    assert ran_nodes(graph, "place") == [
        "retrieve", "generate_ir", "validate", "execute_tools", "verify", "simulate", "fidelity", "repair",
        "generate_ir", "validate", "execute_tools", "verify", "simulate", "fidelity", "finalize",
    ]  # fmt: skip


def test_without_the_gate_the_unrequested_place_is_executed(world, checkpointer):
    """What the gate buys: the ablation flies the verified route to the wrong place."""
    _, out, _ = _run(
        world,
        checkpointer,
        "ablated",
        f"{ROUTE}, {AVOID}",
        answer(TO_THE_METRO),
        without=frozenset({"memory", "fidelity"}),
    )
    assert out.status == "execute"
    assert out.decision["waypoints"][-1][:2] == pytest.approx(world.position_of("metro_station_4"), abs=15.0)


def test_a_return_leg_flown_one_way_ends_in_confirmation(world, checkpointer):
    instruction = f"{ROUTE} and back, {AVOID}"
    graph, out, _ = _run(world, checkpointer, "return", instruction, answer(GOOD_IR), max_repairs=0)
    assert out.status == "human_confirm"
    assert "return_leg_dropped" in out.decision["reason"]
    assert trace(graph.checkpointer, "return").rounds[0].error_type == "return_leg_dropped"


@pytest.mark.parametrize(
    ("demand", "thread"),
    [("Fly above 150 m.", "over-ceiling"), ("Fly above 100 m and below 60 m.", "contradictory")],
)
def test_impossible_or_contradictory_altitude_demands_end_before_any_tool(world, checkpointer, demand, thread):
    graph, out, calls = _run(world, checkpointer, thread, f"{ROUTE}. {demand}", answer(GOOD_IR))
    assert out.status in ("human_confirm", "safe_refusal") and not out.decision.get("waypoints")
    assert out.failure["error_type"] == "stated_constraints_contradictory"
    assert out.failure["counterexample"]["violated_rule"] == "R8"
    assert "execute_tools" not in ran_nodes(graph, thread)  # spec-level UNSAT: no tool ran
    assert calls == 1  # and no repair round was spent on it


def test_cargo_the_plan_was_not_checked_for_is_repaired_then_executed(world, checkpointer):
    instruction = f"{UNWEIGHED} (2.5 kg), {AVOID}"
    carrying = ir_with(**{"constraints.payload_kg": 2.5})
    graph, out, _ = _run(world, checkpointer, "cargo", instruction, answer(GOOD_IR), answer(carrying))
    assert out.status == "execute" and out.rounds == 1
    first = trace(graph.checkpointer, "cargo").rounds[0]
    assert (first.stage, first.error_type) == ("fidelity", "payload_understated")
    assert first.counterexample["allowed"] == [2.5]


def test_cargo_no_idle_uav_can_lift_never_executes(world, checkpointer):
    # The idle UAVs lift 3 and 5 kg: 6 kg is beyond the fleet, whatever the IR says it carries.
    instruction = f"{UNWEIGHED} (6 kg), {AVOID}"
    _, out, _ = _run(world, checkpointer, "heavy", instruction, answer(GOOD_IR), answer(GOOD_IR), max_repairs=1)
    assert out.status in ("human_confirm", "safe_refusal") and not out.decision.get("waypoints")
    assert "payload" in out.decision["reason"]
