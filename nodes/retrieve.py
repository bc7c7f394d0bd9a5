"""retrieve (RAG): the rules and map items relevant to the instruction, for the IR prompt."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from memory.access import retrieve_rules
from memory.entities import relevant_entities
from nodes.context import Context
from nodes.run_world import world_from_state
from nodes.state import State

READS = ("instruction", "world")
RULES_K = 5
ENTITIES_K = 8


def retrieve(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    instruction = state["instruction"]
    memory = runtime.context.memory
    rules = retrieve_rules(instruction, RULES_K, memory)
    matches = relevant_entities(world_from_state(state), instruction, ENTITIES_K)
    return {
        "retrieved": {
            "rules": [f"{r.id} {r.title}: {r.text}" for r in rules],
            "entities": [f"{m.id} ({m.kind}{', ' + m.name if m.name else ''})" for m in matches],
            "repair_cases": [],
        }
    }
