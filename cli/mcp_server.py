"""The MCP server of `cloudbrain mcp` (cli/mcp_command.py): the agent's tools over the Model Context Protocol (stdio), for any MCP client.

It serves the eight tools of the catalog plus `validate_ir` (the layered validator) and `verify_trajectory` (a
route against R1-R6 with the default limits), all on the world given at start. Input schemas are the tools'
pydantic argument models; every result is the ToolResult contract (tools/contract.py) as structured content,
with `is_error` set when the tool did not succeed.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from pydantic import BaseModel, ConfigDict, Field

from ir.validation import validate_ir
from tools.catalog import default_registry
from tools.contract import ToolFailure, ToolOutput
from tools.registry import ToolRegistry, ToolSpec
from tools.verifier import WaypointArgs
from tools.world import World

SERVER_NAME = "cloudbrain"


def package_version() -> str:
    """The installed cloudbrain package's version, which the server reports to its clients."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(SERVER_NAME)
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


class ValidateIRArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ir: dict[str, Any] | str = Field(description="a LowAltitudeIR, the LLM answer envelope, or either as JSON text")


class VerifyTrajectoryArgs(WaypointArgs):
    goal: str | None = Field(default=None, description="entity id the route must reach; default: its last waypoint")
    deadline_sec: float | None = Field(default=None, gt=0, description="R4 needs it; without it R4 does not apply")


def _validate_ir(world: World, args: ValidateIRArgs) -> ToolOutput:
    report = validate_ir(args.ir, world, default_registry())
    result = report.model_dump(mode="json")
    if not report.valid:
        raise ToolFailure(
            report.error_type or "invalid",
            f"invalid at stage {report.stage}: {report.message}",
            recoverable=True,
            suggested_actions=[f"allowed: {', '.join(map(str, report.allowed))}"] if report.allowed else [],
            result=result,
        )
    return ToolOutput(result=result, warnings=report.warnings)


def _verify_trajectory(world: World, args: VerifyTrajectoryArgs) -> ToolOutput:
    verified = default_registry().call("verify_ltl_stl", world, args.model_dump(exclude_none=True))
    if not verified.ok and verified.error is not None:
        error = verified.error
        raise ToolFailure(
            error.type,
            error.message,
            recoverable=error.recoverable,
            suggested_actions=error.suggested_actions,
            result=verified.result,
            engine=verified.provenance.engine,
        )
    return ToolOutput(result=verified.result or {}, warnings=verified.warnings, engine=verified.provenance.engine)


def mcp_registry() -> ToolRegistry:
    """The catalog's tools, then the two checks an MCP client also gets."""
    catalog = default_registry()
    return ToolRegistry(
        [
            *(catalog.spec(name) for name in catalog.names()),
            ToolSpec(
                "validate_ir",
                "Run the layered validator (json, schema, grounding, tool dependencies, policy) on a LowAltitudeIR.",
                ValidateIRArgs,
                _validate_ir,
            ),
            ToolSpec(
                "verify_trajectory",
                "Check a 4D trajectory against rules R1-R6 (exact, STL via rtamt) with the default limits.",
                VerifyTrajectoryArgs,
                _verify_trajectory,
                needs=("plan_route",),
            ),
        ]
    )


def build_server(world: World, registry: ToolRegistry | None = None) -> Server[Any]:
    registry = registry or mcp_registry()
    tools = [
        types.Tool(name=entry["name"], description=entry["description"], input_schema=entry["args"])
        for entry in registry.describe()
    ]

    async def list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # The tools are CPU-bound and synchronous: a worker thread keeps the protocol loop answering.
        result = await anyio.to_thread.run_sync(partial(registry.call, params.name, world, params.arguments or {}))
        contract = result.model_dump(mode="json")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(contract, ensure_ascii=False))],
            structured_content=contract,
            is_error=not result.ok,
        )

    return Server(SERVER_NAME, version=package_version(), on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(world: World) -> None:
    server = build_server(world)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
