"""A LangGraph Runtime for calling a node function directly, without compiling the graph."""

from __future__ import annotations

from langgraph.runtime import ExecutionInfo, Runtime

from nodes.context import Context


def fake_runtime(context: Context | None = None, *, thread_id: str | None = None) -> Runtime[Context]:
    """`Runtime(context=...)` as the graph would pass it; `execution_info` names a thread only when asked."""
    info = None
    if thread_id is not None:
        info = ExecutionInfo(
            checkpoint_id="test-checkpoint", checkpoint_ns="", task_id="test-task", thread_id=thread_id
        )
    return Runtime(context=context if context is not None else Context(), execution_info=info)
