"""The agent: `run`, `step` (one node at a time), `trace`, `checkpoints`, `show`, `replay`, `fork`, `graph`."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.common import EXIT_OK, CommandError, add_json_flag, add_server_format_options, add_world_arg, emit, open_world
from graph.checkpoint import DEFAULT_DB, CheckpointerError, display_name, is_postgres_url, open_checkpointer

if TYPE_CHECKING:
    from collections.abc import Iterator

    from langgraph.checkpoint.base import BaseCheckpointSaver

    from graph.history import TraceRound
    from graph.runner import RunOutput
    from graph.session import Session
    from graph.settings import RunSettings

EXIT_NOT_EXECUTED = 4  # the run ended in safe_refusal or human_confirm: a valid outcome, but not "execute"


# The commands this module registers, with their one-line help (cli/main.py lists them without importing more)
COMMANDS = {
    "run": "run the agent headless on one instruction",
    "step": "run the agent one node at a time (interactive)",
    "trace": "the repair trajectory of a checkpointed run",
    "checkpoints": "list a run's checkpoints (ids for replay / fork)",
    "show": "print a state value of a checkpointed run as JSON (e.g. its IR, for validate --ir)",
    "replay": "re-run a thread from a past checkpoint",
    "fork": "edit state at a past checkpoint and run on",
    "graph": "print the compiled graph as Mermaid",
}


def _add_run_args(p: argparse.ArgumentParser) -> None:
    add_world_arg(p)
    p.add_argument("--instruction", required=True, help="the operations request (untrusted text)")
    p.add_argument("--gold-ir", default=None, help="gold IR JSON file (what the `oracle` model answers)")
    p.add_argument("--task-id", default=None)
    _add_db_args(p, thread_required=False)
    add_agent_options(p)
    add_json_flag(p)


# Each agent option -> the RunSettings field it sets (graph/settings.py: its default and, where the option gives no
# help of its own, its help). Some flags are older than the settings' names (--stress, --seed, --qdrant-url);
# tests/unit/test_run_settings.py checks that every setting has its option, with the setting's default.
AGENT_OPTIONS = {
    "model": "model",
    "base_url": "base_url",
    "structured_output": "structured_output",
    "ir_format": "ir_format",
    "api_key": "api_key",
    "without": "without",
    "max_repairs": "max_repairs",
    "max_new_tokens": "max_new_tokens",
    "stress": "stress_level",
    "seed": "sim_seed",
    "stress_scenarios": "stress_scenarios",
    "top_k_cases": "top_k_cases",
    "memory_path": "memory_path",
    "qdrant_url": "memory_url",
}
MODEL_HELP = "local | local:full | openai:<model> | rules | oracle (default: %(default)s)"


def add_agent_options(p: argparse.ArgumentParser) -> None:
    """How the agent runs (run, step, ops): every RunSettings field, with the settings' defaults."""
    from graph.settings import RunSettings  # pydantic: loaded for the commands that run the agent, not for --help

    settings = RunSettings.model_fields

    def _default(setting: str) -> Any:
        return settings[setting].default

    p.add_argument("--model", default=_default("model"), help=MODEL_HELP)
    p.add_argument("--base-url", default=None, help="OpenAI-compatible server (or env OPENAI_BASE_URL)")
    add_server_format_options(p)
    p.add_argument("--api-key", default=None, help="API key (or env OPENAI_API_KEY)")
    p.add_argument("--without", default="", help=f"comma-separated: {settings['without'].description}")
    p.add_argument("--max-repairs", type=int, default=_default("max_repairs"), help="repair rounds K before fallback")
    p.add_argument(
        "--max-new-tokens", type=int, default=None, help="cap on every model answer (default: the backend's)"
    )
    p.add_argument(
        "--stress", choices=["low", "medium", "high"], default=_default("stress_level"), help="simulation stress level"
    )
    p.add_argument("--seed", type=int, default=_default("sim_seed"), help="seed of the first stress scenario")
    p.add_argument(
        "--stress-scenarios",
        type=int,
        default=_default("stress_scenarios"),
        help="stress scenarios the route must pass (seeds --seed, --seed + 1, ...; default %(default)s)",
    )
    p.add_argument(
        "--top-k-cases",
        type=int,
        default=_default("top_k_cases"),
        help=f"{settings['top_k_cases'].description} (default: %(default)s)",
    )
    add_memory_args(p)


def _add_db_args(p: argparse.ArgumentParser, *, thread_required: bool) -> None:
    add_db_arg(p)
    p.add_argument(
        "--thread",
        required=thread_required,
        default=None,
        help="thread id (a run's: run prints it)" if thread_required else "thread id (default: a new one)",
    )


def add_db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--db",
        "--checkpointer",
        dest="db",
        default=DEFAULT_DB,
        help="checkpoints: a SQLite file, or a postgres://user@host/db URL (default: %(default)s)",
    )


def add_memory_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--memory-path", default=None, help="embedded Qdrant folder (default: .cloudbrain/memory)")
    p.add_argument("--qdrant-url", default=None, help="Qdrant server URL (or env CLOUDBRAIN_QDRANT_URL)")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help=COMMANDS["run"])
    _add_run_args(p)
    p.set_defaults(run=run_agent)

    p = subparsers.add_parser("step", help=COMMANDS["step"])
    _add_run_args(p)
    p.set_defaults(run=run_step)

    p = subparsers.add_parser("trace", help=COMMANDS["trace"])
    _add_db_args(p, thread_required=True)
    p.add_argument("--checkpoint", default=None, help="trace the branch ending at this checkpoint")
    p.add_argument("--verbose", action="store_true", help="each round's counterexample and full IR patch too")
    add_json_flag(p)
    p.set_defaults(run=run_trace)

    p = subparsers.add_parser("checkpoints", help=COMMANDS["checkpoints"])
    _add_db_args(p, thread_required=True)
    add_json_flag(p)
    p.set_defaults(run=run_checkpoints)

    p = subparsers.add_parser("show", help=COMMANDS["show"])
    _add_db_args(p, thread_required=True)
    p.add_argument("--checkpoint", default=None, help="read this checkpoint (default: the thread's latest)")
    p.add_argument("path", metavar="PATH", help="dotted state path: ir, decision, attempts.0.ir, ir.entities, ...")
    add_json_flag(p)
    p.set_defaults(run=run_show)

    for name in ("replay", "fork"):
        p = subparsers.add_parser(name, help=COMMANDS[name])
        _add_db_args(p, thread_required=True)
        p.add_argument("--checkpoint", required=True)
        if name == "fork":
            p.add_argument(
                "--set",
                dest="sets",
                action="append",
                required=True,
                metavar="PATH=VALUE",
                help="e.g. ir.entities.avoid_zones='[\"nfz_temp_1\"]' (VALUE is JSON or a bare string)",
            )
        p.add_argument("--api-key", default=None)
        add_memory_args(p)
        add_json_flag(p)
        p.set_defaults(run=run_replay if name == "replay" else run_fork)

    p = subparsers.add_parser("graph", help=COMMANDS["graph"])
    p.add_argument("--without", default="")
    add_json_flag(p)
    p.set_defaults(run=run_graph)


def settings_from_args(args: argparse.Namespace, *, interactive: bool = False) -> RunSettings:
    """A new run's settings from the agent options (an unknown model, a bad K or ablation: one line, exit 2, before
    anything runs). A server URL given only by the environment (OPENAI_BASE_URL) is not stored: a replay reads its own
    environment, as before RunSettings."""
    from pydantic import ValidationError

    from graph.settings import RunSettings, settings_error

    values = {setting: getattr(args, option) for option, setting in AGENT_OPTIONS.items()}
    try:
        return RunSettings(**values, interactive=interactive)
    except ValidationError as exc:
        flags = {setting: "--" + option.replace("_", "-") for option, setting in AGENT_OPTIONS.items()}
        raise CommandError(settings_error(exc, flags)) from None


def this_process(args: argparse.Namespace) -> dict[str, Any]:
    """The settings a stored run takes from the command that replays or forks it: its secret and its memory."""
    return {"api_key": args.api_key, "memory_path": args.memory_path, "memory_url": args.qdrant_url}


def _gold(args: argparse.Namespace) -> dict[str, Any] | None:
    if not args.gold_ir:
        if args.model == "oracle":
            raise CommandError("--model oracle needs --gold-ir FILE (the gold IR it answers with)")
        return None
    from cli.common import read_json_file

    return read_json_file(args.gold_ir, "gold IR")


HEADLINES = {"execute": "EXECUTE", "human_confirm": "NEEDS AN OPERATOR", "safe_refusal": "REFUSED"}


def _route(flight: dict[str, Any]) -> str:
    return f" {flight['origin']} -> {flight['goal']}" if flight.get("origin") and flight.get("goal") else ""


def _render_run(out: RunOutput, world_path: str | None) -> str:
    """The outcome as a person reads it first: what will fly (or what blocked it and what to do), then the detail."""
    d = out.decision
    where = f"--db {out.db} --thread {out.thread_id}" if out.db else f"--thread {out.thread_id}"
    certificate = d.get("certificate") or {}
    lines = []
    if out.status == "execute":
        approved = " (operator approved)" if d.get("approved_by_operator") else ""
        members = certificate.get("members") or []
        if d.get("team"):  # a fleet mission: one line per member, no single route
            lines.append(
                f"EXECUTE: a team of {len(d['team'])} UAVs, the last lands at ETA {d.get('eta_sec')} s, "
                f"{d.get('energy_wh')} Wh in all{approved}"
            )
            flights = {(m["subtask_id"], m["certificate"]["trajectory"].get("uav_id")): m for m in members}
            for m in d["team"]:
                flight = (
                    (flights.get((m["subtask_id"], m["uav_id"])) or {}).get("certificate", {}).get("trajectory", {})
                )
                lines.append(
                    f"  {m['subtask_id']} ({m['role']}): {m['uav_id']} flies{_route(flight)} with {m['share_kg']:g} "
                    f"kg, ETA {m.get('eta_sec')} s, {len(m.get('waypoints') or [])} waypoints"
                )
        else:
            lines.append(
                f"EXECUTE: {d.get('uav_id')} flies{_route(certificate.get('trajectory') or {})}, ETA "
                f"{d.get('eta_sec')} s, {d.get('energy_wh')} Wh, {len(d.get('waypoints') or [])} waypoints{approved}"
            )
        checks = ["verified" if d.get("verified") else "NOT verified (verifier ablated)"]
        checks.append("simulated" if d.get("simulated") else "NOT simulated (simulator ablated)")
        # a team's scenarios are each member's (the same seeds for every member)
        simulations = certificate.get("simulations") or (
            members[0]["certificate"].get("simulations") if members else []
        )
        seeds = ", ".join(str(s["seed"]) for s in simulations)
        lines.append(
            f"  checks: {' and '.join(checks)}"
            + (f" ({len(simulations)} stress scenario(s), seeds {seeds})" if simulations else "")
            + f"; {out.rounds} repair round(s)"
        )
        if certificate:
            lines.append(
                f"  certificate: trajectory sha256 {certificate['digests']['trajectory_sha256'][:16]}...; re-check it: "
                f"cloudbrain certify {where} --world {world_path or 'WORLD.json'}"
            )
    else:
        lines.append(f"{HEADLINES[out.status]}: {d.get('reason', '')}")
        failure = out.failure or {}
        if failure.get("stage"):
            lines.append(f"  blocked at {failure['stage']}: {failure.get('message') or failure.get('error_type')}")
        if out.status == "human_confirm":
            lines.append(
                "  what you can do: decide on the proposal interactively (cloudbrain step), fork the run with an "
                f"edit (cloudbrain checkpoints {where}, then cloudbrain fork ... --set PATH=VALUE), or restate the "
                "request with what the reason names"
            )
        else:
            lines.append("  what you can do: change what the reason names (place, time, altitude, UAV) and ask again")
    if d.get("reason") and out.status == "execute":
        lines.append(f"reason: {d['reason']}")
    if out.explanation:
        lines.append(f"explanation: {out.explanation.get('text', '')}")
    lines.append(f"repair rounds: {out.rounds}   thread: {out.thread_id}   db: {out.db}   (cloudbrain trace {where})")
    if out.backend:
        b = out.backend
        lines.append(
            f"model: {b['model']} at {b['base_url']}, writes {b['ir_format']}, structured output {b['structured_output']}"
        )
    return "\n".join(lines)


def _with_backend(out: RunOutput, settings: RunSettings) -> RunOutput:
    """An OpenAI-compatible server's settled structured-output mode, for the output (the first call probes it)."""
    if not settings.model.startswith("openai:"):
        return out
    from models.openai_backend import settled_mode  # langchain-openai is heavy; only openai runs need it

    backend = {
        "model": settings.model,
        "base_url": settings.base_url,
        "ir_format": settings.ir_format,
        "structured_output": settled_mode(settings.model, settings.base_url, settings.structured_output),
    }
    return out.model_copy(update={"backend": backend})


@contextlib.contextmanager
def _stops_without_a_decision(thread_id: str) -> Iterator[None]:
    """A model backend that cannot answer (its server unreachable or failing, its runtime dead) is no decision of
    the agent's: the graph stops at the model call (models.base.LLMBackendUnavailable), nothing is recorded as a
    decision, and the command says so in one line (exit 2)."""
    from ir.failure import ComponentUnavailable
    from models.base import LLMBackendUnavailable

    try:
        yield
    except ComponentUnavailable as exc:
        what = "model backend " if isinstance(exc, LLMBackendUnavailable) else ""
        raise CommandError(f"{what}{exc} (no decision: the run stopped, thread {thread_id} records none)") from None


def _emit_run(out: RunOutput, as_json: bool, world_path: str | None = None) -> int:
    emit(out, as_json, _render_run(out, world_path))
    return EXIT_OK if out.status == "execute" else EXIT_NOT_EXECUTED


def run_agent(args: argparse.Namespace) -> int:
    from graph.runner import new_thread_id, run_task

    world = open_world(args.world)
    settings = settings_from_args(args)
    open_saver(args.db)  # a store that cannot be opened is one line, before anything runs
    thread_id = args.thread or new_thread_id()
    with _stops_without_a_decision(thread_id):
        out = run_task(
            world,
            args.instruction,
            context=settings.to_context(),
            thread_id=thread_id,
            db=args.db,
            task_id=args.task_id,
            gold_ir=_gold(args),
            world_path=args.world,
        )
    return _emit_run(_with_backend(out, settings), args.json, args.world)


def run_step(args: argparse.Namespace) -> int:
    from cli.stepper import Stepper
    from graph.runner import new_thread_id, summarise
    from graph.session import Session

    world = open_world(args.world)
    settings = settings_from_args(args, interactive=True)
    stepper = Stepper(
        session=Session(open_saver(args.db), settings.to_context()),
        world=world,
        instruction=args.instruction,
        thread_id=args.thread or new_thread_id(),
        task_id=args.task_id,
        gold_ir=_gold(args),
        world_path=args.world,
        db=display_name(args.db),
    )
    with _stops_without_a_decision(stepper.thread_id):
        # with --json stdout carries the one JSON object, so the dialogue goes to stderr
        values = stepper.loop(sys.stdin, sys.stderr if args.json else sys.stdout)
    if values is None:
        return EXIT_OK
    out = summarise(values, thread_id=stepper.thread_id, db=display_name(args.db))
    return _emit_run(_with_backend(out, settings), args.json, args.world)


def open_saver(target: str, *, existing: bool = False) -> BaseCheckpointSaver:
    """The checkpoint store; `existing` for a command that only reads a thread: a SQLite file that is not there is
    one line (exit 2), not an empty file made at the mistyped path."""
    if existing and not is_postgres_url(target) and not Path(target).is_file():
        raise CommandError(f"no checkpoint database at {target} (runs store theirs in --db, default {DEFAULT_DB})")
    try:
        return open_checkpointer(target)
    except CheckpointerError as exc:
        raise CommandError(str(exc)) from None


def stored_session(args: argparse.Namespace) -> Session:
    """A stored thread's session: its graph and settings from the run's own record, with this command's API key and
    memory (replay, fork)."""
    from pydantic import ValidationError

    from graph.history import UnknownRunError
    from graph.session import Session
    from graph.settings import settings_error

    try:
        return Session.of_thread(open_saver(args.db, existing=True), args.thread, **this_process(args))
    except UnknownRunError:
        raise CommandError(f"no thread {args.thread!r} in {display_name(args.db)}") from None
    except ValidationError as exc:
        raise CommandError(
            f"thread {args.thread!r} has stored settings this version cannot run: {settings_error(exc)}"
        ) from None


def _outcome_of_round(r: TraceRound) -> str:
    if not r.stage:
        return "passed"
    ce = r.counterexample or {}
    details = [
        f"{ce['violated_rule']}" if ce.get("violated_rule") else "",
        f"t={ce['time_sec']} s" if ce.get("time_sec") is not None else "",
        f"robustness {ce['robustness']}" if ce.get("robustness") is not None else "",
        f"{ce['offending_entity']}" if ce.get("offending_entity") else "",
        f"{ce['field']}={json.dumps(ce.get('value'), ensure_ascii=False)}" if ce.get("field") else "",
    ]
    detail = ", ".join(d for d in details if d)
    return f"failed at {r.stage}: {r.error_type}" + (f" ({detail})" if detail else "")


def _round_lines(r: TraceRound, verbose: bool, member_changes: list[str] | None = None) -> list[str]:
    """One line a round (what the IR said or changed, then what happened), then for a fleet mission one line per
    member that changed (inspector.members); with --verbose the counterexample and the IR's JSON patch under it."""
    if r.changes:
        said = ("wrote " if r.round == 0 else "changed ") + "; ".join(r.changes)
    else:
        said = "no IR" if r.round == 0 else "no IR change"
    lines = [f"round {r.round}: {said} => {_outcome_of_round(r)}"]
    lines += [f"  {change}" for change in member_changes or []]
    if verbose:
        if r.counterexample:
            lines.append(f"  counterexample: {json.dumps(r.counterexample, ensure_ascii=False)}")
        lines += [
            f"  ir {op['op']} {op['path']}: {json.dumps(op.get('value'), ensure_ascii=False)}" for op in r.ir_diff
        ]
    return lines


def run_trace(args: argparse.Namespace) -> int:
    from graph.history import UnknownRunError, state_values, trace
    from inspector.members import rounds_member_changes, team_rounds

    saver = open_saver(args.db, existing=True)
    try:  # read from the store: no graph built, so nothing of the agent's nodes is imported
        report = trace(saver, args.thread, args.checkpoint)
        teams = team_rounds(saver, args.thread, args.checkpoint)
        attempts = state_values(saver, args.thread, args.checkpoint).get("attempts") or []
    except UnknownRunError as exc:
        raise CommandError(f"{exc} ({display_name(args.db)})") from None
    members = rounds_member_changes(teams, attempts)  # a fleet mission's members, round against round; [] for one UAV
    lines = [f"thread {report.thread_id}: {report.repair_rounds} repair round(s)"]
    for r, member_changes in zip(report.rounds, members):
        lines += _round_lines(r, args.verbose, member_changes)
    final = report.final
    decision = final.get("decision") or {}
    if final.get("status"):
        lines.append(f"final: {final['status']} - {decision.get('reason', '')}")
    else:
        lines.append("final: no decision" + (f" (next: {', '.join(final['next'])})" if final.get("next") else ""))
    if certificate := decision.get("certificate"):
        lines += [
            f"certificate: trajectory sha256 {certificate['digests']['trajectory_sha256'][:16]}..., world sha256 "
            f"{certificate['digests']['world_sha256'][:16]}..., engines {json.dumps(certificate['engines'])}",
        ]
        # a fleet mission's own verdicts are its members' (its top-level ones are empty)
        for member in certificate.get("members") or []:
            own = member.get("certificate") or {}
            lines.append(
                f"  {member.get('subtask_id')} ({(own.get('trajectory') or {}).get('uav_id')}): {_margins(own)}"
            )
        if not certificate.get("members"):
            lines.append(f"  {_margins(certificate)}")
    payload = report.model_dump(mode="json")
    for traced, member_changes in zip(payload["rounds"], members):
        traced["member_changes"] = member_changes
    emit(payload, args.json, "\n".join(lines))
    return EXIT_OK


def _margins(certificate: dict) -> str:
    margins = ", ".join(
        f"{rule} {v.get('robustness')}" for rule, v in sorted((certificate.get("verdicts") or {}).items())
    )
    seeds = ", ".join(f"{s['seed']} ({s['stress_level']})" for s in certificate.get("simulations") or [])
    return f"margins: {margins}; simulated seeds: {seeds}"


def run_checkpoints(args: argparse.Namespace) -> int:
    from graph.history import UnknownRunError, checkpoints

    try:
        infos = checkpoints(open_saver(args.db, existing=True), args.thread)
    except UnknownRunError as exc:
        raise CommandError(f"{exc} ({display_name(args.db)})") from None
    lines = [
        f"{c.checkpoint_id}  step {c.step:>3}  round {c.round}  ran {','.join(c.ran) or '-':<14} next {','.join(c.next) or 'END'}"
        for c in infos
    ]
    emit({"checkpoints": [c.model_dump() for c in infos]}, args.json, "\n".join(lines))
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    """The value at PATH, as JSON: `cloudbrain show ... ir > ir.json` is what `validate --ir ir.json` reads."""
    from graph.history import NoStateValue, UnknownRunError, get_path, state_values

    try:
        value = get_path(state_values(open_saver(args.db, existing=True), args.thread, args.checkpoint), args.path)
    except (UnknownRunError, NoStateValue) as exc:
        raise CommandError(str(exc)) from None
    emit(value, args.json)  # indented JSON, or one line with --json: either is what `validate --ir` reads
    return EXIT_OK


def run_replay(args: argparse.Namespace) -> int:
    from graph.history import UnknownRunError, stored_run_config

    session = stored_session(args)
    try:
        with _stops_without_a_decision(args.thread):
            session.replay(args.thread, args.checkpoint)
    except UnknownRunError as exc:
        raise CommandError(str(exc)) from None
    out = session.outcome(args.thread, display_name(args.db))
    return _emit_run(out, args.json, stored_run_config(session.saver, args.thread).get("world_path"))


def run_fork(args: argparse.Namespace) -> int:
    from graph.history import UnknownRunError, stored_run_config
    from graph.session import EditError, parse_edit

    session = stored_session(args)
    try:
        edits = [parse_edit(item) for item in args.sets]
    except EditError as exc:
        raise CommandError(f"--set {exc}") from None
    try:
        with _stops_without_a_decision(args.thread):
            session.fork(args.thread, args.checkpoint, edits)
    except (UnknownRunError, ValueError) as exc:  # EditError: an edit refused, before anything is written
        raise CommandError(f"cannot fork: {exc}") from None
    out = session.outcome(args.thread, display_name(args.db))
    return _emit_run(out, args.json, stored_run_config(session.saver, args.thread).get("world_path"))


def run_graph(args: argparse.Namespace) -> int:
    from graph.builder import AblationError, build_graph

    try:
        graph = build_graph(args.without)
    except AblationError as exc:
        raise CommandError(str(exc)) from None
    if args.json:  # the same nodes and edges as the drawing
        drawable = _drawable(graph)
        edges = [{"source": e.source, "target": e.target, "conditional": e.conditional} for e in drawable.edges]
        emit({"nodes": list(drawable.nodes), "edges": edges}, True)
        return EXIT_OK
    print(mermaid(graph))
    return EXIT_OK


def mermaid(graph: Any) -> str:
    """The compiled graph as Mermaid, without LangGraph's per-node error-handler nodes (they all lead to
    fallback, which a comment line says once)."""
    return (
        _drawable(graph).draw_mermaid() + "%% every node: an error that survives its retry policy routes to fallback\n"
    )


def _drawable(graph: Any) -> Any:
    """The compiled graph's drawable form without LangGraph's per-node error-handler nodes."""
    drawable = graph.get_graph()
    hidden = {node for node in drawable.nodes if node.startswith("__error_handler__")}
    for node in hidden:
        drawable.nodes.pop(node)
    drawable.edges = [e for e in drawable.edges if e.source not in hidden and e.target not in hidden]
    return drawable
