"""A published zone's applicability (date range, weekly schedule) as the intervals it is active in the mission's
horizon, in seconds on the world's clock."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from standards.zone_files import WEEKDAYS, Period

DAY = timedelta(days=1)


def active_intervals(periods: list[Period], clock_origin: datetime, horizon_sec: float) -> list[tuple[float, float]]:
    """The merged intervals, clipped to [0, horizon_sec], in which any period is active."""
    horizon_end = clock_origin + timedelta(seconds=horizon_sec)
    intervals = []
    for period in periods:
        low = max(period.start or clock_origin, clock_origin)
        high = min(period.end or horizon_end, horizon_end)
        if period.daily is None:
            intervals.append((low, high))
            continue
        for start, end in _daily_instants(period, clock_origin - DAY, horizon_end + DAY):
            intervals.append((max(start, low), min(end, high)))
    seconds = sorted(
        ((a - clock_origin).total_seconds(), (b - clock_origin).total_seconds()) for a, b in intervals if b > a
    )
    merged: list[tuple[float, float]] = []
    for a, b in seconds:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _daily_instants(period: Period, first: datetime, last: datetime):
    day = first.date()
    while day <= last.date():
        for window in period.daily or ():
            start_time = window.start or time(0, tzinfo=UTC)
            start = datetime.combine(day, start_time.replace(tzinfo=None), tzinfo=start_time.tzinfo or UTC)
            if "ANY" not in window.days and WEEKDAYS[start.weekday()] not in window.days:
                continue
            if window.end is None:
                end = datetime.combine(day + DAY, time(0), tzinfo=start.tzinfo)
            else:
                end = datetime.combine(day, window.end.replace(tzinfo=None), tzinfo=window.end.tzinfo or UTC)
                if end <= start:  # an overnight window ends the next day
                    end += DAY
            yield start, end
        day += DAY
