"""simulate_scenario: fly the planned trajectory through a seeded, discrete-time (1 s) stress scenario.

Everything random comes from one numpy Generator seeded with `seed`, so the same (world, arguments, seed) gives a
byte-identical result. The stress level scales three disturbances:
- wind gusts (from the world's weather regions): a lateral drift (a first-order autoregressive offset from the
  nominal path), slower progress in head-wind gusts, and extra energy per m/s of gust;
- other traffic: the world's tracks (known traffic, which the plan itself must keep clear of: the verifier's R2), and
  unknown traffic, straight level tracks over the task's area (the box round the route's two ends, 150 m wider) at
  random points, times, headings, speeds and altitudes, never aimed at the route (medium: 6, high: 12). The UAV
  meets unknown traffic with a modelled detect-and-avoid (`DetectAndAvoid`): a track within 250 m whose closest
  approach in the next 20 s, both flying on as they fly now, comes within 2 x min separation is a conflict; the UAV
  climbs or descends (3 m/s, never out of its altitude band nor within min separation of a roof ahead, never through
  the track's altitude unless in time) to pass 2 x min separation above or below it, or, where there is no such room
  in time, holds its progress and steps sideways off the track's line (5 m/s, only where the plan moved beside keeps
  as clear of roofs, no-fly zones and known traffic; else it hovers), then returns to its planned altitude and line;
  a conflict in the first seconds of the plan delays take-off
  (the UAV waits on the ground, up to 60 s). Manoeuvres cost energy (climb, hover)
  and time (hold) and are reported; a near miss with unknown traffic therefore means the plan left no room to avoid;
- a pop-up no-fly zone on the route (medium and high): a square centred on a random point of the route, announced
  with some notice before the UAV comes within the hold margin (5 m) of it (high: sometimes none). The UAV holds
  (hovers) where its next step would enter that margin, or run on inside it no farther from the zone, until the zone
  expires, which costs time and energy; a zone that pops up over the UAV is an intrusion.
Events: nfz_intrusion, separation_violation, near_miss, battery_depleted, deadline_missed, collision (with a
building or another UAV). Which of them fail the plan, and against which rule, is the rules' business
(tools/rules.py, "Simulation events"): the tool reports every event and applies that scoring.

The flown track is straight between its 1 s steps, and the events are judged on it exactly: besides the steps, it
is sampled where each step comes closest to another UAV, and where it comes deepest into a no-fly zone or closest
to a building whenever that may cross an event threshold (tools/exact_grid), so a step that clips a corner between
two seconds is an intrusion.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import shapely
from pydantic import Field
from shapely.geometry import box

from tools import exact_grid, signals
from tools.contract import ToolFailure, ToolOutput
from tools.energy import segment_energies_wh
from tools.registry import ToolSpec
from tools.rules import (
    EVENT_RULE,
    NEAR_MISS_FACTOR,
    TERMINAL_EVENTS,
    counts_against_plan,
    excused_intruders,
    safety_baseline,
)
from tools.trajectory import Trajectory, interpolation_knots
from tools.verifier import (
    WaypointArgs,
    build_counterexample,
    offending_segment,
    resolve_uav,
    suggest_repair,
)
from tools.world import NoFlyZone, TimeWindow, TrafficTrack, World

DEFAULT_SPEED_MPS = 10.0
DRIFT_KEEP = 0.6  # share of last second's lateral drift the position controller has not yet corrected
DRIFT_GAIN = 0.25  # metres of drift per m/s of gust
GUST_ENERGY_PER_MPS = 0.03  # extra energy share per m/s of gust
COLLISION_RADIUS_M = 3.0
HOLD_MARGIN_M = 5.0  # the UAV stops this far outside a pop-up zone
INTRUDER_SPEED_MPS = (8.0, 12.0)
INTRUDER_AREA_MARGIN_M = 150.0
INTRUDER_TIME_MARGIN_SEC = 30.0
DETECT_RANGE_M = 250.0
LOOKAHEAD_SEC = 20.0
MAX_DEPARTURE_WAIT_SEC = 60
CLIMB_RATE_MPS = 3.0
SIDESTEP_RATE_MPS = 5.0  # how fast a holding UAV moves sideways off an intruder's line (and back)
DRIFT_ROOM_FACTOR = 1.5  # a place beside or behind the plan keeps this x min separation / the hold margin (the drift)
BACK_OFF_WITHIN_SEC = 12.0  # a UAV with no place beside it backs off only while the closest approach is this close
AVOID_FACTOR = 2.0  # the miss distance detect-and-avoid aims for, in multiples of min separation
DIGITS = 3


@dataclass(frozen=True)
class StressProfile:
    gust_scale: float
    intruders: int  # unknown traffic tracks over the task's area
    popup_half_size_m: float | None  # None: no pop-up zone
    popup_notice_sec: tuple[float, float] = (0.0, 0.0)
    popup_duration_sec: tuple[float, float] = (0.0, 0.0)


STRESS = {
    "low": StressProfile(gust_scale=0.5, intruders=0, popup_half_size_m=None),
    "medium": StressProfile(1.0, 6, 20.0, popup_notice_sec=(20.0, 40.0), popup_duration_sec=(10.0, 40.0)),
    "high": StressProfile(1.6, 12, 30.0, popup_notice_sec=(-5.0, 25.0), popup_duration_sec=(30.0, 90.0)),
}


class SimulateArgs(WaypointArgs):
    seed: int = Field(default=0, ge=0)
    stress_level: Literal["low", "medium", "high"] = "medium"
    payload_kg: float = Field(default=0.0, ge=0)
    deadline_sec: float | None = Field(default=None, gt=0)
    min_separation_m: float = Field(default=10.0, ge=0)
    battery_reserve_ratio: float = Field(default=0.2, ge=0, le=1)
    max_risk_level: Literal["low", "medium", "high"] = "medium"
    altitude_min_m: float | None = Field(default=None, ge=0, description="detect-and-avoid's floor; None = 30 m")
    altitude_max_m: float | None = Field(default=None, gt=0, description="and ceiling; None = the airspace's")


# --- the scenario ----------------------------------------------------------------------------------------------
class NominalTrack:
    """The planned track's (x, y, z) at one plan time, as tools.trajectory.positions interpolates it (held at its
    ends, a hover keeping its last point): the per-second flight loop asks ~4 times a step, and one vectorised
    interpolation per question was most of a scenario's time."""

    def __init__(self, samples: np.ndarray):
        times, self._xyz = interpolation_knots(samples)
        self.samples = samples
        self._times = times.tolist()
        self._slopes = np.diff(self._xyz, axis=0) / np.diff(times)[:, None]

    def at(self, s: float) -> np.ndarray:
        times = self._times
        if s <= times[0]:
            return self._xyz[0]
        if s >= times[-1]:
            return self._xyz[-1]
        i = bisect.bisect_right(times, s) - 1  # times[i] <= s < times[i + 1]
        return self._slopes[i] * (s - times[i]) + self._xyz[i]  # np.interp's own arithmetic


def _popup_zone(track: NominalTrack, profile: StressProfile, rng: np.random.Generator) -> NoFlyZone | None:
    """A square no-fly zone centred on a random point of the route, active from some notice before arrival."""
    nominal = track.samples
    fraction = rng.uniform(0.35, 0.65)
    notice = rng.uniform(*profile.popup_notice_sec)
    duration = rng.uniform(*profile.popup_duration_sec)
    half = profile.popup_half_size_m
    if half is None or len(nominal) < 2:
        return None
    t0, t1 = nominal[0, 3], nominal[-1, 3]
    centre = track.at(t0 + fraction * (t1 - t0))[:2]
    ends = nominal[[0, -1], :2]
    if np.min(np.linalg.norm(ends - centre, axis=1)) <= 2 * half:
        return None  # too short a route to close part of it without closing its origin or goal
    square = box(centre[0] - half, centre[1] - half, centre[0] + half, centre[1] + half)
    # The notice runs to where the UAV must stop (the hold margin), not to the zone itself: a route that runs along
    # the zone's edge before entering it is warned before it is within the margin, not once it is past it.
    stop_area = square.buffer(HOLD_MARGIN_M)
    entering = np.flatnonzero(shapely.contains_xy(stop_area, nominal[:, 0], nominal[:, 1]))
    reach_time = nominal[entering[0], 3] if len(entering) else t0 + fraction * (t1 - t0)
    start = round(max(0.0, float(reach_time - notice)), 1)
    return NoFlyZone(
        id="popup_nfz",
        polygon=[tuple(p) for p in np.round(np.asarray(square.exterior.coords)[:-1], 3)],
        active_window=TimeWindow(start_sec=start, end_sec=round(start + float(duration), 1)),
        reason=f"pop-up restriction (stress scenario, notice {notice:.0f} s)",
        temporary=True,
    )


def _intruders(
    world: World, track: NominalTrack, profile: StressProfile, rng: np.random.Generator
) -> list[TrafficTrack]:
    """Unknown traffic: straight, level tracks through random points of the task's area at random times of the
    flight's window, with random headings, speeds and altitudes; none is aimed at the route."""
    nominal = track.samples
    ends = nominal[[0, -1], :2]
    low = np.maximum(ends.min(axis=0) - INTRUDER_AREA_MARGIN_M, 0.0)
    high = np.minimum(ends.max(axis=0) + INTRUDER_AREA_MARGIN_M, [world.grid.width_m, world.grid.depth_m])
    t0, t1 = nominal[0, 3] - INTRUDER_TIME_MARGIN_SEC, nominal[-1, 3] + INTRUDER_TIME_MARGIN_SEC
    tracks = []
    for k in range(profile.intruders):
        point, when = rng.uniform(low, high), rng.uniform(t0, t1)
        heading, speed = rng.uniform(0, 2 * math.pi), rng.uniform(*INTRUDER_SPEED_MPS)
        altitude = rng.uniform(world.grid.layer_base_m, world.grid.ceiling_m)
        velocity = np.array([math.cos(heading), math.sin(heading)]) * speed
        times = [t0, t1]  # flying the whole window: none appears out of nowhere next to the UAV
        ends_xy = [point + velocity * (t - when) for t in times]
        waypoints = [tuple(round(float(v), 3) for v in (*xy, altitude, t)) for xy, t in zip(ends_xy, times)]
        tracks.append(TrafficTrack(id=f"intruder_{k + 1}", waypoints=waypoints))
    return tracks


@dataclass(frozen=True)
class Manoeuvre:
    intruder: str
    time_sec: float
    action: Literal["wait", "climb", "descend", "hold"]


class DetectAndAvoid:
    """The UAV's tactical response to unknown traffic (see the module's docstring), asked once a simulated second.

    A conflict is judged along the UAV's own plan for the next LOOKAHEAD_SEC (it knows where it is going, turns
    included) against each track within DETECT_RANGE_M flying on straight, as it flies."""

    def __init__(
        self,
        world: World,
        intruders: list[TrafficTrack],
        min_separation_m: float,
        band: tuple[float, float],
        zones: list[NoFlyZone] | None = None,
        pads: tuple[tuple[float, float], ...] = (),
    ):
        self._world = world
        self._zones = world.no_fly_zones if zones is None else zones
        self._pads = pads  # where the plan takes off and lands: a roof pad's own building is not an obstacle there
        self._tracks = [(t.id, np.asarray(t.waypoints, dtype=float)) for t in intruders]
        self.min_separation_m = min_separation_m
        self.protect_m = AVOID_FACTOR * min_separation_m
        self.band = band
        self.manoeuvres: list[Manoeuvre] = []
        self.offset = 0.0  # metres above (+) or below the planned altitude
        self.lateral = np.zeros(2)  # metres (x, y) beside the plan: a sidestep off an intruder's line
        self._side: dict[str, bool] = {}  # intruder -> passing above it (True) or below
        self._beside: dict[str, np.ndarray] = {}  # intruder -> the unit direction of the sidestep chosen for it
        self.stepped_aside = False  # this second's hold moved the UAV sideways
        self.backing_off = False  # this second's hold has no place beside it and the closest approach is near

    def _positions(self, waypoints: np.ndarray, times: np.ndarray) -> np.ndarray:
        """A straight track's positions at `times` (NaN where it is not flying)."""
        (start, end) = waypoints[0], waypoints[-1]
        velocity = (end[:3] - start[:3]) / (end[3] - start[3])
        xyz = start[:3] + velocity * (times - start[3])[:, None]
        xyz[(times < start[3]) | (times > end[3])] = np.nan
        return xyz

    def in_range(self, position: np.ndarray, t: float) -> bool:
        """Some unknown traffic within detection range now: only then is the plan ahead worth looking at."""
        now = np.array([t])
        return any(np.linalg.norm(self._positions(w, now)[0] - position) <= DETECT_RANGE_M for _, w in self._tracks)

    def conflict(self, ahead: np.ndarray, t: float) -> tuple[str, float, float] | None:
        """The most imminent conflict along `ahead` (the UAV's positions at t, t + 1, ... s): (intruder, its
        altitude, seconds until the closest approach), or None."""
        times = t + np.arange(len(ahead), dtype=float)
        worst: tuple[float, str, float] | None = None
        for track_id, waypoints in self._tracks:
            xyz = self._positions(waypoints, times)
            if not np.linalg.norm(xyz[0] - ahead[0]) <= DETECT_RANGE_M:  # out of range, or not flying (NaN)
                continue
            gaps = np.linalg.norm(xyz - ahead, axis=1)
            k = int(np.nanargmin(gaps))
            if gaps[k] < self.protect_m and (worst is None or k < worst[0]):
                worst = (float(k), track_id, float(xyz[0, 2]))
        return None if worst is None else (worst[1], worst[2], worst[0])

    def _open(self, ahead: np.ndarray, z: float) -> bool:
        """An escape altitude inside the band, and min separation clear of every roof along the plan ahead."""
        lo, hi = self.band
        if not lo <= z <= hi:
            return False
        points = np.column_stack([ahead[:, :2], np.full(len(ahead), z), np.zeros(len(ahead))])
        return float(signals.obstacle_clearance(self._world, points).values.min()) >= self.min_separation_m

    def _escape(self, z: float, intruder: str, intruder_z: float, seconds: float, ahead: np.ndarray) -> float | None:
        """An open altitude protect_m above or below the intruder that the UAV can reach without passing through
        the intruder's altitude (or past it before the closest approach): the side already taken for this
        intruder while it stays open, else the nearer."""
        usable = []
        for target in (intruder_z + self.protect_m, intruder_z - self.protect_m):
            same_side = (target - intruder_z) * (z - intruder_z) > 0
            in_time = abs(target - z) / CLIMB_RATE_MPS <= seconds - 1.0
            if (same_side or in_time) and self._open(ahead, target):
                usable.append(target)
        taken = self._side.get(intruder)
        kept = [e for e in usable if taken is not None and (e > intruder_z) == taken]
        chosen = kept[0] if kept else min(usable, key=lambda e: abs(e - z), default=None)
        if chosen is not None:
            self._side[intruder] = chosen > intruder_z
        return chosen

    def _sidestep(self, position: np.ndarray, intruder: str, ahead: np.ndarray, t: float, seconds: float) -> None:
        """One second's sideways step (SIDESTEP_RATE_MPS) square to the intruder's heading, en route only (in the
        band: never on the ground, taking off or landing). The side is chosen once per intruder: away from its line
        when the plan moved as far as it must go (protect_m from the line) is open there, else across the line when
        that is open and there is time to get protect_m past it before the closest approach; each step is taken
        only where the plan ahead moved there stays open (`beside_open`), else the UAV hovers where it is."""
        if position[2] < self.band[0] - 1e-6:
            return
        waypoints = next(w for track_id, w in self._tracks if track_id == intruder)
        heading = waypoints[-1, :2] - waypoints[0, :2]
        norm = float(np.linalg.norm(heading))
        if norm <= 0.0:
            return
        square = np.array([-heading[1], heading[0]]) / norm
        side = float((position[:2] - self._positions(waypoints, np.array([t]))[0, :2]) @ square)
        planned = ahead - np.array([*self.lateral, 0.0])

        def open_by(metres: float, direction: np.ndarray) -> bool:
            moved = ahead.copy()
            moved[:, :2] += metres * direction
            return self.beside_open(planned, moved, t)

        if intruder not in self._beside:
            away = square if side >= 0.0 else -square
            for direction, need in ((away, self.protect_m - abs(side)), (-away, self.protect_m + abs(side))):
                reach = math.ceil(max(need, 0.0) / SIDESTEP_RATE_MPS) * SIDESTEP_RATE_MPS
                in_time = reach / SIDESTEP_RATE_MPS <= seconds - 1.0 or direction is away
                if in_time and open_by(SIDESTEP_RATE_MPS, direction) and open_by(reach, direction):
                    self._beside[intruder] = direction
                    break
            else:
                return
        direction = self._beside[intruder]
        if open_by(SIDESTEP_RATE_MPS, direction):
            self.lateral = self.lateral + SIDESTEP_RATE_MPS * direction
            self.stepped_aside = True

    def beside_open(self, planned: np.ndarray, moved: np.ndarray, t: float) -> bool:
        """Whether the plan ahead (positions at t, t + 1, ... s) moved beside itself stays in the grid and, point by
        point, as clear as the plan of roofs, no-fly zones (any not yet lapsed: a holding UAV is there later than
        planned; judged only where the plan is outside them, as the hold rule keeps it) and known traffic, or
        DRIFT_ROOM_FACTOR x min separation, x the hold margin, and 2 x min separation clear of them (the drift comes on
        top of the place)."""
        grid = self._world.grid
        xy = moved[:, :2]
        if xy.min() < 0.0 or (xy[:, 0] > grid.width_m).any() or (xy[:, 1] > grid.depth_m).any():
            return False
        times = t + np.arange(len(moved), dtype=float)
        zones = [z.shape for z in self._zones if z.active_window is None or z.active_window.end_sec >= t]

        def clearances(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            """Per point: from roofs, from the zones not lapsed, from known traffic."""
            timed = np.column_stack([points, times])
            zone = signals.signed_distances(zones, points[:, :2]).min(axis=0) if zones else np.full(len(points), np.inf)
            roofs = signals.obstacle_clearance(self._world, timed, self._pads).values
            return roofs, zone, signals.traffic_separation(self._world, timed).values

        wanted = (DRIFT_ROOM_FACTOR * self.min_separation_m, DRIFT_ROOM_FACTOR * HOLD_MARGIN_M, self.protect_m)
        before, after = clearances(planned), clearances(moved)
        judged = (slice(None), before[1] >= 0.0, slice(None))  # zones only where the plan is outside them
        return all(
            bool(np.all((beside >= np.minimum(want, plan))[rows]))
            for plan, beside, want, rows in zip(before, after, wanted, judged)
        )

    def departure(self, plan_ahead: np.ndarray, t: float) -> float:
        """When to take off: at t, or later while the plan's first seconds meet unknown traffic (the UAV waits on
        the ground, where it meets nobody), MAX_DEPARTURE_WAIT_SEC at most."""
        waited = 0
        while waited < MAX_DEPARTURE_WAIT_SEC and (found := self.conflict(plan_ahead, t + waited)) is not None:
            if waited == 0:
                self.manoeuvres.append(Manoeuvre(found[0], round(float(t), DIGITS), "wait"))
            waited += 1
        return t + waited

    def respond(self, position: np.ndarray, plan_ahead: np.ndarray, planned_z: float, t: float) -> tuple[float, bool]:
        """(the altitude to fly at after this second, hold?) for a UAV at `position` whose plan puts it at
        `plan_ahead` (its planned positions at t, t + 1, ... s) and at `planned_z` after this second: the plan's
        altitude plus an avoidance offset that changes at most CLIMB_RATE_MPS a second, so a flight that meets no
        conflict flies its plan exactly."""
        self.stepped_aside = self.backing_off = False
        offset_path = plan_ahead + np.array([0.0, 0.0, self.offset])
        found = self.conflict(offset_path, t)
        if found is None:
            # back towards the plan, unless the altitude (or the place beside it) it would reach is in conflict again
            back = self.offset - float(np.clip(self.offset, -CLIMB_RATE_MPS, CLIMB_RATE_MPS))
            if self.conflict(plan_ahead + np.array([0.0, 0.0, back]), t) is None:
                self.offset = back
            distance = float(np.linalg.norm(self.lateral))
            if distance > 0.0:
                base = plan_ahead - np.array([*self.lateral, 0.0])  # the plan itself (with the drift)
                back_xy = self.lateral * max(0.0, 1.0 - SIDESTEP_RATE_MPS / distance)
                shift = np.array([*(back_xy - self.lateral), self.offset])
                if self.conflict(plan_ahead + shift, t) is None:
                    self.lateral = back_xy
                # beside its plan it flies on only while the plan moved there stays open; else it waits there
                if np.any(self.lateral) and not self.beside_open(base, base + [*self.lateral, 0.0], t):
                    return float(position[2]), True
            return planned_z + self.offset, False
        intruder, intruder_z, seconds = found
        target = self._escape(float(position[2]), intruder, intruder_z, seconds, plan_ahead)
        if target is not None:
            action: Literal["wait", "climb", "descend", "hold"] = "climb" if target >= position[2] else "descend"
            self.offset += float(np.clip(target - planned_z - self.offset, -CLIMB_RATE_MPS, CLIMB_RATE_MPS))
            result = planned_z + self.offset, False
        else:
            # no altitude to escape to in time: hold its progress, stepping sideways off the intruder's line where
            # the place beside the plan is open
            action, result = "hold", (float(position[2]), True)
            self._sidestep(position, intruder, offset_path, t, seconds)
            self.backing_off = not self.stepped_aside and seconds < BACK_OFF_WITHIN_SEC
        if not self.manoeuvres or (self.manoeuvres[-1].intruder, self.manoeuvres[-1].action) != (intruder, action):
            self.manoeuvres.append(Manoeuvre(intruder, round(float(t), DIGITS), action))
        return result


@dataclass(frozen=True)
class Flight:
    samples: np.ndarray  # (m, 4) simulated x, y, z, t
    gusts: np.ndarray  # (m,) gust speed at each second
    hovering: np.ndarray  # (m,) bool: holding outside a pop-up zone
    plan_times: np.ndarray  # (m,) the plan's time each simulated second was flying (behind it: a delay)


def _plan_ahead(track: NominalTrack, s: float, t_end: float) -> np.ndarray:
    """The plan's positions for the next LOOKAHEAD_SEC from plan time s, one a second."""
    return np.array([track.at(min(s + k, t_end)) for k in range(int(LOOKAHEAD_SEC) + 1)])


def _holds_for(popup: NoFlyZone, here: np.ndarray, next_planned: np.ndarray) -> bool:
    """Whether the step from `here` to `next_planned` (plan positions) must wait for an active pop-up zone: some
    point of it (a step is up to ~20 m: one may cut a corner of the zone between its ends) comes within HOLD_MARGIN_M
    of the zone and no farther from it than the UAV is now (entering the margin, or running on along the zone's edge
    inside it, where the drift would carry it in). A UAV the zone popped up over (inside it) flies on, out of it."""
    zone = popup.shape
    start = shapely.Point(*here[:2])
    if zone.contains(start):
        return False
    moves = bool(np.any(next_planned[:2] != here[:2]))
    step = shapely.LineString([here[:2], next_planned[:2]]) if moves else start
    closest, now = zone.distance(step), zone.distance(start)
    nearer = closest < now - 1e-9 or zone.distance(shapely.Point(*next_planned[:2])) <= now + 1e-9
    return closest < HOLD_MARGIN_M and nearer


def _backed_off(track: NominalTrack, avoid: DetectAndAvoid, s: float, s_first: float, t: float) -> float:
    """The plan time a UAV holding for an intruder, with no place beside it open (a street between roofs), backs off
    to: one second back along its own plan, away from the head-on track (the time it gains may let a climb over it
    come in time), while it stays en route (in the band) and the place behind is as clear as where it is; else s."""
    back = max(s_first, s - 1.0)
    beside = np.array([*avoid.lateral, 0.0])
    here, behind = track.at(s) + beside, track.at(back) + beside
    if back >= s or behind[2] < avoid.band[0] - 1e-6:
        return s
    return back if avoid.beside_open(here[None, :], behind[None, :], t) else s


def _fly(
    world: World,
    track: NominalTrack,
    speed: float,
    scale: float,
    popup: NoFlyZone | None,
    avoid: DetectAndAvoid,
    rng: np.random.Generator,
) -> Flight:
    nominal = track.samples
    t_end = nominal[-1, 3]
    s = nominal[0, 3]
    tau = avoid.departure(_plan_ahead(track, s, t_end), s)
    drift = np.zeros(2)
    rows, gusts, hovering, plan_times = [[*nominal[0, :3], tau]], [0.0], [False], [s]
    max_steps = int(3 * (t_end - s) + 600)
    while s < t_end - 1e-9 and len(rows) <= max_steps:
        here = track.at(s)
        region = world.wind_at(here[0], here[1])
        gust = rng.normal(0.0, (region.gust_mps if region else 0.0) * scale, 2)
        drift = DRIFT_KEEP * drift + DRIFT_GAIN * gust
        ahead = track.at(min(s + 1.0, t_end))
        heading = ahead[:2] - here[:2]
        norm = np.linalg.norm(heading)
        head_gust = max(0.0, -float(gust @ heading) / norm) if norm > 0 else 0.0
        next_s = min(s + 1.0 / (1.0 + head_gust / speed), t_end)
        tau += 1.0
        # Hold while the zone is active at any moment of the coming second, not only at its end: a zone that
        # expires mid-step still closes the part of the step flown before it expires.
        beside = np.array([*avoid.lateral, 0.0])  # a sidestep's offset: the pop-up hold is judged where the UAV is
        hold = (
            popup is not None
            and popup.active_during(tau - 1.0, tau)
            and _holds_for(popup, here + beside, track.at(next_s) + beside)
        )
        # a UAV beside its plan comes back onto it before it descends to land
        hold = hold or (bool(np.any(avoid.lateral)) and track.at(next_s)[2] < min(here[2], avoid.band[0]) - 1e-6)
        planned = track.at(s if hold else next_s)
        flown = np.asarray(rows[-1][:3])
        if avoid.in_range(flown, tau - 1.0):
            # where it is now (the drift), then as planned; holding for a pop-up zone, it stays where it is
            ahead = np.repeat(here[None, :], int(LOOKAHEAD_SEC) + 1, axis=0) if hold else _plan_ahead(track, s, t_end)
            ahead[:, :2] += flown[:2] - here[:2]
            altitude, avoid_hold = avoid.respond(flown, ahead, float(planned[2]), tau - 1.0)
        else:
            altitude, avoid_hold = avoid.respond(flown, flown[None, :], float(planned[2]), tau - 1.0)
        if avoid_hold and not hold and avoid.backing_off:
            s = _backed_off(track, avoid, s, nominal[0, 3], tau - 1.0)
        s = s if hold or avoid_hold else next_s
        position = track.at(s)
        beside = drift + avoid.lateral
        rows.append([position[0] + beside[0], position[1] + beside[1], altitude, tau])
        gusts.append(float(np.linalg.norm(gust)))
        hovering.append(hold or avoid_hold)
        plan_times.append(s)
    return Flight(np.asarray(rows), np.asarray(gusts), np.asarray(hovering), np.asarray(plan_times))


def _deviation(track: NominalTrack, flight: Flight, until: float) -> dict[str, float]:
    """How far the flight strayed from the plan up to `until`: sideways and up or down from where the plan was at
    the same plan time, and how far behind it (an operational intent's volumes must hold this)."""
    flown_part = flight.samples[:, 3] <= until
    flown, plan_times = flight.samples[flown_part], flight.plan_times[flown_part]
    planned = np.array([track.at(s) for s in plan_times])
    return {
        "lateral_m": _rounded(np.hypot(*(flown[:, :2] - planned[:, :2]).T).max()),
        "vertical_m": _rounded(np.abs(flown[:, 2] - planned[:, 2]).max()),
        "delay_sec": _rounded((flown[:, 3] - plan_times).max()),
    }


def _energy_steps(world: World, flight: Flight, speed: float, payload_kg: float) -> np.ndarray:
    """Energy (Wh) of each simulated second: flight energy plus gust penalty, or hover power while holding."""
    model = world.energy
    flying = segment_energies_wh(world, flight.samples, payload_kg) * (1.0 + GUST_ENERGY_PER_MPS * flight.gusts[1:])
    hover_wh = (model.base_wh_per_m + model.payload_wh_per_m_per_kg * payload_kg) * speed * model.conservative_factor
    return np.where(flight.hovering[1:], hover_wh, flying)


# --- events ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Event:
    type: str
    index: int
    detail: str
    entity: str | None
    margin: float  # how far past the limit (negative), for the counterexample's robustness


def _episodes(mask: np.ndarray) -> list[int]:
    """First index of every run of True."""
    starts = np.flatnonzero(mask & ~np.concatenate([[False], mask[:-1]]))
    return [int(i) for i in starts]


def _margin_events(kind: str, mask: np.ndarray, margin: signals.Margin, limit: float, detail: str) -> list[Event]:
    events = []
    for i in _episodes(mask):
        value, entity = float(margin.values[i]), margin.entities[i]
        events.append(Event(kind, i, detail.format(value=value, entity=entity), entity, value - limit))
    return events


def _events(
    args: SimulateArgs,
    samples: np.ndarray,
    zones: list[NoFlyZone],
    world: World,
    battery: np.ndarray | None,
    obstacle: signals.Margin,
    separation: signals.Margin,
) -> list[Event]:
    d_min = args.min_separation_m
    nfz = signals.nfz_margin(world, samples, zones)
    sep = separation.values
    near = "{value:.1f} m from {entity}"
    events = [
        *_margin_events("collision", obstacle.values <= 0, obstacle, 0.0, "hit building {entity}"),
        *_margin_events("collision", sep < COLLISION_RADIUS_M, separation, d_min, "collided with {entity}"),
        *_margin_events("nfz_intrusion", nfz.values < 0, nfz, 0.0, "{value:.1f} m into {entity}"),
        *_margin_events("separation_violation", (sep >= COLLISION_RADIUS_M) & (sep < d_min), separation, d_min, near),
        *_margin_events("near_miss", (sep >= d_min) & (sep < NEAR_MISS_FACTOR * d_min), separation, d_min, near),
        *_margin_events("near_miss", (obstacle.values > 0) & (obstacle.values < d_min), obstacle, d_min, near),
    ]
    if battery is not None:
        reserve = args.battery_reserve_ratio
        empty = np.flatnonzero(battery <= 0)
        if len(empty) or battery[-1] < reserve:
            index = int(empty[0]) if len(empty) else len(battery) - 1
            detail = "battery empty in flight" if len(empty) else f"arrived with {battery[-1]:.3f}, below {reserve}"
            events.append(Event("battery_depleted", index, detail, args.uav_id, float(battery[index] - reserve)))
    arrival = float(samples[-1, 3])
    if args.deadline_sec is not None and arrival > args.deadline_sec:
        index = int(np.count_nonzero(samples[:, 3] <= args.deadline_sec)) - 1
        detail = f"arrived at {arrival:.0f} s, deadline {args.deadline_sec:g} s"
        events.append(Event("deadline_missed", max(index, 0), detail, None, args.deadline_sec - arrival))
    order = ["collision", *TERMINAL_EVENTS[1:], "near_miss"]
    events.sort(key=lambda e: (e.index, order.index(e.type)))
    collision = next((e.index for e in events if e.type == "collision"), None)
    return [e for e in events if collision is None or e.index <= collision]  # nothing happens after a crash


def _decisive(events: list[Event], max_risk_level: str, excused: set[str]) -> Event | None:
    """The event that fails the run: a collision first, else the earliest terminal event, else a near miss."""
    counted = [e for e in events if counts_against_plan(e.type, e.entity, max_risk_level, excused)]
    for kinds in (("collision",), TERMINAL_EVENTS, ("near_miss",)):
        found = next((e for e in counted if e.type in kinds), None)
        if found:
            return found
    return None


# --- the tool --------------------------------------------------------------------------------------------------
def _judged_track(
    world: World, flight: Flight, zones: list[NoFlyZone], tracks: list[TrafficTrack], d_min: float
) -> np.ndarray:
    """The flown track sampled where its events are decided exactly (see the module's docstring)."""
    segments = exact_grid.Segments.of(flight.samples)
    nfz_volumes = [exact_grid.Volume.of_nfz(zone) for zone in zones]
    buildings = [exact_grid.Volume(b.id, b.shape, high=b.height_m) for b in world.buildings]
    minima = [
        *exact_grid.minimum_times(segments, nfz_volumes, signals.nfz_margin(world, flight.samples, zones).values, 0.0),
        *exact_grid.minimum_times(segments, buildings, signals.obstacle_clearance(world, flight.samples).values, d_min),
        *exact_grid.traffic_times(flight.samples, tracks),
    ]
    windows = [t for volume in nfz_volumes for t in volume.window_times()]
    return exact_grid.sample_track(flight.samples, exact_grid.assemble(flight.samples, minima, windows))


def simulate(world: World, args: SimulateArgs) -> ToolOutput:
    uav = resolve_uav(world, args.uav_id)
    profile = STRESS[args.stress_level]
    rng = np.random.default_rng(args.seed)
    track = NominalTrack(Trajectory(waypoints=args.waypoints).sample(1.0))
    speed = uav.cruise_speed_mps if uav else DEFAULT_SPEED_MPS
    popup = _popup_zone(track, profile, rng)
    intruders = _intruders(world, track, profile, rng)
    band = (
        args.altitude_min_m if args.altitude_min_m is not None else safety_baseline(world).altitude_min_m,
        args.altitude_max_m if args.altitude_max_m is not None else safety_baseline(world).altitude_max_m,
    )
    zones = [*world.no_fly_zones, *([popup] if popup else [])]
    pads = signals.track_pads(np.asarray(args.waypoints, dtype=float))  # where the plan takes off and lands
    avoid = DetectAndAvoid(world, intruders, args.min_separation_m, band, zones, pads)
    flight = _fly(world, track, speed, profile.gust_scale, popup, avoid, rng)
    tracks = [*world.traffic, *intruders]
    judged = _judged_track(world, flight, zones, tracks, args.min_separation_m)
    step_energy = np.concatenate([[0.0], np.cumsum(_energy_steps(world, flight, speed, args.payload_kg))])
    energy = np.interp(judged[:, 3], flight.samples[:, 3], step_energy)
    battery = None if uav is None else uav.battery_ratio - energy / uav.battery_capacity_wh
    # Per-sample margins of the judged track, computed once: the flown part is a prefix of it.
    obstacle = signals.obstacle_clearance(world, judged, pads)
    separation = signals.traffic_separation(world, judged, tracks)
    events = _events(args, judged, zones, world, battery, obstacle, separation)
    crashed = bool(events) and events[-1].type == "collision"
    last = events[-1].index if crashed else len(judged) - 1
    flown_separation = separation.values[: last + 1]
    far = signals.far_distance(world)
    manoeuvres = [{"intruder": m.intruder, "time_sec": m.time_sec, "action": m.action} for m in avoid.manoeuvres]
    excused = excused_intruders([t.id for t in intruders], manoeuvres)
    decisive = _decisive(events, args.max_risk_level, excused)
    result: dict[str, Any] = {
        "success": decisive is None,
        "events": [_event_json(judged, e) for e in events],
        "min_separation_m": _rounded(flown_separation.min()) if flown_separation.min() < far else None,
        "min_obstacle_clearance_m": _rounded(obstacle.values[: last + 1].min()),
        "delay_sec": None if crashed else _rounded(flight.samples[-1, 3] - track.samples[-1, 3]),
        "hover_sec": int(flight.hovering[flight.samples[:, 3] <= judged[last, 3]].sum()),
        "energy_used_wh": _rounded(energy[last]),
        "final_battery_ratio": None if battery is None else _rounded(battery[last]),
        "arrival_time_sec": None if crashed else _rounded(flight.samples[-1, 3]),
        "stress_level": args.stress_level,
        "seed": args.seed,
        "popup_nfz": popup.model_dump(include={"id", "polygon", "active_window"}) if popup else None,
        "intruder_tracks": [t.model_dump() for t in intruders],
        "avoidance": manoeuvres,
        "deviation": _deviation(track, flight, judged[last, 3]),
        "counterexample": None if decisive is None else _counterexample(world, flight.samples, judged, decisive, pads),
    }
    if decisive is None:
        near = [e for e in events if e.type == "near_miss"]
        warnings = [f"near miss at t={judged[e.index, 3]:.0f} s: {e.detail}" for e in near]
        return ToolOutput(result=result, warnings=warnings)
    error_type = {"collision": "collision", "near_miss": "near_miss"}.get(decisive.type, "sim_failure")
    raise ToolFailure(
        error_type,
        f"{decisive.type} at t={judged[decisive.index, 3]:.0f} s: {decisive.detail}",
        recoverable=error_type != "collision",
        suggested_actions=[result["counterexample"]["suggested_repair"]],
        result=result,
    )


def _rounded(value: float) -> float:
    return round(float(value), DIGITS)


def _event_json(samples: np.ndarray, event: Event) -> dict[str, Any]:
    time_sec = _rounded(samples[event.index, 3])
    return {"type": event.type, "time_sec": time_sec, "detail": event.detail, "entity": event.entity}


def _counterexample(
    world: World, steps: np.ndarray, samples: np.ndarray, event: Event, pads: tuple[tuple[float, float], ...]
) -> dict[str, Any]:
    rule = EVENT_RULE[event.type]
    where = samples[event.index, :2]
    pad = next((p for p in pads if math.dist(p, where) < world.arrival_tolerance_m), None)
    if event.entity == "popup_nfz":
        repair = "the route crosses a pop-up no-fly zone: keep a wider time margin or ask for human confirmation"
    elif pad is not None and event.entity in {b.id for b in world.buildings}:
        # over a pad no re-routing helps: the climb and the descent are where the place is
        end = "take-off" if pad == pads[0] else "landing"
        repair = (
            f"the {end} at ({pad[0]:g}, {pad[1]:g}) has no room for drift beside {event.entity}: the pad lies within "
            "the minimum separation of it plus gusts; use another place to take off or land, or ask a human"
        )
    else:
        repair = suggest_repair(world, rule, event.entity)
    return build_counterexample(
        failure_stage="simulate",
        failure_type=event.type,
        violated_rule=rule,
        time_sec=samples[event.index, 3],
        robustness=event.margin,
        offending_segment=offending_segment(steps, samples[event.index]),
        offending_entity=event.entity,
        suggested_repair=repair,
    )


SPEC = ToolSpec(
    name="simulate_scenario",
    description=(
        "Fly a 4D trajectory through a seeded stress scenario (1 s steps): wind-gust drift, delay and extra energy, "
        "known traffic, unknown traffic met by detect-and-avoid, and (medium/high) a pop-up no-fly zone on the route. "
        "Returns success, events (nfz_intrusion, separation_violation, near_miss, battery_depleted, deadline_missed, "
        "collision), min separation, delay, energy used, final battery and a counterexample."
    ),
    args_model=SimulateArgs,
    body=simulate,
    data_sources=("world", "trajectory", "stress_scenario"),
    needs=("verify_ltl_stl",),
)
