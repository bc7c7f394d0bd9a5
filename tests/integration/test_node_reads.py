"""Each node's READS (what `cloudbrain step` shows before the node runs) is checked against what the node's code
reads: every node of real runs is called again on the state it was given, through a state that records each key
read, and every key it read must be declared. (A key read only through a copy, `{**state}`, is not seen.)"""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph.builder import NODE_FUNCTIONS, build_graph
from graph.history import node_reads
from graph.runner import run_task
from nodes.context import Context
from nodes.state import State
from tests.support.runtime import fake_runtime
from tools.world import World


class RecordingState(dict):
    """A state that remembers which of its keys were read."""

    def __init__(self, values: dict[str, Any]):
        super().__init__(values)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)


# Runs that between them pass through every node: a repaired execute, a refusal, the IR-free path.
RUNS = [
    pytest.param(
        "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, keep away "
        "from the school and the temporary no-fly zone.",
        frozenset({"memory"}),
        id="demo-request",
    ),
    pytest.param("Fly the usual route.", frozenset({"memory"}), id="nothing-to-fly"),
    pytest.param("Deliver from hospital_A to hospital_B.", frozenset({"memory", "ir"}), id="without-the-ir"),
]


@pytest.mark.parametrize(("instruction", "without"), RUNS)
def test_every_key_a_node_reads_is_in_its_reads(downtown: World, instruction: str, without: frozenset[str]):
    context = Context(model="rules", without=without)
    saver = InMemorySaver()
    run_task(downtown, instruction, context=context, thread_id="reads", checkpointer=saver)
    graph = build_graph(without, checkpointer=saver)
    checked = set()
    for snapshot in graph.get_state_history({"configurable": {"thread_id": "reads"}}):
        if len(snapshot.next) != 1 or snapshot.next[0] not in NODE_FUNCTIONS:
            continue
        node = snapshot.next[0]
        state = RecordingState(dict(snapshot.values))
        NODE_FUNCTIONS[node](state, fake_runtime(context))
        undeclared = state.read - set(node_reads(node))
        assert not undeclared, f"{node} reads {sorted(undeclared)} without declaring them in READS"
        checked.add(node)
    assert checked  # the history held nodes to check


def test_reads_name_only_keys_of_the_state():
    keys = set(get_type_hints(State))
    for node in NODE_FUNCTIONS:
        assert set(node_reads(node)) <= keys, node
