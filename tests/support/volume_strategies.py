"""Random trajectories for the 4D-volume tests (tests/unit/test_leg_volumes.py, test_member_volumes.py): Hypothesis
steps (x, y, altitude, seconds since the previous point) and the waypoints they make."""

from __future__ import annotations

from hypothesis import strategies as st

coordinate = st.floats(min_value=-2000.0, max_value=2000.0, allow_nan=False)
altitude = st.floats(min_value=0.0, max_value=120.0, allow_nan=False)


def steps_up_to(max_dt_sec: float) -> st.SearchStrategy[tuple[float, float, float, float]]:
    """One step: a point and the seconds since the previous one, at most `max_dt_sec`. No subnormal seconds: numpy's
    interp, the tests' own reference, divides by the step and overflows to inf on one (a step of 2e-311 s, which no
    plan holds: times are rounded to milliseconds)."""
    seconds = st.floats(min_value=0.0, max_value=max_dt_sec, allow_nan=False, allow_subnormal=False)
    return st.tuples(coordinate, coordinate, altitude, seconds)


def timed(steps: list[tuple[float, float, float, float]]) -> list[list[float]]:
    """The waypoints [x, y, z, t] of the steps, the clock starting at 0 before the first step."""
    t, out = 0.0, []
    for x, y, z, dt in steps:
        t += dt
        out.append([x, y, z, t])
    return out
