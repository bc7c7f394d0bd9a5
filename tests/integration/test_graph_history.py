"""Time travel on a run's checkpoints: fork with an edited state, replay from a checkpoint (graph/history.py).

Each test runs once per checkpointer (in-memory and SQLite file; the `checkpointer` fixture of conftest.py)."""

from __future__ import annotations

from graph.history import checkpoints, fork, replay, trace
from tests.support.graph_fixtures import answer, ran_nodes, run_seed, scripted_context
from tests.support.ir_fixtures import GOOD_IR, HALLUCINATED_IR, NFZ_FORGOTTEN_IR
from tests.support.openai_stub_server import OpenAIStubServer


def test_fork_from_second_round_with_corrected_ir_executes_without_the_llm(world, checkpointer):
    with OpenAIStubServer(answer(HALLUCINATED_IR), answer(NFZ_FORGOTTEN_IR), answer(NFZ_FORGOTTEN_IR)) as server:
        context = scripted_context(server, max_repairs=1)
        graph, out = run_seed(world, context, checkpointer, "forked")
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
    ran = ran_nodes(graph, "forked")
    assert ran[-5:] == ["execute_tools", "verify", "simulate", "fidelity", "finalize"]
    report = trace(graph, "forked")
    assert report.final["status"] == "execute"
    assert report.rounds[-1].round == 1 and report.rounds[-1].stage is None


def test_replay_re_executes_the_nodes_after_a_checkpoint(world, checkpointer):
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        context = scripted_context(server)
        graph, out = run_seed(world, context, checkpointer, "replayed")
        before_verify = next(c for c in checkpoints(graph, "replayed") if c.next == ["verify"])
        steps_before = len(checkpoints(graph, "replayed"))
        again = replay(graph, "replayed", before_verify.checkpoint_id, context, db=None)
        assert len(server.requests) == 1  # the nodes after the checkpoint re-ran; generate_ir was before it
    assert out.status == again.status == "execute"
    assert len(checkpoints(graph, "replayed")) > steps_before  # replay appends, never rewrites
    assert ran_nodes(graph, "replayed")[-4:] == ["verify", "simulate", "fidelity", "finalize"]
    attempt = trace(graph, "replayed").rounds[-1]
    assert attempt.usage["llm_calls"] == 1
