"""Shared material for the graph tests: the seed instruction, scripted IR answers, run helpers.

The example worlds' paths are in tests.support.paths; the loaded downtown world is the `world` fixture."""

from __future__ import annotations

import json
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from graph.builder import build_graph
from graph.history import checkpoints
from graph.runner import RunOutput, run_task
from nodes.context import Context
from tests.support.ir_fixtures import SEED_INSTRUCTION
from tests.support.openai_stub_server import OpenAIStubServer, StubReply
from tools.world import World


def answer(ir: dict[str, Any]) -> StubReply:
    envelope = {
        "low_altitude_ir": ir,
        "rationale_summary": "scripted",
        "uncertainty": {"needs_human_confirmation": False, "missing_information": []},
    }
    return StubReply(content=json.dumps(envelope), prompt_tokens=900, completion_tokens=300)


def scripted_context(server: OpenAIStubServer, **overrides: Any) -> Context:
    settings: dict[str, Any] = {
        "model": "openai:scripted",
        "base_url": server.url,
        "api_key": "EMPTY",
        "without": frozenset({"memory"}),
        # Stress scenarios 2-4, in which the scripted routes fly clear: at the default 0-2, seed 1's crossing
        # traffic comes too close to routes from hospital_A, and these tests are about the graph, not the simulator.
        "sim_seed": 2,
    }
    settings.update(overrides)
    return Context(**settings)


def run_seed(
    world: World, context: Context, checkpointer: BaseCheckpointSaver, thread_id: str
) -> tuple[CompiledStateGraph, RunOutput]:
    """Run the seed instruction on `world`; the graph comes back built on the same checkpointer, for its history."""
    out = run_task(world, SEED_INSTRUCTION, context=context, thread_id=thread_id, checkpointer=checkpointer)
    return build_graph(context.without, checkpointer=checkpointer), out


def ran_nodes(graph: CompiledStateGraph, thread_id: str) -> list[str]:
    """The nodes of a thread in the order they ran, from the checkpointer's history."""
    return [
        info.ran[0] for info in checkpoints(graph.checkpointer, thread_id) if info.ran and info.ran[0] != "__start__"
    ]
