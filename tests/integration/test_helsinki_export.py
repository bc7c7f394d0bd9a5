"""A real-context (central Helsinki) execute exports with coordinates that fall in Helsinki: read back through the
world's own national grid (EPSG:3067) and the origin the generator recorded, they land on the certified waypoints.
The world knows EGM96's undulation at its origin but not its ground elevation, so it has no WGS84 heights: the
F3548 intent, which needs them, is refused in one line, and the GeoJSON route is written in 2D."""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from pyproj import Transformer

from benchmark.generator import generate_one, jobs_for
from benchmark.splits import SPLITS
from cli.main import main
from standards.frame import geo_frame
from standards.geoid import MODEL, egm96_undulation
from tools.world import World

HELSINKI_LON_LAT_BOX = (24.78, 60.10, 25.26, 60.30)  # the City of Helsinki's mainland, roughly
START = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT08:00:00Z")  # an intent may not end in the past
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
    out, codes, errors = {}, {}, {}
    for file_format in ("geojson", "f3548"):
        out[file_format] = folder / f"route.{file_format}"
        printed, complaint = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(complaint):
            codes[file_format] = main(["export", "--run", str(run_path), "--world", str(world_path), "--format",
                                       file_format, "--out", str(out[file_format]), "--start",
                                       START])  # fmt: skip
        errors[file_format] = complaint.getvalue()
    return {"sample": sample, "run": json.loads(run_path.read_text()), "codes": codes, "errors": errors, **out}


def test_the_world_stores_egm96_at_its_origin_and_no_ground_elevation(helsinki):
    world = World.model_validate(helsinki["sample"]["world"])
    reference = world.geo_reference
    east, north = reference.origin_easting_northing
    lon, lat = Transformer.from_crs("EPSG:3067", "EPSG:4326", always_xy=True).transform(east, north)
    assert reference.geoid_undulation_m == pytest.approx(egm96_undulation(lat, lon), abs=0.001)  # 17.917 m
    assert reference.geoid_model.startswith(MODEL) and reference.ground_elevation_amsl_m is None
    frame = geo_frame(world)
    assert not frame.knows_amsl and not frame.knows_wgs84  # no DEM: neither AMSL nor WGS84 heights


def test_the_f3548_intent_is_refused_in_one_line_for_want_of_the_ground_elevation(helsinki):
    assert helsinki["codes"]["f3548"] == 2 and not helsinki["f3548"].exists()
    lines = helsinki["errors"]["f3548"].strip().splitlines()
    assert len(lines) == 1 and "ground_elevation_amsl_m" in lines[0], lines


def test_the_geojson_route_lies_in_helsinki_in_2d_on_the_worlds_own_national_grid(helsinki):
    assert helsinki["codes"]["geojson"] == 0, helsinki["errors"]["geojson"]
    recorded = helsinki["sample"]["source_provenance"]["real_context"]
    assert recorded["crs"] == "EPSG:3067"
    origin = recorded["frame_origin_easting_northing"]
    to_grid = Transformer.from_crs("EPSG:4326", "EPSG:3067", always_xy=True)
    waypoints = np.asarray(helsinki["run"]["decision"]["certificate"]["trajectory"]["waypoints"])
    route = json.loads(helsinki["geojson"].read_text())["features"][0]
    positions = np.asarray(route["geometry"]["coordinates"])
    assert positions.shape[1] == 2  # no third coordinate: the ellipsoid height is not known
    west, south, east, north = HELSINKI_LON_LAT_BOX
    lon_lat = positions[:, :2]
    assert np.all((west < lon_lat[:, 0]) & (lon_lat[:, 0] < east) & (south < lon_lat[:, 1]) & (lon_lat[:, 1] < north))
    easting, northing = to_grid.transform(lon_lat[:, 0], lon_lat[:, 1])
    local = np.column_stack([np.asarray(easting) - origin[0], np.asarray(northing) - origin[1]])
    assert np.allclose(local, waypoints[:, :2], atol=0.01)
