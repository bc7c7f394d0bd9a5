"""Shared material for the graph tests: the seed instruction, scripted IR answers, run helpers.

The example worlds' paths are in tests.support.paths; the loaded downtown world is the `world` fixture."""

from __future__ import annotations

import copy
import json
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from graph.builder import build_graph
from graph.context import Context
from graph.history import checkpoints
from graph.runner import RunOutput, run_task
from tests.support.openai_stub_server import OpenAIStubServer, StubReply
from tools.world import World

SEED_INSTRUCTION = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, "
    "keep away from the school and the temporary no-fly zone."
)


GOOD_IR: dict[str, Any] = {
    "task_id": "task_00042",
    "intent": "emergency",
    "priority": "high",
    "entities": {
        "origin": "hospital_A",
        "destination": "accident_site_3",
        "candidate_uavs": ["uav_03"],
        "avoid_zones": ["school_zone_2", "nfz_temp_1"],
    },
    "constraints": {"deadline_sec": 600, "altitude_min_m": 30, "altitude_max_m": 120, "payload_kg": 1.0},
    "tool_plan": [
        {"id": "s1", "tool": "query_airspace", "args": {"region": "downtown_core"}},
        {"id": "s2", "tool": "assign_uav", "args": {"objective": "min_delay_safe"}, "depends_on": ["s1"]},
        {"id": "s3", "tool": "plan_route", "args": {}, "depends_on": ["s2"]},
        {"id": "s4", "tool": "verify_ltl_stl", "args": {}, "depends_on": ["s3"]},
        {"id": "s5", "tool": "simulate_scenario", "args": {}, "depends_on": ["s4"]},
    ],
    "verification_specs": {
        "ltl": ["G !in_nfz_temp_1", "G !in_school_zone_2", "F at_goal"],
        "program_rules": ["R1", "R2", "R3", "R4", "R5", "R6"],
    },
    "fallback_policy": "ground_transfer_or_human_confirm",
}


def ir_with(**changes: Any) -> dict[str, Any]:
    """GOOD_IR with dotted-path changes, e.g. ir_with(**{"entities.destination": "accident_site_9"})."""
    ir = copy.deepcopy(GOOD_IR)
    for path, value in changes.items():
        node = ir
        *parents, last = path.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
    return ir


HALLUCINATED_IR = ir_with(**{"entities.destination": "accident_site_9"})
NFZ_FORGOTTEN_IR = ir_with(
    **{
        "entities.avoid_zones": ["school_zone_2"],
        "verification_specs.ltl": ["G !in_school_zone_2", "F at_goal"],
    }
)


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
    return [info.ran[0] for info in checkpoints(graph, thread_id) if info.ran and info.ran[0] != "__start__"]
