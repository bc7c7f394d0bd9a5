"""The UNSAT prover of CloudBrain-Bench: when the gold plan of a task fails for a reason the generator did not build in,
search every plan an agent's IR can express for one that passes the same tools, before the sample may be labelled
UNSAT.

The tool space searched, per task (each plan is run by `ir.plan_execution.execute_plan`, as the gold is, with the
gold's simulation seed and stress level; a plan that passes must also pass the checked stress draws,
`holds_under_checked_stress`):
- UAVs: every UAV of the fleet, one at a time (`entities.candidate_uavs = [u]`). A request that pins UAVs keeps them
  pinned: only the pinned UAVs are tried, never another (that relaxation is the operator's to approve).
- Altitude bands: the planner flies the grid's altitude layers (tools/grid_masks.allowed_layers keeps the layers
  inside the band, tools/planner.endpoint_cell starts and ends each leg on the lowest of them), so the bands that
  fly differently are the contiguous runs of layers inside the stated band, the stated band itself first. A run is
  given to the airspace query and the planner in their steps' arguments (which win over the IR's), its edges halfway
  between the run's end layers and the next layer out, or the stated band's own edge where the run reaches it. The
  IR's band (`constraints`), which the verifier and the simulator read, stays the stated one: it is what the request
  asks and what the judge holds a flight to, and a narrower one there would only check the same route more strictly
  (R3) and leave detect-and-avoid less room. A band edge between two layers is one value of a continuum the planner
  does not tell apart; the airspace query reads it against zones' and corridors' altitudes too, and only these
  halfway values are tried.
- Stop orders: one. A request names its via points in one order (benchmark/instructions.py and benchmark/freeform
  list them, many with "in that order", "依次", "then" or an arrow route; a round trip has one turning point) and the
  judge (evaluation/judge.py `right_place`) requires them "in the requested order", so a reordered route never
  passes: only the stated order is allowed.
- Later starts: the IR has no departure time among its constraints (`ir_tool_args` fills none), but a plan step may
  give plan_route its `depart_time_sec` (arguments the IR writes win, and the validator accepts every argument of the
  tool's model), and the judge accepts a route that starts later as long as it meets the deadline. The planner masks
  a named no-fly zone over the whole of [departure, end of time) when it is active at any moment of it, so its
  routes change only where a window ends: the starts tried are now and LATER_START_MARGIN_SEC after the end of
  every time window of the world (no-fly zones, reservations) and of every known traffic track, before the deadline
  or, for a request without one, inside its mission window (DEFAULT_HORIZON_SEC, the window its no-fly zones are
  named for): a request made now does not allow a flight hours later. A start between two of these flies the same route shifted in time and is not tried. A later
  start also asks query_airspace about its own window (`time_sec`) and names the no-fly zones active in its mission
  window (DEFAULT_HORIZON_SEC from the start) beside the gold's.
Everything else the IR says (the places, the zones to avoid, the specs, the reserve, the payload, the deadline,
the risk level, the separation) is the request's or the rules' and stays as the gold states it; in particular the
prover does not try naming fewer zones to avoid (a zone left out is one the planner may fly through and only the
verifier's time check would clear).

Outcome: a passing plan (the sample is SAT with it as gold), a proof (every combination failed: UNSAT), or UNKNOWN
when MAX_PROOF_PLANS plans ran and combinations are left, or when a plan failed only for a reason that rests on time
or chance the choices above do not cover (`_undecided_by`: the stress simulation's draws; separation from known
traffic, which a start between two window ends may keep): such a failure proves nothing about the other draws or
starts. The bound is a count of plans, never a time, so a label
is the same on every machine; the search order is fixed, so is the plan found. `ProofResult.record` is the compact
proof stored in the sample's source_provenance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from shapely.geometry import box

from ir.model import LowAltitudeIR
from ir.plan_execution import PlanExecution, StressLevel, execute_plan, ir_tool_args
from tools import airspace as airspace_tool
from tools import route as route_tool
from tools.grid_masks import cell_of, layer_altitudes
from tools.registry import ToolRegistry
from tools.rules import DEFAULT_HORIZON_SEC
from tools.world import NoFlyZone, World

MAX_PROOF_PLANS = 400  # plans run (execute_plan calls) before the prover gives up: the sample is UNKNOWN
LATER_START_MARGIN_SEC = 1.0  # a later start is this long after a window ends (windows are closed intervals)
# The generator's own stress draws, checked at LABEL_STRESS_LEVEL: none of them is the agent gate's (0, 1, 2 by
# default) or the judge's held-out ones, so a label never rests on the dice either of them rolls.
CHECKED_STRESS_SEEDS: tuple[int, ...] = (7001, 7002, 7003)
LABEL_STRESS_LEVEL: StressLevel = "medium"
CHECKED_STRESS_FAILURE = "simulate_scenario checked_stress"  # passes the gold's draw, fails a checked one
ROUTE_TOOL = route_tool.SPEC.name
AIRSPACE_TOOL = airspace_tool.SPEC.name
ROUNDING_M = 0.1  # the verifier rounds a violation's segment to 0.1 (metres and seconds)

Outcome = Literal["sat", "unsat", "unknown"]
# How a row of the proof was settled: "run" ran the plan; the others are the pruning rules of `prove`.
Settled = Literal["run", "city", "airspace", "assign", "arrival", "endpoint", "spec", "geometry", "takeoff", "landing"]


@dataclass(frozen=True)
class PlanChoice:
    uav: int  # indexes into ProofSpace's lists
    band: int
    start: int


@dataclass(frozen=True)
class ProofSpace:
    """The discrete choices searched, each list in search order."""

    uavs: list[str]
    bands: list[tuple[float, float]]
    starts_sec: list[float]
    stop_order: list[str]
    pinned: bool

    @property
    def combinations(self) -> int:
        return len(self.uavs) * len(self.bands) * len(self.starts_sec)


@dataclass
class ProofResult:
    outcome: Outcome
    space: ProofSpace
    plans_run: int
    # Rows [uav, band, start, failure, settled]: indexes into the space's lists, None for "every value" (a pruning
    # rule settled them all at once), the failure as an index into `failures`.
    rows: list[list[Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    found: PlanChoice | None = None
    bound_hit: bool = False
    seed: int | None = None  # the gold's simulation seed and stress level: what re-running the proof needs
    stress_level: str | None = None
    undecided_by: list[str] = field(default_factory=list)  # failures that rest on time or chance (`_undecided_by`)
    ir: LowAltitudeIR | None = None  # the passing plan's IR and execution (outcome "sat")
    execution: PlanExecution | None = None

    def record(self) -> dict[str, Any]:
        """The proof as stored in source_provenance.proof: the choices covered, each plan run or settled by a pruning
        rule with its failing tool and error, and whether the bound was hit."""
        return {
            "outcome": self.outcome,
            "bound": MAX_PROOF_PLANS,
            "bound_hit": self.bound_hit,
            "undecided_by": self.undecided_by,
            "seed": self.seed,
            "stress_level": self.stress_level,
            "plans_run": self.plans_run,
            "combinations": self.space.combinations,
            "uavs": self.space.uavs,
            "pinned": self.space.pinned,
            "bands": [list(b) for b in self.space.bands],
            "starts_sec": self.space.starts_sec,
            "stop_order": self.space.stop_order,
            "failures": self.failures,
            "rows": self.rows,
            "found": [self.found.uav, self.found.band, self.found.start] if self.found else None,
        }


def settled_combinations(record: dict[str, Any]) -> set[tuple[int, int, int]]:
    """The (uav, band, start) combinations a stored proof's rows settle (None in a row: every value)."""
    spans = [range(len(record["uavs"])), range(len(record["bands"])), range(len(record["starts_sec"]))]
    return {
        (u, b, s)
        for row in record["rows"]
        for u in ([row[0]] if row[0] is not None else spans[0])
        for b in ([row[1]] if row[1] is not None else spans[1])
        for s in ([row[2]] if row[2] is not None else spans[2])
    }


def every_combination(record: dict[str, Any]) -> set[tuple[int, int, int]]:
    return {
        (u, b, s)
        for u in range(len(record["uavs"]))
        for b in range(len(record["bands"]))
        for s in range(len(record["starts_sec"]))
    }


# --- the choices ------------------------------------------------------------------------------------------


def band_choices(world: World, band: tuple[float, float]) -> list[tuple[float, float]]:
    """The stated band, then every other contiguous run of the grid's layers inside it, fewest layers left out
    first and, among those, the higher floor first (clearing buildings is the commoner fix)."""
    low, high = band
    inside = [float(a) for a in layer_altitudes(world.grid) if low <= a <= high]
    runs = [(a, b) for a in range(len(inside)) for b in range(a, len(inside))]
    runs.sort(key=lambda run: (len(inside) - 1 - (run[1] - run[0]), -run[0]))
    choices = []
    for a, b in runs:
        floor = low if a == 0 else (inside[a - 1] + inside[a]) / 2
        ceiling = high if b == len(inside) - 1 else (inside[b] + inside[b + 1]) / 2
        choices.append((floor, ceiling))
    return choices or [band]  # no layer inside: the stated band is the only choice (and plan_route says no_path)


def start_choices(world: World, deadline_sec: float | None) -> list[float]:
    """Now, then LATER_START_MARGIN_SEC after each end of a window of the world (no-fly zones, reservations) and of
    each known traffic track, earliest first, before the deadline (else inside the mission window)."""
    ends = [z.active_window.end_sec for z in [*world.no_fly_zones, *world.reservations] if z.active_window]
    ends += [track.waypoints[-1][3] for track in world.traffic]
    later = sorted({round(end + LATER_START_MARGIN_SEC, 3) for end in ends if end >= 0})
    # a start at or after the deadline arrives after it (plan_route's deadline_risk): not a choice; without one, the
    # request's mission window bounds it
    last = deadline_sec if deadline_sec is not None else DEFAULT_HORIZON_SEC
    return [0.0, *(t for t in later if t < last)]


def choice_ir(ir: LowAltitudeIR, world: World, space: ProofSpace, choice: PlanChoice) -> LowAltitudeIR:
    """The gold IR flying `choice`: one candidate UAV; a band other than the stated one in the airspace query's and
    the planner's arguments; for a later start, plan_route's depart_time_sec, query_airspace's window from the start
    (to the deadline, which is counted from now, when there is one) and the no-fly zones active in that start's
    mission window."""
    plan = ir.model_copy(deep=True)
    plan.entities.candidate_uavs = [space.uavs[choice.uav]]
    route: dict[str, float] = {}
    airspace: dict[str, float] = {}
    if choice.band > 0:  # bands[0] is the stated band, the IR's own
        low, high = space.bands[choice.band]
        route.update(altitude_min_m=low, altitude_max_m=high)
        airspace.update(alt_min_m=low, alt_max_m=high)
    start = space.starts_sec[choice.start]
    if start > 0:
        window = [z.id for z in world.active_no_fly_zones(start, start + DEFAULT_HORIZON_SEC)]
        plan.entities.avoid_zones = list(dict.fromkeys([*plan.entities.avoid_zones, *window]))
        deadline = plan.constraints.deadline_sec
        route["depart_time_sec"] = start
        airspace.update(time_sec=start, **({"horizon_sec": deadline - start} if deadline is not None else {}))
    given = {ROUTE_TOOL: route, AIRSPACE_TOOL: airspace}
    for step in plan.tool_plan:
        step.args.update(given.get(step.tool, {}))
    return plan


# --- failures ---------------------------------------------------------------------------------------------


def failed_tool(execution: PlanExecution) -> str | None:
    return next((r.tool for r in execution.results if r.step_id == execution.failed_step), None)


def failure_text(execution: PlanExecution) -> str:
    """'<tool> <error type>', and the rule for a verifier violation ('verify_ltl_stl spec_violation R2')."""
    text = f"{failed_tool(execution)} {execution.failure.type}"
    violations = (_failed_result(execution) or {}).get("violations") or []
    return f"{text} {violations[0]['rule']}" if violations else text


def _failed_result(execution: PlanExecution) -> dict[str, Any] | None:
    return next((r.result.result for r in execution.results if r.step_id == execution.failed_step), None)


def _on_shape_alone(violation: dict[str, Any], world: World) -> bool:
    """A verifier finding the route's shape alone decides, whatever its times: outside the stated band (R3), or too
    close to a building or a sensitive zone (R2), which do not move (tools/exact_grid is exact on the shape)."""
    static = {b.id for b in world.buildings} | {z.id for z in world.sensitive_zones}
    return violation["rule"] == "R3" or (violation["rule"] == "R2" and violation.get("entity") in static)


def _geometric(execution: PlanExecution, world: World) -> bool:
    """The failure rests on the route's geometry alone, not on when it is flown: plan_route finds no path in the
    masked grid, or the verifier finds the route too close to a building or a sensitive zone (R2) or outside the
    stated band (R3); those checks are exact on the trajectory's shape (tools/exact_grid), whatever its times."""
    tool = failed_tool(execution)
    if tool == ROUTE_TOOL:
        return execution.failure.type == "no_path"
    if tool != "verify_ltl_stl":
        return False
    violations = (_failed_result(execution) or {}).get("violations") or []
    return any(_on_shape_alone(v, world) for v in violations)


# Failures whose verdict rests on the plan's choices alone, never on a draw or on exact timing against moving
# traffic: a whitelist (review: risk_assess reads the gold-seed simulation's events and traffic margins, and the
# verifier's corridor load (R6) counts known traffic at each instant, so an unlisted failure proves nothing).
DECIDED_BY_CHOICES = {"query_city_state", "query_airspace", "assign_uav"}
DECIDED_ROUTE_ERRORS = {"no_path", "deadline_risk"}
DECIDED_VERIFIER_RULES = {"R3", "R4", "R5"}  # and R2 against a building or a sensitive zone (its shape alone)


def _undecided_by(execution: PlanExecution, world: World) -> str | None:
    """Why this failure proves nothing for the choices not run, or None when it is one whose verdict the choices
    decide (DECIDED_BY_CHOICES, plan_route's DECIDED_ROUTE_ERRORS, the verifier's spec_unsat and its findings of
    DECIDED_VERIFIER_RULES or R2 against a building or sensitive zone). Anything else may rest on the stress draws
    (another seed may pass: a label must not rest on dice) or on the start against known traffic (a start between
    two window ends, not tried, may keep clear of a slow track)."""
    tool, error = failed_tool(execution), execution.failure.type
    if tool in DECIDED_BY_CHOICES or (tool == ROUTE_TOOL and error in DECIDED_ROUTE_ERRORS):
        return None
    if tool == "simulate_scenario":
        return "stress simulation draws"
    if tool != "verify_ltl_stl":
        return f"{tool} {error}, which reads the simulation's events or traffic"
    if error == "spec_unsat":
        return None
    violations = (_failed_result(execution) or {}).get("violations") or []
    if violations and all(v["rule"] in DECIDED_VERIFIER_RULES or _on_shape_alone(v, world) for v in violations):
        return None
    traffic = {t.id for t in world.traffic}
    if any(v.get("entity") in traffic for v in violations):
        return "separation from known traffic"
    return "verifier findings that rest on timing (no-fly-zone windows, corridor load)"


def _stop_in_a_closed_zone(world: World, ir: LowAltitudeIR, starts: list[float], layers: list[float]) -> str | None:
    """A via point or the landing point whose grid column lies wholly inside a named no-fly zone that plan_route masks
    at every start tried and at every layer of the stated band, or None. Every route ends a leg in that column, on the
    lowest layer of its band (tools/planner.endpoint_cell), where the zone blocks it: plan_route finds no path in any
    plan. The origin is left out: a UAV standing there takes off in its own column, which may be the next one."""
    if not layers:
        return None
    size = world.grid.cell_size_m
    for ref in (*ir.entities.waypoints, ir.entities.landing):
        if not ref:
            continue
        i, j = cell_of(world.grid, *world.position_of(ref))
        column = box(i * size, j * size, (i + 1) * size, (j + 1) * size)
        for zone_id in ir.entities.avoid_zones:
            zone = world.zone_index.get(zone_id)
            if (
                isinstance(zone, NoFlyZone)
                and zone.shape.contains(column)
                and zone.alt_min_m <= layers[0]
                and zone.alt_max_m >= layers[-1]
                and all(zone.active_during(start, math.inf) for start in starts)
            ):
                return f"{ref} in {zone_id}"
    return None


def _vertical_building_violation(execution: PlanExecution, world: World, xy: tuple[float, float], top: float) -> bool:
    """The verifier found the route within separation of a building (R2) at a point no higher than `top` on a
    straight vertical piece above `xy`. A violation's `segment` is that piece's ends with the offending point
    between them (tools/verifier.offending_segment), all rounded to ROUNDING_M; the point is the row at its time."""
    if failed_tool(execution) != "verify_ltl_stl":
        return False
    buildings = {b.id for b in world.buildings}
    for v in (_failed_result(execution) or {}).get("violations") or []:
        segment = v.get("segment") or []
        if v["rule"] != "R2" or v.get("entity") not in buildings or not segment:
            continue
        vertical = all(math.dist(row[:2], xy) <= ROUNDING_M for row in segment)
        point = next((row for row in segment if row[3] == v["time_sec"]), None)
        if vertical and point is not None and point[2] + ROUNDING_M <= top:
            return True
    return False


def _masked_zones(world: World, plan: LowAltitudeIR, start: float) -> frozenset[str]:
    """The named no-fly zones plan_route masks for a start: those active at some moment of [start, end of time)."""
    return frozenset(
        z
        for z in plan.entities.avoid_zones
        if isinstance(world.zone_index.get(z), NoFlyZone) and world.zone_index[z].active_during(start, math.inf)
    )


def _arrival_bound_sec(world: World, ir: LowAltitudeIR, uav_id: str, start: float) -> float:
    """The earliest the UAV can land: the straight legs through the stops at cruise speed, from the start. plan_route
    adds a pickup leg when the UAV is not at the origin (tools/route.py), flies each leg on grid cells (never shorter
    than straight) and never faster than cruise speed, so its arrival is never earlier."""
    uav = world.uav_index[uav_id]
    refs = [r for r in (ir.entities.origin, *ir.entities.waypoints, ir.entities.landing) if r]
    points = [world.position_of(r) for r in refs]
    legs = sum(math.dist(a, b) for a, b in zip(points, points[1:]))
    pickup = math.dist(uav.position, points[0]) if points else 0.0
    # at the origin already, it takes off where it stands: the first leg may be shorter by up to the tolerance
    length = legs + pickup if pickup > world.arrival_tolerance_m else legs - world.arrival_tolerance_m
    return start + max(length, 0.0) / uav.cruise_speed_mps


# --- the search -------------------------------------------------------------------------------------------


def holds_under_checked_stress(
    ir: LowAltitudeIR, uav_id: str | None, waypoints: list[list[float]], world: World, registry: ToolRegistry
) -> bool:
    """The route also passes the generator's own checked stress draws: a SAT label must not rest on one lucky draw
    of gusts, unknown traffic or pop-up zones."""
    for seed in CHECKED_STRESS_SEEDS:
        args = ir_tool_args("simulate_scenario", ir, seed=seed, stress_level=LABEL_STRESS_LEVEL)
        args.update(waypoints=waypoints, uav_id=uav_id)
        if not registry.call("simulate_scenario", world, args).ok:
            return False
    return True


def proof_space(world: World, ir: LowAltitudeIR, registry: ToolRegistry) -> tuple[ProofSpace, dict[str, str]]:
    """The choices of `ir`'s task, and the UAVs assign_uav rejects with the failure a plan flying one alone meets.

    UAVs: the IR's candidates (the UAVs the request pins: the gold IR names no others), else the whole fleet; those
    assign_uav accepts in its ranking order (the gold's own preference), then the rejected ones. assign_uav judges
    each UAV on its own (tools/assignment.evaluate) from arguments that hold neither a band nor a start, so this one
    call settles each UAV it rejects for every band and start. Alone, a rejected UAV meets low_battery_candidates
    when another UAV of the fleet could fly the task, else no_available_uav.
    """
    pinned = list(ir.entities.candidate_uavs)
    args = ir_tool_args("assign_uav", ir)
    args["candidates"] = pinned or [u.id for u in world.fleet]
    assigned = registry.call("assign_uav", world, args)
    listed = assigned.result or {}
    ranking = [row["uav_id"] for row in listed.get("ranking", [])]
    rejected = [row["uav_id"] for row in listed.get("rejected", [])]
    others_can = assigned.ok or (assigned.error is not None and assigned.error.type == "low_battery_candidates")
    error = "low_battery_candidates" if others_can else "no_available_uav"
    band = (ir.constraints.altitude_min_m, ir.constraints.altitude_max_m)
    space = ProofSpace(
        uavs=[*ranking, *(u for u in args["candidates"] if u not in ranking)],
        bands=band_choices(world, band),
        starts_sec=start_choices(world, ir.constraints.deadline_sec),
        stop_order=list(ir.entities.waypoints),
        pinned=bool(pinned),
    )
    return space, {u: f"assign_uav {error}" for u in rejected}


def prove(
    ir: LowAltitudeIR, world: World, registry: ToolRegistry, *, seed: int, stress_level: StressLevel
) -> ProofResult:
    """Search the tool space of `ir`'s task (see the module docstring) in a fixed order: starts, then bands, then
    UAVs. Pruning rules, each sound because the failing tool's arguments do not hold the choices it settles (a plan
    stops at its first failing step, so one failing step settles the plan):
    - city: query_city_state fails: its arguments hold no choice, so every plan fails.
    - airspace: query_airspace fails: its arguments hold the band and the start but not the UAV, so every plan with
      that band and start fails.
    - assign: one assign_uav call settles each UAV it rejects (`proof_space`).
    - arrival: with a deadline, a UAV whose straight-line arrival from a start is after it fails plan_route's
      deadline_risk in every band (`_arrival_bound_sec`).
    - endpoint: a stop's column lies wholly inside a no-fly zone masked at every start and layer
      (`_stop_in_a_closed_zone`): every plan fails plan_route's no_path, without a run.
    - spec: verify_ltl_stl finds the specs jointly unsatisfiable (spec_unsat): no trajectory meets them, and the
      specs are the request's, the same in every plan.
    - geometry: a failure that rests on the route's shape alone (`_geometric`) recurs at every later start with the
      same masked zones, where the planner flies the same shape shifted in time; only in a world without
      reservations, whose masking also depends on the flight's expected duration.
    - takeoff / landing: a route runs from the ground to the ground (tools/planner.plan_through): it climbs straight
      up where its UAV stands to a layer of its band and descends straight down onto the landing point from one, and
      every band's layers lie at or above the stated band's lowest layer. A building within separation (R2, judged
      on the shape alone) of that climb, at or below the lowest layer, is met by every plan of the UAV; of that
      descent, by every plan.
    """
    space, rejections = proof_space(world, ir, registry)
    proof = ProofResult("unsat", space, 0, seed=seed, stress_level=stress_level)
    failure_index: dict[str, int] = {}

    def note(uav: int | None, band: int | None, start: int | None, failure: str, how: Settled) -> None:
        if failure not in failure_index:
            failure_index[failure] = len(proof.failures)
            proof.failures.append(failure)
        proof.rows.append([uav, band, start, failure_index[failure], how])

    settled_uavs = {u for u, uav in enumerate(space.uavs) if uav in rejections}
    for u in sorted(settled_uavs):
        note(u, None, None, rejections[space.uavs[u]], "assign")
    # (uav, band) -> {masked zones of a start whose plan failed on its geometry: that failure}
    geometric: dict[tuple[int, int], dict[frozenset[str], str]] = {}
    masks_fixed = not world.reservations
    deadline = ir.constraints.deadline_sec
    stated = (ir.constraints.altitude_min_m, ir.constraints.altitude_max_m)
    layers = [float(a) for a in layer_altitudes(world.grid) if stated[0] <= a <= stated[1]]
    landing = world.position_of(ir.entities.landing) if ir.entities.landing else None
    if (closed := _stop_in_a_closed_zone(world, ir, space.starts_sec, layers)) is not None:
        note(None, None, None, f"plan_route no_path ({closed})", "endpoint")
        return proof
    for s, start in enumerate(space.starts_sec):
        settled_bands: set[int] = set()
        flying = [u for u in range(len(space.uavs)) if u not in settled_uavs]
        late = {
            u for u in flying if deadline is not None and _arrival_bound_sec(world, ir, space.uavs[u], start) > deadline
        }
        for u in sorted(late):
            note(u, None, s, "plan_route deadline_risk", "arrival")
        for b in range(len(space.bands)):
            for u in (u for u in flying if u not in late):
                if b in settled_bands:
                    break
                if u in settled_uavs:
                    continue
                choice = PlanChoice(u, b, s)
                plan = choice_ir(ir, world, space, choice)
                masked = _masked_zones(world, plan, start)
                earlier = geometric.get((u, b), {}).get(masked) if masks_fixed else None
                if earlier is not None:
                    note(u, b, s, earlier, "geometry")
                    continue
                if proof.plans_run >= MAX_PROOF_PLANS:
                    proof.outcome, proof.bound_hit = "unknown", True
                    return proof
                proof.plans_run += 1
                execution = execute_plan(plan, world, registry, seed=seed, stress_level=stress_level)
                if execution.ok:
                    decision = execution.decision
                    if holds_under_checked_stress(plan, decision.uav_id, decision.waypoints, world, registry):
                        proof.outcome, proof.found, proof.ir, proof.execution = "sat", choice, plan, execution
                        return proof
                    note(u, b, s, CHECKED_STRESS_FAILURE, "run")
                    proof.undecided_by = sorted({*proof.undecided_by, "stress simulation draws"})
                    continue
                tool, failure = failed_tool(execution), failure_text(execution)
                if tool == "query_city_state":
                    note(None, None, None, failure, "city")
                    return proof
                if tool == AIRSPACE_TOOL:
                    note(None, b, s, failure, "airspace")
                    settled_bands.add(b)
                    continue
                if execution.failure.type == "spec_unsat":
                    note(None, None, None, failure, "spec")
                    return proof
                note(u, b, s, failure, "run")
                if (why := _undecided_by(execution, world)) is not None:
                    proof.undecided_by = sorted({*proof.undecided_by, why})
                if layers and landing and _vertical_building_violation(execution, world, landing, layers[0]):
                    note(None, None, None, failure, "landing")
                    return proof
                position = world.uav_index[space.uavs[u]].position
                if layers and _vertical_building_violation(execution, world, position, layers[0]):
                    note(u, None, None, failure, "takeoff")
                    settled_uavs.add(u)
                    continue
                if _geometric(execution, world):
                    geometric.setdefault((u, b), {})[masked] = failure
    # every combination failed; a failure that rests on time or chance leaves the others' verdicts open
    if proof.undecided_by:
        proof.outcome = "unknown"
    return proof
