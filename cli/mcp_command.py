"""`cloudbrain mcp`: the command; the server itself (MCP, anyio, the tool catalog) is cli/mcp_server.py, imported
when the command runs."""

from __future__ import annotations

import argparse

from cli.common import EXIT_OK, add_world_arg, open_world

# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "mcp": "serve the tools over MCP (stdio) on one world",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("mcp", help=COMMANDS["mcp"])
    add_world_arg(p)
    p.set_defaults(run=run_mcp)


def run_mcp(args: argparse.Namespace) -> int:
    import anyio

    from cli.mcp_server import serve_stdio

    anyio.run(serve_stdio, open_world(args.world))
    return EXIT_OK
