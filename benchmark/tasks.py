"""Tasks of the nine scenario types: each builder picks the task's entities, shapes the world
around it (a pop-up NFZ across the direct line, a congested corridor, a drained fleet, a gust front ...) and
says which label it aims at. The label itself always comes from the tools (benchmark/gold.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from shapely.geometry import LineString, Point

from benchmark.citygen import CityDraft, EntityLabel, make_nfz, nfz_label, r1, rect
from benchmark.vocabulary import NFZ_REASONS, Term, area_of
from tools.assignment import DETOUR_FACTOR
from tools.rules import DEFAULT_ALTITUDE_MAX_M, DEFAULT_ALTITUDE_MIN_M
from tools.world import (
    UAV,
    EnergyModel,
    Entity,
    NoFlyZone,
    RiskLevel,
    TimeWindow,
    TrafficTrack,
    UAVStatus,
    WeatherRegion,
)

# The nine scenario types of the benchmark and their shares of a split.
SCENARIO_TYPE_SHARES: dict[str, float] = {
    "normal_delivery": 0.15,
    "emergency_delivery": 0.15,
    "patrol_inspection": 0.10,
    "nfz_avoidance": 0.15,
    "corridor_congestion": 0.10,
    "charging_bottleneck": 0.10,
    "weather_risk": 0.10,
    "multimodal_fallback": 0.10,
    "unsat_ambiguous": 0.05,
}
# Requests that leave out a fact no plan can do without (no place, one end of a delivery, a pronoun with nothing to
# refer to, a time with no anchor): gold human_confirm with the missing facts. Their share is taken from the
# nine scenario types in proportion, which keep their ratios.
UNDERSPECIFIED_SHARE = 0.05
SCENARIO_SHARES: dict[str, float] = {
    **{k: round(v * (1 - UNDERSPECIFIED_SHARE), 6) for k, v in SCENARIO_TYPE_SHARES.items()},
    "underspecified": UNDERSPECIFIED_SHARE,
}
NEAR_HOME_M = 400.0
# Demands a delivery request may state beside its cargo and deadline (the stated-constraint families), and
# the UNSAT kinds made of the request's own altitude demands: refused before any tool runs.
STATED_DEMANDS = ("return_leg", "via_point", "altitude_floor")
STATED_DEMAND_SHARE = 0.5
STATED_UNSAT_KINDS = ("altitude_above_ceiling", "altitude_contradiction")
ALTITUDE_FLOORS_M = (50.0, 60.0)
VIA_DETOUR_FACTOR = 1.5  # a via point costs at most this times the direct distance
ZONE_CLEARANCE_M = 35.0  # a scenario's new zone keeps this far from the mission's ends, pads and idle UAVs


@dataclass(frozen=True)
class Cargo:
    term: Term
    kg: float


CARGO = {
    "parcel": Cargo(Term("a parcel", "一个包裹"), 1.2),
    "documents": Cargo(Term("urgent documents", "加急文件"), 0.3),
    "medicine": Cargo(Term("a box of medicine", "一箱药品"), 1.5),
    "food": Cargo(Term("a meal order", "一份外卖"), 0.8),
    "samples": Cargo(Term("lab samples", "化验样本"), 0.6),
    "aed": Cargo(Term("a defibrillator (AED)", "除颤仪(AED)"), 1.8),
    "blood": Cargo(Term("a blood bag", "血袋"), 1.0),
    "first_aid": Cargo(Term("a first-aid kit", "急救包"), 2.0),
    "epinephrine": Cargo(Term("an epinephrine kit", "肾上腺素急救盒"), 0.4),
    "machine_parts": Cargo(Term("a crate of machine parts", "一箱机械零件"), 9.0),
}
ROUTINE_CARGO = ("parcel", "documents", "medicine", "food", "samples")
EMERGENCY_CARGO = ("aed", "blood", "first_aid", "epinephrine")


def any_cargo(rng: np.random.Generator) -> Cargo:
    """A routine or an emergency item, uniformly."""
    return CARGO[str(rng.choice(ROUTINE_CARGO + EMERGENCY_CARGO))]


def cargo_intent(cargo: Cargo) -> str:
    return "emergency" if cargo in [CARGO[c] for c in EMERGENCY_CARGO] else "delivery"


@dataclass
class Task:
    """What the operator asks for, in world ids, plus what the generator intends and why."""

    scenario_type: str
    difficulty: str
    intent: str
    priority: str
    origin: str | None
    destination: str | None
    cargo: Cargo | None = None
    waypoints: list[str] = field(default_factory=list)
    handoff_point: str | None = None  # multimodal: where the UAV hands over to a ground courier
    named_uavs: list[str] = field(default_factory=list)  # UAVs the instruction names (maybe wrongly)
    deadline_factor: float | None = None  # tightness over the expected arrival (gold.choose_deadline); None: none
    impossible_deadline: bool = False
    altitude_max_m: float = DEFAULT_ALTITUDE_MAX_M
    altitude_min_m: float = DEFAULT_ALTITUDE_MIN_M  # above the default: stated ("fly no lower than 60 m")
    return_leg: bool = False  # "... and back": the destination is the origin, the far end a waypoint
    stated_demand: str | None = None  # the STATED_DEMANDS entry this request adds, if any
    battery_reserve_ratio: float = 0.2
    require_corridor: bool = False
    intended_label: str = "SAT"
    unsat_kind: str | None = None  # the reason the generator built in (UNSAT / AMBIGUOUS)
    traps: list[str] = field(default_factory=list)  # what an agent that ignores the state would fail on
    mention_zones: list[str] = field(default_factory=list)  # zones the instruction asks to avoid explicitly
    contradiction_zone: str | None = None  # spec_contradiction: the zone to both enter and avoid
    ambiguous_kind: str | None = None  # ambiguous_reference: the entity kind named without a distinction
    forbid_ground_transfer: bool = False
    stress_level: str = "medium"

    @property
    def payload_kg(self) -> float:
        return self.cargo.kg if self.cargo else 0.0


class ScenarioError(Exception):
    """This world cannot host the scenario (e.g. too few POIs): the generator draws another world."""


# --- helpers ----------------------------------------------------------------------------------------------


def dist(a: tuple[float, float], b: tuple[float, float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def pick(rng: np.random.Generator, items: list):
    if not items:
        raise ScenarioError("nothing to pick from")
    return items[int(rng.integers(len(items)))]


def pick_pair(
    draft: CityDraft,
    rng: np.random.Generator,
    origin_kinds: tuple[str, ...],
    dest_kinds: tuple[str, ...],
    min_m: float = 150.0,
) -> tuple[Entity, Entity]:
    origins = draft.entities_of(*origin_kinds)
    dests = draft.entities_of(*dest_kinds)
    pairs = [(o, d) for o in origins for d in dests if o.id != d.id and dist(o.position, d.position) >= min_m]
    if not pairs:
        raise ScenarioError(f"no {origin_kinds} -> {dest_kinds} pair {min_m} m apart")
    return pick(rng, pairs)


def idle_uavs(draft: CityDraft) -> list[UAV]:
    return [u for u in draft.fleet if u.status is UAVStatus.idle]


def energy_ratio_needed(draft: CityDraft, uav: UAV, legs_m: float, payload_kg: float) -> float:
    """Battery share a mission of `legs_m` straight metres takes, as assign_uav reckons it (detour factor 1.3,
    conservative energy model) with the strongest wind of the map blowing against the UAV all the way."""
    model = EnergyModel()
    wind = max((w.wind_speed_mps for w in draft.weather), default=0.0)
    per_m = (model.base_wh_per_m + model.payload_wh_per_m_per_kg * payload_kg) * model.conservative_factor
    energy = per_m * (1 + model.headwind_factor_per_mps * wind) * DETOUR_FACTOR * legs_m
    return energy / uav.battery_capacity_wh


def mission_length(draft: CityDraft, uav: UAV, stops: list[str]) -> float:
    points = [uav.position] + [draft.entity(s).position for s in stops]
    return sum(dist(a, b) for a, b in itertools.pairwise(points))


def _nearest_home(draft: CityDraft, xy: tuple[float, float], rank: int = 0) -> tuple[float, float]:
    """The `rank`-th nearest pad (depot, charging pad, vertiport) to `xy`: where a UAV can wait."""
    homes = sorted(
        (e.position for e in draft.entities_of("depot", "charging_pad", "vertiport")),
        key=lambda p: dist(p, xy),
    )
    return homes[min(rank, len(homes) - 1)] if homes else xy


def make_capable(
    draft: CityDraft,
    rng: np.random.Generator,
    uav: UAV,
    stops: list[str],
    payload_kg: float,
    spare: float,
) -> UAV:
    """`uav`, idle, able to lift the payload, charged to the mission's need plus `spare`; moved to a pad near
    the first stop when its own pad is too far for any battery."""
    start = draft.entity(stops[0]).position
    if energy_ratio_needed(draft, uav, mission_length(draft, uav, stops), payload_kg) + spare > 0.95:
        home = _nearest_home(draft, start, rank=int(rng.integers(2)))
        if dist(home, start) > NEAR_HOME_M:  # no pad near the start: the UAV waits at the start itself
            home = start
        offset = rng.uniform(-3, 3, size=2)
        uav = uav.model_copy(update={"position": (r1(home[0] + offset[0]), r1(home[1] + offset[1]))})
    need = energy_ratio_needed(draft, uav, mission_length(draft, uav, stops), payload_kg)
    if need + spare > 1.0:
        raise ScenarioError(f"{uav.id} cannot carry the mission's {need:.2f} battery share plus {spare:.2f}")
    capable = uav.model_copy(
        update={
            "status": UAVStatus.idle,
            "battery_ratio": round(min(1.0, need + spare), 3),
            "payload_capacity_kg": max(uav.payload_capacity_kg, payload_kg),
        }
    )
    draft.replace_uav(capable)
    return capable


def ensure_capable_uav(draft: CityDraft, rng: np.random.Generator, stops: list[str], payload_kg: float) -> UAV:
    """Make sure at least one idle UAV can lift the payload and has the charge: a SAT task must be doable."""
    start = draft.entity(stops[0]).position
    for uav in sorted(idle_uavs(draft), key=lambda u: dist(u.position, start)):
        need = energy_ratio_needed(draft, uav, mission_length(draft, uav, stops), payload_kg)
        if uav.payload_capacity_kg >= payload_kg and uav.battery_ratio >= need + 0.3:
            return uav
    able = [u for u in draft.fleet if u.payload_capacity_kg >= payload_kg and u.status is not UAVStatus.busy]
    uav = min(
        able or draft.fleet,
        key=lambda u: (-u.battery_capacity_wh, dist(u.position, start)),
    )
    return make_capable(draft, rng, uav, stops, payload_kg, spare=float(rng.uniform(0.3, 0.45)))


def clear_of_mission(draft: CityDraft, shape, ends: list[str]) -> bool:
    """True when `shape` stays ZONE_CLEARANCE_M away from the mission's ends, the UAV pads and idle UAVs
    (a temporary zone may close over other POIs: that is what temporary restrictions do)."""
    pads = [e.position for e in draft.entities_of("depot", "charging_pad", "vertiport")]
    guarded = [draft.entity(e).position for e in ends] + pads + [u.position for u in idle_uavs(draft)]
    return all(shape.distance(Point(p)) >= ZONE_CLEARANCE_M for p in guarded)


def add_zone_label(draft: CityDraft, zone: NoFlyZone, reason: str) -> None:
    draft.labels[zone.id] = nfz_label(zone, reason, draft.grid.width_m, draft.grid.depth_m)


def deadline_factor(rng: np.random.Generator, difficulty: str, emergency: bool = False) -> float | None:
    if difficulty == "easy":
        return None if not emergency else float(rng.uniform(1.8, 2.4))
    return {
        "medium": float(rng.uniform(1.45, 1.8)),
        "hard": float(rng.uniform(1.2, 1.35)),
        "extreme": float(rng.uniform(1.08, 1.15)),
    }.get(difficulty)


def _nfz_across(
    draft: CityDraft,
    rng: np.random.Generator,
    a: tuple[float, float],
    b: tuple[float, float],
    ends: list[str],
) -> NoFlyZone | None:
    """A rectangle straddling the a -> b line at its middle, clear of every entity and idle UAV."""
    length = dist(a, b)
    mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
    for _ in range(12):
        along = rng.uniform(0.15, 0.3) * length
        across = rng.uniform(0.35, 0.6) * length
        horizontal = abs(b[0] - a[0]) >= abs(b[1] - a[1])
        w, d = (along, across) if horizontal else (across, along)
        cx, cy = (
            mx + rng.uniform(-0.1, 0.1) * length,
            my + rng.uniform(-0.1, 0.1) * length,
        )
        x0, y0 = max(5.0, cx - w / 2), max(5.0, cy - d / 2)
        x1, y1 = (
            min(draft.grid.width_m - 5, cx + w / 2),
            min(draft.grid.depth_m - 5, cy + d / 2),
        )
        if x1 - x0 < 30 or y1 - y0 < 30:
            continue
        zone_id = draft.next_id("nfz_temp_")
        candidate = NoFlyZone(id=zone_id, polygon=rect(x0, y0, x1, y1), alt_min_m=0.0, alt_max_m=300.0)
        if candidate.shape.intersects(LineString([a, b])) and clear_of_mission(draft, candidate.shape, ends):
            return candidate
    return None


# --- scenario builders ------------------------------------------------------------------------------------


def build_normal_delivery(draft: CityDraft, rng: np.random.Generator, difficulty: str) -> Task:
    origin, dest = pick_pair(
        draft,
        rng,
        ("depot", "warehouse", "charging_pad"),
        ("residential", "office", "hospital", "park", "police"),
    )
    cargo = CARGO[str(rng.choice(ROUTINE_CARGO))]
    task = Task(
        "normal_delivery",
        difficulty,
        "delivery",
        str(rng.choice(["normal", "low", "high"], p=[0.7, 0.2, 0.1])),
        origin.id,
        dest.id,
        cargo=cargo,
        deadline_factor=deadline_factor(rng, difficulty),
    )
    if difficulty == "unsat":
        kind = str(rng.choice(["payload_too_heavy", "deadline_impossible", *STATED_UNSAT_KINDS]))
        if kind == "payload_too_heavy":
            task.cargo = CARGO["machine_parts"]
            return _unsat(task, kind)
        if kind == "deadline_impossible":
            return _unsat(task, kind, impossible_deadline=True)
        return _unsat(stated_altitude_conflict(draft, task, kind), kind)
    if difficulty in ("hard", "extreme"):
        task.battery_reserve_ratio = float(rng.choice([0.25, 0.3]))
        task.altitude_max_m = 90.0
    if rng.random() < STATED_DEMAND_SHARE:
        add_stated_demand(draft, rng, task, str(rng.choice(STATED_DEMANDS)))
    ensure_capable_uav(draft, rng, [origin.id, *task.waypoints, task.destination], task.payload_kg)
    return task


def add_stated_demand(draft: CityDraft, rng: np.random.Generator, task: Task, demand: str) -> None:
    """One more demand the request states and the gold keeps: a return leg, a via point, or an altitude floor.
    A world that cannot host the via point leaves the task as it was."""
    task.stated_demand = demand
    if demand == "return_leg":
        task.waypoints, task.destination, task.return_leg = [task.destination], task.origin, True
    elif demand == "via_point":
        start, end = draft.entity(task.origin).position, draft.entity(task.destination).position
        direct = dist(start, end)
        vias = [
            e
            for e in draft.entities
            if e.id not in (task.origin, task.destination)
            and e.kind.value != "accident_site"
            and dist(start, e.position) + dist(e.position, end) <= VIA_DETOUR_FACTOR * direct
            and min(dist(start, e.position), dist(e.position, end)) >= 60.0
        ]
        if vias:
            task.waypoints = [pick(rng, vias).id]
        else:
            task.stated_demand = None
    else:
        task.altitude_min_m = float(rng.choice(ALTITUDE_FLOORS_M))


def stated_altitude_conflict(draft: CityDraft, task: Task, kind: str) -> Task:
    """Altitude demands no flight can meet: above the airspace ceiling, or a floor over the stated cap."""
    if kind == "altitude_above_ceiling":
        task.altitude_min_m = draft.grid.ceiling_m + 30.0
    else:
        task.altitude_min_m, task.altitude_max_m = 80.0, 50.0
    return task


def build_emergency_delivery(draft: CityDraft, rng: np.random.Generator, difficulty: str) -> Task:
    origin, dest = pick_pair(draft, rng, ("hospital", "fire_station", "police"), ("accident_site",))
    cargo = CARGO[str(rng.choice(EMERGENCY_CARGO))]
    task = Task(
        "emergency_delivery",
        difficulty,
        "emergency",
        str(rng.choice(["high", "critical"])),
        origin.id,
        dest.id,
        cargo=cargo,
        deadline_factor=deadline_factor(rng, difficulty, emergency=True),
    )
    if difficulty == "unsat":
        return _unsat(task, "deadline_impossible", impossible_deadline=True)
    ensure_capable_uav(draft, rng, [origin.id, dest.id], task.payload_kg)
    return task


def build_patrol_inspection(draft: CityDraft, rng: np.random.Generator, difficulty: str) -> Task:
    sites = draft.entities_of("inspection_site")
    bases = draft.entities_of("depot", "charging_pad", "vertiport")
    if len(sites) < 2 or len(bases) < 2:
        raise ScenarioError("patrol needs two inspection sites and two bases")
    count = min(len(sites), 3 if difficulty in ("hard", "extreme") else 2)
    order = [sites[int(i)] for i in rng.permutation(len(sites))[:count]]
    origin = min(bases, key=lambda b: dist(b.position, order[0].position))
    dest = min(
        (b for b in bases if b.id != origin.id),
        key=lambda b: dist(b.position, order[-1].position),
    )
    task = Task(
        "patrol_inspection",
        difficulty,
        str(rng.choice(["inspection", "patrol"], p=[0.6, 0.4])),
        str(rng.choice(["normal", "low"], p=[0.8, 0.2])),
        origin.id,
        dest.id,
        waypoints=[s.id for s in order],
        deadline_factor=None if difficulty in ("easy", "medium") else deadline_factor(rng, difficulty),
    )
    if difficulty == "unsat":
        others = [origin.id, dest.id, *task.waypoints[1:]]
        zone = _nfz_over(draft, rng, order[0], "fire_fighting", temporary=True, others=others)
        if zone is None:
            raise ScenarioError("no room for an NFZ over the inspection site")
        task.deadline_factor = None
        return _unsat(task, "waypoint_in_nfz")
    ensure_capable_uav(draft, rng, [origin.id, *task.waypoints, dest.id], 0.0)
    return task


def _nfz_over(
    draft: CityDraft,
    rng: np.random.Generator,
    target: Entity,
    reason: str,
    temporary: bool,
    others: list[str],
) -> NoFlyZone | None:
    """An NFZ covering `target`, clear of the mission's `others` and of the UAVs, active for the whole mission."""
    for _ in range(10):
        half = float(rng.uniform(35, 60))
        cx, cy = (
            target.position[0] + rng.uniform(-15, 15),
            target.position[1] + rng.uniform(-15, 15),
        )
        x0, y0 = max(2.0, cx - half), max(2.0, cy - half)
        x1, y1 = (
            min(draft.grid.width_m - 2, cx + half),
            min(draft.grid.depth_m - 2, cy + half),
        )
        prefix = "nfz_temp_" if temporary else "nfz_perm_"
        window = TimeWindow(start_sec=0.0, end_sec=7200.0) if temporary else None
        zone = make_nfz(
            rng,
            draft.next_id(prefix),
            ((x0 + x1) / 2, (y0 + y1) / 2),
            (x1 - x0, y1 - y0),
            reason,
            window,
        )
        if zone.shape.contains(target.point) and clear_of_mission(draft, zone.shape, others):
            draft.no_fly_zones.append(zone)
            add_zone_label(draft, zone, reason)
            return zone
    return None


def build_nfz_avoidance(draft: CityDraft, rng: np.random.Generator, difficulty: str) -> Task:
    for _ in range(6):
        origin, dest = pick_pair(
            draft,
            rng,
            ("hospital", "depot", "charging_pad", "warehouse"),
            ("accident_site", "residential", "office", "hospital", "metro_station"),
            300.0,
        )
        first = _nfz_across(draft, rng, origin.position, dest.position, [origin.id, dest.id])
        if first is not None or difficulty == "unsat":
            break
    else:
        raise ScenarioError("no room for an NFZ across the direct line")
    emergency = dest.kind.value == "accident_site"
    task = Task(
        "nfz_avoidance",
        difficulty,
        "emergency" if emergency else "delivery",
        "high" if emergency else "normal",
        origin.id,
        dest.id,
        cargo=CARGO[str(rng.choice(EMERGENCY_CARGO if emergency else ROUTINE_CARGO))],
        deadline_factor=deadline_factor(rng, difficulty, emergency),
    )
    if difficulty == "unsat":
        reason = str(rng.choice(["police_operation", "fire_fighting"]))
        if _nfz_over(draft, rng, dest, reason, temporary=True, others=[origin.id]) is None:
            raise ScenarioError("no room for an NFZ over the destination")
        task.deadline_factor = None
        return _unsat(task, "destination_in_nfz")
    zone: NoFlyZone | None = first
    for n in range(2 if difficulty in ("hard", "extreme") else 1):
        if n == 1:  # the second one across the first half, where a detour round the first would pass
            a, b = origin.position, dest.position
            zone = _nfz_across(
                draft,
                rng,
                a,
                ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2),
                [origin.id, dest.id],
            )
        if zone is None:
            break
        reason = str(rng.choice(["police_operation", "public_event", "fire_fighting", "vip_visit"]))
        popup = difficulty != "easy" and rng.random() < 0.35
        start = float(rng.choice([30.0, 60.0])) if popup else 0.0
        window = TimeWindow(start_sec=start, end_sec=5400.0 if popup else 3600.0)
        zone = zone.model_copy(
            update={
                "active_window": window,
                "temporary": True,
                "reason": NFZ_REASONS[reason].en,
            }
        )
        draft.no_fly_zones.append(zone)
        add_zone_label(draft, zone, reason)
        task.traps.append("popup_nfz_on_direct_path" if popup else "nfz_on_direct_path")
        if rng.random() < 0.5:
            task.mention_zones.append(zone.id)
    ensure_capable_uav(draft, rng, [origin.id, dest.id], task.payload_kg)
    return task


def build_corridor_congestion(draft: CityDraft, rng: np.random.Generator, difficulty: str) -> Task:
    if not draft.corridors:
        raise ScenarioError("no corridor")
    origin, dest = pick_pair(
        draft,
        rng,
        ("depot", "warehouse", "vertiport", "charging_pad"),
        ("residential", "office", "hospital", "metro_station"),
        250.0,
    )
    line = LineString([origin.position, dest.position])
    corridor = min(draft.corridors, key=lambda c: c.shape.distance(line))
    draft.replace_corridor(corridor.model_copy(update={"load": corridor.capacity}))
    (ax, ay), (bx, by) = corridor.polyline[0], corridor.polyline[-1]
    speed = 12.0
    for _n in range(int(rng.integers(1, 3))):
        track_id = f"track_c{len(draft.traffic) + 1}"
        t0 = r1(rng.uniform(0, 60))
        z = float(rng.choice([70.0, 80.0, 90.0]))
        draft.traffic.append(
            TrafficTrack(
                id=track_id,
                waypoints=[
                    (ax, ay, z, t0),
                    (bx, by, z, r1(t0 + dist((ax, ay), (bx, by)) / speed)),
                ],
            )
        )
    task = Task(
        "corridor_congestion",
        difficulty,
        "delivery",
        str(rng.choice(["normal", "high"], p=[0.7, 0.3])),
        origin.id,
        dest.id,
        cargo=CARGO[str(rng.choice(ROUTINE_CARGO))],
        deadline_factor=deadline_factor(rng, difficulty),
        traps=["congested_corridor"],
    )
    if difficulty == "unsat":
        for other in list(draft.corridors):
            draft.replace_corridor(other.model_copy(update={"load": other.capacity}))
        task.require_corridor = True
        task.deadline_factor = None
        return _unsat(task, "all_corridors_full")
    ensure_capable_uav(draft, rng, [origin.id, dest.id], task.payload_kg)
    return task


def build_charging_bottleneck(draft: CityDraft, rng: np.random.Generator, difficulty: str) -> Task:
    origin, dest = pick_pair(
        draft,
        rng,
        ("depot", "warehouse", "hospital", "charging_pad"),
        ("residential", "office", "hospital", "accident_site", "park"),
        250.0,
    )
    cargo = any_cargo(rng)
    stops = [origin.id, dest.id]
    by_distance = sorted(idle_uavs(draft), key=lambda u: dist(u.position, origin.position))
    # Drain the fleet: everyone close by is low, pads are busy charging others.
    for uav in by_distance:
        need = energy_ratio_needed(draft, uav, mission_length(draft, uav, stops), cargo.kg)
        low = round(max(0.05, min(need + 0.2 - float(rng.uniform(0.05, 0.15)), 0.35)), 3)
        draft.replace_uav(uav.model_copy(update={"battery_ratio": low}))
    for uav in [u for u in draft.fleet if u.status is UAVStatus.busy][: len(draft.fleet) // 4]:
        draft.replace_uav(uav.model_copy(update={"status": UAVStatus.charging, "battery_ratio": 0.2}))
    task = Task(
        "charging_bottleneck",
        difficulty,
        cargo_intent(cargo),
        "high" if rng.random() < 0.4 else "normal",
        origin.id,
        dest.id,
        cargo=cargo,
        deadline_factor=deadline_factor(rng, difficulty),
        traps=["low_battery_nearest_uav"],
    )
    nearest = by_distance[0] if by_distance else None
    if nearest is not None and rng.random() < 0.5:
        task.named_uavs = [nearest.id]
        task.traps.append("named_candidate_low_battery")
    if difficulty == "unsat":
        task.deadline_factor = None
        return _unsat(task, "fleet_battery_exhausted")
    far = by_distance[len(by_distance) // 2 :] if len(by_distance) > 1 else by_distance
    if not far:
        raise ScenarioError("no idle UAV to keep charged")
    keeper = far[int(rng.integers(len(far)))]
    margin = {"easy": 0.35, "medium": 0.25, "hard": 0.18, "extreme": 0.12}[difficulty]
    make_capable(draft, rng, keeper, stops, cargo.kg, spare=task.battery_reserve_ratio + margin)
    return task


def build_weather_risk(draft: CityDraft, rng: np.random.Generator, difficulty: str) -> Task:
    origin, dest = pick_pair(
        draft,
        rng,
        ("depot", "hospital", "warehouse", "charging_pad"),
        ("residential", "office", "accident_site", "park", "inspection_site"),
        200.0,
    )
    cargo = any_cargo(rng)
    w, d = draft.grid.width_m, draft.grid.depth_m
    cx, cy = dest.position
    half = float(rng.uniform(0.2, 0.35)) * max(w, d)
    bbox = (
        r1(max(0.0, cx - half)),
        r1(max(0.0, cy - half)),
        r1(min(w, cx + half)),
        r1(min(d, cy + half)),
    )
    # Sustained wind per difficulty: above the light quads' 10 m/s limit from "hard" on, above every UAV's for UNSAT.
    speed = {"easy": 6.0, "medium": 8.5, "hard": 9.8, "extreme": 10.5, "unsat": 17.0}[difficulty]
    speed = r1(speed + rng.uniform(-0.4, 0.4))
    gust = r1(rng.uniform(1.0, 2.5))
    risk = RiskLevel.low if speed < 8 else RiskLevel.medium if speed < 15 else RiskLevel.high
    front = WeatherRegion(
        id="gust_front",
        bbox=bbox,
        wind_speed_mps=speed,
        wind_dir_deg=float(rng.integers(0, 8) * 45),
        gust_mps=gust,
        risk_level=risk,
    )
    draft.weather.insert(0, front)  # most specific region first
    task = Task(
        "weather_risk",
        difficulty,
        cargo_intent(cargo),
        "high" if rng.random() < 0.3 else "normal",
        origin.id,
        dest.id,
        cargo=cargo,
        deadline_factor=deadline_factor(rng, difficulty),
        traps=["gusts_above_light_uav_limit"] if speed + gust > 10 else [],
    )
    draft.labels["gust_front"] = EntityLabel(
        "weather",
        Term("gust front", "阵风区"),
        area_of((bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2, w, d),
    )
    if difficulty == "unsat":
        task.deadline_factor = None
        return _unsat(task, "wind_above_fleet_limit")
    uav = ensure_capable_uav(draft, rng, [origin.id, dest.id], cargo.kg)
    if uav.max_wind_mps < 15.0:  # a storm-rated airframe keeps (wind + gust) / limit low enough for medium risk
        draft.replace_uav(uav.model_copy(update={"max_wind_mps": 15.0}))
    return task


def build_multimodal_fallback(draft: CityDraft, rng: np.random.Generator, difficulty: str) -> Task:
    hubs = draft.entities_of("metro_station", "vertiport", "park", "police", "fire_station")
    targets = draft.entities_of("residential", "office", "hospital", "warehouse")
    origins = draft.entities_of("depot", "charging_pad", "warehouse", "hospital")
    for _ in range(8):
        dest = pick(rng, targets)
        zone_reason = str(rng.choice(["government", "military", "airport", "prison"]))
        zone = _nfz_over(draft, rng, dest, zone_reason, temporary=False, others=[])
        if zone is None:
            continue
        outside = [e for e in hubs + origins if zone.shape.distance(e.point) >= ZONE_CLEARANCE_M]
        near_hubs = [h for h in hubs if h in outside and 60 <= dist(h.position, dest.position) <= 500]
        starts = [o for o in origins if o in outside and o.id != dest.id and dist(o.position, dest.position) >= 200]
        if near_hubs and starts:
            hub = min(near_hubs, key=lambda h: dist(h.position, dest.position))
            origin = pick(rng, starts)
            break
        draft.no_fly_zones.remove(zone)
        del draft.labels[zone.id]
    else:
        raise ScenarioError("no destination an NFZ can cover with a hand-off hub nearby")
    task = Task(
        "multimodal_fallback",
        difficulty,
        "delivery",
        str(rng.choice(["normal", "high"], p=[0.6, 0.4])),
        origin.id,
        dest.id,
        cargo=CARGO[str(rng.choice(ROUTINE_CARGO))],
        handoff_point=hub.id,
        deadline_factor=None if difficulty == "easy" else deadline_factor(rng, difficulty),
        traps=["destination_in_permanent_nfz"],
    )
    if difficulty == "unsat":
        task.handoff_point = None
        task.forbid_ground_transfer = True
        task.deadline_factor = None
        return _unsat(task, "destination_in_nfz")
    ensure_capable_uav(draft, rng, [origin.id, hub.id], task.payload_kg)
    return task


UNSAT_KINDS = (
    ("ambiguous_reference", 0.25),
    ("missing_destination", 0.15),
    ("spec_contradiction", 0.15),
    ("destination_in_nfz", 0.1),
    ("deadline_impossible", 0.1),
    ("payload_too_heavy", 0.1),
    ("fleet_unavailable", 0.15),
)


def build_unsat_ambiguous(draft: CityDraft, rng: np.random.Generator, difficulty: str) -> Task:
    kinds = [k for k, _ in UNSAT_KINDS]
    weights = np.array([w for _, w in UNSAT_KINDS])
    kind = kinds[int(rng.choice(len(kinds), p=weights / weights.sum()))]
    origin, dest = pick_pair(
        draft,
        rng,
        ("depot", "warehouse", "hospital", "charging_pad"),
        ("residential", "office", "hospital", "accident_site", "park"),
    )
    task = Task(
        "unsat_ambiguous",
        "unsat",
        "delivery",
        "normal",
        origin.id,
        dest.id,
        cargo=CARGO[str(rng.choice(ROUTINE_CARGO))],
    )
    if kind == "ambiguous_reference":
        kinds_with_many = [
            k
            for k in (
                "hospital",
                "metro_station",
                "residential",
                "office",
                "accident_site",
            )
            if len(draft.entities_of(k)) >= 2
        ]
        if not kinds_with_many:
            raise ScenarioError("no entity kind with two members")
        task.ambiguous_kind = str(rng.choice(kinds_with_many))
        task.destination = None
        if task.ambiguous_kind == "accident_site":
            task.intent, task.priority, task.cargo = (
                "emergency",
                "high",
                CARGO["first_aid"],
            )
        return _ambiguous(task, kind)
    if kind == "missing_destination":
        task.destination = None
        return _ambiguous(task, kind)
    if kind == "spec_contradiction":
        if not draft.sensitive_zones:
            raise ScenarioError("no school zone to contradict over")
        zone = pick(rng, draft.sensitive_zones)
        task.intent, task.cargo = "monitoring", None
        task.contradiction_zone = zone.id
        return _unsat(task, kind)
    if kind == "destination_in_nfz":
        reason = str(rng.choice(["police_operation", "vip_visit"]))
        if _nfz_over(draft, rng, dest, reason, temporary=True, others=[origin.id]) is None:
            raise ScenarioError("no room for an NFZ over the destination")
        return _unsat(task, kind)
    if kind == "deadline_impossible":
        return _unsat(task, kind, impossible_deadline=True)
    if kind == "payload_too_heavy":
        task.cargo = CARGO["machine_parts"]
        return _unsat(task, kind)
    for uav in idle_uavs(draft):
        status = (UAVStatus.busy, UAVStatus.charging, UAVStatus.maintenance)[int(rng.integers(3))]
        draft.replace_uav(uav.model_copy(update={"status": status}))
    return _unsat(task, kind)


UNDERSPECIFIED_KINDS = ("no_place", "one_place", "dangling_pronoun", "unanchored_time")


def build_underspecified(draft: CityDraft, rng: np.random.Generator, difficulty: str) -> Task:
    """A delivery request that leaves out what no plan can do without: any place at all, where the cargo is picked
    up, where it goes (a pronoun stands for it), or when (a time with no anchor stands for the deadline)."""
    kind = UNDERSPECIFIED_KINDS[int(rng.integers(len(UNDERSPECIFIED_KINDS)))]
    origin, dest = pick_pair(
        draft, rng, ("depot", "warehouse", "hospital", "police"), ("residential", "office", "hospital", "park")
    )
    task = Task(
        "underspecified", "unsat", "delivery", "normal", origin.id, dest.id, cargo=CARGO[str(rng.choice(ROUTINE_CARGO))]
    )
    if kind == "no_place":
        task.origin = task.destination = None
    elif kind == "one_place":
        task.origin = None
    elif kind == "dangling_pronoun":
        task.destination = None
    else:
        task.deadline_factor = None  # the time phrase stands where a duration would
    return _ambiguous(task, kind)


def _unsat(task: Task, kind: str, impossible_deadline: bool = False) -> Task:
    task.intended_label = "UNSAT"
    task.unsat_kind = kind
    task.impossible_deadline = impossible_deadline
    if impossible_deadline:
        task.deadline_factor = None
    return task


def _ambiguous(task: Task, kind: str) -> Task:
    task.intended_label = "AMBIGUOUS"
    task.unsat_kind = kind
    return task


BUILDERS: dict[str, Callable[[CityDraft, np.random.Generator, str], Task]] = {
    "normal_delivery": build_normal_delivery,
    "emergency_delivery": build_emergency_delivery,
    "patrol_inspection": build_patrol_inspection,
    "nfz_avoidance": build_nfz_avoidance,
    "corridor_congestion": build_corridor_congestion,
    "charging_bottleneck": build_charging_bottleneck,
    "weather_risk": build_weather_risk,
    "multimodal_fallback": build_multimodal_fallback,
    "unsat_ambiguous": build_unsat_ambiguous,
    "underspecified": build_underspecified,
}


def build_task(draft: CityDraft, rng: np.random.Generator, scenario_type: str, difficulty: str) -> Task:
    return BUILDERS[scenario_type](draft, rng, difficulty)
