"""The geoid undulation: standards.geoid (PROJ's vgridshift on EGM96's 15' grid) against the same grid file read
and interpolated here with numpy, the values the worlds store against both, and the demo's F3548 intent placing
its ground at the ground elevation plus the undulation above the WGS84 ellipsoid."""

from __future__ import annotations

import contextlib
import io
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyproj.network
import pytest

from benchmark.citygen import SYNTHETIC_ANCHOR
from cli.main import main
from standards import geoid
from standards.frame import geo_frame
from standards.geoid import GeoidGridMissing, egm96_undulation, grid_path
from tests.support.paths import DOWNTOWN, EXAMPLES
from tools.world import load_world

# tomorrow, on the hour: an F3548 intent may not end in the past
START = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:00:00Z")
DEMO_INSTRUCTION = (
    "Send a drone with the defibrillator (1 kg) from hospital_A to accident_site_3 within 10 minutes, keep away "
    "from the school and the temporary no-fly zone."
)


class GtxGrid:
    """A GTX file read as its format says: a big-endian header (lat0, lon0, dlat, dlon as float64; rows, cols as
    int32), then rows x cols float32 heights, row by row from the south, west to east."""

    def __init__(self, path: Path):
        raw = path.read_bytes()
        self.lat0, self.lon0, self.dlat, self.dlon = np.frombuffer(raw, ">f8", 4, 0)
        self.rows, self.cols = (int(n) for n in np.frombuffer(raw, ">i4", 2, 32))
        self.heights = np.frombuffer(raw, ">f4", self.rows * self.cols, 40).reshape(self.rows, self.cols)
        self.wraps = math.isclose(self.cols * self.dlon, 360.0)

    def bilinear(self, lat: float, lon: float) -> float:
        row = (lat - self.lat0) / self.dlat
        col = ((lon - self.lon0) % 360.0) / self.dlon  # longitudes may run 0..360 or -180..180
        r0, c0 = min(int(math.floor(row)), self.rows - 2), int(math.floor(col))
        fr, fc = row - r0, col - c0
        c1 = (c0 + 1) % self.cols if self.wraps else c0 + 1
        h = self.heights.astype(float)
        south = h[r0, c0] * (1 - fc) + h[r0, c1] * fc
        north = h[r0 + 1, c0] * (1 - fc) + h[r0 + 1, c1] * fc
        return float(south * (1 - fr) + north * fr)


@pytest.fixture(scope="module")
def grid() -> GtxGrid:
    return GtxGrid(grid_path())


PLACES = {
    "the examples' anchor (PX4 SITL home, Zurich)": (47.397742, 8.545594),
    "central Helsinki": (60.1466169, 24.9081476),
    "south of Sri Lanka (EGM96's low, negative)": (5.0, 78.0),
    "Sydney (southern hemisphere)": (-33.86, 151.21),
    "New York (western longitude, negative)": (40.7128, -74.006),
    "by the antimeridian (the grid's seam)": (-16.5, 179.97),
}


@pytest.mark.parametrize("place", PLACES)
def test_pyproj_agrees_with_the_grid_read_here_within_a_centimetre(grid, place):
    lat, lon = PLACES[place]
    assert egm96_undulation(lat, lon) == pytest.approx(grid.bilinear(lat, lon), abs=0.01)


def test_the_figures_are_the_known_ones_and_nothing_is_downloaded():
    assert egm96_undulation(47.397742, 8.545594) == pytest.approx(47.34, abs=0.01)  # Zurich: +47 m
    assert egm96_undulation(5.0, 78.0) < -100.0  # the Indian Ocean geoid low
    assert not pyproj.network.is_network_enabled()


def test_every_stored_anchor_undulation_is_egm96_at_the_anchor():
    worlds = [load_world(path) for path in sorted(EXAMPLES.glob("*.json"))]
    assert worlds and all(w.geo_reference.anchor_lat_lon == SYNTHETIC_ANCHOR.anchor_lat_lon for w in worlds)
    expected = egm96_undulation(*SYNTHETIC_ANCHOR.anchor_lat_lon)
    for reference in [SYNTHETIC_ANCHOR, *(w.geo_reference for w in worlds)]:
        assert reference.geoid_undulation_m == pytest.approx(expected, abs=0.001)  # stored to the millimetre
        assert reference.geoid_model.startswith(geoid.MODEL)


def test_a_missing_grid_is_one_line_naming_the_grid_and_the_package(monkeypatch, tmp_path):
    monkeypatch.setattr(geoid, "grid_directories", lambda: [tmp_path])
    with pytest.raises(GeoidGridMissing) as caught:
        egm96_undulation(47.0, 8.0)
    message = str(caught.value)
    assert "egm96_15.gtx" in message and "apt-get install proj-data" in message and "\n" not in message


@pytest.fixture(scope="module")
def demo_intent(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The demo request run on downtown with the rules model, its execute exported as an F3548 intent."""
    folder = tmp_path_factory.mktemp("geoid")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["run", "--world", str(DOWNTOWN), "--instruction", DEMO_INSTRUCTION, "--model", "rules", "--json",
                     "--db", str(folder / "runs.sqlite"), "--memory-path", str(folder / "memory")])  # fmt: skip
    assert code == 0, printed.getvalue()[-2000:]
    (folder / "run.json").write_text(printed.getvalue(), encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["export", "--run", str(folder / "run.json"), "--world", str(DOWNTOWN), "--format", "f3548",
                     "--out", str(folder / "intent.json"), "--start", START]) == 0  # fmt: skip
    return {"run": json.loads(printed.getvalue()), "intent": json.loads((folder / "intent.json").read_text())}


def test_the_demo_intents_ground_is_its_elevation_plus_the_geoid_undulation_above_the_ellipsoid(demo_intent):
    world = load_world(DOWNTOWN)
    reference = world.geo_reference
    waypoints = demo_intent["run"]["decision"]["certificate"]["trajectory"]["waypoints"]
    assert waypoints[0][2] == 0.0  # the flight leaves the ground: its first volume reaches down to it
    lowers = [v["volume"]["altitude_lower"] for v in demo_intent["intent"]["details"]["volumes"]]
    assert {lower["reference"] for lower in lowers} == {"W84"}
    lowest = min(lower["value"] for lower in lowers)
    ground_w84 = reference.ground_elevation_amsl_m + reference.geoid_undulation_m  # 488 + 47.336
    assert lowest == math.floor(ground_w84 * 100) / 100  # floored to the centimetre, as the volumes only grow
    assert lowest == pytest.approx(reference.ground_elevation_amsl_m + egm96_undulation(*reference.anchor_lat_lon),
                                   abs=0.01)  # fmt: skip
    assert geo_frame(world).wgs84_height(0.0) == ground_w84
    assert not [a for a in demo_intent["intent"]["cloudbrain"]["assumptions"] if "geoid" in a or "ground" in a]
