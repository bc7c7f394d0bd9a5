"""Ablation (`--without`): every single ablation compiles and runs, and never runs the node it drops."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph.builder import enabled_nodes, parse_without
from nodes.context import ABLATABLE
from tests.support.graph_fixtures import answer, ran_nodes, run_seed, scripted_context
from tests.support.ir_fixtures import GOOD_IR
from tests.support.openai_stub_server import OpenAIStubServer


@pytest.mark.parametrize("ablation", ABLATABLE)
def test_each_single_ablation_compiles_runs_and_never_runs_the_dropped_node(world, ablation):
    dropped = parse_without([ablation])
    context_kw: dict[str, Any] = {"without": dropped | {"memory"}, "max_repairs": 1}
    checkpointer = InMemorySaver()
    with OpenAIStubServer(*[answer(GOOD_IR) for _ in range(3)]) as server:
        graph, out = run_seed(world, scripted_context(server, **context_kw), checkpointer, f"ablate-{ablation}")
    ran = set(ran_nodes(graph, f"ablate-{ablation}"))
    expected_missing = {
        "rag": {"retrieve"},
        "ir": {"validate", "execute_tools"},
        "verifier": {"verify"},
        "simulator": {"simulate"},
        "repair": {"repair"},
        "memory": set(),
        "fidelity": {"fidelity"},
    }[ablation]
    assert not ran & expected_missing
    assert set(graph.get_graph().nodes) >= set(enabled_nodes(dropped))
    assert not set(graph.get_graph().nodes) & expected_missing
    if ablation == "ir":
        # Without the typed IR nothing fills the arguments the model's steps leave to it (assign_uav's origin and
        # destination): the calls fail on every round and the run ends refused, never flying a half-built plan.
        assert "direct_tools" in ran
        assert out.status == "safe_refusal" and "bad_arguments" in out.decision["reason"]
    else:  # the same good IR passes every gate left in place
        assert out.status == "execute" and out.decision["reason"].startswith("all enabled checks passed")
    if ablation in ("verifier", "simulator"):
        # The ablated gate is reported as not run, never silently as passed.
        assert out.decision["verified" if ablation == "verifier" else "simulated"] is False


def test_unknown_ablation_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown ablation"):
        parse_without(["planner"])
