"""query_city_state: the map inside a region or bounding box (entities, buildings, sensitive zones).

Also home of the look-ups every domain tool shares: resolving an area (region id / bbox) and turning an
unknown id into a typed failure that names the nearest known ids.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, model_validator
from rapidfuzz import process
from shapely.geometry import Polygon, box

from tools.contract import ToolFailure, ToolOutput
from tools.registry import ToolSpec
from tools.world import World

BBox = tuple[float, float, float, float]


class AreaArgs(BaseModel):
    """A region id and/or a bbox [x0, y0, x1, y1]; with both, their intersection; with neither, the whole map."""

    model_config = ConfigDict(extra="forbid")

    region: str | None = Field(default=None, description="region id (the world id = the whole map)")
    bbox: BBox | None = Field(default=None, description="[x0, y0, x1, y1] in metres, x0 < x1 and y0 < y1")

    @model_validator(mode="after")
    def _ordered_bbox(self) -> AreaArgs:
        if self.bbox is not None and not (self.bbox[0] < self.bbox[2] and self.bbox[1] < self.bbox[3]):
            raise ValueError("bbox must be [x0, y0, x1, y1] with x0 < x1 and y0 < y1")
        return self


class QueryCityStateArgs(AreaArgs):
    pass


def unknown_id_failure(kind: str, given: str, known: Iterable[str], *, recoverable: bool = True) -> ToolFailure:
    """`unknown_<kind>` failure whose suggested actions name the closest known ids."""
    nearest = [match for match, _, _ in process.extract(given, list(known), limit=3)]
    return ToolFailure(
        f"unknown_{kind}",
        f"no {kind} with id {given!r}",
        recoverable=recoverable,
        suggested_actions=[f"use one of: {', '.join(nearest)}"] if nearest else [],
    )


def resolve_area(world: World, area: AreaArgs) -> tuple[BBox | None, bool]:
    """(the requested area clipped to the map, None if nothing of it is on the map; whether the bbox reaches
    outside the map). An unknown region is an unrecoverable `unknown_region` failure: the map has no such place.
    """
    map_box: BBox = (0.0, 0.0, world.grid.width_m, world.grid.depth_m)
    wanted: BBox | None = map_box
    if area.region is not None:
        if area.region not in world.region_index:
            raise unknown_id_failure("region", area.region, world.region_index, recoverable=False)
        wanted = _intersection(world.region_index[area.region].bbox, map_box)
    reaches_out = False
    if area.bbox is not None:
        reaches_out = _intersection(area.bbox, map_box) != tuple(map(float, area.bbox))
        wanted = wanted and _intersection(wanted, area.bbox)
    return wanted, reaches_out


def _intersection(a: BBox, b: BBox) -> BBox | None:
    x0, y0, x1, y1 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    return (float(x0), float(y0), float(x1), float(y1)) if x0 < x1 and y0 < y1 else None


def _bounds(shape: Polygon) -> list[float]:
    return [round(v, 2) for v in shape.bounds]


def _query_city_state(world: World, args: QueryCityStateArgs) -> ToolOutput:
    area, reaches_out = resolve_area(world, args)
    region = box(*area) if area else Polygon()
    result = {
        "area": list(area) if area else None,
        "grid": world.grid.model_dump(),
        "regions": sorted(world.region_index),
        "entities": [
            {"id": e.id, "kind": e.kind.value, "name": e.name, "position": list(e.position)}
            for e in world.entities
            if region.covers(e.point)
        ],
        "buildings": [
            {"id": b.id, "name": b.name, "height_m": b.height_m, "bounds": _bounds(b.shape)}
            for b in world.buildings
            if region.intersects(b.shape)
        ],
        "sensitive_zones": [
            {"id": z.id, "kind": z.kind, "name": z.name, "buffer_m": z.buffer_m, "bounds": _bounds(z.shape)}
            for z in world.sensitive_zones
            if region.intersects(z.buffered_shape)
        ],
    }
    if reaches_out:
        raise ToolFailure(
            "partial_map",
            f"the requested area reaches outside the map [0, 0, {world.grid.width_m:g}, {world.grid.depth_m:g}]; "
            "the result covers only the part inside",
            recoverable=True,
            suggested_actions=["query a bbox inside the map", f"regions: {', '.join(sorted(world.region_index))}"],
            result=result,
        )
    return ToolOutput(result=result, warnings=[] if area else ["the region and the bbox do not overlap: empty area"])


SPEC = ToolSpec(
    name="query_city_state",
    description="Entities (POIs), buildings and sensitive zones inside a region id or a bbox (default: whole map).",
    args_model=QueryCityStateArgs,
    body=_query_city_state,
    data_sources=("world.entities", "world.buildings", "world.sensitive_zones"),
)
