"""How the agent reaches the memory: open it unless ablated, and retrieve rules with or without Qdrant."""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memory.embeddings import shared_embedder
from memory.rule_vectors import rule_vectors
from memory.rules_corpus import RULES, RuleText

if TYPE_CHECKING:  # Qdrant loads when a run opens the memory, not when a graph is built to read checkpoints
    from memory.store import SafetyMemory

_OPEN: dict[tuple[str | None, str | None], SafetyMemory] = {}


def open_memory(
    without: frozenset[str], *, path: str | Path | None = None, url: str | None = None
) -> SafetyMemory | None:
    """The process's SafetyMemory for this location; None (and Qdrant never opened) when memory is ablated.

    Embedded Qdrant allows one client per folder, so a process keeps one client per location.
    """
    if "memory" in without:
        return None
    from memory.store import SafetyMemory

    key = (str(Path(path).resolve()) if path else None, url)
    if key not in _OPEN:
        _OPEN[key] = SafetyMemory(path=path, url=url)
    return _OPEN[key]


def open_snapshot(memory: SafetyMemory, folder: str | Path) -> SafetyMemory:
    """A private, process-local copy of `memory` (SafetyMemory.snapshot), closed at exit like the others."""
    snapshot = memory.snapshot(folder)
    _OPEN.setdefault((str(Path(folder).resolve()), None), snapshot)
    return snapshot


@atexit.register
def close_memories() -> None:
    """Close clients before interpreter shutdown, where qdrant-client's own __del__ can no longer import."""
    while _OPEN:
        _OPEN.popitem()[1].close()


def retrieve_rules(query: str, k: int, memory: SafetyMemory | None) -> list[RuleText]:
    """Top-k rule texts: from Qdrant's `rules` collection when the memory is open, else ranked in-process
    over the same corpus (the corpus is small; `--without memory` must not open Qdrant)."""
    if memory is not None:
        return [hit.rule for hit in memory.search_rules(query, k)]
    embedder = shared_embedder()
    scores = rule_vectors(embedder) @ embedder.encode_one(query)
    return [RULES[i] for i in np.argsort(-scores)[:k]]
