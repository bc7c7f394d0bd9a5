"""Drawings of a world and of routes flown over it, to scale: SVG for pages and reports, PNG for files.

`map_svg` draws the city, its airspace, the routes and the counterexamples seen from above; `altitude_svg` draws the
routes' altitude over time; `map_png` writes the map as an image (matplotlib is imported only when it is called)."""

from __future__ import annotations

from drawing.png import map_png
from drawing.scene import Marker, Route, decision_routes, marker_from_counterexample, route_colour
from drawing.svg import altitude_svg, map_svg

__all__ = [
    "Marker",
    "Route",
    "altitude_svg",
    "decision_routes",
    "map_png",
    "map_svg",
    "marker_from_counterexample",
    "route_colour",
]
