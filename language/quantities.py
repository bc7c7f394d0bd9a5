"""Quantities a request states: durations (deadline), masses (payload), battery shares (reserve) and lengths
(altitude band, separation), in digits or in words, in English or Chinese."""

from __future__ import annotations

import re

from ir.model import OperationConstraints

_DURATION_UNITS_SEC = {
    "h": 3600.0,
    "hr": 3600.0,
    "hour": 3600.0,
    "min": 60.0,
    "minute": 60.0,
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
}


_EN_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*-?\s*(hours?|hrs?|h|minutes?|mins?|min|seconds?|secs?|sec|s)(?![a-z])")


# a bare 分 only counts before 内 ("十分" alone means "very")
_ZH_DURATION = re.compile(
    r"(\d+(?:\.\d+)?|[零一二两三四五六七八九十百半]+)\s*个?\s*(小时|分钟|分(?=之?内|以内)|秒钟|秒)"
)


_ZH_UNITS_SEC = {"小时": 3600.0, "分钟": 60.0, "分": 60.0, "秒钟": 1.0, "秒": 1.0}


_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


_M = r"\s*(?:m|meters?|metres?|米)(?![a-z/])"


_NOT_DISTANCE = r"(?!\s*(?:of\s+)?(?:separation|clearance|apart|spacing|from|away|distance|between|间隔|间距|距离))"


_SEPARATION_PATTERNS = (
    re.compile(r"(\d+(?:\.\d+)?)" + _M + r"\s*(?:of\s+)?(?:separation|clearance|spacing|apart|buffer)"),
    re.compile(r"(?:separation|clearance|spacing)\s*(?:of|:)?\s*(?:at least\s*)?(\d+(?:\.\d+)?)" + _M),
    re.compile(r"at least\s*(\d+(?:\.\d+)?)" + _M + r"\s*(?:away\s*)?from"),
    re.compile(r"(?:间隔|间距|安全距离)\D{0,6}?(\d+(?:\.\d+)?)" + _M),
    re.compile(r"(\d+(?:\.\d+)?)" + _M + r"\s*的?(?:间隔|间距|安全距离)"),
)


_ALTITUDE_RANGE_PATTERN = re.compile(
    r"(?:altitude|height|fly|flying|cruise|stay|level|between|\bat\b|高度|飞行高度)[^.;\d]{0,25}?"
    r"(\d+(?:\.\d+)?)\s*(?:m|meters?|metres?|米)?\s*(?:-|to|and|~|到|至|和)\s*(\d+(?:\.\d+)?)" + _M
)


# "no lower than" is a floor and "不低于" is not "低于": the negated forms come first, and the bare ones may not
# follow a negation.
_ALTITUDE_MIN_PATTERN = re.compile(
    r"(?:above|over|at least|no lower than|not lower than|not below|(?<!no )(?<!not )higher than|"
    r"min(?:imum)? altitude(?: of)?|floor of|不低于|(?<!不)高于|至少|最低)\s*(\d+(?:\.\d+)?)" + _M + _NOT_DISTANCE
)


_ALTITUDE_MAX_PATTERN = re.compile(
    r"(?:below|under|at most|no higher than|not higher than|not above|(?<!no )(?<!not )lower than|"
    r"max(?:imum)? altitude(?: of)?|ceiling of|不高于|(?<!不)低于|不超过|最高)\s*(\d+(?:\.\d+)?)" + _M + _NOT_DISTANCE
)


_PAYLOAD_PATTERN = re.compile(r"(\d+(?:\.\d+)?)\s*(?:kg|kilograms?|kilos?|公斤|千克)(?![a-z])")


# "keep at least 30% battery (on arrival)", "到达时至少保留30%电量": the share of battery to land with.
_RESERVE_PATTERN = re.compile(
    r"(?:at least|no less than|minimum of|min\.?)\s*(\d+(?:\.\d+)?)\s*%\s*(?:of\s+(?:the\s+)?)?battery"
    r"|(?:保留|剩余|留有|不低于)\s*(\d+(?:\.\d+)?)\s*%\s*(?:的)?电量"
)


def _cn_number(token: str) -> float:
    if token == "半":
        return 0.5
    total, current = 0, 0
    for ch in token:
        if ch in _CN_DIGITS:
            current = _CN_DIGITS[ch]
        elif ch == "十":
            total, current = total + (current or 1) * 10, 0
        elif ch == "百":
            total, current = total + (current or 1) * 100, 0
    return float(total + current)


def parse_payload(text: str) -> float | None:
    """The cargo's mass in kg, the first one the (lower-cased) request states."""
    return float(m.group(1)) if (m := _PAYLOAD_PATTERN.search(text)) else None


def parse_reserve(text: str) -> float | None:
    """The battery share the (lower-cased) request asks to keep on arrival, as a ratio."""
    if not (m := _RESERVE_PATTERN.search(text)):
        return None
    ratio = float(m.group(1) or m.group(2)) / 100
    return ratio if 0 < ratio < 1 else None


def parse_deadline(text: str) -> float | None:
    """The first duration in the request, in seconds ('within 10 minutes', '600 s', '10分钟内', '半小时')."""
    found: list[tuple[int, float]] = []
    for m in _EN_DURATION.finditer(text):
        unit = m.group(2).rstrip("s") or "s"
        found.append((m.start(), float(m.group(1)) * _DURATION_UNITS_SEC[unit]))
    for m in _ZH_DURATION.finditer(text):
        number = float(m.group(1)) if m.group(1)[0].isdigit() else _cn_number(m.group(1))
        found.append((m.start(), number * _ZH_UNITS_SEC[m.group(2)]))
    for m in re.finditer(r"half an hour|an hour", text):
        found.append((m.start(), 1800.0 if m.group(0).startswith("half") else 3600.0))
    found = [f for f in found if f[1] > 0]
    return min(found)[1] if found else None


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> tuple[float | None, str]:
    """First match's number and the text with that match blanked (so altitude parsing does not re-read it)."""
    for pattern in patterns:
        m = pattern.search(text)
        if m:
            return float(m.group(1)), text[: m.start()] + " " * (m.end() - m.start()) + text[m.end() :]
    return None, text


def stated_band_and_separation(text: str) -> dict[str, float]:
    """Separation and altitude demands as written, a contradictory pair included."""
    separation, text = _first_number(_SEPARATION_PATTERNS, text)
    band: dict[str, float] = {}
    if separation is not None:
        band["min_separation_m"] = separation
    range_match = _ALTITUDE_RANGE_PATTERN.search(text)
    if range_match:
        low, high = sorted((float(range_match.group(1)), float(range_match.group(2))))
        band.update(altitude_min_m=low, altitude_max_m=high)
    else:
        if m := _ALTITUDE_MIN_PATTERN.search(text):
            band["altitude_min_m"] = float(m.group(1))
        if m := _ALTITUDE_MAX_PATTERN.search(text):
            band["altitude_max_m"] = float(m.group(1))
    return band


def parse_altitude_and_separation(text: str, defaults: OperationConstraints) -> dict[str, float]:
    band = stated_band_and_separation(text)
    low = band.get("altitude_min_m", defaults.altitude_min_m)
    high = band.get("altitude_max_m", defaults.altitude_max_m)
    if low >= high:  # an IR must have a valid band; the fidelity gate still holds the plan to the stated one
        band.pop("altitude_min_m", None)
        band.pop("altitude_max_m", None)
    return band
