"""The agent graph end to end, with a scripted model behind the real OpenAI client (tests only): the repair
loop, its cap K, the fallback policies and transport errors.

Each test runs once per checkpointer (in-memory and SQLite file; the `checkpointer` fixture of conftest.py), as
langgraph's own tests do."""

from __future__ import annotations

import pytest

from graph.history import state_values, trace
from models.base import LLMBackendUnavailable
from tests.support.graph_fixtures import answer, ran_nodes, run_seed, scripted_context
from tests.support.ir_fixtures import GOOD_IR, HALLUCINATED_IR, NFZ_FORGOTTEN_IR
from tests.support.openai_stub_server import OpenAIStubServer, StubReply


def test_repair_story_validate_then_verify_then_execute(world, checkpointer):
    choose = StubReply(content='{"repair": "avoid:nfz_temp_1"}')  # the R1 failure's one repair candidate
    with OpenAIStubServer(answer(HALLUCINATED_IR), answer(NFZ_FORGOTTEN_IR), choose) as server:
        graph, out = run_seed(world, scripted_context(server), checkpointer, "story")
        prompts = [str(body["messages"]) for body in server.bodies()]

    assert out.status == "execute"
    assert out.decision["uav_id"] == "uav_03" and len(out.decision["waypoints"]) >= 2
    assert out.decision["verified"] and out.decision["simulated"]
    assert out.rounds == 2 and len(prompts) == 3

    report = trace(graph.checkpointer, "story")
    assert [r.round for r in report.rounds] == [0, 1, 2]
    first, second, third = report.rounds
    assert (first.stage, first.error_type) == ("validate", "unknown_entity")
    assert "accident_site_3" in first.counterexample["allowed"]
    assert (second.stage, second.counterexample["violated_rule"]) == ("verify", "R1")
    assert second.counterexample["robustness"] < 0
    assert second.counterexample["offending_entity"] == "nfz_temp_1"
    assert third.stage is None and report.final["status"] == "execute"
    # The IR diff names what the model changed between rounds.
    assert {"op": "replace", "path": "/entities/destination", "value": "accident_site_3"} in second.ir_diff
    assert any(op["path"].startswith("/entities/avoid_zones") for op in third.ir_diff)
    # The counterexample, not the whole trajectory, reached the model; for the world's failure, as a choice.
    assert "accident_site_3" in prompts[1] and "unknown_entity" in prompts[1]
    assert "nfz_temp_1" in prompts[2] and "R1" in prompts[2] and "- avoid:nfz_temp_1: keep out of" in prompts[2]

    # Every node step is in the checkpointer's history, in order.
    assert ran_nodes(graph, "story") == [
        "retrieve", "generate_ir", "validate", "repair",
        "generate_ir", "validate", "execute_tools", "verify", "repair",
        "generate_ir", "validate", "execute_tools", "verify", "simulate", "fidelity", "finalize",
    ]  # fmt: skip


def test_unsafe_route_never_escapes(world, checkpointer):
    with OpenAIStubServer(answer(NFZ_FORGOTTEN_IR)) as server:
        graph, out = run_seed(world, scripted_context(server, max_repairs=0), checkpointer, "unsafe")
        llm_calls = len(server.requests)

    assert out.status == "human_confirm"  # the IR's policy: ground_transfer_or_human_confirm, headless
    assert not out.decision.get("waypoints"), "a refused or unconfirmed decision carries no route to fly"
    assert out.decision["proposal"]["uav_id"] == "uav_03"
    assert llm_calls == 1
    [only] = trace(graph.checkpointer, "unsafe").rounds
    assert only.counterexample["violated_rule"] == "R1"
    assert ran_nodes(graph, "unsafe")[-1] == "fallback"


@pytest.mark.parametrize("max_repairs", [0, 2])
def test_the_loop_stops_after_exactly_k_repairs(world, checkpointer, max_repairs):
    """A model that repeats the same ungrounded IR (free repair: the IR's own defect) gets K repair rounds."""
    replies = [answer(HALLUCINATED_IR) for _ in range(max_repairs + 1)]
    with OpenAIStubServer(*replies) as server:
        graph, out = run_seed(
            world, scripted_context(server, max_repairs=max_repairs), checkpointer, f"capped-{max_repairs}"
        )
        llm_calls = len(server.requests)

    assert out.status == "human_confirm" and llm_calls == max_repairs + 1
    report = trace(graph.checkpointer, f"capped-{max_repairs}")
    assert [r.error_type for r in report.rounds] == ["unknown_entity"] * (max_repairs + 1)
    assert ran_nodes(graph, f"capped-{max_repairs}")[-1] == "fallback"


def test_an_interactive_run_pauses_with_the_operators_question(world, checkpointer):
    with OpenAIStubServer(answer(NFZ_FORGOTTEN_IR)) as server:
        _, out = run_seed(world, scripted_context(server, max_repairs=0, interactive=True), checkpointer, "ask")
    assert out.status == "human_confirm" and not out.decision.get("waypoints")
    assert out.interrupted is not None and out.interrupted["best_candidate"]["uav_id"] == "uav_03"
    assert "spec_violation (R1)" in out.interrupted["reason"]


def test_safe_refusal_policy_refuses(world, checkpointer):
    refusing = dict(NFZ_FORGOTTEN_IR, fallback_policy="safe_refusal")
    with OpenAIStubServer(answer(refusing)) as server:
        _, out = run_seed(world, scripted_context(server, max_repairs=0), checkpointer, "refuse")
    assert out.status == "safe_refusal"
    assert out.decision["proposal"] is None and not out.decision["waypoints"]


def test_a_request_the_server_rejects_ends_in_fallback(world, checkpointer):
    with OpenAIStubServer(*[StubReply(status=400, error="bad request") for _ in range(5)]) as server:
        graph, out = run_seed(world, scripted_context(server), checkpointer, "rejected")
    assert out.status == "safe_refusal"
    assert out.failure["error_type"] == "llm_transport_error"
    assert ran_nodes(graph, "rejected")[-1] == "fallback"


def test_a_failing_server_stops_the_run_without_a_decision(world, checkpointer):
    """A backend that cannot answer is no decision of the agent's: the error leaves the graph, nothing is recorded
    as a refusal, and the graph does not retry what the backend already retried."""
    with OpenAIStubServer(*[StubReply(status=503, error="overloaded") for _ in range(20)]) as server:
        with pytest.raises(LLMBackendUnavailable, match="answers HTTP 503"):
            run_seed(world, scripted_context(server), checkpointer, "down")
        calls = len(server.requests)
    assert calls == 3  # the completion and the backend's two retries (the graph retrying it would make 9)
    values = state_values(checkpointer, "down")
    assert "decision" not in values and "status" not in values and not values.get("attempts")


def test_uncertain_answer_never_executes(world, checkpointer):
    envelope_reply = answer(GOOD_IR)
    uncertain = StubReply(
        content=envelope_reply.content.replace(
            '"missing_information": []', '"missing_information": ["which accident site"]'
        ).replace('"needs_human_confirmation": false', '"needs_human_confirmation": true')
    )
    with OpenAIStubServer(uncertain) as server:
        _, out = run_seed(world, scripted_context(server), checkpointer, "uncertain")
    assert out.status == "human_confirm"
    assert "which accident site" in out.decision["reason"]
