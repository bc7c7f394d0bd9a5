"""What the inspector shows, read from a checkpoint store or a bench results folder: plain view models, no web.

Threads come from the checkpointer (SQLite file or PostgreSQL), each thread's rounds from its attempt records
(the route plan_route returned, the counterexample the round failed on, the IR change against the round before),
bench runs from `results.sqlite` / `traces.jsonl` of a `bench run` folder with the samples they ran on.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import BaseModel, Field, ValidationError

from drawing import Marker, Route, decision_routes, marker_from_counterexample
from evaluation.runner import CONFIG_FILE, samples_file
from evaluation.store import load_records, read_sample, read_trace, run_key
from graph.history import UnknownRunError, certificate_and_ir, checkpoints, state_values, trace
from graph.session import parse_edit
from inspector.members import Member, decision_members, plans_team, rounds_member_changes, team_rounds, waypoint_rows
from tools.certificate import SafetyCertificate, check_certificate
from tools.rules import DEFAULT_ALTITUDE_MAX_M, DEFAULT_ALTITUDE_MIN_M
from tools.world import parse_world


class ThreadRow(BaseModel):
    thread_id: str
    instruction: str = ""
    status: str | None = None
    rounds: int = 0
    model: str = ""
    updated: str = Field(default="", description="time of the thread's newest checkpoint (ISO 8601)")


class RoundView(BaseModel):
    round: int
    route: Route | None = None
    marker: Marker | None = None
    stage: str | None = None
    error_type: str | None = None
    counterexample: dict[str, Any] | None = None
    changes: list[str] = Field(default_factory=list)
    member_changes: list[str] = Field(
        default_factory=list, description="a team round: per member, what changed against the last team planned"
    )


class TeamMemberView(BaseModel):
    """One member of the team the thread page draws: its route (labelled by sub-task and role, with its UAV) and
    the numbers its legend row gives."""

    route: Route
    subtask_id: str
    role: str
    uav_id: str
    depart_sec: float | None = None
    eta_sec: float | None = None
    share_kg: float | None = None


class ThreadView(BaseModel):
    thread_id: str
    instruction: str
    status: str | None
    decision: dict[str, Any]
    world: dict[str, Any]
    rounds: list[RoundView]
    repair_rounds: int = Field(default=0, description="nodes.attempts.repair_rounds: what run, trace and step report")
    final_route: Route | None
    members: list[TeamMemberView] = Field(
        default_factory=list,
        description="a fleet mission: the team decision's members, else the last team a round planned",
    )
    members_planned_in: int | None = Field(
        default=None, description="the round whose plan `members` shows when no team decision carries them"
    )
    altitude_band: tuple[float, float]
    next_nodes: list[str] = Field(default_factory=list)
    pending: Any = Field(default=None, description="the operator's question when the run waits at an interrupt")
    certificate: dict[str, Any] | None = None
    certified_ir: dict[str, Any] | None = Field(default=None, description="the IR the certificate binds")
    certificate_readable: bool = Field(
        default=False, description="the certificate parses as one (not tampered into junk)"
    )


def list_threads(saver: BaseCheckpointSaver, *, status: str | None = None, limit: int = 500) -> list[ThreadRow]:
    """Every thread of the store, newest first (one row each, from its newest checkpoint)."""
    newest: dict[str, Any] = {}
    for stored in saver.list(None):
        thread_id = stored.config["configurable"]["thread_id"]
        current = newest.get(thread_id)
        if current is None or stored.checkpoint["ts"] > current.checkpoint["ts"]:
            newest[thread_id] = stored
    rows = [_thread_row(thread_id, stored) for thread_id, stored in newest.items()]
    rows = [row for row in rows if status in (None, "", row.status)]
    return sorted(rows, key=lambda row: row.updated, reverse=True)[:limit]


WAITING = "waiting for operator"  # an interactive run paused at fallback's interrupt()
INTERRUPT_CHANNEL = "__interrupt__"  # the pending write an interrupt() leaves (langgraph keeps its constant private)


def _thread_row(thread_id: str, stored: Any) -> ThreadRow:
    values = stored.checkpoint.get("channel_values") or {}
    waiting = any(write[1] == INTERRUPT_CHANNEL for write in stored.pending_writes or [])
    return ThreadRow(
        thread_id=thread_id,
        instruction=str(values.get("instruction") or ""),
        status=WAITING if waiting else values.get("status"),
        rounds=len(values.get("attempts") or []),
        model=str((values.get("run_config") or {}).get("model") or ""),
        updated=_iso(stored.checkpoint.get("ts")),
    )


def _iso(ts: Any) -> str:
    try:
        return datetime.fromisoformat(str(ts)).isoformat(timespec="seconds")
    except ValueError:
        return str(ts or "")


def _planned(tool_results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The result of the round's last successful plan_route call."""
    plans = [r for r in tool_results if r.get("tool") == "plan_route" and r.get("ok") and r.get("result")]
    return plans[-1]["result"] if plans else None


def planned_waypoints(tool_results: list[dict[str, Any]]) -> list[list[float]]:
    return ((_planned(tool_results) or {}).get("waypoints")) or []


def _route_of(tool_results: list[dict[str, Any]], label: str) -> Route | None:
    result = _planned(tool_results)
    if not result or not result.get("waypoints"):
        return None
    return Route(label=label, waypoints=result["waypoints"], uav_id=result.get("uav_id"))


def thread_view(saver: BaseCheckpointSaver, thread_id: str, checkpoint_id: str | None = None) -> ThreadView:
    report = trace(saver, thread_id, checkpoint_id)
    values = state_values(saver, thread_id, checkpoint_id)
    if not isinstance(values.get("world"), dict):
        raise UnknownRunError(f"thread {thread_id!r} holds no run at this checkpoint (it comes before the input)")
    world = parse_world(values["world"])
    rounds = []
    attempts = values.get("attempts") or []
    teams = team_rounds(saver, thread_id, checkpoint_id)
    for attempt, traced, member_lines in zip(attempts, report.rounds, rounds_member_changes(teams, attempts)):
        counterexample = traced.counterexample or {}
        rounds.append(
            RoundView(
                round=traced.round,
                # a team round's plan_route results are its members' routes, none of which is the round's
                route=None
                if plans_team(attempt)
                else _route_of(attempt.get("tool_results") or [], f"round {traced.round}"),
                marker=marker_from_counterexample(counterexample, world) if counterexample else None,
                stage=traced.stage,
                error_type=traced.error_type,
                counterexample=counterexample or None,
                changes=traced.changes,
                member_changes=member_lines,
            )
        )
    decision = values.get("decision") if isinstance(values.get("decision"), dict) else {}
    members, planned_in = _team_drawn(decision, attempts, teams)
    certificate, certified_ir = certificate_and_ir(values)
    return ThreadView(
        thread_id=thread_id,
        repair_rounds=report.repair_rounds,
        instruction=str(values.get("instruction") or ""),
        status=values.get("status"),
        decision=decision,
        world=values["world"],
        rounds=rounds,
        # a team decision's own route is empty (its members fly): drawn, it would be an empty legend row
        final_route=_route(decision, "decision", style="dashed") if not decision.get("team") else None,
        members=members,
        members_planned_in=planned_in,
        altitude_band=_band(values.get("ir")),
        next_nodes=list(report.final.get("next") or []),
        pending=report.final.get("pending_interrupt"),
        certificate=certificate if isinstance(certificate, dict) else None,
        certificate_readable=_is_certificate(certificate),
        certified_ir=certified_ir,
    )


def _route(decision: dict[str, Any], label: str, style: str = "solid") -> Route | None:
    """The decision's route to draw, None when it has none a map can hold (an edited state may hold anything)."""
    try:
        return Route(label=label, waypoints=decision["waypoints"], uav_id=decision.get("uav_id"), style=style)
    except (KeyError, TypeError, ValidationError):
        return None


def _team_drawn(
    decision: dict[str, Any], attempts: list[Any], teams: list[list[Member] | None]
) -> tuple[list[TeamMemberView], int | None]:
    """The team to draw: the decision's members (with their ETA and share), else the last round's that planned
    one (a team run that ended with the operator or a refusal), with that round's number."""
    team = decision.get("team") if isinstance(decision.get("team"), list) else []
    entries = {(e.get("subtask_id"), e.get("uav_id")): e for e in team if isinstance(e, dict)}
    if members := decision_members(decision):
        return [_member_view(m, m.subtask_id, entries[m.subtask_id, m.uav_id]) for m in members], None
    for i, (attempt, team) in reversed(list(enumerate(zip(attempts, teams)))):
        if planned := [m for m in team or [] if m.waypoints]:
            number = attempt.get("round", i)
            return [_member_view(m, f"round {number} {m.subtask_id}", {}) for m in planned], number
    return [], None


def _member_view(member: Member, label: str, entry: dict[str, Any]) -> TeamMemberView:
    def number(key: str) -> float | None:
        value = entry.get(key)
        return float(value) if isinstance(value, int | float) and math.isfinite(value) else None

    return TeamMemberView(
        # the map's legend reads "t1 deliver (uav_01)": sub-task, role and UAV
        route=Route(
            label=f"{label} {member.role}".rstrip(), waypoints=[list(w) for w in member.waypoints], uav_id=member.uav_id
        ),
        subtask_id=member.subtask_id,
        role=member.role,
        uav_id=member.uav_id,
        depart_sec=member.depart_sec,
        eta_sec=number("eta_sec"),
        share_kg=number("share_kg"),
    )


def _band(ir: Any) -> tuple[float, float]:
    """The IR's altitude band, the defaults where it gives none that is a pair of finite numbers."""
    try:
        constraints = ir["constraints"]
        band = (float(constraints["altitude_min_m"]), float(constraints["altitude_max_m"]))
        return band if all(map(math.isfinite, band)) else (DEFAULT_ALTITUDE_MIN_M, DEFAULT_ALTITUDE_MAX_M)
    except (KeyError, TypeError, ValueError):
        return DEFAULT_ALTITUDE_MIN_M, DEFAULT_ALTITUDE_MAX_M


def _is_certificate(document: Any) -> bool:
    try:
        SafetyCertificate.model_validate(document)
    except ValidationError:
        return False
    return True


def thread_checkpoints(saver: BaseCheckpointSaver, thread_id: str) -> list[dict[str, Any]]:
    return [info.model_dump() for info in checkpoints(saver, thread_id)]


def checkpoint_state(saver: BaseCheckpointSaver, thread_id: str, checkpoint_id: str) -> dict[str, Any]:
    return dict(state_values(saver, thread_id, checkpoint_id))


def parse_edits(text: str) -> list[tuple[str, str]]:
    """PATH=VALUE lines (blank lines skipped), as graph.session.parse_edit reads each; EditError names a bad one."""
    return [parse_edit(line) for line in text.splitlines() if line.strip()]


def recheck(view: ThreadView) -> dict[str, Any]:
    """The decision's certificate re-checked against the thread's world and the IR it binds (`certify --db`), and
    against the decision it stands beside (the route shown must be the route certified)."""
    if view.certificate is None:
        return {"valid": False, "differences": ["this decision carries no certificate (only an execute does)"]}
    try:
        certificate = SafetyCertificate.model_validate(view.certificate)
    except ValidationError as exc:
        return {"valid": False, "differences": [f"not a certificate: {exc.errors()[0]['msg']}"]}
    check = check_certificate(certificate, parse_world(view.world), view.certified_ir).model_dump(mode="json")
    certified = certificate.trajectory
    if (view.decision.get("uav_id"), view.decision.get("waypoints")) != (certified.uav_id, certified.waypoints):
        check["valid"] = False
        check["differences"].append("the decision's UAV or route is not the one the certificate certifies")
    flown = [(m.subtask_id, m.uav_id, m.waypoints) for m in decision_members(view.decision)]
    members = certificate.members or []
    if flown != [
        (m.subtask_id, m.certificate.trajectory.uav_id, waypoint_rows(m.certificate.trajectory.waypoints))
        for m in members
    ]:
        check["valid"] = False
        check["differences"].append("the team's members, UAVs or routes are not the ones the certificate certifies")
    return check


# --- bench results ----------------------------------------------------------------------------------------------
class BenchRow(BaseModel):
    run_key: str
    sample_id: str
    method: str
    model: str
    split: str
    status: str
    label: str
    judged_success: bool
    right_place: bool | None
    relaxed: bool = Field(description="an execute that drops a constraint the request states")
    violations: list[str] = Field(default_factory=list)


BENCH_FILTERS = ("method", "model", "split", "status", "judged_success", "right_place", "relaxed")


def bench_rows(results: Path, filters: dict[str, str] | None = None) -> list[BenchRow]:
    rows = [
        BenchRow(
            run_key=run_key(r.method, r.model, r.sample_id, r.repeat, r.variant),
            sample_id=r.sample_id,
            method=r.method,
            model=r.model,
            split=r.split,
            status=r.status,
            label=r.label,
            judged_success=r.judged_success,
            right_place=r.right_place,
            relaxed=r.status == "execute" and r.stated_kept is False,
            violations=r.judged_violations,
        )
        for r in load_records(results, variant=None)
    ]
    wanted = {key: value for key, value in (filters or {}).items() if key in BENCH_FILTERS and value}
    return [row for row in rows if all(str(getattr(row, key)).lower() == v.lower() for key, v in wanted.items())]


class BenchRunView(BaseModel):
    row: BenchRow
    instruction: str
    world: dict[str, Any]
    decision: dict[str, Any]
    judgement: dict[str, Any]
    routes: list[Route] = Field(description="the method's route, or each member's (a team), solid")
    gold_routes: list[Route] = Field(description="the gold decision's route, or each member's, dashed")


def bench_run(results: Path, key: str) -> BenchRunView:
    """One run of a results folder: its decision and judgement (traces.jsonl) on its sample (the run's data file)."""
    row = next((r for r in bench_rows(results) if r.run_key == key), None)
    if row is None:
        raise UnknownRunError(f"no run {key!r} in {results}")
    trace_line = _trace(results, key)
    sample = _sample(results, row.sample_id)
    decision = trace_line.get("decision") or {}
    gold = sample.get("gold_decision") or {}
    return BenchRunView(
        row=row,
        instruction=str((sample.get("instruction") or {}).get(_language(results)) or ""),
        world=sample["world"],
        decision=decision,
        judgement=trace_line.get("judgement") or {},
        routes=decision_routes(decision, row.method, "solid"),
        gold_routes=decision_routes(gold, "gold", "dashed"),
    )


def _language(results: Path) -> str:
    """The language the folder's runs read their requests in."""
    return str(json.loads((results / CONFIG_FILE).read_text(encoding="utf-8")).get("language") or "en")


def _trace(results: Path, key: str) -> dict[str, Any]:
    found = read_trace(results, key)
    if found is None:
        raise UnknownRunError(f"run {key!r} has no trace in {results}")
    return found


def _sample(results: Path, sample_id: str) -> dict[str, Any]:
    samples = samples_file(results)
    found = read_sample(samples, sample_id)
    if found is None:
        raise UnknownRunError(f"no sample {sample_id!r} in {samples}")
    return found


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)
