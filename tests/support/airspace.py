"""The tests' own judge of shared airspace, written apart from ops.ledger so the ledger's query is checked, not
trusted: two volumes (dicts as the ledger stores them) share airspace when their footprints meet, their altitude
ranges overlap and their time spans overlap."""

from __future__ import annotations

from typing import Any

from shapely.geometry import Polygon


def share_airspace(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (
        a["t_start"] < b["t_end"]
        and b["t_start"] < a["t_end"]
        and a["lower_m"] < b["upper_m"]
        and b["lower_m"] < a["upper_m"]
        and Polygon(a["ring"]).intersects(Polygon(b["ring"]))
    )
