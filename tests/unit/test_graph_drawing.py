"""Snapshots of the compiled graph's Mermaid drawing (what `cloudbrain graph` prints), whole and with each part
ablated: a change of nodes, edges or a router's targets shows up as a diff to review, as langgraph's own tests keep
theirs. After an intended change: `pytest tests/unit/test_graph_drawing.py --snapshot-update`."""

from __future__ import annotations

import pytest

from cli.agent import mermaid
from graph.builder import build_graph
from nodes.context import ABLATABLE


@pytest.mark.parametrize("without", ["", *ABLATABLE])
def test_the_graph_drawing_is_the_reviewed_one(snapshot, without):
    assert mermaid(build_graph(without)) == snapshot
