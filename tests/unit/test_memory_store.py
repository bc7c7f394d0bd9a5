"""Safety memory on a real embedded Qdrant (tmp path) with the real packaged MiniLM model. (The `cloudbrain memory`
commands: tests/integration/test_cli_memory.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory import store as store_module
from memory.cases import RepairCase, format_case_for_prompt
from memory.embeddings import EMBEDDING_DIM, Embedder
from memory.rules_corpus import RULES
from memory.store import MemoryLockedError, MemoryStoreError, SafetyMemory
from tests.support.memory_cases import NFZ_CASE, THREE_CASES
from tests.support.paths import EXAMPLES
from tools.world import load_world


@pytest.fixture
def memory(tmp_path: Path, embedder: Embedder):
    with SafetyMemory(path=tmp_path / "memory", embedder=embedder) as opened:
        yield opened


def test_paraphrased_query_with_failure_filter_finds_the_right_case(memory: SafetyMemory) -> None:
    memory.store_cases(THREE_CASES)
    query = "emergency AED drone to the crash scene went straight through the temporary restricted airspace"

    hits = memory.search_cases(query, failure_type="spec_violation", k=3)

    assert hits[0].case.thread_id == "t-nfz"
    assert {hit.case.failure_type for hit in hits} == {"spec_violation"}
    assert len(hits) == 2  # the battery case is filtered out even though k=3
    assert hits[0].score > hits[1].score


def test_failure_filter_excludes_a_closer_case_of_another_type(memory: SafetyMemory) -> None:
    memory.store_cases(THREE_CASES)
    query = "the drone picked for the blood delivery had too little charge left"

    unfiltered = memory.search_cases(query, k=1)
    filtered = memory.search_cases(query, failure_type="spec_violation", k=1)

    assert unfiltered[0].case.thread_id == "t-battery"
    assert filtered[0].case.failure_type == "spec_violation"
    assert memory.search_cases(query, failure_type="no_such_type", k=3) == []


def test_restoring_the_same_thread_and_round_replaces_instead_of_duplicating(memory: SafetyMemory) -> None:
    memory.store_cases(THREE_CASES)
    updated = NFZ_CASE.model_copy(update={"outcome": "safe_refusal"})

    point_id = memory.store_case(updated)
    memory.store_cases(THREE_CASES[1:])

    assert memory.count_cases() == 3
    assert point_id == NFZ_CASE.point_id
    hit = memory.search_cases(NFZ_CASE.instruction, failure_type="spec_violation", k=1)[0]
    assert hit.case.outcome == "safe_refusal"


def test_next_round_of_the_same_thread_is_a_new_case(memory: SafetyMemory) -> None:
    memory.store_case(NFZ_CASE)
    memory.store_case(NFZ_CASE.model_copy(update={"round": 2}))
    assert memory.count_cases() == 2


def test_identical_cases_of_other_threads_are_found_once(memory: SafetyMemory) -> None:
    # the demo run three times stores one case three times (three threads): a search shows it once, and the k
    # places go to distinct cases
    memory.store_cases([NFZ_CASE.model_copy(update={"thread_id": f"demo-{i}"}) for i in range(3)])
    memory.store_cases(THREE_CASES[1:])

    for failure_type in (None, "spec_violation"):
        hits = memory.search_cases(NFZ_CASE.instruction, failure_type=failure_type, k=2)
        assert len(hits) == 2 and len({hit.case.content_key() for hit in hits}) == 2
        assert hits[0].case.instruction == NFZ_CASE.instruction and hits[1].case.instruction != NFZ_CASE.instruction
    assert memory.count_cases() == 5  # every one is stored; only the search shows them once


def test_cases_persist_across_reopening_the_folder(tmp_path: Path, embedder: Embedder) -> None:
    with SafetyMemory(path=tmp_path / "m", embedder=embedder) as first:
        first.store_cases(THREE_CASES)
    with SafetyMemory(path=tmp_path / "m", embedder=embedder) as second:
        assert second.count_cases() == 3
        assert second.stats()["failure_types"] == {"spec_violation": 2, "low_battery_candidates": 1}


def test_two_memories_on_one_folder_share_it_and_an_exclusive_one_gets_a_clear_error(
    memory: SafetyMemory, embedder: Embedder
) -> None:
    other = SafetyMemory(path=memory.path, embedder=embedder)  # another process's view of the same folder
    memory.store_case(NFZ_CASE)
    assert other.count_cases() == 1  # each access opens the folder afresh, so it sees the other's writes
    other.store_cases(THREE_CASES)  # NFZ_CASE again (replaced, same thread and round) and two more
    assert memory.count_cases() == 3
    with SafetyMemory(path=memory.path, embedder=embedder, exclusive=True) as holder:
        assert holder.count_cases() == 3
        with pytest.raises(MemoryLockedError, match="qdrant-url"):
            memory.count_cases()
    assert memory.count_cases() == 3  # released with the exclusive holder


def test_default_location_is_project_local_and_env_url_selects_a_server(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(store_module.URL_ENV, raising=False)
    with SafetyMemory() as local:
        assert local.is_local and local.path == tmp_path / ".cloudbrain" / "memory"

    monkeypatch.setenv(store_module.URL_ENV, "http://127.0.0.1:9")  # nothing listens on port 9
    with pytest.raises(MemoryStoreError, match="127.0.0.1:9"):
        SafetyMemory()


def test_rules_retrieval_finds_r1_for_a_no_fly_zone_question(memory: SafetyMemory) -> None:
    hits = memory.search_rules("Is the drone allowed to cross the no-fly zone on its way?", k=3)

    assert "R1" in [hit.rule.id for hit in hits]
    assert memory.stats()["rules"] == len(RULES)


def test_rules_retrieval_finds_the_battery_rule(memory: SafetyMemory) -> None:
    ids = [hit.rule.id for hit in memory.search_rules("how much charge must remain when the UAV lands", k=3)]
    assert "R5" in ids or "AS-battery-reserve" in ids


def test_entities_named_by_id_come_first_then_by_meaning(memory: SafetyMemory) -> None:
    world = load_world(EXAMPLES / "downtown.json")
    instruction = "Take the medicine from depot_1 to the children's hospital up north, avoid the school"

    matches = memory.relevant_entities(world, instruction, k=4)

    assert matches[0].id == "depot_1" and matches[0].mentioned
    assert "hospital_B" in [m.id for m in matches[1:]]
    assert len(matches) == 4


def test_filtered_search_is_exact_on_both_local_paths(memory: SafetyMemory, monkeypatch) -> None:
    monkeypatch.setattr(store_module, "OVERFETCH_LIMITS", (64,))  # well below the 300 cases: both paths are taken
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(300, EMBEDDING_DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    types = ["rare" if i % 50 == 0 else f"common_{i % 3}" for i in range(300)]
    cases = [
        RepairCase(
            instruction=f"case {i}",
            failure_stage="verify",
            failure_type=t,
            outcome="repaired",
            thread_id=f"s-{i}",
            round=0,
        )
        for i, t in enumerate(types)
    ]
    memory.upsert_case_vectors(cases, vectors)
    query = rng.normal(size=EMBEDDING_DIM).astype(np.float32)
    query /= np.linalg.norm(query)

    for failure_type in ("rare", "common_1"):
        allowed = [i for i, t in enumerate(types) if t == failure_type]
        expected = [f"s-{i}" for i in sorted(allowed, key=lambda i: -float(vectors[i] @ query))[:3]]
        got = [hit.case.thread_id for hit in memory.search_cases_by_vector(query, failure_type, k=3)]
        assert got == expected
    assert memory.filtered_query_fallbacks == 1  # only the rare type needed Qdrant's own filter

    monkeypatch.setattr(store_module, "OVERFETCH_LIMITS", (1,))
    forced = memory.search_cases_by_vector(query, "common_1", k=3)
    assert [hit.case.thread_id for hit in forced] == expected
    assert memory.filtered_query_fallbacks == 2


def test_prompt_example_is_short_and_carries_the_fix() -> None:
    text = format_case_for_prompt(NFZ_CASE)

    assert len(text.splitlines()) <= 6
    assert "R1" in text and "nfz_temp_1" in text and "avoid_zones" in text


def test_counterexample_is_compressed_to_the_spec_fields() -> None:
    case = NFZ_CASE.model_copy(update={"counterexample": {}})
    raw = {"violated_rule": "R1", "offending_segment": list(range(40)), "trajectory": [[0, 0, 0, 0]] * 500}

    compressed = RepairCase.model_validate({**case.model_dump(), "counterexample": raw}).counterexample

    assert "trajectory" not in compressed
    assert compressed["offending_segment"] == list(range(6))
