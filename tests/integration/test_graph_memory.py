"""The graph with the real safety memory: retrieved repair cases reach the repair prompt, finalize stores
repairs idempotently, and `--without memory` never opens Qdrant. (Seeding and searching the memory from the
command line: test_cli_memory.py.)"""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

import memory.store
from cli.main import main
from graph.builder import build_graph
from graph.runner import run_task
from memory.access import open_memory
from memory.cases import RepairCase
from memory.store import SafetyMemory
from tests.support.graph_fixtures import answer, scripted_context
from tests.support.ir_fixtures import NFZ_FORGOTTEN_IR, SEED_INSTRUCTION
from tests.support.openai_stub_server import OpenAIStubServer, StubReply
from tests.support.paths import DOWNTOWN

PAST_CASE = RepairCase(
    instruction="Fly blood samples from hospital_B to the accident on the ring road before the police closure",
    scenario_type="nfz_avoidance",
    failure_stage="verify",
    failure_type="spec_violation",
    violated_rule="R1",
    counterexample={"violated_rule": "R1", "offending_entity": "nfz_temp_1", "time_sec": 31, "robustness": -12.5},
    failing_ir_summary="emergency hospital_B -> accident_site_3 avoid=[]",
    repaired_ir_diff="add /entities/avoid_zones/0 = 'nfz_temp_1'",
    outcome="repaired",
    model="rules",
    thread_id="past-thread-7",
    round=0,
)
UNRELATED_CASE = PAST_CASE.model_copy(
    update={"failure_type": "unknown_entity", "thread_id": "past-thread-8", "instruction": "Inspect solar farm 7"}
)


@pytest.fixture()
def safety_memory(tmp_path):
    store = SafetyMemory(path=tmp_path / "memory")
    store.store_cases([PAST_CASE, UNRELATED_CASE])
    yield store
    store.close()


def test_retrieved_case_reaches_the_repair_prompt_and_the_run_is_remembered(world, safety_memory):
    saver = InMemorySaver()
    with OpenAIStubServer(answer(NFZ_FORGOTTEN_IR), StubReply(content='{"repair": "avoid:nfz_temp_1"}')) as server:
        context = scripted_context(server, without=frozenset(), memory=safety_memory)
        out = run_task(world, SEED_INSTRUCTION, context=context, thread_id="mem-1", checkpointer=saver)
        repair_prompt = str(server.bodies()[1]["messages"])
    assert out.status == "execute" and out.rounds == 1
    # The first IR failed R1; the similar past R1 repair (and not the unrelated one) is shown as a few-shot example.
    assert "Fly blood samples from hospital_B" in repair_prompt
    assert "Inspect solar farm 7" not in repair_prompt
    # finalize stored this run's repair: R1 on nfz_temp_1, repaired by adding the zone.
    hits = safety_memory.search_cases(
        "drone route entered the temporary no-fly zone", failure_type="spec_violation", k=5
    )
    mine = [h.case for h in hits if h.case.thread_id == "mem-1"]
    assert len(mine) == 1 and mine[0].violated_rule == "R1" and mine[0].outcome == "repaired"
    assert "nfz_temp_1" in mine[0].repaired_ir_diff
    count = safety_memory.count_cases()
    # Re-running the same thread's end (replay from the last checkpoint before finalize) stores nothing new.
    graph = build_graph(context.without, checkpointer=saver)
    before_finalize = next(
        s for s in graph.get_state_history({"configurable": {"thread_id": "mem-1"}}) if s.next == ("finalize",)
    )
    graph.invoke(None, before_finalize.config, context=context)
    assert safety_memory.count_cases() == count


def test_without_memory_never_opens_qdrant(monkeypatch, capsys, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("Qdrant was opened although memory is ablated")

    monkeypatch.setattr(memory.store, "QdrantClient", refuse)
    monkeypatch.setattr(memory.store, "_open_local", refuse)
    assert open_memory(frozenset({"memory"})) is None
    code = main(
        [
            "run",
            "--world",
            str(DOWNTOWN),
            "--instruction",
            SEED_INSTRUCTION,
            "--model",
            "rules",
            "--without",
            "memory",
            "--db",
            str(tmp_path / "runs.sqlite"),
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.startswith("EXECUTE: ")
