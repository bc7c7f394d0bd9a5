"""Offline STL monitoring with rtamt's dense-time semantics on the verifier's exact time grid.

The signals are sampled at the instants of tools/exact_grid (every waypoint and second, plus each segment's
minimum of every distance signal and every membership switch); rtamt's dense-time monitor interpolates linearly
between them, so an unbounded `always` is the minimum over the continuous flight and temporal bounds are in
seconds (`eventually[0:600]` = within 600 s of the start). A spec is a single rtamt expression over the signal
names in SIGNAL_DOCS and the constants in CONSTANT_DOCS; anything else (unknown names, declarations, imports,
several statements) is rejected before rtamt sees it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import rtamt

SIGNAL_DOCS = {
    "nfz_margin": "m, signed distance to the active no-fly zones (negative inside)",
    "obstacle_clearance": "m, clearance to buildings (horizontal below the roof, 3D above)",
    "sensitive_clearance": "m, distance to sensitive zones minus their buffer",
    "separation": "m, 3D distance to the nearest other UAV in the air",
    "clearance": "m, min(obstacle_clearance, separation)",
    "alt": "m, altitude",
    "alt_margin": "m, distance inside the altitude band (floor waived on take-off / landing verticals)",
    "goal_dist": "m, horizontal distance to the goal",
    "battery": "battery ratio 0..1 (needs uav_id)",
    "load": "UAVs in the corridor we are in, us included (0 outside corridors)",
    "capacity": "capacity of that corridor",
}
CONSTANT_DOCS = {
    "d_min": "m, min_separation_m",
    "a_min": "m, altitude_min_m",
    "a_max": "m, altitude_max_m",
    "tol": "m, the world's arrival tolerance",
    "reserve": "battery_reserve_ratio",
}
# Operator and literal words of rtamt's STL grammar that may appear in an expression (found with rtamt's lexer).
_GRAMMAR_WORDS = frozenset(
    "always G eventually F historically H once O since S until U unless W next X prev Y and or not implies iff "
    "xor rise fall abs sqrt exp pow s ms us ns ps true false TRUE FALSE".split()
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"(?<![<>=!])=(?!=)")
_EVALUATING = threading.Lock()  # a parsed specification is shared; rtamt keeps evaluation state on it


class StlSpecError(ValueError):
    """The spec does not parse, or uses a name that is neither a signal nor a constant."""


@dataclass(frozen=True)
class StlVerdict:
    spec: str
    robustness: float  # at the first sample: the spec's robustness over the trajectory
    times: np.ndarray  # breakpoints of the spec's robustness signal (piecewise linear between them)
    series: np.ndarray  # robustness of the spec from each breakpoint on (a suffix of the trajectory each)

    @property
    def satisfied(self) -> bool:
        return self.robustness >= 0

    def first_negative_time(self) -> float | None:
        """The earliest breakpoint where the robustness is negative (None if it never is)."""
        below = np.flatnonzero(self.series < 0)
        return float(self.times[below[0]]) if len(below) else None


def unknown_names(spec: str, known: set[str]) -> list[str]:
    words = _IDENTIFIER.findall(_strip_numbers(spec))
    return sorted({w for w in words if w not in known and w not in _GRAMMAR_WORDS})


def _strip_numbers(spec: str) -> str:
    """Drop numeric literals (1e-3, 2.5) so that their exponent letters are not read as names."""
    return re.sub(r"(?<![A-Za-z0-9_])\d+(\.\d*)?([eE][-+]?\d+)?", " ", spec)


def monitor(
    spec: str, signals: Mapping[str, np.ndarray], times: np.ndarray, constants: Mapping[str, float] | None = None
) -> StlVerdict:
    """Robustness of one STL expression over sampled signals (all arrays share `times`)."""
    constants = dict(constants or {})
    if not spec.strip() or ";" in spec or "\n" in spec or _ASSIGNMENT.search(spec):
        raise StlSpecError(f"an STL spec must be one expression: {spec!r}")
    unknown = unknown_names(spec, set(signals) | set(constants))
    if unknown:
        names = ", ".join(sorted(set(signals) | set(constants)))
        raise StlSpecError(f"unknown name(s) {', '.join(unknown)} in {spec!r}; known: {names}")
    used = set(_IDENTIFIER.findall(_strip_numbers(spec)))
    # On the mission clock (t = 0 is now), so that a spec's time bounds count from now: a flight that departs later
    # (a team member, a relay leg, a later start) stands at its first sample until then. rtamt's dense-time output
    # starts at 0 whatever the input's first time, so a later first sample would be read as if it were at 0.
    clock = [float(t) for t in times]
    series = {name: np.asarray(signals[name], dtype=float) for name in sorted(used & set(signals))}
    if clock and clock[0] > 0:
        clock = [0.0, *clock]
        series = {name: np.concatenate([values[:1], values]) for name, values in series.items()}
    # rtamt's dense-time monitor needs one input signal: a spec over constants alone reads a dummy one
    series = series or {"_clock": np.zeros(len(clock))}
    inputs = [[name, [list(p) for p in zip(clock, v.tolist())]] for name, v in series.items()]
    declared = tuple(sorted((name, float(constants[name])) for name in used & set(constants)))
    try:
        monitor_spec = _parsed(spec, tuple(series), declared)
        with _EVALUATING:
            result = monitor_spec.evaluate(*inputs)
    except Exception as exc:  # rtamt reports syntax and bound errors with several exception types
        message = str(exc).replace("RTAMT Exception: ", "").splitlines()[0][:200]
        raise StlSpecError(f"{spec!r}: {message}") from None
    pairs = np.array(result, dtype=float).reshape(-1, 2)
    return StlVerdict(spec=spec, robustness=float(pairs[0, 1]), times=pairs[:, 0], series=pairs[:, 1])


@lru_cache(maxsize=256)
def _parsed(
    spec: str, variables: tuple[str, ...], constants: tuple[tuple[str, float], ...]
) -> rtamt.StlDenseTimeOfflineSpecification:
    """A parsed rtamt specification, kept: parsing (ANTLR) costs more than monitoring a route."""
    monitor_spec = rtamt.StlDenseTimeOfflineSpecification()
    for name in variables:
        monitor_spec.declare_var(name, "float")
    for name, value in constants:
        monitor_spec.declare_const(name, "float", value)
    monitor_spec.spec = spec
    monitor_spec.parse()
    return monitor_spec
