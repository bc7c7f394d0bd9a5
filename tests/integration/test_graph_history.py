"""Time travel on a run's checkpoints: fork with an edited state, replay from a checkpoint (graph/session.py), read
from the store (graph/history.py).

Each test runs once per checkpointer (in-memory and SQLite file; the `checkpointer` fixture of conftest.py)."""

from __future__ import annotations

from graph.history import checkpoints, trace
from graph.session import Session
from tests.support.graph_fixtures import answer, ran_nodes, run_seed, scripted_context
from tests.support.ir_fixtures import GOOD_IR, HALLUCINATED_IR, NFZ_FORGOTTEN_IR
from tests.support.openai_stub_server import OpenAIStubServer


def test_fork_from_second_round_with_corrected_ir_executes_without_the_llm(world, checkpointer):
    with OpenAIStubServer(answer(HALLUCINATED_IR), answer(NFZ_FORGOTTEN_IR), answer(NFZ_FORGOTTEN_IR)) as server:
        context = scripted_context(server, max_repairs=1)
        graph, out = run_seed(world, context, checkpointer, "forked")
        assert out.status != "execute"
        second_round = next(
            c for c in checkpoints(graph.checkpointer, "forked") if c.round == 1 and c.next == ["execute_tools"]
        )
        calls_before = len(server.requests)
        session = Session(graph.checkpointer, context)
        session.fork(
            "forked", second_round.checkpoint_id, [("ir.entities.avoid_zones", '["school_zone_2", "nfz_temp_1"]')]
        )
        forked = session.outcome("forked", db=None)
        assert len(server.requests) == calls_before  # no LLM call: the corrected IR ran straight through

    assert forked.status == "execute"
    ran = ran_nodes(graph, "forked")
    assert ran[-5:] == ["execute_tools", "verify", "simulate", "fidelity", "finalize"]
    report = trace(graph.checkpointer, "forked")
    assert report.final["status"] == "execute"
    assert report.rounds[-1].round == 1 and report.rounds[-1].stage is None


def test_replay_re_executes_the_nodes_after_a_checkpoint(world, checkpointer):
    with OpenAIStubServer(answer(GOOD_IR)) as server:
        context = scripted_context(server)
        graph, out = run_seed(world, context, checkpointer, "replayed")
        before_verify = next(c for c in checkpoints(graph.checkpointer, "replayed") if c.next == ["verify"])
        steps_before = len(checkpoints(graph.checkpointer, "replayed"))
        session = Session(graph.checkpointer, context)
        session.replay("replayed", before_verify.checkpoint_id)
        again = session.outcome("replayed", db=None)
        assert len(server.requests) == 1  # the nodes after the checkpoint re-ran; generate_ir was before it
    assert out.status == again.status == "execute"
    assert len(checkpoints(graph.checkpointer, "replayed")) > steps_before  # replay appends, never rewrites
    assert ran_nodes(graph, "replayed")[-4:] == ["verify", "simulate", "fidelity", "finalize"]
    attempt = trace(graph.checkpointer, "replayed").rounds[-1]
    assert attempt.usage["llm_calls"] == 1


def _same_checkpoint(snapshot, stored) -> bool:
    def checkpoint_id(config):
        return (config or {}).get("configurable", {}).get("checkpoint_id")

    return (
        snapshot.values == stored.values
        and tuple(snapshot.next) == stored.next
        and [i.value for i in snapshot.interrupts] == [i.value for i in stored.interrupts]
        and checkpoint_id(snapshot.config) == checkpoint_id(stored.config)
        and checkpoint_id(snapshot.parent_config) == checkpoint_id(stored.parent_config)
        and snapshot.metadata == stored.metadata
    )


def test_the_store_reader_agrees_with_langgraphs_state_on_every_checkpoint(world, checkpointer):
    """trace, checkpoints and show read checkpoints from the store without building a graph; on executed,
    refused, operator-interrupted, stepped, forked and replayed threads every checkpoint reads as LangGraph's own
    get_state_history / get_state shows it (values, next, interrupts, ids, metadata)."""
    from graph.builder import build_graph
    from graph.checkpoint import thread_config
    from graph.history import AGGREGATE_CHANNELS, stored_history, stored_state
    from graph.runner import run_task
    from nodes.context import Context
    from nodes.state import State

    quiet = Context(model="rules", without=frozenset({"memory"}))
    asking = Context(model="rules", without=frozenset({"memory"}), interactive=True)
    runs = {
        "executed": ("Send a drone from hospital_A to accident_site_3 within 10 minutes", quiet),
        "refused": ("Send a drone from hospital_A to accident_site_3 within 5 seconds", quiet),
        "asking": ("Send a drone from hospital_A to accident_site_3 within 5 seconds", asking),
        "no_destination": ("bake me a cake", asking),
    }
    for thread, (request, context) in runs.items():
        run_task(world, request, context=context, thread_id=thread, checkpointer=checkpointer)
    graph = build_graph(quiet.without, checkpointer=checkpointer)
    before_verify = next(c for c in checkpoints(checkpointer, "executed") if c.next == ["verify"])
    session = Session(checkpointer, quiet)
    session.fork("executed", before_verify.checkpoint_id, [("ir.constraints.altitude_min_m", "60")])
    session.replay("refused", checkpoints(checkpointer, "refused")[3].checkpoint_id)
    stepped = build_graph(quiet.without, checkpointer=checkpointer, interrupt_before=["retrieve", "verify"])
    inputs = {"instruction": runs["executed"][0], "world": world.model_dump(mode="json"), "task_id": "stepped"}
    stepped.invoke({**inputs, "gold_ir": None, "run_config": {}}, thread_config("stepped"), context=quiet)
    stepped.invoke(None, thread_config("stepped"), context=quiet)

    for thread in [*runs, "stepped"]:
        theirs = list(graph.get_state_history(thread_config(thread)))
        ours = stored_history(checkpointer, thread)
        assert len(theirs) == len(ours) > 3
        assert all(_same_checkpoint(a, b) for a, b in zip(theirs, ours, strict=True)), thread
        assert _same_checkpoint(graph.get_state(thread_config(thread)), stored_state(checkpointer, thread))
    assert stored_state(checkpointer, "asking").interrupts and stored_state(checkpointer, "stepped").next == ("verify",)
    reducers = {name for name, hint in State.__annotations__.items() if "Annotated" in str(hint)}
    assert set(AGGREGATE_CHANNELS) == reducers
