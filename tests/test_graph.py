"""The agent graph end to end, with a scripted model behind the real OpenAI client (tests only).

Parametrised over checkpointers (in-memory and SQLite file), as langgraph's own tests are.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from graph_fixtures import (
    GOOD_IR,
    HALLUCINATED_IR,
    NFZ_FORGOTTEN_IR,
    SEED_INSTRUCTION,
    answer,
    scripted_context,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from openai_stub_server import OpenAIStubServer, StubReply

from graph.builder import build_graph, enabled_nodes, parse_without
from graph.context import ABLATABLE
from graph.history import checkpoints, fork, replay, trace
from graph.runner import run_task


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path):
    if request.param == "memory":
        yield InMemorySaver()
        return
    connection = sqlite3.connect(tmp_path / "runs.sqlite", check_same_thread=False)
    sqlite_saver = SqliteSaver(connection)
    sqlite_saver.setup()
    yield sqlite_saver
    connection.close()


def _ran_nodes(graph, thread_id: str) -> list[str]:
    return [info.ran[0] for info in checkpoints(graph, thread_id) if info.ran and info.ran[0] != "__start__"]


def _run(world, context, saver, thread_id: str):
    out = run_task(world, SEED_INSTRUCTION, context=context, thread_id=thread_id, checkpointer=saver)
    return build_graph(context.without, checkpointer=saver), out


def test_repair_story_validate_then_verify_then_execute(world, saver):
    with OpenAIStubServer(answer(HALLUCINATED_IR), answer(NFZ_FORGOTTEN_IR), answer(GOOD_IR)) as server:
        graph, out = _run(world, scripted_context(server), saver, "story")
        prompts = [str(body["messages"]) for body in server.bodies()]

    assert out.status == "execute"
    assert out.decision["uav_id"] == "uav_03" and len(out.decision["waypoints"]) >= 2
    assert out.decision["verified"] and out.decision["simulated"]
    assert out.rounds == 2 and len(prompts) == 3

    report = trace(graph, "story")
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
    # The counterexample, not the whole trajectory, reached the model.
    assert "accident_site_3" in prompts[1] and "unknown_entity" in prompts[1]
    assert "nfz_temp_1" in prompts[2] and "R1" in prompts[2]

    # Every node step is in the checkpointer's history, in order.
    assert _ran_nodes(graph, "story") == [
        "context", "generate_ir", "validate", "repair",
        "generate_ir", "validate", "execute_tools", "verify", "repair",
        "generate_ir", "validate", "execute_tools", "verify", "simulate", "finalize",
    ]  # fmt: skip


def test_fork_from_second_round_with_corrected_ir_executes_without_the_llm(world, saver):
    with OpenAIStubServer(answer(HALLUCINATED_IR), answer(NFZ_FORGOTTEN_IR), answer(NFZ_FORGOTTEN_IR)) as server:
        context = scripted_context(server, max_repairs=1)
        graph, out = _run(world, context, saver, "forked")
        assert out.status != "execute"
        second_round = next(c for c in checkpoints(graph, "forked") if c.round == 1 and c.next == ["execute_tools"])
        calls_before = len(server.requests)
        forked = fork(
            graph,
            "forked",
            second_round.checkpoint_id,
            [("ir.entities.avoid_zones", '["school_zone_2", "nfz_temp_1"]')],
            context,
            db=None,
        )
        assert len(server.requests) == calls_before  # no LLM call: the corrected IR ran straight through

    assert forked.status == "execute"
    ran = _ran_nodes(graph, "forked")
    assert ran[-4:] == ["execute_tools", "verify", "simulate", "finalize"]
    report = trace(graph, "forked")
    assert report.final["status"] == "execute"
    assert report.rounds[-1].round == 1 and report.rounds[-1].stage is None


def test_replay_re_executes_the_nodes_after_a_checkpoint(world, saver):
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        context = scripted_context(server)
        graph, out = _run(world, context, saver, "replayed")
        before_verify = next(c for c in checkpoints(graph, "replayed") if c.next == ["verify"])
        steps_before = len(checkpoints(graph, "replayed"))
        again = replay(graph, "replayed", before_verify.checkpoint_id, context, db=None)
        assert len(server.requests) == 1  # the nodes after the checkpoint re-ran; generate_ir was before it
    assert out.status == again.status == "execute"
    assert len(checkpoints(graph, "replayed")) > steps_before  # replay appends, never rewrites
    assert _ran_nodes(graph, "replayed")[-3:] == ["verify", "simulate", "finalize"]
    attempt = trace(graph, "replayed").rounds[-1]
    assert attempt.usage["llm_calls"] == 1


@pytest.mark.parametrize("max_repairs", [0, 2])
def test_unsafe_route_never_escapes_and_stops_after_exactly_k_repairs(world, saver, max_repairs):
    replies = [answer(NFZ_FORGOTTEN_IR) for _ in range(max_repairs + 1)]
    with OpenAIStubServer(*replies) as server:
        graph, out = _run(world, scripted_context(server, max_repairs=max_repairs), saver, f"unsafe-{max_repairs}")
        llm_calls = len(server.requests)

    assert out.status == "human_confirm"  # the IR's policy: ground_transfer_or_human_confirm, headless
    assert not out.decision.get("waypoints"), "a refused or unconfirmed decision carries no route to fly"
    assert out.decision["proposal"]["uav_id"] == "uav_03"
    assert llm_calls == max_repairs + 1
    report = trace(graph, f"unsafe-{max_repairs}")
    assert len(report.rounds) == max_repairs + 1
    assert all(r.counterexample["violated_rule"] == "R1" for r in report.rounds)
    assert _ran_nodes(graph, f"unsafe-{max_repairs}")[-1] == "fallback"


def test_safe_refusal_policy_refuses(world, saver):
    refusing = dict(NFZ_FORGOTTEN_IR, fallback_policy="safe_refusal")
    with OpenAIStubServer(answer(refusing)) as server:
        _, out = _run(world, scripted_context(server, max_repairs=0), saver, "refuse")
    assert out.status == "safe_refusal"
    assert out.decision["proposal"] is None and not out.decision["waypoints"]


def test_transport_errors_are_retried_then_end_in_fallback(world, saver):
    failing = [StubReply(status=503, error="overloaded") for _ in range(20)]
    with OpenAIStubServer(*failing) as server:
        graph, out = _run(world, scripted_context(server), saver, "down")
        calls = len(server.requests)
    assert out.status == "safe_refusal"
    assert out.failure["error_type"] == "llm_transport_error"
    assert calls >= 3  # the node's RetryPolicy tried again
    assert _ran_nodes(graph, "down")[-1] == "fallback"


def test_uncertain_answer_never_executes(world, saver):
    envelope_reply = answer(GOOD_IR)
    uncertain = StubReply(
        content=envelope_reply.content.replace(
            '"missing_information": []', '"missing_information": ["which accident site"]'
        ).replace('"needs_human_confirmation": false', '"needs_human_confirmation": true')
    )
    with OpenAIStubServer(uncertain) as server:
        _, out = _run(world, scripted_context(server), saver, "uncertain")
    assert out.status == "human_confirm"
    assert "which accident site" in out.decision["reason"]


@pytest.mark.parametrize("ablation", ABLATABLE)
def test_each_single_ablation_compiles_runs_and_never_runs_the_dropped_node(world, ablation):
    dropped = parse_without([ablation])
    context_kw: dict[str, Any] = {"without": dropped | {"memory"}, "max_repairs": 1}
    saver = InMemorySaver()
    with OpenAIStubServer(*[answer(GOOD_IR) for _ in range(3)]) as server:
        graph, out = _run(world, scripted_context(server, **context_kw), saver, f"ablate-{ablation}")
    ran = set(_ran_nodes(graph, f"ablate-{ablation}"))
    expected_missing = {
        "rag": {"context"},
        "ir": {"validate", "execute_tools"},
        "verifier": {"verify"},
        "simulator": {"simulate"},
        "repair": {"repair"},
        "memory": set(),
    }[ablation]
    assert not ran & expected_missing
    assert set(graph.get_graph().nodes) >= set(enabled_nodes(dropped))
    assert not set(graph.get_graph().nodes) & expected_missing
    assert out.status in ("execute", "human_confirm", "safe_refusal")
    if ablation == "ir":
        assert "direct_tools" in ran
    if ablation in ("verifier", "simulator"):
        # The ablated gate is reported as not run, never silently as passed.
        assert out.decision["verified" if ablation == "verifier" else "simulated"] is False


def test_unknown_ablation_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown ablation"):
        parse_without(["planner"])
