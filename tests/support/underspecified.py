"""The hand-written under-specified requests of tests/data (no place, one place of a delivery, a pronoun with
nothing to refer to, a time with no anchor), for the downtown world."""

from __future__ import annotations

from tests.support.paths import ROOT

REQUESTS_FILE = ROOT / "tests" / "data" / "underspecified_requests.tsv"


def underspecified_requests() -> list[tuple[str, str]]:
    """(kind, request) for every line of the file."""
    rows = []
    for line in REQUESTS_FILE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            kind, text = line.split("\t")
            rows.append((kind, text))
    return rows
