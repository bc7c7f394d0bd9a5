"""Order over named items that wait for one another (a tool plan's `depends_on`, a team's `after`), by the standard
library's graphlib: one definition of "waits for" and of a cycle for the IR's shape rules, its plan executor and the
team tool."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from graphlib import CycleError, TopologicalSorter


def _known_only(waits_for: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    # A name that is no item is the caller's to report (dependency_missing), not part of the order.
    return {item: [other for other in before if other in waits_for] for item, before in waits_for.items()}


def find_cycle(waits_for: Mapping[str, Iterable[str]]) -> list[str]:
    """One cycle among the items (item -> the items it waits for) as ids, each waiting for the next, with the first
    repeated at the end; [] when there is none."""
    try:
        TopologicalSorter(_known_only(waits_for)).prepare()
    except CycleError as error:
        return list(reversed(error.args[1]))  # graphlib lists each node before the one that waits for it
    return []


def waiting_order(waits_for: Mapping[str, Iterable[str]]) -> list[str]:
    """Every item after the items it waits for (raises graphlib.CycleError on a cycle: check find_cycle first)."""
    return list(TopologicalSorter(_known_only(waits_for)).static_order())
