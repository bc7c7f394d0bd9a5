"""`cloudbrain zones import` on files that land no zone in the world: one line naming why (a likely axis swap first),
exit 2, nothing written; and `zones export` writing back what the import read."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import DOWNTOWN, run_cli
from tests.support.paths import ROOT
from tests.support.zones import ED269_SAMPLE

DATA = ROOT / "tests" / "data" / "zones"
SWAPPED = {"ed269": DATA / "swapped_one_zone_ed269.json", "geojson": DATA / "swapped_one_zone.geojson"}
START = "2026-11-26T09:00:00Z"


def _import(capsys, path, out, *extra: str) -> tuple[int, str, str]:
    return run_cli(capsys, "zones", "import", "--world", DOWNTOWN, "--file", str(path), "--mission-start", START,
                   "--out", str(out), *extra)  # fmt: skip


@pytest.mark.parametrize("file_format", ["ed269", "geojson"])
def test_a_one_zone_file_with_swapped_axes_is_read_as_lat_lon_and_says_so(tmp_path, capsys, file_format):
    out = tmp_path / "world.json"
    code, printed, _ = _import(capsys, SWAPPED[file_format], out)
    assert code == 0 and "pairs read as lat,lon" in printed and "MKT0003: imported" in printed
    assert "MKT0003" in {z["id"] for z in json.loads(out.read_text())["no_fly_zones"]}


@pytest.mark.parametrize("file_format", ["ed269", "geojson"])
def test_a_one_zone_file_read_in_the_wrong_order_is_exit_2_naming_the_swap(tmp_path, capsys, file_format):
    out = tmp_path / "world.json"
    code, printed, err = _import(capsys, SWAPPED[file_format], out, "--axis-order", "lon,lat")
    assert code == 2 and not printed and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "no zone imported" in err and "MKT0003" in err and "read with its axes swapped it lies in the world" in err
    assert "--axis-order lat,lon" in err and not out.exists()


def test_a_file_whose_every_zone_is_outside_the_world_is_exit_2_saying_how_far(tmp_path, capsys):
    sample = json.loads(ED269_SAMPLE.read_text(encoding="utf-8"))
    far = tmp_path / "far.json"
    far.write_text(json.dumps({"features": [sample["features"][5]]}))  # Zurich airport, kilometres away
    out = tmp_path / "world.json"
    code, _, err = _import(capsys, far, out)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "FAR0006: outside the world's frame (" in err and "km from it" in err and "swapped" not in err
    assert not out.exists()


def test_an_export_of_an_imported_world_writes_the_authority_and_every_schedule_window(tmp_path, capsys):
    world, zones = tmp_path / "world.json", tmp_path / "zones.json"
    code, _, _ = _import(capsys, DATA / "weekly_ed269.json", world, "--horizon-hours", "48")
    assert code == 0
    code, printed, _ = run_cli(capsys, "zones", "export", "--world", str(world), "--format", "ed269", "--out",
                               str(zones))  # fmt: skip
    assert code == 0 and "cut to ED-269's 30 characters" in printed
    published = json.loads((DATA / "weekly_ed269.json").read_text())["features"][0]
    written = next(f for f in json.loads(zones.read_text())["features"] if f["identifier"] == "EVT0010")
    for key in ("zoneAuthority", "applicability", "country", "reason", "otherReasonInfo"):
        assert written[key] == published[key], key
