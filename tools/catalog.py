"""The default tool registry, in the order of the dependency DAG of SPEC section 5."""

from __future__ import annotations

from functools import cache

from tools import airspace, assignment, city, explain, risk, route, simulator, verifier
from tools.registry import ToolRegistry

TOOL_MODULES = (city, airspace, assignment, route, verifier, simulator, risk, explain)
TOOL_ORDER = tuple(module.SPEC.name for module in TOOL_MODULES)


@cache
def default_registry() -> ToolRegistry:
    return ToolRegistry([module.SPEC for module in TOOL_MODULES])
