"""tool_use_only: the model's typed IR runs through validation and its tool plan, and the first route is the
decision: no verifier, no simulator, no repair. The same graph with those parts removed."""

from __future__ import annotations

from evaluation.methods.cloudbrain import CloudBrain


class ToolUseOnly(CloudBrain):
    def __init__(self) -> None:
        super().__init__(
            "tool_use_only",
            frozenset({"verifier", "simulator", "repair"}),
            "IR -> validated tool plan -> the first route; no verifier, simulator or repair",
        )
