"""The hand-written ED-269 zone file near the downtown example, and ways to break it."""

from __future__ import annotations

from tests.support.paths import EXAMPLES

ED269_SAMPLE = EXAMPLES / "zones" / "downtown_ed269.json"


def bow_tie(feature: dict) -> None:
    """Swap two vertices of the feature's first polygon: its ring then crosses itself."""
    ring = feature["geometry"][0]["horizontalProjection"]["coordinates"][0]
    ring[1], ring[2] = ring[2], ring[1]
