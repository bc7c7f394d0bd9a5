"""The default tool registry, in dependency order (city state -> airspace -> UAV assignment -> route -> verifier ->
simulator -> risk -> explanation), and which of its tools act on the world."""

from __future__ import annotations

from functools import cache

from tools import airspace, assignment, city, explain, risk, route, simulator, team, verifier
from tools.registry import ToolRegistry

TOOL_MODULES = (city, airspace, assignment, route, verifier, simulator, risk, explain)
TOOL_ORDER = tuple(module.SPEC.name for module in TOOL_MODULES)
# The tools a plan runs to build a flight; the verifier, simulator, risk and explanation tools are the graph's gates
# and reports, never an LLM's to call or skip.
ACTION_TOOLS = frozenset({city.SPEC.name, airspace.SPEC.name, assignment.SPEC.name, route.SPEC.name})
# The one-UAV steps a fleet mission replaces: assign_team picks the members and each gets its own route.
ONE_UAV_TOOLS = frozenset({assignment.SPEC.name, route.SPEC.name})
TEAM_TOOL = team.SPEC.name


@cache
def default_registry() -> ToolRegistry:
    return ToolRegistry([module.SPEC for module in TOOL_MODULES])


@cache
def team_registry() -> ToolRegistry:
    """The default tools plus assign_team, for the graph's fleet-mission path. assign_team stays out of the default
    registry: a model writes a team as the IR's `team` (its sub-tasks), which the graph assigns (nodes/execute_tools),
    never as a tool_plan step; and the default registry is what prompts, the validator's tool names and the MCP
    server list, which single-UAV runs must keep as they are."""
    return ToolRegistry([*(module.SPEC for module in TOOL_MODULES), team.SPEC])
