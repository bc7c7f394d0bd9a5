"""Quantities as people spell them: a cargo's mass in grams, pounds or words ("1,500 g", "3.3 lb", "a kilo and a
half", "1500克"), a deadline in "secs" or fractions of an hour ("90 secs", "a quarter of an hour", "一刻钟").

Every spelling states exactly the task's value: grams and words always do, pounds only where one decimal of a
pound gives the mass to within 5 g (1.0, 1.5 and 2.0 kg: 2.2, 3.3 and 4.4 lb), which no UAV's payload limit or
energy reckoning can tell apart. The free-form tier writes them (pattern `unit_spellings`) and the split checker
(benchmark/check_splits.py) accepts them as stating the fact.
"""

from __future__ import annotations

import re

KG_PER_LB = 0.45359237
POUND_TOLERANCE_KG = 0.005

ENGLISH_KILOS = {
    0.25: ("a quarter of a kilo",),
    0.5: ("half a kilo",),
    1.0: ("a kilo", "one kilo"),
    1.5: ("a kilo and a half", "one and a half kilos"),
    2.0: ("two kilos",),
    2.5: ("two and a half kilos",),
    3.0: ("three kilos",),
}
CHINESE_KILOS = {
    0.5: ("半公斤",),
    1.0: ("一公斤",),
    1.5: ("一公斤半", "一点五公斤"),
    2.0: ("两公斤",),
    2.5: ("两公斤半",),
    3.0: ("三公斤",),
}
# Deadlines with a name of their own: a minute and a half, fractions of an hour.
ENGLISH_SPANS = {
    90: ("a minute and a half",),
    900: ("a quarter of an hour",),
    1800: ("half an hour",),
    2700: ("three quarters of an hour",),
    3600: ("an hour", "one hour"),
    5400: ("an hour and a half",),
}
CHINESE_SPANS = {
    90: ("一分半钟",),
    900: ("一刻钟",),
    1800: ("半小时", "半个小时"),
    2700: ("三刻钟",),
    3600: ("一小时", "一个小时"),
    5400: ("一个半小时",),
}


def pounds(kg: float) -> float | None:
    """The mass in pounds to one decimal, where that states it to within POUND_TOLERANCE_KG; else None."""
    lb = round(kg / KG_PER_LB, 1)
    return lb if abs(lb * KG_PER_LB - kg) <= POUND_TOLERANCE_KG else None


def mass_spellings(kg: float, lang: str) -> tuple[str, ...]:
    """The ways to say `kg` other than "<kg> kg" / "<kg>公斤", each exact: grams (with a thousands separator in
    English), pounds where exact enough, words."""
    grams = round(kg * 1000)
    lb = pounds(kg)
    if lang == "en":
        spelled = [f"{grams:,} g", f"{grams:,} grams"]
        spelled += [f"{lb:g} lb", f"{lb:g} pounds"] if lb is not None else []
        return (*spelled, *ENGLISH_KILOS.get(kg, ()))
    spelled = [f"{grams}克"] + ([f"{lb:g}磅"] if lb is not None else [])
    return (*spelled, *CHINESE_KILOS.get(kg, ()))


def deadline_spellings(seconds: float, lang: str) -> tuple[str, ...]:
    """The ways to say a deadline of `seconds` other than "<n> minutes / seconds" / "<n>分钟 / 秒", each exact; the
    names of their own ("a quarter of an hour", "一刻钟") and half minutes first, then "secs" / "mins" / "秒钟"."""
    value = int(seconds)
    if value != seconds or value <= 0:
        return ()
    minutes, rest = divmod(value, 60)
    if lang == "en":
        named = ENGLISH_SPANS.get(value, ())
        half = (f"{english_number(minutes)} and a half minutes",) if rest == 30 and minutes >= 2 else ()
        plain = (f"{value} secs",) if rest else ("a minute",) if minutes == 1 else (f"{minutes} mins",)
        return tuple(dict.fromkeys((*named, *half, *plain)))
    named = CHINESE_SPANS.get(value, ())
    count = "两" if minutes == 2 else chinese_number(minutes) if minutes < 10_000 else str(minutes)
    half = (f"{count}分半钟",) if rest == 30 and minutes >= 2 else ()
    plain = (f"{value}秒钟",) if rest else ()
    return tuple(dict.fromkeys((*named, *half, *plain)))


def states(text: str, spelling: str) -> bool:
    """`spelling` stands in `text` as a whole quantity (not the tail of a longer number), spaces and case aside."""
    bare = re.sub(r"\s+", "", spelling).casefold()
    squeezed = re.sub(r"\s+", "", text).casefold()
    return re.search(r"(?<!\d)(?<!\d[.,])" + re.escape(bare), squeezed) is not None


def mass_stated(text: str, kg: float, lang: str) -> bool:
    """The request states the cargo's mass: "<kg> kg" / "<kg>公斤" or an exact spelling of it."""
    plain = (f"{kg:g}kg",) if lang == "en" else (f"{kg:g}公斤", f"{kg:g}kg")
    return any(states(text, s) for s in (*plain, *mass_spellings(kg, lang)))


# --- numbers in words ------------------------------------------------------------------------------------------------

ENGLISH_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
).split()
ENGLISH_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def english_number(n: int) -> str:
    """0 <= n < 1,000,000 in words, British style ("three hundred and thirty")."""
    if n < 20:
        return ENGLISH_ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return ENGLISH_TENS[tens] + (f"-{ENGLISH_ONES[ones]}" if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{ENGLISH_ONES[hundreds]} hundred" + (f" and {english_number(rest)}" if rest else "")
    thousands, rest = divmod(n, 1000)
    tail = "" if not rest else (f" and {english_number(rest)}" if rest < 100 else f" {english_number(rest)}")
    return f"{english_number(thousands)} thousand{tail}"


CHINESE_DIGITS = "零一二三四五六七八九"


def chinese_number(n: int) -> str:
    """0 <= n < 10,000 in Chinese numerals (十五, 一百零五, 三百三十)."""
    if n < 10:
        return CHINESE_DIGITS[n]
    if n < 20:
        return "十" + (CHINESE_DIGITS[n - 10] if n > 10 else "")
    digits = [int(d) for d in str(n)]
    units = ["千", "百", "十", ""][-len(digits) :]
    text, zero = "", False
    for digit, unit in zip(digits, units):
        if digit == 0:
            zero = True
            continue
        text += ("零" if zero and text else "") + CHINESE_DIGITS[digit] + unit
        zero = False
    return text
