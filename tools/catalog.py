"""The default tool registry, in dependency order (city state -> airspace -> UAV assignment -> route -> verifier ->
simulator -> risk -> explanation), and which of its tools act on the world."""

from __future__ import annotations

from functools import cache

from tools import airspace, assignment, city, explain, risk, route, simulator, verifier
from tools.registry import ToolRegistry

TOOL_MODULES = (city, airspace, assignment, route, verifier, simulator, risk, explain)
TOOL_ORDER = tuple(module.SPEC.name for module in TOOL_MODULES)
# The tools a plan runs to build a flight; the verifier, simulator, risk and explanation tools are the graph's gates
# and reports, never an LLM's to call or skip.
ACTION_TOOLS = frozenset({city.SPEC.name, airspace.SPEC.name, assignment.SPEC.name, route.SPEC.name})


@cache
def default_registry() -> ToolRegistry:
    return ToolRegistry([module.SPEC for module in TOOL_MODULES])
