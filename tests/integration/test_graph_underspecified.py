"""Nothing the request did not say: an under-specified request ends before any tool in human_confirm listing what
is missing, whatever the model answers; a plan with a place the request never named ends asking, not executing."""

from __future__ import annotations

from graph.builder import build_graph
from graph.history import trace
from graph.runner import run_task
from nodes.context import Context
from tests.support.graph_fixtures import answer, ran_nodes, scripted_context
from tests.support.ir_fixtures import GOOD_IR, SEED_INSTRUCTION, ir_with
from tests.support.openai_stub_server import OpenAIStubServer
from tests.support.underspecified import underspecified_requests


def test_no_under_specified_request_executes_with_the_rules_model(world):
    context = Context(model="rules", without=frozenset({"memory"}))
    for kind, text in underspecified_requests():
        out = run_task(world, text, context=context, db=None)
        assert out.status == "human_confirm", (kind, text, out.status, out.decision.get("reason"))
        assert out.failure["stage"] == "validate" and out.decision["missing_information"], (kind, text)


def test_a_model_that_fills_in_places_is_not_asked_twice_and_no_tool_runs(world, checkpointer):
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        context = scripted_context(server)
        out = run_task(world, "Fly the usual route.", context=context, thread_id="usual", checkpointer=checkpointer)
        calls = len(server.requests)
    assert out.status == "human_confirm" and calls == 1
    assert out.decision["missing_information"] == ["destination: the request names no place to fly to"]
    assert ran_nodes(build_graph(context.without, checkpointer=checkpointer), "usual") == [
        "retrieve", "generate_ir", "validate", "fallback",
    ]  # fmt: skip


def test_a_stop_the_request_never_named_ends_in_confirmation_naming_it(world, checkpointer):
    invented = ir_with(**{"entities.waypoints": ["metro_station_4"]})
    with OpenAIStubServer(answer(invented)) as server:
        context = scripted_context(server, max_repairs=0)
        out = run_task(world, SEED_INSTRUCTION, context=context, thread_id="stop", checkpointer=checkpointer)
    assert out.status == "human_confirm" and not out.decision.get("waypoints")
    assert "stop metro_station_4 is not in the request" in out.decision["reason"]
    rounds = trace(checkpointer, "stop").rounds
    assert (rounds[0].stage, rounds[0].error_type) == ("fidelity", "unsourced_waypoints")


def test_a_repair_that_drops_the_invented_stop_executes(world, checkpointer):
    invented = ir_with(**{"entities.waypoints": ["metro_station_4"]})
    with OpenAIStubServer(answer(invented), answer(GOOD_IR)) as server:
        out = run_task(
            world, SEED_INSTRUCTION, context=scripted_context(server), thread_id="fix", checkpointer=checkpointer
        )
    assert out.status == "execute" and out.rounds == 1
