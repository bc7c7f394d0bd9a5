"""Where the repository's example worlds are, independent of which test folder asks."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DOWNTOWN = EXAMPLES / "downtown.json"
