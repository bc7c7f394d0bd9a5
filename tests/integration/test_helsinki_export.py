"""A real-context (central Helsinki) execute exports with coordinates that fall in Helsinki: read back through the
world's own national grid (EPSG:3067) and the origin the generator recorded, they land on the certified waypoints."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
from pyproj import Transformer

from benchmark.generator import generate_one, jobs_for
from benchmark.splits import SPLITS
from cli.main import main

HELSINKI_LON_LAT_BOX = (24.78, 60.10, 25.26, 60.30)  # the City of Helsinki's mainland, roughly
SEED = 5150  # any seed: the first sample the gold plan executes is used


def _first_executable_sample() -> dict:
    for job in jobs_for(SPLITS["test_real_context_city_a"], SEED, 8):
        sample = json.loads(generate_one(job)[0])
        if sample["gold_decision"]["status"] == "execute":
            return sample
    raise AssertionError("no executable real-context sample in the first eight")


@pytest.fixture(scope="module")
def helsinki(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("helsinki")
    sample = _first_executable_sample()
    world_path, run_path = folder / "world.json", folder / "run.json"
    world_path.write_text(json.dumps(sample["world"]), encoding="utf-8")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["run", "--world", str(world_path), "--instruction", sample["instruction"]["en"], "--model",
                     "rules", "--json", "--db", str(folder / "runs.sqlite"), "--memory-path", str(folder / "mem")])  # fmt: skip
    assert code == 0, printed.getvalue()[-2000:]
    run_path.write_text(printed.getvalue(), encoding="utf-8")
    out = {}
    for file_format in ("geojson", "f3548"):
        out[file_format] = folder / f"route.{file_format}"
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["export", "--run", str(run_path), "--world", str(world_path), "--format", file_format,
                         "--out", str(out[file_format]), "--start", "2026-11-26T08:00:00Z"]) == 0  # fmt: skip
    return {"sample": sample, "run": json.loads(printed.getvalue()), **out}


def test_the_exported_route_lies_in_helsinki_on_the_worlds_own_national_grid(helsinki):
    recorded = helsinki["sample"]["source_provenance"]["real_context"]
    assert recorded["crs"] == "EPSG:3067"
    origin = recorded["frame_origin_easting_northing"]
    to_grid = Transformer.from_crs("EPSG:4326", "EPSG:3067", always_xy=True)
    waypoints = np.asarray(helsinki["run"]["decision"]["certificate"]["trajectory"]["waypoints"])
    route = json.loads(helsinki["geojson"].read_text())["features"][0]
    lon_lat = np.asarray(route["geometry"]["coordinates"])[:, :2]
    west, south, east, north = HELSINKI_LON_LAT_BOX
    assert np.all((west < lon_lat[:, 0]) & (lon_lat[:, 0] < east) & (south < lon_lat[:, 1]) & (lon_lat[:, 1] < north))
    easting, northing = to_grid.transform(lon_lat[:, 0], lon_lat[:, 1])
    local = np.column_stack([np.asarray(easting) - origin[0], np.asarray(northing) - origin[1]])
    assert np.allclose(local, waypoints[:, :2], atol=0.01)


def test_the_helsinki_intent_states_the_ground_it_did_not_know(helsinki):
    intent = json.loads(helsinki["f3548"].read_text())
    assumptions = " ".join(intent["cloudbrain"]["assumptions"])
    assert "ground elevation unknown" in assumptions and "geoid undulation unknown" in assumptions
    first = intent["details"]["volumes"][0]
    assert first["time_start"]["value"].startswith("2026-11-26T08:00")
