"""One way to start, step, edit, fork and replay a run: `Session`, a compiled graph over a checkpoint store.

Every front end goes through it (the CLI's run, step, replay and fork; the inspector; the bench through
graph.runner): the graph's input is built in one place (`graph_input`), and state edits are applied in one place
(`state_update`), with the same guards for all of them: known State keys only, the keys only the nodes write
refused, JSON values only (no NaN or infinity), and a list the graph appends to replaced whole (`override`), never
appended to. The runtime Context comes from graph.settings.RunSettings; graph/history.py reads the store.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from typing import TYPE_CHECKING, Any, get_type_hints

from langgraph.types import Command

from graph.builder import build_graph, enabled_nodes, parse_without
from graph.checkpoint import thread_config
from graph.history import UnknownRunError, checkpoints, stored_run_config, stored_state
from graph.settings import RunSettings
from nodes.state import InputState, State, override, override_reducer

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import StateSnapshot

    from graph.history import CheckpointInfo
    from graph.runner import RunOutput
    from nodes.context import Context
    from tools.world import World


@functools.lru_cache(maxsize=16)
def compiled_graph(without: frozenset[str], saver: BaseCheckpointSaver, stepping: bool = False) -> CompiledStateGraph:
    """One compiled graph per ablation set and saver (`stepping`: paused before every node): compiling costs ~30 ms,
    more than a whole oracle-model task's graph overhead, and a compiled graph serves any number of threads."""
    return build_graph(without, checkpointer=saver, interrupt_before=enabled_nodes(without) if stepping else None)


def graph_input(
    world: World,
    instruction: str,
    *,
    settings: RunSettings,
    task_id: str,
    gold_ir: dict[str, Any] | None = None,
    scenario_type: str = "",
    world_path: str | None = None,
) -> dict[str, Any]:
    """The graph's input (nodes.state.InputState): the request, the world, and the settings stored with the run."""
    return {
        "instruction": instruction,
        "world": world.model_dump(mode="json"),
        "task_id": task_id,
        "gold_ir": gold_ir,
        "run_config": settings.stored(world_path),
        "scenario_type": scenario_type,
    }


# --- state edits ------------------------------------------------------------------------------------------------
class EditError(ValueError):
    """An edit refused, with the reason (shown to the operator; nothing is written)."""


NOT_EDITABLE = {
    "attempts": "the rounds' record is appended by the nodes, not edited",
    "run_config": "the run's settings (model, server) are not edited here",
}


def parse_edit(text: str) -> tuple[str, str]:
    """PATH=VALUE as (path, raw value): a path of dotted keys and indexes, a value in JSON or a bare string."""
    path, sep, raw = text.strip().partition("=")
    path = path.strip()
    if not sep or not path or "" in path.split("."):
        raise EditError(f"{text.strip()!r} is not PATH=VALUE")
    return path, raw.strip()


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise EditError(f"{text} is not a number a state may hold")
    return number


def _not_a_number(name: str) -> Any:
    raise EditError(f"{name} is not a number a state may hold")


def edit_value(raw: str) -> Any:
    """VALUE as JSON, else as the bare string; NaN and the infinities are refused (a state holds JSON)."""
    try:
        value = json.loads(raw, parse_constant=_not_a_number, parse_float=_finite)
    except json.JSONDecodeError:
        value = raw
    if isinstance(value, str):  # "inf" or "nan" as a string: pydantic would read it as that number
        try:
            number = float(value)
        except ValueError:
            return value
        if not math.isfinite(number):
            raise EditError(f"{value} is not a number a state may hold")
    return value


def set_path(values: dict[str, Any], path: str, raw_value: str) -> tuple[str, Any]:
    """Apply PATH=VALUE to a copy of the state's values; returns (top key, its new value). EditError for a path the
    values cannot take."""
    value = edit_value(raw_value)
    keys = path.split(".")
    top = keys[0]
    if len(keys) == 1:
        return top, value
    root = copy.deepcopy(values.get(top))
    if not isinstance(root, dict | list):
        raise EditError(f"{top} is not an object in this checkpoint")
    try:
        node = root
        for key in keys[1:-1]:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if isinstance(node, list):
            node[int(keys[-1])] = value
        else:
            node[keys[-1]] = value
    except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
        raise EditError(f"{path}: {exc}") from None
    return top, root


def _replaced_whole() -> frozenset[str]:
    """The State's list channels that grow by appending (override_reducer): an edit replaces them instead."""
    hints = get_type_hints(State, include_extras=True)
    return frozenset(key for key, hint in hints.items() if override_reducer in getattr(hint, "__metadata__", ()))


def state_update(values: dict[str, Any], edits: list[tuple[str, str]]) -> dict[str, Any]:
    """The state update that (PATH, VALUE) edits make on `values`: only keys of the State, none that the nodes alone
    write, and a list the graph appends to replaced whole (`override`)."""
    known = get_type_hints(State)
    replaced_whole = _replaced_whole()
    update: dict[str, Any] = {}
    current = dict(values)
    for path, raw in edits:
        top = path.split(".")[0]
        if top not in known:
            raise EditError(f"{top!r} is not a field of the state")
        if top in NOT_EDITABLE:
            raise EditError(f"{top}: {NOT_EDITABLE[top]}")
        top, value = set_path(current, path, raw)
        current[top] = value
        update[top] = value
    return {key: override(value) if key in replaced_whole else value for key, value in update.items()}


def last_node(graph: CompiledStateGraph, config: dict[str, Any]) -> str | None:
    """The node whose write produced the checkpoint (None at the run's input). An operator's edit is written as that
    same node, so an edited checkpoint is looked through to the node's own one: two edits in a row keep the
    pending node pending."""
    snapshot = graph.get_state(config)
    while snapshot.metadata.get("source") == "update" and snapshot.parent_config:
        snapshot = graph.get_state(snapshot.parent_config)
    parent = graph.get_state(snapshot.parent_config) if snapshot.parent_config else None
    return parent.next[0] if parent and parent.next else None


# --- the session ------------------------------------------------------------------------------------------------
class Session:
    """A run's graph (for its Context's ablations) over a checkpoint store, with the Context it runs with."""

    def __init__(self, saver: BaseCheckpointSaver, context: Context):
        self.saver = saver
        self.context = context
        self.without = parse_without(context.without)
        self.graph = compiled_graph(self.without, saver)

    @classmethod
    def of_thread(cls, saver: BaseCheckpointSaver, thread_id: str, **this_process: Any) -> Session:
        """A stored thread's session: its graph and Context rebuilt from the settings it stored
        (RunSettings.from_stored, older runs included), with this process's own settings (`this_process`: the API
        key, the memory's location...) over them. UnknownRunError without the thread."""
        settings = RunSettings.from_stored(stored_run_config(saver, thread_id), **this_process)
        return cls(saver, settings.to_context())

    @functools.cached_property
    def stepping_graph(self) -> CompiledStateGraph:
        return compiled_graph(self.without, self.saver, stepping=True)

    def start(
        self,
        world: World,
        instruction: str,
        *,
        thread_id: str,
        task_id: str | None = None,
        gold_ir: dict[str, Any] | None = None,
        scenario_type: str = "",
        world_path: str | None = None,
        stepping: bool = False,
    ) -> dict[str, Any]:
        """Run the request on a new thread to its end, or to an interrupt (`stepping`: to the first node); the
        values as invoke returns them ("__interrupt__" added when paused). `world_path`: the file `world` was read
        from, stored with the run's settings for the commands it prints."""
        inputs = graph_input(
            world,
            instruction,
            settings=RunSettings.of_context(self.context),
            task_id=task_id or thread_id,
            gold_ir=gold_ir,
            scenario_type=scenario_type,
            world_path=world_path,
        )
        graph = self.stepping_graph if stepping else self.graph
        return dict(graph.invoke(inputs, thread_config(thread_id), context=self.context))

    def step(self, thread_id: str, *, resume: dict[str, Any] | None = None) -> None:
        """Run the thread's next node and pause before the one after; `resume`: the operator's answer to the
        interrupt the thread waits at instead."""
        payload = None if resume is None else Command(resume=resume)
        self.stepping_graph.invoke(payload, thread_config(thread_id), context=self.context)

    def state(self, thread_id: str, checkpoint_id: str | None = None) -> StateSnapshot:
        return self.graph.get_state(thread_config(thread_id, checkpoint_id))

    def history(self, thread_id: str) -> list[CheckpointInfo]:
        """Every checkpoint of the thread, oldest first."""
        return checkpoints(self.saver, thread_id)

    def edit(self, thread_id: str, edits: list[tuple[str, str]]) -> dict[str, Any]:
        """Edit the thread's latest state (guarded as `state_update`), written as the node that produced the
        checkpoint, so the pending step stays the same; the update written."""
        config = thread_config(thread_id)
        update = state_update(self.state(thread_id).values, edits)
        self.graph.update_state(config, update, as_node=last_node(self.graph, config))
        return update

    def replay(self, thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
        """Run on from a checkpoint (the thread's latest by default) to the end or an interrupt: the nodes after it
        execute again and append new checkpoints. UnknownRunError without the checkpoint."""
        stored_state(self.saver, thread_id, checkpoint_id)
        return dict(self.graph.invoke(None, thread_config(thread_id, checkpoint_id), context=self.context))

    def producer(self, thread_id: str, checkpoint_id: str) -> str | None:
        """The node whose write made the checkpoint (None for the run's input)."""
        if not any(info.checkpoint_id == checkpoint_id for info in self.history(thread_id)):
            raise UnknownRunError(f"no checkpoint {checkpoint_id} in thread {thread_id!r}")
        return last_node(self.graph, thread_config(thread_id, checkpoint_id))

    def fork(self, thread_id: str, checkpoint_id: str, edits: list[tuple[str, str]], *, into: str | None = None) -> str:
        """Edit the state at a past checkpoint and run on from there to the end or an interrupt; the thread it ran
        on comes back. The branch grows in the same thread, or starts the new thread `into` (the original is then
        left as it was). The edit is written as the node that produced the checkpoint, so the routers after that
        node are evaluated again on the edited state. EditError for an edit refused, before anything is written."""
        values = stored_state(self.saver, thread_id, checkpoint_id).values
        if "world" not in values:
            raise EditError("this checkpoint comes before the run's input: fork from a later one")
        as_node = self.producer(thread_id, checkpoint_id)
        update = state_update(values, edits)
        if as_node is None and set(update) - set(get_type_hints(InputState)):
            raise EditError("no node wrote this checkpoint (the run's input): edit only the input here, or fork later")
        if into is None:
            branch = self.graph.update_state(thread_config(thread_id, checkpoint_id), update, as_node=as_node)
            self.graph.invoke(None, branch, context=self.context)
            return thread_id
        start = {**values, **update, "task_id": into}
        config = thread_config(into)
        if as_node is None:  # the run's input: the new thread starts from it
            self.graph.invoke(
                {key: start[key] for key in get_type_hints(InputState) if key in start}, config, context=self.context
            )
        else:
            self.graph.update_state(config, start, as_node=as_node)
            self.graph.invoke(None, config, context=self.context)
        return into

    def outcome(self, thread_id: str, db: str | None) -> RunOutput:
        """The thread's latest state as a run's output (what `run` prints)."""
        from graph.runner import summarise

        snapshot = self.state(thread_id)
        interrupted = snapshot.interrupts[0].value if snapshot.interrupts else None
        return summarise(snapshot.values, thread_id=thread_id, db=db, interrupted=interrupted)
