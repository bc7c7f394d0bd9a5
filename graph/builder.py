"""Wiring only: which nodes exist for a set of ablations, and how the routers' logical targets map onto them.

Dropping a node never changes a node's code: its incoming edges re-route to the next enabled node of the
pipeline (a dropped `repair` means failures go straight to `fallback`). `ir` off replaces the typed-IR path
(validate -> execute_tools) with `direct_tools`, which runs the tool calls found in the model's free text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, get_args, get_type_hints

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import NodeError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, RetryPolicy

from graph import routers
from ir.failure import ComponentUnavailable, failure_record
from models.base import LLMTransportError
from nodes.context import ABLATABLE, Context
from nodes.direct_tools import direct_tools
from nodes.execute_tools import execute_tools
from nodes.fallback import fallback
from nodes.fidelity import fidelity
from nodes.finalize import finalize
from nodes.generate_ir import generate_ir
from nodes.repair import repair
from nodes.retrieve import retrieve
from nodes.simulate import simulate
from nodes.state import InputState, OutputState, State
from nodes.validate import validate
from nodes.verify import verify

PIPELINE = ("retrieve", "generate_ir", "validate", "execute_tools", "verify", "simulate", "fidelity", "finalize")
# Every node in display order; `direct_tools` exists only when the typed IR is ablated.
NODE_ORDER = (
    "retrieve",
    "generate_ir",
    "validate",
    "execute_tools",
    "direct_tools",
    "verify",
    "simulate",
    "fidelity",
    "finalize",
    "repair",
    "fallback",
)
NODE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "retrieve": retrieve,
    "generate_ir": generate_ir,
    "validate": validate,
    "execute_tools": execute_tools,
    "direct_tools": direct_tools,
    "verify": verify,
    "simulate": simulate,
    "fidelity": fidelity,
    "finalize": finalize,
    "repair": repair,
    "fallback": fallback,
}
DROPS: dict[str, tuple[str, ...]] = {
    "rag": ("retrieve",),
    "ir": ("validate", "execute_tools"),
    "verifier": ("verify",),
    "simulator": ("simulate",),
    "fidelity": ("fidelity",),
    "repair": ("repair",),
    "memory": (),  # no node of its own: Context.memory is None, so repair and finalize skip retrieval and storage
}
# Fixed successors; every other node leaves through a router of graph/routers.py.
NEXT_STEP = {"retrieve": "generate_ir", "generate_ir": "validate", "finalize": routers.END_NODE}
ROUTERS: dict[str, Callable[[State], str]] = {
    "validate": routers.route_after_validate,
    "execute_tools": routers.route_after_execute,
    "direct_tools": routers.route_after_execute,
    "verify": routers.route_after_verify,
    "simulate": routers.route_after_simulate,
    "fidelity": routers.route_after_fidelity,
    "repair": routers.route_after_repair,
    "fallback": routers.route_after_fallback,
}
LLM_RETRY = RetryPolicy(
    max_attempts=3,
    initial_interval=0.5,
    retry_on=lambda exc: isinstance(exc, LLMTransportError) and exc.retryable,
)


class AblationError(ValueError):
    pass


def parse_without(without: Iterable[str] | str | None) -> frozenset[str]:
    if isinstance(without, str):
        without = [w for w in without.split(",") if w.strip()]
    dropped = frozenset(w.strip() for w in without or ())
    unknown = sorted(dropped - set(ABLATABLE))
    if unknown:
        raise AblationError(f"unknown ablation(s) {unknown}; choose from {', '.join(ABLATABLE)}")
    return dropped


def enabled_nodes(dropped: frozenset[str]) -> list[str]:
    removed = {node for ablation in dropped for node in DROPS[ablation]}
    if "ir" not in dropped:
        removed.add("direct_tools")
    return [n for n in NODE_ORDER if n not in removed]


def resolver(nodes: list[str]) -> Callable[[str], str]:
    """Map a router's logical target onto the node that now does that job."""
    enabled = set(nodes)

    def resolve(target: str) -> str:
        if target == routers.END_NODE:
            return END
        if target in enabled:
            return target
        if target in ("validate", "execute_tools") and "direct_tools" in enabled:
            return "direct_tools"
        if target == "repair":
            return resolve("fallback")
        return resolve(PIPELINE[PIPELINE.index(target) + 1])

    return resolve


def _on_node_error(resolve: Callable[[str], str]) -> Callable[[State, NodeError], Command]:
    def handle(state: State, error: NodeError) -> Command:
        if isinstance(error.error, ComponentUnavailable):
            # no decision can come of a backend that cannot answer, or an embedding model not built: the run stops
            # here, recording no refusal
            raise error.error
        transport = isinstance(error.error, LLMTransportError)
        error_type = error.error.error_type if transport else f"node_error:{type(error.error).__name__}"
        failure = failure_record(error.node, error_type, recoverable=False, message=str(error.error)[:500])
        return Command(goto=resolve(routers.route_on_node_error()), update={"failure": failure})

    return handle


def _on_fallback_error(state: State, error: NodeError) -> Command:
    """If fallback itself fails, the run still ends safely: a refusal that names the defect."""
    reason = f"fallback failed: {type(error.error).__name__}: {error.error}"
    return Command(
        goto=END, update={"status": "safe_refusal", "decision": {"status": "safe_refusal", "reason": reason}}
    )


GRAPH_NAME = "cloudbrain"


def build_graph(
    without: Iterable[str] | str | None = (),
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    interrupt_before: list[str] | str | None = None,
) -> CompiledStateGraph:
    dropped = parse_without(without)
    nodes = enabled_nodes(dropped)
    resolve = resolver(nodes)
    on_error = _on_node_error(resolve)
    builder = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    for name in nodes:
        builder.add_node(
            name,
            NODE_FUNCTIONS[name],
            retry_policy=LLM_RETRY if name == "generate_ir" else None,
            error_handler=_on_fallback_error if name == "fallback" else on_error,
        )

    builder.add_edge(START, nodes[0])
    for name in nodes:
        if name in ROUTERS:
            targets = get_args(get_type_hints(ROUTERS[name])["return"])
            builder.add_conditional_edges(name, ROUTERS[name], {t: resolve(t) for t in targets})
        else:
            builder.add_edge(name, resolve(NEXT_STEP[name]))
    return builder.compile(checkpointer=checkpointer, interrupt_before=interrupt_before, name=GRAPH_NAME)
