"""`cloudbrain ui` (the offline web inspector) and `cloudbrain render` (one run's map as SVG or PNG)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from cli.common import EXIT_OK, CommandError, add_json_flag, add_world_arg, emit, open_world, read_json_file
from graph.checkpoint import display_name

LOOPBACK = "127.0.0.1"


# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "ui": "the offline web inspector of runs, checkpoints and bench results",
    "render": "draw one run's map (the world, the decision's route, its counterexample)",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    from cli.agent import add_db_arg, add_memory_args
    from graph.settings import RunSettings

    p = subparsers.add_parser("ui", help=COMMANDS["ui"])
    add_db_arg(p)
    p.add_argument("--results", default=None, help="a `bench run` results folder to browse")
    p.add_argument("--world", default=None, help="world file a new stepped run flies over")
    p.add_argument(
        "--model",
        default=RunSettings.model_fields["model"].default,
        help="model of stepped runs (a fork runs its thread's own; default %(default)s)",
    )
    p.add_argument("--base-url", default=None, help="OpenAI-compatible server (or env OPENAI_BASE_URL)")
    p.add_argument("--api-key", default=None, help="API key (or env OPENAI_API_KEY)")
    p.add_argument("--host", default=LOOPBACK, help="address to bind (default %(default)s: this machine only)")
    p.add_argument("--port", type=int, default=8765)
    add_memory_args(p)
    p.set_defaults(run=run_ui)

    p = subparsers.add_parser("render", help=COMMANDS["render"])
    p.add_argument("--run", dest="run_file", required=True, help="a `cloudbrain run --json` output")
    add_world_arg(p)
    p.add_argument("--out", required=True, help="F.svg or F.png")
    add_json_flag(p)
    p.set_defaults(run=run_render)


def run_ui(args: argparse.Namespace) -> int:
    import uvicorn
    from pydantic import ValidationError

    from cli.agent import open_saver
    from graph.settings import RunSettings, settings_error
    from inspector.app import LOCAL_HOSTS, create_app

    results = Path(args.results) if args.results else None
    if results is not None and not (results / "results.sqlite").exists():
        raise CommandError(f"{results} is not a bench results folder (no results.sqlite)")
    try:
        settings = RunSettings(
            model=args.model,
            # The server the API key goes to is this command's (--base-url or the environment), never one a stored
            # thread names (inspector.app.OWN_SETTINGS).
            base_url=args.base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=args.api_key,
            memory_path=args.memory_path,
            memory_url=args.qdrant_url,
        )
    except ValidationError as exc:
        raise CommandError(settings_error(exc, {"model": "--model"})) from None
    app = create_app(
        open_saver(args.db),
        settings=settings,
        world=open_world(args.world) if args.world else None,
        results=results,
        store_name=display_name(args.db),
        allowed_hosts=None if args.host == LOOPBACK else [args.host, *LOCAL_HOSTS],
    )
    if args.host != LOOPBACK:
        print(
            f"warning: --host {args.host} lets other machines step and fork runs with this model's key", file=sys.stderr
        )
    print(f"CloudBrain inspector on http://{args.host}:{args.port}/ (checkpoints: {display_name(args.db)})")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return EXIT_OK


def run_render(args: argparse.Namespace) -> int:
    from drawing import Route, map_png, map_svg, marker_from_counterexample

    world = open_world(args.world)
    run: dict[str, Any] = read_json_file(args.run_file, "run")
    if not isinstance(run, dict) or "decision" not in run:
        raise CommandError(f"{args.run_file} is not a `cloudbrain run --json` output (no decision)")
    decision = run.get("decision") or {}
    routes = (
        [Route(label="decision", waypoints=decision["waypoints"], uav_id=decision.get("uav_id"))]
        if decision.get("waypoints")
        else []
    )
    counterexample = (run.get("failure") or {}).get("counterexample") or {}
    markers = [m for m in [marker_from_counterexample(counterexample, world)] if m]
    out = Path(args.out)
    title = f"{run.get('thread_id', '')}: {run.get('status', '')}"
    if out.suffix.lower() == ".png":
        map_png(world, routes, markers, path=out, title=title)
    elif out.suffix.lower() == ".svg":
        out.write_text(map_svg(world, routes, markers, title=title), encoding="utf-8")
    else:
        raise CommandError(f"--out must end in .svg or .png, not {out.suffix or 'nothing'}")
    emit({"written": str(out)}, args.json, f"wrote {out}")
    return EXIT_OK
