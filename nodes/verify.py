"""verify: the candidate route against R1-R6 (STL via rtamt) and the IR's LTL specs; the first safety gate."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from nodes.context import Context
from nodes.failures import failure_from_tool
from nodes.gates import gate_args
from nodes.run_world import world_from_state
from nodes.state import State
from tools.catalog import default_registry

READS = ("candidate", "ir", "world")


def verify(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    result = default_registry().call(
        "verify_ltl_stl", world_from_state(state), gate_args(state, runtime.context, "verify_ltl_stl")
    )
    dumped = result.model_dump(mode="json")
    return {
        "verdict": dumped,
        "tool_results": [dumped],
        "failure": None if result.ok else failure_from_tool("verify", result),
    }
