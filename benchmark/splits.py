"""The splits of CloudBrain-Bench: size, city layouts, scenario mix, difficulty mix and stress level.

Leakage rules: every split draws its own worlds from its own seed stream, sample and world ids carry the split
name, mixed_city appears only in test_unseen_city, and the real-context city only in its own split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmark.layouts import SEEN_LAYOUTS, UNSEEN_LAYOUTS
from benchmark.tasks import SCENARIO_SHARES

UNSAT_SCENARIOS = ("unsat_ambiguous", "underspecified")  # their samples are never SAT

STANDARD_DIFFICULTY = {
    "easy": 0.25,
    "medium": 0.33,
    "hard": 0.24,
    "extreme": 0.14,
    "unsat": 0.04,
}
STRESS_DIFFICULTY = {"medium": 0.1, "hard": 0.45, "extreme": 0.4, "unsat": 0.05}
STRESS_SHARES = {
    "normal_delivery": 0.05,
    "emergency_delivery": 0.1,
    "patrol_inspection": 0.05,
    "nfz_avoidance": 0.2,
    "corridor_congestion": 0.15,
    "charging_bottleneck": 0.15,
    "weather_risk": 0.2,
    "multimodal_fallback": 0.05,
    "unsat_ambiguous": 0.05,
}
INJECTION_SHARE = 0.06
# test_fleet (issue 42): requests that need several UAVs (benchmark/fleet.py); its UNSAT share is a team the exact
# search proves impossible, so it is larger than the standard splits'
FLEET_DIFFICULTY = {"easy": 0.3, "medium": 0.3, "hard": 0.25, "unsat": 0.15}
FLEET_SCENARIO = "fleet"  # the scenario type of a fleet sample (benchmark/fleet.py builds it)
# The standard splits' share of fleet samples (issue 42: about 10 %), taken out of every other scenario type in
# proportion (see scenario_schedule: the other samples stay as they were drawn before fleet samples were added).
STANDARD_FLEET_SHARE = 0.1


@dataclass(frozen=True)
class SplitSpec:
    name: str
    index: int  # position in SPLITS: part of every seed this split draws
    size: int
    layouts: tuple[str, ...]
    scenario_shares: dict[str, float]
    difficulty_mix: dict[str, float]
    data_tier: str = "synthetic"
    stress_level: str = "medium"
    unsat_only: bool = False
    free_form: bool = False  # requests in free-form patterns (benchmark/freeform), each with its template wording
    purpose: str = ""
    fleet_share: float = 0.0  # fleet samples put in the schedule's place of others (scenario_schedule)

    @property
    def target_shares(self) -> dict[str, float]:
        return target_shares(self.scenario_shares, self.fleet_share)


def target_shares(shares: dict[str, float], fleet_share: float) -> dict[str, float]:
    """The scenario mix a split is drawn to: its shares, each scaled down by the fleet share beside them."""
    if not fleet_share:
        return dict(shares)
    return {**{k: round(v * (1 - fleet_share), 6) for k, v in shares.items()}, FLEET_SCENARIO: fleet_share}


STANDARD_TARGET_SHARES = target_shares(SCENARIO_SHARES, STANDARD_FLEET_SHARE)  # the standard splits' mix


SPLITS: dict[str, SplitSpec] = {
    spec.name: spec
    for spec in (
        SplitSpec(
            "dev_mini",
            0,
            200,
            SEEN_LAYOUTS,
            SCENARIO_SHARES,
            STANDARD_DIFFICULTY,
            purpose="quick pipeline checks",
            fleet_share=STANDARD_FLEET_SHARE,
        ),
        SplitSpec(
            "train_like",
            1,
            3000,
            SEEN_LAYOUTS,
            SCENARIO_SHARES,
            STANDARD_DIFFICULTY,
            purpose="memory seeding only",
            fleet_share=STANDARD_FLEET_SHARE,
        ),
        SplitSpec(
            "validation",
            2,
            1000,
            SEEN_LAYOUTS,
            SCENARIO_SHARES,
            STANDARD_DIFFICULTY,
            purpose="prompt / model selection",
            fleet_share=STANDARD_FLEET_SHARE,
        ),
        SplitSpec(
            "test_seen_city",
            3,
            1000,
            SEEN_LAYOUTS,
            SCENARIO_SHARES,
            STANDARD_DIFFICULTY,
            purpose="main test",
            fleet_share=STANDARD_FLEET_SHARE,
        ),
        SplitSpec(
            "test_unseen_city",
            4,
            1000,
            UNSEEN_LAYOUTS,
            SCENARIO_SHARES,
            STANDARD_DIFFICULTY,
            purpose="unseen-city generalisation",
            fleet_share=STANDARD_FLEET_SHARE,
        ),
        SplitSpec(
            "test_stress",
            5,
            1000,
            SEEN_LAYOUTS,
            STRESS_SHARES,
            STRESS_DIFFICULTY,
            stress_level="high",
            purpose="dangerous scenarios, high simulation stress",
        ),
        SplitSpec(
            "test_unsat",
            6,
            250,
            SEEN_LAYOUTS,
            SCENARIO_SHARES,
            {"unsat": 1.0},
            unsat_only=True,
            purpose="safe refusal and clarification",
        ),
        SplitSpec(
            "test_real_context_city_a",
            7,
            250,
            ("helsinki_centre",),
            SCENARIO_SHARES,
            STANDARD_DIFFICULTY,
            data_tier="real_context",
            purpose="real city context (OSM buildings and POIs, real heliports)",
        ),
        SplitSpec(
            "test_freeform",
            8,
            320,
            SEEN_LAYOUTS,
            SCENARIO_SHARES,
            STANDARD_DIFFICULTY,
            free_form=True,
            purpose="free-form requests in many constructions, each with its canonical id-based wording",
        ),
        SplitSpec(
            "test_fleet",
            9,
            200,
            SEEN_LAYOUTS,
            {FLEET_SCENARIO: 1.0},
            FLEET_DIFFICULTY,
            purpose="fleet missions: split loads, parallel sites, roles and coverage, planned as teams",
        ),
    )
}


def _counts(shares: dict[str, float], size: int) -> dict[str, int]:
    """Whole counts in the shares (largest remainder), summing to size."""
    raw = {k: v * size for k, v in shares.items()}
    counts = {k: int(v) for k, v in raw.items()}
    leftover = size - sum(counts.values())
    for k in sorted(raw, key=lambda k: (counts[k] - raw[k], k))[:leftover]:
        counts[k] += 1
    return counts


def scenario_schedule(spec: SplitSpec, rng: np.random.Generator) -> list[str]:
    """Exactly one scenario type per sample, in the split's target shares (largest remainder), in shuffled order.

    A fleet share takes its samples out of the other types' places in the schedule drawn without it, as many from
    each as its scaled share frees: every other index keeps its scenario type, so its sample (whose seed is the
    split, index and attempt) is the one drawn before fleet samples were added."""
    counts = _counts(spec.scenario_shares, spec.size)
    schedule = [k for k in spec.scenario_shares for _ in range(counts[k])]
    schedule = [schedule[int(i)] for i in rng.permutation(len(schedule))]
    if not spec.fleet_share:
        return schedule
    targets = _counts(spec.target_shares, spec.size)
    for scenario in spec.scenario_shares:
        places = [i for i, s in enumerate(schedule) if s == scenario]
        for i in rng.choice(places, size=max(0, len(places) - targets[scenario]), replace=False):
            schedule[int(i)] = FLEET_SCENARIO
    return schedule


def draw_difficulty(spec: SplitSpec, rng: np.random.Generator, scenario_type: str) -> str:
    if scenario_type in UNSAT_SCENARIOS:
        return "unsat"
    levels = list(spec.difficulty_mix)
    weights = np.array([spec.difficulty_mix[k] for k in levels])
    return levels[int(rng.choice(len(levels), p=weights / weights.sum()))]
