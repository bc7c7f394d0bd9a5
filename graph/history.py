"""Reading checkpointed runs from the store: trace, the checkpoint list, a state value (re-running them, replay and
fork, is graph/session.py's)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NamedTuple

import jsonpatch
from pydantic import BaseModel, Field

from graph.checkpoint import thread_config

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver


class TraceRound(BaseModel):
    round: int
    stage: str | None
    error_type: str | None
    counterexample: dict[str, Any] | None
    changes: list[str] = Field(description="the IR against the previous round's, one phrase per changed field")
    ir_diff: list[dict[str, Any]] = Field(description="the same change as a JSON patch")
    usage: dict[str, Any]


class TraceReport(BaseModel):
    thread_id: str
    checkpoint_id: str | None
    repair_rounds: int = Field(description="repair rounds used (nodes.attempts.repair_rounds), as `run` reports")
    rounds: list[TraceRound] = Field(description="every round that wrote an IR, round 0 (the first IR) included")
    final: dict[str, Any]


class CheckpointInfo(BaseModel):
    checkpoint_id: str
    step: int
    round: int = Field(description="the repair round the checkpoint is in (nodes.attempts.repair_rounds)")
    next: list[str]
    ran: list[str]


class UnknownRunError(LookupError):
    pass


class StoredState(NamedTuple):
    """A checkpoint as trace and the checkpoint list read it, straight from the store: no graph is built (building
    one imports every node and LangGraph's graph layer, seconds for a command that only reads). The fields mean
    what LangGraph's StateSnapshot's do, for this project's graphs (one node a step; test_graph_history checks the
    two agree on every checkpoint of executed, refused, interrupted, stepped, forked and replayed threads). One case
    reads differently: a latest checkpoint whose step was cut short after a node finished (the process killed
    between the node's end and the next checkpoint) reads here as before that node, where LangGraph applies the
    node's pending writes; replay and fork, which build the graph, see LangGraph's reading."""

    values: dict[str, Any]
    next: tuple[str, ...]
    interrupts: tuple[Any, ...]
    config: dict[str, Any]
    metadata: dict[str, Any]
    parent_config: dict[str, Any] | None


# The State's reducer channels (nodes/state.py): LangGraph shows them as [] before their first write; the store
# holds nothing for them until then (test_graph_history checks this list against the State's annotations).
AGGREGATE_CHANNELS = ("attempts", "tool_results")
START_CHANNEL = "__start__"
TRIGGER_PREFIX = "branch:to:"  # LangGraph's channel that schedules a node for the next step
INTERRUPT_CHANNEL = "__interrupt__"


def _stored_state(saved: Any) -> StoredState:
    channels = saved.checkpoint.get("channel_values") or {}
    values = {name: [] for name in AGGREGATE_CHANNELS} | {
        k: v for k, v in channels.items() if not k.startswith(("__", TRIGGER_PREFIX))
    }
    interrupts = tuple(
        interrupt
        for _task, channel, value in saved.pending_writes or []
        if channel == INTERRUPT_CHANNEL
        for interrupt in (value if isinstance(value, list | tuple) else [value])
    )
    if START_CHANNEL in channels:
        scheduled: tuple[str, ...] = (START_CHANNEL,)
    else:
        scheduled = tuple(k.removeprefix(TRIGGER_PREFIX) for k in channels if k.startswith(TRIGGER_PREFIX))
    return StoredState(values, scheduled, interrupts, saved.config, saved.metadata or {}, saved.parent_config)


def stored_state(saver: BaseCheckpointSaver, thread_id: str, checkpoint_id: str | None = None) -> StoredState:
    """A thread's latest checkpoint (or `checkpoint_id`), read from the store; UnknownRunError if none."""
    saved = saver.get_tuple(thread_config(thread_id, checkpoint_id))
    if saved is None:
        where = f"checkpoint {checkpoint_id} of " if checkpoint_id else ""
        raise UnknownRunError(f"no {where}thread {thread_id!r} in this database")
    return _stored_state(saved)


def stored_history(saver: BaseCheckpointSaver, thread_id: str) -> list[StoredState]:
    """Every checkpoint of a thread, newest first (as the store lists them)."""
    return [_stored_state(saved) for saved in saver.list(thread_config(thread_id))]


def state_values(saver: BaseCheckpointSaver, thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    """The state values of a thread's latest checkpoint (or of `checkpoint_id`); UnknownRunError if none."""
    return stored_state(saver, thread_id, checkpoint_id).values


# What a first IR is summed up by: the request as the model read it.
FIRST_IR_FIELDS = (
    ("entities", "origin"),
    ("entities", "destination"),
    ("entities", "waypoints"),
    ("entities", "candidate_uavs"),
    ("entities", "avoid_zones"),
    ("constraints", "deadline_sec"),
    ("constraints", "altitude_min_m"),
    ("constraints", "altitude_max_m"),
)


def _phrase(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str | dict | list) else str(value)


def _field_change(name: str, old: Any, new: Any) -> str:
    if isinstance(old, list | None) and isinstance(new, list | None) and (old or new):
        old, new = old or [], new or []
        if all(not isinstance(item, dict | list) for item in old + new):
            moves = [f"+{_phrase(x)}" for x in new if x not in old] + [f"-{_phrase(x)}" for x in old if x not in new]
            return f"{name} {' '.join(moves) or 'reordered'}"
        return f"{name} {len(old)} -> {len(new)} items" if len(old) != len(new) else f"{name} edited"
    if isinstance(old, dict) or isinstance(new, dict):
        return f"{name} edited"
    return f"{name} {_phrase(old)} -> {_phrase(new)}"


def ir_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The IR's change in words, one phrase per changed field ('constraints.altitude_min_m 60 -> 100',
    'entities.avoid_zones +"nfz_temp_1"'); a first IR (nothing before it) is summed up by FIRST_IR_FIELDS."""
    if not after:
        return []
    if not before:
        fields = [(f"{s}.{k}", (after.get(s) or {}).get(k)) for s, k in FIRST_IR_FIELDS]
        return [f"{name} {_phrase(value)}" for name, value in fields if value not in (None, [], "")]
    changes = []
    for section in dict.fromkeys([*before, *after]):
        old, new = before.get(section), after.get(section)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            changes += [
                _field_change(f"{section}.{key}", old.get(key), new.get(key))
                for key in dict.fromkeys([*old, *new])
                if old.get(key) != new.get(key)
            ]
        else:
            changes.append(_field_change(section, old, new))
    return changes


def trace(saver: BaseCheckpointSaver, thread_id: str, checkpoint_id: str | None = None) -> TraceReport:
    """Per round: the failing stage, error type, counterexample and the IR diff against the previous round."""
    from nodes.attempts import repair_rounds

    snapshot = stored_state(saver, thread_id, checkpoint_id)
    values = snapshot.values
    rounds, previous_ir = [], {}
    for attempt in values.get("attempts") or []:
        failure = attempt.get("failure") or {}
        ir = attempt.get("ir") or {}
        rounds.append(
            TraceRound(
                round=attempt["round"],
                stage=failure.get("stage"),
                error_type=failure.get("error_type"),
                counterexample=failure.get("counterexample"),
                changes=ir_changes(previous_ir, ir),
                ir_diff=list(jsonpatch.make_patch(previous_ir, ir)),
                usage=attempt.get("usage") or {},
            )
        )
        previous_ir = ir or previous_ir
    final = {
        "status": values.get("status"),
        "decision": values.get("decision"),
        "next": list(snapshot.next),
        "pending_interrupt": snapshot.interrupts[0].value if snapshot.interrupts else None,
    }
    return TraceReport(
        thread_id=thread_id,
        checkpoint_id=snapshot.config["configurable"].get("checkpoint_id"),
        repair_rounds=repair_rounds(values),
        rounds=rounds,
        final=final,
    )


def stored_run_config(saver: BaseCheckpointSaver, thread_id: str) -> dict[str, Any]:
    """The run_config a stored thread ran with (model, ablations, K, stress); UnknownRunError without the thread."""
    stored = saver.get_tuple(thread_config(thread_id))
    if stored is None:
        raise UnknownRunError(f"no thread {thread_id!r} in this store")
    return (stored.checkpoint.get("channel_values") or {}).get("run_config") or {}


def node_reads(node: str) -> tuple[str, ...]:
    """The state keys a node reads (its module's READS): what a stepper shows before the node runs."""
    from graph.builder import NODE_FUNCTIONS

    return getattr(sys.modules[NODE_FUNCTIONS[node].__module__], "READS", ())


def certificate_and_ir(values: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """(the decision's certificate, the IR of the run's last round, which the certificate binds) of a run's state."""
    from nodes.attempts import last_ir

    return (values.get("decision") or {}).get("certificate"), last_ir(values)


def checkpoints(saver: BaseCheckpointSaver, thread_id: str) -> list[CheckpointInfo]:
    """Every checkpoint of the thread, oldest first, with the node(s) that produced it."""
    from nodes.attempts import repair_rounds

    history = stored_history(saver, thread_id)
    if not history:
        raise UnknownRunError(f"no thread {thread_id!r} in this database")
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in history}
    infos = []
    for snap in reversed(history):
        parent_id = (snap.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        parent = by_id.get(parent_id)
        infos.append(
            CheckpointInfo(
                checkpoint_id=snap.config["configurable"]["checkpoint_id"],
                step=snap.metadata.get("step", -1),
                round=repair_rounds(snap.values),
                next=list(snap.next),
                ran=["edit"] if snap.metadata.get("source") == "update" else list(parent.next) if parent else [],
            )
        )
    return infos


class NoStateValue(LookupError):
    """A dotted path that leads to no state value; the message names what exists where the path left the state."""


def get_path(values: dict[str, Any], path: str) -> Any:
    """The value at a dotted PATH of a checkpoint's values ("ir.entities.avoid_zones", "attempts.0.ir"): what the
    stepper's `show PATH` and `cloudbrain show` print. NoStateValue names the keys (or indexes) that do exist."""
    node: Any = values
    walked: list[str] = []
    for key in path.split("."):
        try:
            node = node[int(key)] if isinstance(node, list) else node[key]
        except (KeyError, IndexError, ValueError, TypeError):
            where = ".".join(walked) or "the state"
            if isinstance(node, dict):
                there = f"has {', '.join(sorted(node)) or 'no keys'}"
            elif isinstance(node, list):
                there = f"has indexes 0..{len(node) - 1}" if node else "is an empty list"
            else:
                there = f"is {json.dumps(node, default=str)[:40]}, which has no parts"
            raise NoStateValue(f"no state value at {path!r}: {where} {there}") from None
        walked.append(key)
    return node
