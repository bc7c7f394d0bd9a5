"""The four synthetic city layouts of CloudBrain-Bench and what each one's worlds contain.

Every layout keeps a 120 m ceiling: the number of altitude layers differs, their spacing adapts to it.
"""

from __future__ import annotations

from dataclasses import dataclass

SEEN_LAYOUTS = ("grid_city", "downtown_city", "suburban_city")
UNSEEN_LAYOUTS = ("mixed_city",)


@dataclass(frozen=True)
class Range:
    low: float
    high: float


@dataclass(frozen=True)
class LayoutSpec:
    name: str
    nx: int
    ny: int
    nz: int
    layer_base_m: float
    layer_height_m: float
    block_m: float  # street-grid pitch: one lot per block
    lot_fill: float  # probability that a lot holds a building
    building_height: Range
    tall_share: float  # share of towers reaching above the 120 m ceiling
    poi_counts: dict[str, tuple[int, int]]
    nfz_count: tuple[int, int]
    school_count: tuple[int, int]
    charging_pads: tuple[int, int]
    corridor_count: tuple[int, int]
    fleet_sizes: tuple[tuple[int, float], ...]  # (UAV count, probability)
    base_wind: Range
    traffic_tracks: tuple[int, int]
    character: str
    # Mixed city: a commercial core of towers, residential rings around it and a transport hub.
    zoned: bool = False

    @property
    def cell_size_m(self) -> float:
        return 10.0

    @property
    def width_m(self) -> float:
        return self.nx * self.cell_size_m

    @property
    def depth_m(self) -> float:
        return self.ny * self.cell_size_m


LAYOUTS: dict[str, LayoutSpec] = {
    "grid_city": LayoutSpec(
        name="grid_city",
        nx=50,
        ny=50,
        nz=6,
        layer_base_m=20.0,
        layer_height_m=20.0,
        block_m=100.0,
        lot_fill=0.6,
        building_height=Range(15.0, 60.0),
        tall_share=0.0,
        poi_counts={
            "hospital": (1, 2),
            "accident_site": (1, 2),
            "depot": (1, 1),
            "metro_station": (1, 1),
            "police": (0, 1),
            "fire_station": (0, 1),
            "warehouse": (1, 1),
            "residential": (1, 2),
            "office": (1, 1),
            "park": (0, 1),
            "inspection_site": (2, 3),
        },
        nfz_count=(1, 2),
        school_count=(1, 2),
        charging_pads=(2, 3),
        corridor_count=(1, 2),
        fleet_sizes=((10, 0.8), (30, 0.2)),
        base_wind=Range(1.0, 5.0),
        traffic_tracks=(1, 2),
        character="regular street grid, uniform POIs, low risk (sanity)",
    ),
    "downtown_city": LayoutSpec(
        name="downtown_city",
        nx=80,
        ny=80,
        nz=8,
        layer_base_m=15.0,
        layer_height_m=15.0,
        block_m=80.0,
        lot_fill=0.85,
        building_height=Range(20.0, 110.0),
        tall_share=0.08,
        poi_counts={
            "hospital": (3, 4),
            "accident_site": (1, 3),
            "depot": (1, 2),
            "metro_station": (2, 3),
            "police": (1, 2),
            "fire_station": (1, 2),
            "warehouse": (1, 1),
            "residential": (2, 4),
            "office": (2, 4),
            "park": (1, 2),
            "vertiport": (1, 1),
            "inspection_site": (3, 5),
        },
        nfz_count=(2, 4),
        school_count=(3, 5),
        charging_pads=(3, 5),
        corridor_count=(2, 3),
        fleet_sizes=((10, 0.2), (30, 0.6), (50, 0.2)),
        base_wind=Range(2.0, 7.0),
        traffic_tracks=(2, 3),
        character="dense buildings, many hospitals and schools (main experiments)",
    ),
    "suburban_city": LayoutSpec(
        name="suburban_city",
        nx=100,
        ny=100,
        nz=5,
        layer_base_m=20.0,
        layer_height_m=25.0,
        block_m=125.0,
        lot_fill=0.45,
        building_height=Range(8.0, 25.0),
        tall_share=0.0,
        poi_counts={
            "hospital": (1, 2),
            "accident_site": (1, 2),
            "depot": (1, 2),
            "metro_station": (1, 2),
            "police": (1, 1),
            "fire_station": (1, 1),
            "warehouse": (1, 2),
            "residential": (3, 5),
            "office": (1, 1),
            "park": (1, 2),
            "inspection_site": (3, 5),
        },
        nfz_count=(2, 3),
        school_count=(2, 3),
        charging_pads=(3, 4),
        corridor_count=(1, 2),
        fleet_sizes=((10, 0.3), (30, 0.5), (50, 0.2)),
        base_wind=Range(2.0, 6.0),
        traffic_tracks=(1, 2),
        character="sparse POIs, long distances (battery, deadline)",
    ),
    "mixed_city": LayoutSpec(
        name="mixed_city",
        nx=120,
        ny=120,
        nz=10,
        layer_base_m=12.0,
        layer_height_m=12.0,
        block_m=100.0,
        lot_fill=0.7,
        building_height=Range(10.0, 90.0),
        tall_share=0.1,
        poi_counts={
            "hospital": (2, 4),
            "accident_site": (1, 3),
            "depot": (2, 2),
            "metro_station": (2, 4),
            "police": (1, 2),
            "fire_station": (1, 2),
            "warehouse": (1, 2),
            "residential": (3, 5),
            "office": (2, 4),
            "park": (1, 3),
            "vertiport": (1, 2),
            "inspection_site": (4, 6),
        },
        nfz_count=(3, 5),
        school_count=(3, 6),
        charging_pads=(4, 6),
        corridor_count=(2, 4),
        fleet_sizes=((30, 0.4), (50, 0.6)),
        base_wind=Range(2.0, 7.0),
        traffic_tracks=(2, 4),
        character="commercial core, residential rings and a transport hub (held out: unseen city)",
        zoned=True,
    ),
}
