"""The world map as a PNG image, drawn with matplotlib: the same layers as the SVG map, for `--out map.png`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from shapely.geometry import MultiPolygon, Polygon
from shapely.geometry.polygon import orient

from drawing.scene import (
    CORRIDOR_BLUE,
    NFZ_RED,
    SENSITIVE_ORANGE,
    TRAFFIC_GREY,
    VIOLATION_RED,
    Marker,
    Route,
    building_grey,
    heading,
    nfz_label,
    nice_floor,
    num,
    position_at,
    route_colour,
)
from tools.world import World

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def _fill(ax: Axes, geom: Polygon | MultiPolygon, **style: Any) -> None:
    """Adds a shapely polygon (or several), holes included, as one patch."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path as MplPath

    polygons = [orient(poly) for poly in (geom.geoms if isinstance(geom, MultiPolygon) else [geom])]
    rings = [ring for poly in polygons for ring in (poly.exterior, *poly.interiors)]  # holes wound the other way
    ax.add_patch(
        PathPatch(MplPath.make_compound_path(*(MplPath(np.asarray(r.coords), closed=True) for r in rings)), **style)
    )


def map_png(
    world: World,
    routes: Sequence[Route],
    markers: Sequence[Marker] = (),
    *,
    path: str | Path,
    time_sec: float | None = None,
    width_px: int = 900,
    title: str = "",
) -> Path:
    """Draws what `map_svg` draws (to scale, north up) into a PNG file at `path`; returns that path.

    Renders on matplotlib's Agg canvas directly, so it needs no display and leaves pyplot's backend alone."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # Ids, names and titles come from outside: '$' must stay a dollar sign, never start matplotlib's math text.
    with matplotlib.rc_context({"text.parse_math": False}):
        width_m, depth_m = world.grid.width_m, world.grid.depth_m
        dpi = 100
        fig = Figure(figsize=(width_px / dpi, width_px / dpi * depth_m / width_m), dpi=dpi)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        ax.set_xlim(0, width_m)
        ax.set_ylim(0, depth_m)
        ax.set_aspect("equal")
        ax.set_facecolor("#f7f7f2")
        ax.tick_params(labelsize=7)
        _draw_world(ax, world, time_sec)
        _draw_routes(ax, routes, markers, width_m)
        length = nice_floor(width_m / 4)
        ax.plot([0.03 * width_m, 0.03 * width_m + length], [0.03 * depth_m] * 2, color="#333", lw=2)
        ax.text(0.03 * width_m + length / 2, 0.03 * depth_m, f"{num(length)} m", ha="center", va="bottom", fontsize=7)
        arrow = {"arrowstyle": "-|>", "color": "#333"}
        ax.annotate(
            "N", (0.96, 0.98), xytext=(0.96, 0.88), xycoords="axes fraction", ha="center", va="top", arrowprops=arrow
        )
        if heading(title, time_sec):
            ax.set_title(heading(title, time_sec), fontsize=10)
        if routes or markers:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.05), fontsize=7, frameon=False, ncol=2)
        path = Path(path)
        fig.savefig(path, format="png", bbox_inches="tight")
    return path


def _draw_world(ax: Axes, world: World, time_sec: float | None) -> None:
    """Corridors, sensitive zones, no-fly zones (faded when inactive at `time_sec`), buildings, traffic, fleet, places."""
    from matplotlib.colors import to_rgba

    for c in world.corridors:
        _fill(ax, c.shape, facecolor=CORRIDOR_BLUE, alpha=0.35, edgecolor="none")
        xs, ys = zip(*c.polyline)
        ax.plot(xs, ys, color="#3182bd", lw=0.8, ls="--")
        ax.annotate(c.id, c.polyline[0], xytext=(0, 4), textcoords="offset points", fontsize=7, color="#3182bd")
    for z in world.sensitive_zones:
        _fill(ax, z.buffered_shape, facecolor=SENSITIVE_ORANGE, alpha=0.12, edgecolor=SENSITIVE_ORANGE, ls=":")
        _fill(ax, z.shape, facecolor=SENSITIVE_ORANGE, alpha=0.35, edgecolor=SENSITIVE_ORANGE)
        x0, _, x1, top = z.buffered_shape.bounds
        ax.annotate(z.id, ((x0 + x1) / 2, top), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=7)
    for z in world.no_fly_zones:
        faded = time_sec is not None and not z.active_at(time_sec)
        face, edge = to_rgba(NFZ_RED, 0.06 if faded else 0.2), to_rgba(NFZ_RED, 0.3 if faded else 1)
        _fill(ax, z.shape, facecolor=face, edgecolor=edge, lw=1.5, ls="--" if z.temporary else "-")
        centre = z.shape.centroid
        ax.text(centre.x, centre.y, nfz_label(z), ha="center", fontsize=7, color="#8b0000", alpha=0.4 if faded else 1)
    tallest = max((b.height_m for b in world.buildings), default=0.0)
    for b in world.buildings:
        _fill(ax, b.shape, facecolor=building_grey(b.height_m, tallest), edgecolor="#555", lw=0.5)
    for track in world.traffic:
        wps = np.asarray(track.waypoints)
        ax.plot(wps[:, 0], wps[:, 1], color=TRAFFIC_GREY, lw=0.9)
        moved = [p for p in wps[:-1, :2] if tuple(p) != tuple(wps[-1, :2])]
        if moved:  # an arrowhead along the last move
            ax.annotate("", wps[-1, :2], xytext=moved[-1], arrowprops={"arrowstyle": "-|>", "color": TRAFFIC_GREY})
        now = position_at(track.waypoints, time_sec) if time_sec is not None else None
        if now:
            ax.plot(now[0], now[1], "o", color=TRAFFIC_GREY, ms=4)
    for u in world.fleet:
        ax.plot(*u.position, "s", mfc="#fff", mec="#333", ms=4)
    for e in world.entities:
        ax.plot(*e.position, "o", color="#333", ms=3)
        ax.annotate(e.id, e.position, xytext=(4, 3), textcoords="offset points", fontsize=7)


def _draw_routes(ax: Axes, routes: Sequence[Route], markers: Sequence[Marker], width_m: float) -> None:
    """Each route in its colour with its start (filled) and end (hollow), then each counterexample over them."""
    for i, route in enumerate(routes):
        colour, wps = route_colour(i), np.asarray(route.waypoints).reshape(-1, 4)
        style = "--" if route.style == "dashed" else "-"
        ax.plot(wps[:, 0], wps[:, 1], color=colour, lw=2, ls=style, label=route.legend)
        if len(wps):
            ax.plot(wps[0, 0], wps[0, 1], "o", color=colour, mec="#fff", ms=6)
            ax.plot(wps[-1, 0], wps[-1, 1], "o", mfc="#fff", mec=colour, mew=2, ms=6)
    for marker in markers:
        if marker.segment:
            seg = np.asarray([row[:2] for row in marker.segment])
            ax.plot(seg[:, 0], seg[:, 1], color=VIOLATION_RED, lw=6, alpha=0.5, solid_capstyle="round")
        ax.plot(marker.x, marker.y, "o", mfc=(1, 1, 1, 0.7), mec=VIOLATION_RED, mew=1.5, ms=11, label=marker.text)
        ax.plot(marker.x, marker.y, "x", color=VIOLATION_RED, mew=1.5, ms=6)
        east = marker.x > width_m * 2 / 3
        ax.annotate(
            marker.text,
            (marker.x, marker.y),
            xytext=(-8 if east else 8, 6),
            textcoords="offset points",
            ha="right" if east else "left",
            fontsize=7,
            color=VIOLATION_RED,
            fontweight="bold",
        )
