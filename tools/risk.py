"""risk_assess: a risk score in [0, 1] for a trajectory from weather, margins, battery and simulation events.

Each factor contributes a probability-like share c in [0, 1]; the score combines them as a noisy-or,
1 - prod(1 - c), so one severe factor alone makes the risk high and several mild ones add up. Levels:
score < 0.05 none, < 0.25 low, < 0.55 medium, else high. The thresholds and weights below are a transparent
heuristic (no calibration data exists for this simulator), chosen so that a clean route in light wind is "low",
a route through a medium-risk weather region is "medium", and any rule violation is "high".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tools import signals
from tools.contract import ToolFailure, ToolOutput
from tools.energy import battery_profile
from tools.registry import ToolSpec
from tools.rules import safety_baseline
from tools.trajectory import Trajectory
from tools.verifier import WaypointArgs, resolve_uav
from tools.world import UAV, World

LEVELS = ("none", "low", "medium", "high")
LEVEL_UPPER_BOUNDS = (0.05, 0.25, 0.55)
WEATHER_RISK = {"none": 0.0, "low": 0.1, "medium": 0.35, "high": 0.7}
EVENT_RISK = {
    "collision": 1.0,
    "nfz_intrusion": 0.9,
    "separation_violation": 0.7,
    "battery_depleted": 0.6,
    "near_miss": 0.35,
    "deadline_missed": 0.3,
}
NFZ_NEAR_M = 30.0
WIND_CAUTION_RATIO = 0.7  # wind + gust above this share of the UAV's limit starts to count
BATTERY_THIN_MARGIN = 0.1  # arrival battery within this of the reserve starts to count
TOP_REASONS = 3
MIN_CONTRIBUTION = 0.005  # below what the reasons can show (two decimals)


class SimEvent(BaseModel):
    """An event as simulate_scenario reports it."""

    model_config = ConfigDict(extra="forbid")

    type: Literal[
        "nfz_intrusion", "separation_violation", "near_miss", "battery_depleted", "deadline_missed", "collision"
    ]
    time_sec: float
    detail: str = ""
    entity: str | None = None


class RiskArgs(WaypointArgs):
    max_risk_level: Literal["low", "medium", "high"] = "medium"
    sim_events: list[SimEvent] = Field(default_factory=list)
    battery_reserve_ratio: float = Field(default=0.2, ge=0, le=1)
    payload_kg: float = Field(default=0.0, ge=0)


@dataclass(frozen=True)
class Factor:
    name: str
    contribution: float
    detail: str
    entity: str | None = None  # the region, zone, building, track or UAV it is about: what a repair acts on


def level_of(score: float) -> str:
    return LEVELS[int(np.searchsorted(LEVEL_UPPER_BOUNDS, score, side="right"))]


def _ramp(value: float, start: float, end: float, weight: float) -> float:
    """weight at `end`, 0 at `start`, linear between (start may be above or below end)."""
    share = (value - start) / (end - start)
    return weight * float(np.clip(share, 0.0, 1.0))


def _weather(world: World, samples: np.ndarray, uav_limit: float | None, uav_id: str | None) -> list[Factor]:
    regions = [world.wind_at(x, y) for x, y in samples[:, :2]]
    present = [r for r in regions if r is not None]
    if not present:
        return []
    worst = max(present, key=lambda r: (r.risk_level.rank, r.wind_speed_mps + r.gust_mps))
    factors = [
        Factor(
            "weather",
            WEATHER_RISK[worst.risk_level.value],
            f"weather region {worst.id}: risk {worst.risk_level.value}, wind {worst.wind_speed_mps:g} m/s, "
            f"gusts {worst.gust_mps:g} m/s",
            worst.id,
        )
    ]
    if uav_limit is not None:
        windiest = max(present, key=lambda r: r.wind_speed_mps + r.gust_mps)
        strongest = windiest.wind_speed_mps + windiest.gust_mps
        ratio = strongest / uav_limit
        share = 0.8 if ratio >= 1 else _ramp(ratio, WIND_CAUTION_RATIO, 1.0, 0.4)
        detail = f"wind + gusts {strongest:g} m/s in {windiest.id} vs {uav_id}'s limit {uav_limit:g} m/s"
        factors.append(Factor("wind_limit", share, detail, uav_id))
    return factors


def _margins(world: World, samples: np.ndarray) -> list[Factor]:
    d_min = safety_baseline(world).min_separation_m
    _, nfz, zone = signals.nfz_margin(world, samples).worst()
    _, clearance, building = signals.obstacle_clearance(world, samples, signals.track_pads(samples)).worst()
    _, sensitive, sensitive_zone = signals.sensitive_clearance(world, samples).worst()
    _, separation, track = signals.traffic_separation(world, samples).worst()
    return [
        Factor(
            "nfz", 0.9 if nfz < 0 else _ramp(nfz, NFZ_NEAR_M, 0.0, 0.15), f"{nfz:.1f} m from no-fly zone {zone}", zone
        ),
        Factor(
            "obstacles",
            1.0 if clearance <= 0 else 0.6 if clearance < d_min else _ramp(clearance, 2 * d_min, d_min, 0.1),
            f"{clearance:.1f} m from building {building}",
            building,
        ),
        Factor(
            "sensitive_zones",
            0.4 if sensitive < 0 else 0.0,
            f"{-sensitive:.1f} m inside the buffer of {sensitive_zone}",
            sensitive_zone,
        ),
        Factor(
            "traffic",
            0.7 if separation < d_min else _ramp(separation, 3 * d_min, d_min, 0.2),
            f"{separation:.1f} m from traffic {track}",
            track,
        ),
    ]


def _battery(world: World, samples: np.ndarray, uav: UAV | None, args: RiskArgs) -> list[Factor]:
    if uav is None:
        return []
    margin = float(battery_profile(world, uav, samples, args.payload_kg)[-1]) - args.battery_reserve_ratio
    share = 0.6 if margin < 0 else _ramp(margin, BATTERY_THIN_MARGIN, 0.0, 0.25)
    detail = f"arrival battery {margin:+.2f} against the {args.battery_reserve_ratio:g} reserve"
    return [Factor("battery", share, detail, uav.id)]


def assess(world: World, args: RiskArgs) -> ToolOutput:
    uav = resolve_uav(world, args.uav_id)
    samples = Trajectory(waypoints=args.waypoints).sample(1.0)
    factors = [
        *_weather(world, samples, uav.max_wind_mps if uav else None, args.uav_id),
        *_margins(world, samples),
        *_battery(world, samples, uav, args),
        *(
            Factor(
                f"sim:{e.type}",
                EVENT_RISK[e.type],
                f"simulation: {e.type} at t={e.time_sec:g} s {e.detail}".strip(),
                e.entity,
            )
            for e in args.sim_events
        ),
    ]
    shown = [f for f in factors if f.contribution >= MIN_CONTRIBUTION]
    counted = sorted(shown, key=lambda f: (-f.contribution, f.name))
    score = round(1.0 - float(np.prod([1.0 - f.contribution for f in counted])), 3)
    level = level_of(score)
    result: dict[str, Any] = {
        "score": score,
        "level": level,
        "max_risk_level": args.max_risk_level,
        "top_reasons": [f"{f.detail} (+{f.contribution:.2f})" for f in counted[:TOP_REASONS]],
        "factors": [
            {"factor": f.name, "contribution": round(f.contribution, 3), "detail": f.detail, "entity": f.entity}
            for f in counted
        ],
    }
    if LEVELS.index(level) <= LEVELS.index(args.max_risk_level):
        return ToolOutput(result=result)
    if level == "high":
        raise ToolFailure(
            "high_risk_no_override",
            f"risk is high (score {score}) and the task allows at most {args.max_risk_level}: "
            + "; ".join(result["top_reasons"]),
            recoverable=False,
            suggested_actions=[f"act on the top reason: {counted[0].detail}" if counted else "re-plan"],
            result=result,
        )
    raise ToolFailure(
        "medium_risk",
        f"risk is {level} (score {score}), above the allowed {args.max_risk_level}: "
        + "; ".join(result["top_reasons"]),
        recoverable=True,
        suggested_actions=[f"reduce: {counted[0].detail}" if counted else "re-plan"],
        result=result,
    )


SPEC = ToolSpec(
    name="risk_assess",
    description=(
        "Risk score in [0, 1] and level none/low/medium/high for a trajectory: weather along it, wind vs the UAV's "
        "limit, margins to no-fly zones, buildings, sensitive zones and traffic, battery on arrival, and the events "
        "of a simulation (sim_events). Fails when the level is above max_risk_level."
    ),
    args_model=RiskArgs,
    body=assess,
    data_sources=("world", "trajectory", "weather", "traffic"),
    needs=("simulate_scenario",),
)
