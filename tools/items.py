"""A load of whole items ("four bags of 3 kg"): shares of it are whole items, never part of one. Kept apart from
tools/team.py (scipy) so the IR's validation reads it at no import cost."""

from __future__ import annotations

import math

ITEM_EPSILON = 1e-6  # relative: masses are sums and products of floats


def whole_items(kg: float, item_kg: float | None) -> float:
    """The most whole items that weigh no more than kg (kg itself where the load divides freely)."""
    if item_kg is None or not math.isfinite(kg):
        return kg
    return max(0, math.floor(kg / item_kg + ITEM_EPSILON)) * item_kg


def whole_items_up(kg: float, item_kg: float | None) -> float:
    """The fewest whole items that weigh at least kg (kg itself where the load divides freely)."""
    if item_kg is None or not math.isfinite(kg):
        return kg
    return max(0, math.ceil(kg / item_kg - ITEM_EPSILON)) * item_kg


def is_whole_items(kg: float, item_kg: float | None) -> bool:
    """kg is a whole number of items (always, where the load divides freely)."""
    if item_kg is None:
        return True
    if not math.isfinite(kg):
        return False
    count = kg / item_kg
    return abs(count - round(count)) <= ITEM_EPSILON * max(1.0, count)
