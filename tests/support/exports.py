"""The demo's execute, exported: the ED-269 sample's zones imported into the downtown world, the demo request run on
it, and the execute written in every format with one mission clock. Made once per test session (the run and the
exports' certificate re-checks take half a minute) and shared by the export tests."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

from cli.main import main
from standards.formats import PLAN_FORMATS
from tests.support.paths import DOWNTOWN
from tests.support.zones import ED269_SAMPLE
from tools.world import load_world

MISSION_START = "2026-11-26T09:00:00Z"  # the zoned world's clock origin: the zones' schedules are read on it
# the exports' one mission clock: tomorrow at 09:00 UTC, so no intent has ended when it is written (F3548)
EXPORT_START = (datetime.now(UTC) + timedelta(days=1)).replace(hour=9, minute=0, second=0, microsecond=0)
DEMO_INSTRUCTION = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, keep away "
    "from the school and the temporary no-fly zone."
)
FORMATS = PLAN_FORMATS  # every format an execute is exported as


def export_start() -> str:
    return EXPORT_START.isoformat().replace("+00:00", "Z")


def _quiet(argv: list[str]) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    return code, printed.getvalue()


@cache
def zoned_demo(folder: Path) -> dict:
    """The zoned world, the demo's `run --json` output and checkpoint, and the execute in every format (`--start`
    the same for all); module fixtures call this with the session's folder, so it runs once."""
    folder.mkdir(parents=True, exist_ok=True)
    world_path, run_path = folder / "zoned.json", folder / "run.json"
    code, _ = _quiet(["zones", "import", "--world", str(DOWNTOWN), "--file", str(ED269_SAMPLE), "--mission-start",
                      MISSION_START, "--out", str(world_path)])  # fmt: skip
    assert code == 0
    code, printed = _quiet(["run", "--world", str(world_path), "--instruction", DEMO_INSTRUCTION, "--model", "rules",
                            "--json", "--db", str(folder / "runs.sqlite"), "--thread", "zoned-demo", "--memory-path",
                            str(folder / "memory")])  # fmt: skip
    assert code == 0, printed[-2000:]
    run_path.write_text(printed, encoding="utf-8")
    files, reports = {}, {}
    for file_format in FORMATS:
        out = folder / f"route.{file_format}"
        code, printed = _quiet(["export", "--run", str(run_path), "--world", str(world_path), "--format", file_format,
                                "--out", str(out), "--start", export_start(), "--json"])  # fmt: skip
        assert code == 0, printed
        files[file_format] = out
        reports[file_format] = json.loads(printed)
    return {
        "world": load_world(world_path),
        "world_path": world_path,
        "run": json.loads(run_path.read_text(encoding="utf-8")),
        "run_path": run_path,
        "db": folder / "runs.sqlite",
        "reports": reports,
        **files,
    }
