"""SVG drawings: the world map to scale (one metre = one unit, north up) and the routes' altitude over time.

Every string that comes from outside (ids, names, labels, titles) is escaped, so a drawing can be inlined in a
page as it is; classes and data- attributes name what a browser test looks for."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from shapely.geometry import MultiPolygon, Polygon

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

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: object) -> str:
    """Text without the characters XML cannot carry at all (escaping is left to escape/quoteattr)."""
    return _NOT_XML.sub("", str(text))


def _el(tag: str, *children: str, **attrs: str | None) -> str:
    """One element. Attribute names are spelt in Python (`class_`, `stroke_width`) and written as in SVG (`class`,
    `stroke-width`); values are quoted and escaped, None ones left out. Children are markup already."""
    head = tag + "".join(
        f" {key.rstrip('_').replace('_', '-')}={quoteattr(_clean(value))}"
        for key, value in attrs.items()
        if value is not None
    )
    return f"<{head}>{''.join(children)}</{tag}>" if any(children) else f"<{head}/>"


def _text(content: str) -> str:
    return escape(_clean(content))


def _title(content: str) -> str:
    """A tooltip, as the first child of the element it describes."""
    return f"<title>{_text(content)}</title>"


def _size(value: float) -> str:
    return num(value, 2)


@dataclass(frozen=True)
class _Frame:
    """Metres to SVG units: x stays, y flips (north up); `k` is the metres one pixel of the image stands for."""

    depth_m: float
    k: float

    def x(self, x: float) -> str:
        return num(x)

    def y(self, y: float) -> str:
        return num(self.depth_m - y)

    def px(self, pixels: float) -> str:
        return _size(pixels * self.k)

    def dash(self, on_px: float, off_px: float) -> str:
        return f"{self.px(on_px)} {self.px(off_px)}"

    def points(self, xys: Iterable[Sequence[float]]) -> str:
        return " ".join(f"{num(p[0])},{num(self.depth_m - p[1])}" for p in xys)

    def path(self, geom: Polygon | MultiPolygon) -> str:
        """Path data of a polygon (or several), holes included."""
        polygons = geom.geoms if isinstance(geom, MultiPolygon) else [geom]
        rings = [ring for poly in polygons for ring in (poly.exterior, *poly.interiors)]
        return "".join(f"M{self.points(ring.coords[:-1]).replace(' ', 'L', 1)}Z" for ring in rings)

    def halo(self) -> dict[str, str]:
        """Attributes of a label drawn over a white outline, readable over any layer."""
        return {"stroke": "#fff", "stroke_width": self.px(3), "stroke_linejoin": "round", "paint_order": "stroke"}


# --- the map -----------------------------------------------------------------------------------------------------
_MARGIN_PX, _TOP_PX, _SCALE_ROW_PX, _LEGEND_ROW_PX = 16.0, 36.0, 34.0, 18.0


def map_svg(
    world: World,
    routes: Sequence[Route],
    markers: Sequence[Marker] = (),
    *,
    time_sec: float | None = None,
    width_px: int = 900,
    title: str = "",
) -> str:
    """The world, the routes and the counterexamples to scale, as a standalone SVG document.

    The viewBox is in metres (x east; y flipped so that north is up: a point (x, y) is drawn at (x, depth - y)),
    with a margin for the title, the scale bar and the legend. With `time_sec`, no-fly zones inactive then are
    faded and traffic shows where it is at that time."""
    width_m, depth_m = world.grid.width_m, world.grid.depth_m
    f = _Frame(depth_m, width_m / max(1.0, width_px - 2 * _MARGIN_PX))
    height_px = _TOP_PX + depth_m / f.k + _SCALE_ROW_PX + _LEGEND_ROW_PX * (len(routes) + len(markers)) + 8
    view_box = (-_MARGIN_PX * f.k, -_TOP_PX * f.k, width_px * f.k, height_px * f.k)
    ground = _el(
        "rect",
        class_="ground",
        x="0",
        y="0",
        width=num(width_m),
        height=num(depth_m),
        fill="#f7f7f2",
        stroke="#999",
        stroke_width=f.px(1),
    )
    body = [
        ground,
        _corridors(world, f),
        _sensitive_zones(world, f),
        _no_fly_zones(world, f, time_sec),
        _buildings(world, f),
        _traffic(world, f, time_sec),
        _fleet(world, f),
        _places(world, f),
        *(_route(route, route_colour(i), f) for i, route in enumerate(routes)),
        *(_marker(marker, f, width_m) for marker in markers),
        _header(title, time_sec, width_m, f),
        _scale_bar(width_m, f),
        _legend(routes, markers, f),
    ]
    return _document(
        body,
        class_="world-map",
        data_world=world.world_id,
        width=str(width_px),
        height=str(round(height_px)),
        viewBox=" ".join(_size(v) for v in view_box),
        font_size=f.px(11),
    )


def _document(body: Iterable[str], **attrs: str) -> str:
    parts = ["\n", *(part + "\n" for part in body if part)]
    return _el("svg", *parts, xmlns="http://www.w3.org/2000/svg", **attrs, font_family="sans-serif") + "\n"


def _corridors(world: World, f: _Frame) -> str:
    items = []
    for c in world.corridors:
        tip = f"{c.id}: {num(c.width_m)} m wide, {num(c.alt_min_m)}–{num(c.alt_max_m)} m, load {c.load}/{c.capacity}"
        x, y = c.polyline[0]
        items.append(
            _el(
                "g",
                _title(tip),
                _el("path", d=f.path(c.shape), fill=CORRIDOR_BLUE, fill_opacity="0.35"),
                _el(
                    "polyline",
                    points=f.points(c.polyline),
                    fill="none",
                    stroke="#3182bd",
                    stroke_width=f.px(1),
                    stroke_dasharray=f.dash(6, 4),
                ),
                _el("text", _text(c.id), x=f.x(x), y=f.y(y), dy=f.px(-4), fill="#3182bd", **f.halo()),
                class_="corridor",
                data_id=c.id,
            )
        )
    return _el("g", *items, class_="layer-corridors")


def _sensitive_zones(world: World, f: _Frame) -> str:
    items = []
    for z in world.sensitive_zones:
        x0, _, x1, top = z.buffered_shape.bounds
        tip = f"{z.id} ({z.kind}){f': {z.name}' if z.name else ''}, keep {num(z.buffer_m)} m clear"
        items.append(
            _el(
                "g",
                _title(tip),
                _el(
                    "path",
                    class_="buffer",
                    d=f.path(z.buffered_shape),
                    fill=SENSITIVE_ORANGE,
                    fill_opacity="0.12",
                    stroke=SENSITIVE_ORANGE,
                    stroke_opacity="0.5",
                    stroke_width=f.px(1),
                    stroke_dasharray=f.dash(3, 3),
                ),
                _el(
                    "path",
                    d=f.path(z.shape),
                    fill=SENSITIVE_ORANGE,
                    fill_opacity="0.35",
                    stroke=SENSITIVE_ORANGE,
                    stroke_width=f.px(1.5),
                ),
                _el(
                    "text",
                    _text(z.id),
                    x=num((x0 + x1) / 2),
                    y=f.y(top),
                    dy=f.px(-4),
                    text_anchor="middle",
                    fill="#a64d00",
                    **f.halo(),
                ),
                class_="sensitive",
                data_id=z.id,
            )
        )
    return _el("g", *items, class_="layer-sensitive")


def _no_fly_zones(world: World, f: _Frame, time_sec: float | None) -> str:
    items = []
    for z in world.no_fly_zones:
        inactive = time_sec is not None and not z.active_at(time_sec)
        centre = z.shape.centroid
        tip = f"{nfz_label(z)}: {num(z.alt_min_m)}–{num(z.alt_max_m)} m" + (f", {z.reason}" if z.reason else "")
        items.append(
            _el(
                "g",
                _title(tip + (f" (inactive at t={num(time_sec)} s)" if inactive else "")),
                _el(
                    "path",
                    d=f.path(z.shape),
                    fill=NFZ_RED,
                    fill_opacity="0.2",
                    stroke=NFZ_RED,
                    stroke_width=f.px(2),
                    stroke_dasharray=f.dash(8, 5) if z.temporary else None,
                ),
                _el(
                    "text",
                    _text(nfz_label(z)),
                    x=num(centre.x),
                    y=f.y(centre.y),
                    text_anchor="middle",
                    fill="#8b0000",
                    **f.halo(),
                ),
                class_="nfz inactive" if inactive else "nfz",
                data_id=z.id,
                opacity="0.3" if inactive else None,
            )
        )
    return _el("g", *items, class_="layer-nfz")


def _buildings(world: World, f: _Frame) -> str:
    tallest = max((b.height_m for b in world.buildings), default=0.0)
    items = [
        _el(
            "path",
            _title(f"{b.id}{f' ({b.name})' if b.name else ''}: {num(b.height_m)} m"),
            class_="building",
            data_id=b.id,
            d=f.path(b.shape),
            fill=building_grey(b.height_m, tallest),
            stroke="#555",
            stroke_width=f.px(0.75),
        )
        for b in world.buildings
    ]
    return _el("g", *items, class_="layer-buildings")


def _arrowhead(points: Sequence[Sequence[float]], f: _Frame, length_px: float) -> str:
    """Points of a triangle at the end of a polyline, along its last horizontal move; '' if it never moves."""
    end = points[-1]
    start = next((p for p in reversed(points[:-1]) if (p[0], p[1]) != (end[0], end[1])), None)
    if start is None:
        return ""
    dx, dy = end[0] - start[0], end[1] - start[1]
    ux, uy = (v / math.hypot(dx, dy) * length_px * f.k for v in (dx, dy))
    return f.points([end, (end[0] - ux - uy / 2, end[1] - uy + ux / 2), (end[0] - ux + uy / 2, end[1] - uy - ux / 2)])


def _traffic(world: World, f: _Frame, time_sec: float | None) -> str:
    items = []
    for track in world.traffic:
        wps = track.waypoints
        head = _arrowhead(wps, f, 8)
        now = position_at(wps, time_sec) if time_sec is not None else None
        items.append(
            _el(
                "g",
                _title(f"traffic {track.id}: t {num(wps[0][3])}–{num(wps[-1][3])} s"),
                _el("polyline", points=f.points(wps), fill="none", stroke=TRAFFIC_GREY, stroke_width=f.px(1.2)),
                _el("polygon", points=head, fill=TRAFFIC_GREY) if head else "",
                _el("circle", class_="now", cx=f.x(now[0]), cy=f.y(now[1]), r=f.px(3.5), fill=TRAFFIC_GREY)
                if now
                else "",
                class_="traffic",
                data_id=track.id,
            )
        )
    return _el("g", *items, class_="layer-traffic")


def _places(world: World, f: _Frame) -> str:
    items = []
    for e in world.entities:
        x, y = e.position
        items.append(
            _el(
                "g",
                _title(f"{e.id} ({e.kind.value}){f': {e.name}' if e.name else ''}"),
                _el("circle", cx=f.x(x), cy=f.y(y), r=f.px(3.5), fill="#333"),
                _el("text", _text(e.id), x=f.x(x), y=f.y(y), dx=f.px(6), dy=f.px(4), fill="#222", **f.halo()),
                class_="place",
                data_id=e.id,
            )
        )
    return _el("g", *items, class_="layer-places")


def _fleet(world: World, f: _Frame) -> str:
    side = 6 * f.k
    items = [
        _el(
            "rect",
            _title(f"{u.id} ({u.status.value}, battery {round(u.battery_ratio * 100)}%)"),
            class_="uav",
            data_id=u.id,
            x=num(u.position[0] - side / 2),
            y=f.y(u.position[1] + side / 2),
            width=_size(side),
            height=_size(side),
            fill="#fff",
            stroke="#333",
            stroke_width=f.px(1),
        )
        for u in world.fleet
    ]
    return _el("g", *items, class_="layer-fleet")


def _route(route: Route, colour: str, f: _Frame) -> str:
    """The route's polyline, a filled dot at its start and a hollow one at its end."""
    wps = route.waypoints
    ends = []
    if wps:
        (x0, y0, *_), (x1, y1, *_) = wps[0], wps[-1]
        ends = [
            _el(
                "circle",
                _title(f"{route.legend}: start"),
                class_="start",
                cx=f.x(x0),
                cy=f.y(y0),
                r=f.px(4.5),
                fill=colour,
                stroke="#fff",
                stroke_width=f.px(1.5),
            ),
            _el(
                "circle",
                _title(f"{route.legend}: end"),
                class_="end",
                cx=f.x(x1),
                cy=f.y(y1),
                r=f.px(4.5),
                fill="#fff",
                stroke=colour,
                stroke_width=f.px(2.5),
            ),
        ]
    line = _el(
        "polyline",
        points=f.points(wps),
        fill="none",
        stroke=colour,
        stroke_width=f.px(2.5),
        stroke_linejoin="round",
        stroke_linecap="round",
        stroke_dasharray=f.dash(8, 5) if route.style == "dashed" else None,
    )
    return _el("g", _title(route.legend), line, *ends, class_="route", data_label=route.label, data_uav=route.uav_id)


def _violation_symbol(sx: float, sy: float, k: float) -> str:
    """A ring with an X centred on (sx, sy), in SVG units, `k` units a pixel: where a counterexample is."""
    d, width = 4 * k, _size(2 * k)
    cross = f"M{num(sx - d)},{num(sy - d)}L{num(sx + d)},{num(sy + d)}M{num(sx - d)},{num(sy + d)}L{num(sx + d)},{num(sy - d)}"
    ring = _el(
        "circle",
        cx=num(sx),
        cy=num(sy),
        r=_size(7 * k),
        fill="#fff",
        fill_opacity="0.7",
        stroke=VIOLATION_RED,
        stroke_width=width,
    )
    return ring + _el("path", d=cross, stroke=VIOLATION_RED, stroke_width=width)


def _counterexample_attrs(marker: Marker) -> dict[str, str | None]:
    time = None if marker.time_sec is None else num(marker.time_sec)
    return {"class_": "counterexample", "data_rule": marker.rule, "data_entity": marker.entity, "data_time": time}


def _marker(marker: Marker, f: _Frame, width_m: float) -> str:
    """The offending segment drawn thick over the route, the ring-and-X symbol and the marker's text (to its left
    in the east third of the map, where it would run off the edge)."""
    east = marker.x > width_m * 2 / 3
    segment = (
        _el(
            "polyline",
            class_="offending-segment",
            points=f.points(marker.segment),
            fill="none",
            stroke=VIOLATION_RED,
            stroke_opacity="0.5",
            stroke_width=f.px(7),
            stroke_linecap="round",
            stroke_linejoin="round",
        )
        if marker.segment
        else ""
    )
    return _el(
        "g",
        _title(marker.text),
        segment,
        _violation_symbol(marker.x, f.depth_m - marker.y, f.k),
        _el(
            "text",
            _text(marker.text),
            x=f.x(marker.x),
            y=f.y(marker.y),
            dx=f.px(-10 if east else 10),
            dy=f.px(-8),
            text_anchor="end" if east else None,
            fill=VIOLATION_RED,
            font_weight="bold",
            **f.halo(),
        ),
        **_counterexample_attrs(marker),
    )


def _header(title: str, time_sec: float | None, width_m: float, f: _Frame) -> str:
    """The title (and the time shown) at top left, a north arrow at top right."""
    line = heading(title, time_sec)
    x, half = width_m - 8 * f.k, 5 * f.k
    arrow = f"{num(x)},{f.px(-30)} {num(x - half)},{f.px(-18)} {num(x + half)},{f.px(-18)}"
    north = _el(
        "g",
        _el("polygon", points=arrow, fill="#333"),
        _el("text", "N", x=num(x), y=f.px(-5), text_anchor="middle", font_weight="bold"),
        class_="north",
    )
    text = _el("text", _text(line), class_="title", x="0", y=f.px(-12), font_size=f.px(15), font_weight="bold")
    return _el("g", text if line else "", north, class_="header")


def _scale_bar(width_m: float, f: _Frame) -> str:
    """A bar a round number of metres long (a quarter of the width or less), under the map's left edge."""
    length = nice_floor(width_m / 4)
    y, tick = f.depth_m + 16 * f.k, 5 * f.k
    d = f"M0,{_size(y - tick)}V{_size(y)}H{num(length)}V{_size(y - tick)}M{num(length / 2)},{_size(y)}V{_size(y - tick / 2)}"
    return _el(
        "g",
        _el("path", d=d, fill="none", stroke="#333", stroke_width=f.px(1.5)),
        _el("text", f"{num(length)} m", x=num(length), y=_size(y), dx=f.px(6)),
        class_="scale-bar",
        data_metres=num(length),
    )


def _legend(routes: Sequence[Route], markers: Sequence[Marker], f: _Frame) -> str:
    """One row per route (its colour and dash, label and UAV) then one per counterexample, under the scale bar."""
    top = f.depth_m + (_SCALE_ROW_PX + 4) * f.k
    rows = []
    for i, route in enumerate(routes):
        y = _size(top + i * _LEGEND_ROW_PX * f.k)
        swatch = _el(
            "line",
            x1="0",
            x2=f.px(24),
            y1=y,
            y2=y,
            stroke=route_colour(i),
            stroke_width=f.px(3),
            stroke_dasharray=f.dash(6, 3) if route.style == "dashed" else None,
        )
        label = _el("text", _text(route.legend), x=f.px(30), y=y, dy=f.px(4))
        rows.append(_el("g", swatch, label, class_="legend-entry", data_label=route.label))
    for j, marker in enumerate(markers, start=len(routes)):
        y = top + j * _LEGEND_ROW_PX * f.k
        symbol = _violation_symbol(12 * f.k, y, 0.7 * f.k)
        label = _el("text", _text(marker.text), x=f.px(30), y=_size(y), dy=f.px(4))
        rows.append(_el("g", symbol, label, class_="legend-entry counterexample-key"))
    return _el("g", *rows, class_="legend") if rows else ""


# --- the altitude profile ----------------------------------------------------------------------------------------
_LEFT_PX, _RIGHT_PX, _TOP_PLOT_PX, _BOTTOM_PX = 52.0, 14.0, 12.0, 34.0


@dataclass(frozen=True)
class _Axes:
    """Time (s) and altitude (m) to pixels of the plot area."""

    t0: float
    t1: float
    z0: float
    z1: float
    width_px: float
    height_px: float

    def x(self, t: float) -> float:
        return _LEFT_PX + (t - self.t0) / (self.t1 - self.t0) * self.width_px

    def y(self, z: float) -> float:
        return _TOP_PLOT_PX + (self.z1 - z) / (self.z1 - self.z0) * self.height_px

    def points(self, rows: Iterable[Sequence[float]]) -> str:
        return " ".join(f"{num(self.x(r[3]))},{num(self.y(r[2]))}" for r in rows)


def _ticks(lo: float, hi: float) -> list[float]:
    step = nice_floor((hi - lo) / 4)
    return [k * step for k in range(math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9) + 1)]


def altitude_svg(
    routes: Sequence[Route],
    markers: Sequence[Marker] = (),
    *,
    floor_m: float,
    ceiling_m: float,
    width_px: int = 900,
    height_px: int = 220,
) -> str:
    """Altitude over time of each route (colours as on the map), the allowed band between `floor_m` and
    `ceiling_m` shaded, and each counterexample at (time, altitude) with a vertical line at its time."""
    rows = [w for r in routes for w in r.waypoints] + [s for m in markers for s in m.segment if len(s) == 4]
    times = [w[3] for w in rows] + [m.time_sec for m in markers if m.time_sec is not None]
    heights = [w[2] for w in rows] + [m.z for m in markers if m.z is not None] + [floor_m, ceiling_m, 0.0]
    t0, t1 = (min(times), max(times)) if times else (0.0, 1.0)
    a = _Axes(
        t0=t0,
        t1=t1 if t1 > t0 else t0 + 1.0,
        z0=min(heights),
        z1=max(heights) * 1.1 if max(heights) > 0 else 1.0,
        width_px=max(1.0, width_px - _LEFT_PX - _RIGHT_PX),
        height_px=max(1.0, height_px - _TOP_PLOT_PX - _BOTTOM_PX),
    )
    left, right, top, bottom = _LEFT_PX, _LEFT_PX + a.width_px, _TOP_PLOT_PX, _TOP_PLOT_PX + a.height_px
    grid, labels = [], []
    for t in _ticks(a.t0, a.t1):
        grid.append(f"M{num(a.x(t))},{num(top)}V{num(bottom)}")
        labels.append(_el("text", num(t), x=num(a.x(t)), y=num(bottom + 14), text_anchor="middle"))
    for z in _ticks(a.z0, a.z1):
        grid.append(f"M{num(left)},{num(a.y(z))}H{num(right)}")
        labels.append(_el("text", num(z), x=num(left - 5), y=num(a.y(z)), dy="4", text_anchor="end"))
    band_top, band_bottom = a.y(max(floor_m, ceiling_m)), a.y(min(floor_m, ceiling_m))
    body = [
        _el(
            "rect",
            _title(f"allowed: {num(floor_m)}–{num(ceiling_m)} m"),
            class_="band",
            data_floor_m=num(floor_m),
            data_ceiling_m=num(ceiling_m),
            x=num(left),
            y=num(band_top),
            width=num(a.width_px),
            height=num(band_bottom - band_top),
            fill="#2ca02c",
            fill_opacity="0.12",
        ),
        _el("path", class_="grid", d="".join(grid), stroke="#ddd", stroke_width="1"),
        _el(
            "rect",
            class_="axes",
            x=num(left),
            y=num(top),
            width=num(a.width_px),
            height=num(a.height_px),
            fill="none",
            stroke="#666",
        ),
        _el("g", *labels, class_="ticks"),
        _el("text", "time (s)", x=num((left + right) / 2), y=num(bottom + 29), text_anchor="middle"),
        _el(
            "text",
            "altitude (m)",
            transform=f"translate(12,{num((top + bottom) / 2)}) rotate(-90)",
            text_anchor="middle",
        ),
    ]
    for i, route in enumerate(routes):
        line = _el(
            "polyline",
            points=a.points(route.waypoints),
            fill="none",
            stroke=route_colour(i),
            stroke_width="2",
            stroke_linejoin="round",
            stroke_dasharray="8 5" if route.style == "dashed" else None,
        )
        body.append(_el("g", _title(route.legend), line, class_="route", data_label=route.label, data_uav=route.uav_id))
    for marker in markers:
        parts = [_title(marker.text)]
        timed = [s for s in marker.segment if len(s) == 4]
        if timed:
            parts.append(
                _el(
                    "polyline",
                    class_="offending-segment",
                    points=a.points(timed),
                    fill="none",
                    stroke=VIOLATION_RED,
                    stroke_opacity="0.5",
                    stroke_width="6",
                    stroke_linecap="round",
                )
            )
        if marker.time_sec is not None:
            x = a.x(marker.time_sec)
            parts.append(
                _el(
                    "path",
                    class_="violation-time",
                    d=f"M{num(x)},{num(top)}V{num(bottom)}",
                    stroke=VIOLATION_RED,
                    stroke_dasharray="4 3",
                )
            )
            if marker.z is not None:
                parts.append(_violation_symbol(x, a.y(marker.z), 1.0))
        body.append(_el("g", *parts, **_counterexample_attrs(marker)))
    return _document(
        body,
        class_="altitude-profile",
        width=str(width_px),
        height=str(height_px),
        viewBox=f"0 0 {width_px} {height_px}",
        font_size="11",
    )
