"""`cloudbrain mcp`: an MCP client (the `mcp` package's own, over stdio) lists the ten tools with their pydantic
schemas and calls plan_route, verify_ltl_stl and validate_ir on the downtown example; results are ToolResults."""

from __future__ import annotations

import os
import sys
from importlib.metadata import version

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.support.ir_fixtures import GOOD_IR
from tests.support.paths import DOWNTOWN, ROOT
from tools.catalog import default_registry
from tools.contract import ToolResult


def _server() -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "mcp", "--world", str(DOWNTOWN)], env=env, cwd=str(ROOT)
    )


async def _session() -> dict:
    async with Client(_server(), read_timeout_seconds=120) as client:
        server = client.server_info
        listed = await client.list_tools()
        planned = await client.call_tool(
            "plan_route",
            {"start": "hospital_A", "goal": "accident_site_3", "avoid_zones": ["nfz_temp_1", "school_zone_2"]},
        )
        route = ToolResult.model_validate(planned.structured_content)
        verified = await client.call_tool(
            "verify_ltl_stl",
            {
                "waypoints": route.result["waypoints"],
                "uav_id": "uav_03",
                "goal": "accident_site_3",
                "deadline_sec": 600,
                "ltl": ["G !in_nfz_temp_1", "F at_goal"],
            },
        )
        through = await client.call_tool(
            "verify_trajectory", {"waypoints": [[100, 300, 60, 0], [600, 300, 60, 60]], "uav_id": "uav_03"}
        )
        invalid = await client.call_tool("validate_ir", {"ir": {**GOOD_IR, "task_id": 7}})
        valid = await client.call_tool("validate_ir", {"ir": GOOD_IR})
        unknown = await client.call_tool("fly_anywhere", {})
        return {
            "server": server,
            "listed": listed,
            "route": (planned, route),
            "verified": verified,
            "through": through,
            "validations": (invalid, valid),
            "unknown": unknown,
        }


def test_an_mcp_client_lists_and_calls_the_tools():
    seen = anyio.run(_session)
    # the server names itself with the installed package's version (it reported an empty one)
    assert seen["server"].name == "cloudbrain" and seen["server"].version == version("cloudbrain") != ""
    tools = {tool.name: tool for tool in seen["listed"].tools}
    catalog = default_registry()
    assert set(tools) == {*catalog.names(), "validate_ir", "verify_trajectory"} and len(tools) == 10
    assert tools["plan_route"].input_schema == catalog.spec("plan_route").args_schema()

    planned, route = seen["route"]
    assert not planned.is_error and route.ok and route.tool == "plan_route" and len(route.result["waypoints"]) >= 2

    verified = ToolResult.model_validate(seen["verified"].structured_content)
    assert (
        verified.ok
        and verified.result["pass"]
        and verified.result["engine"]["ltl"] in ("spot", "fallback-lasso-trace+exact-backward-sat")
    )
    assert {"R1", "R4", "R5"} <= set(verified.result["rules"])

    through = ToolResult.model_validate(seen["through"].structured_content)
    assert seen["through"].is_error and not through.ok and through.error.type == "spec_violation"
    assert through.result["rules"]["R1"]["status"] == "fail"

    invalid, valid = (ToolResult.model_validate(r.structured_content) for r in seen["validations"])
    assert not invalid.ok and invalid.error.type and invalid.result["stage"] == "schema"
    assert valid.ok and valid.result["valid"]

    unknown = ToolResult.model_validate(seen["unknown"].structured_content)
    assert seen["unknown"].is_error and unknown.error.type == "unknown_tool"
