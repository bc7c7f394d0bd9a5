"""The geoid undulation N (WGS84 ellipsoid height minus height above mean sea level) from the EGM96 model.

PROJ's `egm96_15.gtx` (EGM96 on a 15-minute grid; Debian's `proj-data` package puts it at
/usr/share/proj/egm96_15.gtx) read through pyproj's `vgridshift` (bilinear), with PROJ's network access off: nothing
is downloaded. Only the tools that write a world's `geo_reference` and the tests need the grid; the worlds store the
value they got (`geoid_undulation_m`, `geoid_model`), so planning and exporting never read it.
"""

from __future__ import annotations

import math
import os
from functools import cache
from pathlib import Path

import pyproj.datadir
import pyproj.network
from pyproj import Transformer

GRID = "egm96_15.gtx"
APT_PACKAGE = "proj-data"
MODEL = f"EGM96 (PROJ {GRID}, bilinear)"


class GeoidGridMissing(FileNotFoundError):
    """The EGM96 grid file is not on this machine."""


def grid_directories() -> list[Path]:
    """Where the grid is looked for, in order: PROJ_DATA / PROJ_LIB, pyproj's data directories, then the system's."""
    found: list[str] = []
    for name in ("PROJ_DATA", "PROJ_LIB"):
        found += os.environ.get(name, "").split(os.pathsep)
    found += pyproj.datadir.get_data_dir().split(os.pathsep)
    found += ["/usr/share/proj", "/usr/local/share/proj"]
    return [Path(d) for d in dict.fromkeys(found) if d]


def grid_path() -> Path:
    for directory in grid_directories():
        path = directory / GRID
        if path.is_file():
            return path
    searched = ", ".join(str(d) for d in grid_directories())
    raise GeoidGridMissing(
        f"the EGM96 geoid grid {GRID} is not installed (looked in {searched}): "
        f"`apt-get install {APT_PACKAGE}` puts it in /usr/share/proj"
    )


@cache
def _transformer(path: str) -> Transformer:
    pyproj.network.set_network_enabled(False)
    return Transformer.from_pipeline(
        "+proj=pipeline +step +proj=unitconvert +xy_in=deg +xy_out=rad "
        f"+step +proj=vgridshift +grids={path} +multiplier=1 "
        "+step +proj=unitconvert +xy_in=rad +xy_out=deg"
    )


def egm96_undulation(lat: float, lon: float) -> float:
    """EGM96's geoid undulation in metres at a WGS84 latitude, longitude (degrees), bilinear in the 15' grid."""
    if not (-90.0 <= lat <= 90.0 and -180.0 <= lon <= 360.0):
        raise ValueError(f"({lat}, {lon}) is not a latitude, longitude in degrees")
    _, _, height = _transformer(str(grid_path())).transform(lon, lat, 0.0, errcheck=True)
    if not math.isfinite(height):
        raise ValueError(f"{GRID} gives no undulation at ({lat}, {lon})")
    return float(height)
