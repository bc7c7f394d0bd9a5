"""test_freeform: free-form requests that state exactly the facts of their canonical template request, drawn
deterministically, every pattern used; runs on both wordings; the per-pattern table and paraphrase consistency."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

from benchmark.check_splits import _check_stated_facts
from benchmark.citygen import generate_city
from benchmark.freeform import PATTERNS, VOICES, write_patterns
from benchmark.freeform.chinese import DEMANDS as CHINESE_DEMANDS
from benchmark.freeform.english import COULD_YOU
from benchmark.freeform.english import DEMANDS as ENGLISH_DEMANDS
from benchmark.freeform.english import PATTERNS as ENGLISH_PATTERNS
from benchmark.freeform.request import TYPO_REACH, Naming, Request, id_pattern, stated_constraints, world_ids
from benchmark.freeform.units import (
    chinese_number,
    deadline_spellings,
    english_number,
    mass_spellings,
    mass_stated,
    pounds,
)
from benchmark.generator import STATS_FILE, generate_splits
from benchmark.instructions import (
    CRITICAL_PRESSURE,
    DEMAND,
    INJECTIONS,
    PERMISSION,
    SCENARIO_HINTS,
    Asides,
    request_family,
)
from benchmark.layouts import LAYOUTS, SEEN_LAYOUTS
from benchmark.sample import read_samples
from benchmark.splits import SPLITS
from benchmark.tasks import SCENARIO_SHARES, ScenarioError, add_stated_demand, build_task
from evaluation import store
from evaluation.records import CANONICAL, RunRecord
from evaluation.report import paraphrase_rows, pattern_rows, write_report
from evaluation.runner import BenchConfig, plan_jobs, request_text
from tests.support.cli import run_cli
from tools.world import UAVStatus

SEED = 11
DEADLINES = (150.0, 300.0)  # one said in seconds, one in minutes
PRIORITY_MARKS = {
    "en": {"critical": ("critical",), "high": ("high", "priority"), "low": ("rush", "convenient", "low")},
    "zh": {"critical": ("特急", "最高优先级"), "high": ("优先",), "low": ("不急", "有空", "低")},
}
SENTENCES = (CRITICAL_PRESSURE, *(term for term, _, _ in INJECTIONS), *SCENARIO_HINTS.values())
DEMAND_WORDINGS = {"en": ENGLISH_DEMANDS, "zh": CHINESE_DEMANDS}
# The constructions of issue 37, each in both languages.
NEW_PATTERNS = (
    "exclusion",
    "forbidden_overflight",
    "ordered_ending",
    "unit_spellings",
    "headline",
    "reversed_order",
    "via_phrases",
    "typo_ids",
    "rule_violating_demand",
)


def _deadline_said(text: str, seconds: float, lang: str) -> bool:
    if any(spelled in text for spelled in deadline_spellings(seconds, lang)):  # "a quarter of an hour", "90 secs"
        return True
    minutes = seconds % 60 == 0
    value = int(seconds // 60) if minutes else int(seconds)
    if lang == "zh":
        unit = "分钟" if minutes else "秒"
        return any(f"{number}{unit}" in text for number in (str(value), chinese_number(value)))
    unit = r"(minutes?|min)" if minutes else r"(seconds|s)"
    numbers = "|".join(re.escape(n) for n in (str(value), english_number(value)))
    return re.search(rf"(?<![\w.-])({numbers}) {unit}\b", text) is not None


def missing_facts(text: str, lang: str, request: Request, naming: Naming, pattern: str = "") -> list[str]:
    """The facts of `request` that `text` does not state (an empty list: all of them, in that language); `pattern`
    the construction it is written in, where that says a fact its own way."""
    task, folded = request.task, text.casefold()  # an English phrase may open a sentence
    missing = [
        f"{r.id} as {getattr(r, lang)!r}" for r in naming.references if getattr(r, lang).casefold() not in folded
    ]
    if task.cargo:
        term = getattr(task.cargo.term, lang)
        missing += [f"cargo {term}"] if term.casefold() not in folded else []
        missing += [] if mass_stated(text, task.cargo.kg, lang) else [f"mass {task.cargo.kg:g} kg"]
    if pattern == "exclusion" and request.excluded_uav not in text:
        missing.append(f"excluded {request.excluded_uav}")
    if request.stated_deadline is not None and not _deadline_said(text, request.stated_deadline, lang):
        missing.append(f"deadline {request.stated_deadline:g} s")
    unit = " m" if lang == "en" else "米"
    for constraint in stated_constraints(task):
        said = {"floor": f"{constraint.value}{unit}", "ceiling": f"{constraint.value}{unit}"}
        said |= {"reserve": f"{constraint.value}%", "pinned": constraint.value}
        if constraint.kind in said and said[constraint.kind] not in text:
            missing.append(f"{constraint.kind} {said[constraint.kind]}")
    reworded = pattern == "rule_violating_demand"  # the demand said in other words than the template's
    for sentence in SENTENCES:
        stated = sentence in (request.asides.hint, request.asides.injection)
        stated = stated and not (reworded and sentence == request.asides.injection)
        if (getattr(sentence, lang) in text) != stated:
            missing.append(f"aside {getattr(sentence, lang)!r} {'missing' if stated else 'added'}")
    if reworded and not any(w in text for w in DEMAND_WORDINGS[lang][request.asides.injected_rule]):
        missing.append(f"the demand to break {request.asides.injected_rule}")
    marks = PRIORITY_MARKS[lang].get(task.priority, ())
    if marks and not any(mark in folded for mark in marks):
        missing.append(f"priority {task.priority}")
    if request.family == "emergency" and ("emergency" if lang == "en" else "紧急") not in folded:
        missing.append("emergency")
    return missing


def _in_order(text: str, phrases: list[str]) -> bool:
    positions, cursor = [], 0
    for phrase in phrases:
        cursor = text.find(phrase, cursor)
        positions.append(cursor)
    return -1 not in positions


@pytest.fixture(scope="module")
def requests() -> list[tuple[Request, dict]]:
    """Tasks of every scenario type on seen layouts, each with a deadline in seconds and one in minutes, and with
    both asides: no gold labelling needed to check what a pattern says."""
    made = []
    scenarios = sorted(SCENARIO_SHARES) * 4
    for i, scenario in enumerate(scenarios + ["normal_delivery"] * 8):
        rng = np.random.default_rng(1000 + i)
        draft = generate_city(LAYOUTS[SEEN_LAYOUTS[i % len(SEEN_LAYOUTS)]], rng, f"ff-{i}")
        difficulty = "unsat" if scenario in ("unsat_ambiguous", "underspecified") else ("easy", "hard")[i % 2]
        try:
            task = build_task(draft, rng, scenario, difficulty)
        except ScenarioError:
            continue
        if i >= len(scenarios) and task.unsat_kind is None and not task.waypoints:
            add_stated_demand(draft, rng, task, ("return_leg", "via_point")[i % 2])
        asides = Asides(SCENARIO_HINTS.get(scenario), *INJECTIONS[i % len(INJECTIONS)])
        deadline = DEADLINES[i % 2] if i % 5 else 90.0  # 90 s: "a minute and a half", "90 secs", "一分半钟"
        world = draft.build()
        idle = [u.id for u in world.fleet if u.status is UAVStatus.idle and u.id not in task.named_uavs]
        gold_uav = (task.named_uavs or idle or [None])[0]  # the UAV a gold would fly, as far as the words care
        request = Request(task, request_family(task), deadline, asides, stated_constraints(task), world, gold_uav)
        made.append((request, draft.labels))
    return made


def test_each_language_has_at_least_60_distinct_named_patterns():
    for lang, patterns in PATTERNS.items():
        names = [p.name for p in patterns]
        assert len(set(names)) == len(names) >= 60, lang
        assert all(re.fullmatch(r"[a-z][a-z_]+", name) for name in names)


def test_numbers_in_words():
    assert [english_number(n) for n in (1, 15, 20, 42, 150, 330, 1000)] == [
        "one",
        "fifteen",
        "twenty",
        "forty-two",
        "one hundred and fifty",
        "three hundred and thirty",
        "one thousand",
    ]
    assert [chinese_number(n) for n in (2, 10, 15, 20, 105, 110, 330, 1050)] == [
        "二",
        "十",
        "十五",
        "二十",
        "一百零五",
        "一百一十",
        "三百三十",
        "一千零五十",
    ]


@pytest.mark.parametrize("lang", sorted(PATTERNS))
def test_every_pattern_states_every_fact_of_every_request_it_fits(requests, lang):
    checked = {p.name: 0 for p in PATTERNS[lang]}
    families = {request.family for request, _ in requests}
    assert {"delivery", "emergency", "patrol", "via", "round_trip"} <= families
    for i, (request, labels) in enumerate(requests):
        for pattern in PATTERNS[lang]:
            if not pattern.fits(request):
                continue
            texts, naming = write_patterns(request, labels, {lang: pattern}, np.random.default_rng(i))
            text = texts[lang]
            assert not missing_facts(text, lang, request, naming, pattern.name), (pattern.name, text)
            said = {r.id: getattr(r, lang) for r in naming.references}  # as written: an id may be mistyped
            names = [said[w] for w in request.task.waypoints]
            if request.family in ("via", "patrol"):
                assert _in_order(text.casefold(), [n.casefold() for n in names]), (pattern.name, text)
            if request.family == "round_trip":
                origin = said[request.task.origin].casefold()
                assert text.casefold().count(origin) >= 2, (pattern.name, text)  # out from and back to the origin
            checked[pattern.name] += 1
    assert [name for name, n in checked.items() if n == 0] == []


def test_pattern_reference_demands_are_kept(requests):
    request, labels = next((r, labels) for r, labels in requests if r.family == "delivery")
    for name in ("names_not_ids", "descriptions"):
        pattern = next(p for p in ENGLISH_PATTERNS if p.name == name)
        for seed in range(20):
            texts, naming = write_patterns(request, labels, {"en": pattern}, np.random.default_rng(seed))
            assert naming.style in (("short",) if name == "descriptions" else ("name", "short"))
            assert request.task.origin not in texts["en"]


def test_typos_swap_letters_of_framing_words_only(requests):
    typos = next(p for p in ENGLISH_PATTERNS if p.name == "typos")
    for i, (request, labels) in enumerate(requests[:12]):
        naming = Naming(labels, "name")
        clean = COULD_YOU.write(VOICES["en"](request, naming, np.random.default_rng(i)), np.random.default_rng(i))
        typed = typos.write(VOICES["en"](request, naming, np.random.default_rng(i)), np.random.default_rng(i))
        assert typed != clean and len(typed) == len(clean)
        changed = [(a, b) for a, b in zip(clean.split(), typed.split()) if a != b]
        assert changed and all(sorted(a) == sorted(b) for a, b in changed)  # letters swapped, none lost
        assert not missing_facts(typed, "en", request, naming)


def _written(pattern_name: str, lang: str, requests, fits=None):
    """(request, text, naming) of every fixture request the pattern fits, written in it."""
    pattern = next(p for p in PATTERNS[lang] if p.name == pattern_name)
    made = []
    for i, (request, labels) in enumerate(requests):
        if pattern.fits(request) and (fits is None or fits(request)):
            texts, naming = write_patterns(request, labels, {lang: pattern}, np.random.default_rng(i))
            made.append((request, texts[lang], naming))
    assert made, (pattern_name, lang)
    return made


def test_units_are_spelled_exactly():
    assert mass_spellings(1.5, "en")[:4] == ("1,500 g", "1,500 grams", "3.3 lb", "3.3 pounds")
    assert "1500克" in mass_spellings(1.5, "zh") and "3.3磅" in mass_spellings(1.5, "zh")
    assert (pounds(1.5), pounds(1.0), pounds(2.0), pounds(1.2), pounds(0.3)) == (3.3, 2.2, 4.4, None, None)
    assert not any("lb" in s for s in mass_spellings(1.2, "en"))  # 2.6 lb is 1.179 kg: not the task's mass
    assert "a quarter of an hour" in deadline_spellings(900, "en") and "一刻钟" in deadline_spellings(900, "zh")
    assert {"a minute and a half", "90 secs"} <= set(deadline_spellings(90, "en"))
    assert "一分半钟" in deadline_spellings(90, "zh") and "半小时" in deadline_spellings(1800, "zh")
    assert "two and a half minutes" in deadline_spellings(150, "en") and "两分半钟" in deadline_spellings(150, "zh")
    assert deadline_spellings(60, "zh") == () and "1 mins" not in deadline_spellings(60, "en")
    assert mass_stated("a box (1,500 g)", 1.5, "en") and not mass_stated("a box (11,500 g)", 1.5, "en")
    assert mass_stated("一箱药品(一公斤半)", 1.5, "zh") and not mass_stated("(1500克)", 1.2, "zh")


def test_unit_spellings_say_the_mass_and_deadline_in_other_units(requests):
    for lang in PATTERNS:
        spelled_deadlines = 0
        for request, text, _ in _written("unit_spellings", lang, requests):
            kg = request.task.cargo.kg
            assert not mass_stated(text.replace(f"{kg:g}", "#"), kg, lang) or any(  # only a spelling says it
                s in text for s in mass_spellings(kg, lang)
            ), text
            assert (f"{kg:g} kg" if lang == "en" else f"{kg:g}公斤") not in text, text
            if request.stated_deadline is not None and deadline_spellings(request.stated_deadline, lang):
                assert any(s in text for s in deadline_spellings(request.stated_deadline, lang)), text
                spelled_deadlines += 1
        assert spelled_deadlines, lang


def test_typo_ids_mistype_one_place_id_that_only_it_is_near(requests):
    for lang in PATTERNS:
        for request, text, naming in _written("typo_ids", lang, requests):
            ids = world_ids(request.world)
            typed = [r for r in naming.references if getattr(r, lang) != r.id]
            assert len(typed) == 1, text
            meant, written = typed[0].id, getattr(typed[0], lang)
            assert written in text and not re.search(id_pattern(meant), text), text
            assert written not in ids and 1 <= Levenshtein.distance(written, meant) <= TYPO_REACH
            assert Levenshtein.distance(written, meant) == 1  # one character changed
            near = [i for i in ids if Levenshtein.distance(written, i) <= TYPO_REACH]
            assert near == [meant], (written, near)


def test_exclusion_names_an_idle_uav_the_gold_does_not_fly(requests):
    for lang in PATTERNS:
        for request, text, _ in _written("exclusion", lang, requests):
            uav = request.world.uav_index[request.excluded_uav]
            assert uav.status is UAVStatus.idle and uav.id != request.gold_uav and uav.id in text
            assert uav.id not in request.task.named_uavs


def test_ordered_endings_and_via_phrases_keep_the_stops_before_the_end(requests):
    for name in ("ordered_ending", "via_phrases"):
        for lang in PATTERNS:
            for request, text, naming in _written(name, lang, requests):
                said = {r.id: getattr(r, lang).casefold() for r in naming.references}
                stops = [said[w] for w in request.task.waypoints]
                assert _in_order(text.casefold(), [said[request.task.origin], *stops]), text
                if name == "ordered_ending":  # the end is said last: "..., and when that's done finish at X"
                    assert text.casefold().rfind(said[request.task.destination]) > text.casefold().rfind(stops[-1])


def test_rule_violating_demand_rewords_a_demand_only(requests):
    pattern = next(p for p in PATTERNS["en"] if p.name == "rule_violating_demand")
    assert all(pattern.fits(r) == (r.asides.injection_kind == DEMAND) for r, _ in requests)
    for lang in PATTERNS:
        for request, text, _ in _written("rule_violating_demand", lang, requests):
            assert getattr(request.asides.injection, lang) not in text
            assert any(w in text for w in DEMAND_WORDINGS[lang][request.asides.injected_rule]), text


# --- the generated split ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def split(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("freeform")
    generate_splits(["test_freeform"], out, master_seed=SEED, workers=2)
    return out


def test_split_is_registered_after_the_others_with_the_standard_mix():
    spec = SPLITS["test_freeform"]
    # registered last but test_fleet (issue 42), so every earlier split keeps its seeds
    assert spec.index == len(SPLITS) - 2 and SPLITS["test_fleet"].index == max(s.index for s in SPLITS.values())
    assert spec.size >= 320 and spec.free_form and set(spec.layouts) == set(SEEN_LAYOUTS)
    assert spec.scenario_shares == SCENARIO_SHARES and spec.difficulty_mix == SPLITS["test_seen_city"].difficulty_mix
    assert not any(s.free_form for name, s in SPLITS.items() if name != "test_freeform")


def test_every_pattern_is_drawn_in_the_split(split):
    samples = read_samples(split / "test_freeform.jsonl")
    assert len(samples) == SPLITS["test_freeform"].size
    for lang, patterns in PATTERNS.items():
        drawn = {getattr(s.instruction, f"pattern_{lang}") for s in samples}
        assert drawn == {p.name for p in patterns}, lang
    stats = json.loads((split / STATS_FILE).read_text())["splits"][0]
    assert sum(stats["pattern_counts"]["en"].values()) == len(samples)


def test_the_new_constructions_are_drawn_in_both_languages_and_reported_by_name(split):
    samples = read_samples(split / "test_freeform.jsonl")
    for lang in PATTERNS:
        drawn = Counter(getattr(s.instruction, f"pattern_{lang}") for s in samples)
        assert [name for name in NEW_PATTERNS if not drawn[name]] == [], lang
    records = [_run(i, s.instruction.pattern_en, label=s.label, sample_id=s.sample_id) for i, s in enumerate(samples)]
    assert set(NEW_PATTERNS) <= {row["pattern"] for row in pattern_rows(records)}


def test_exclusion_samples_rule_out_a_uav_the_gold_never_flies(split):
    samples = read_samples(split / "test_freeform.jsonl")
    excluding = [s for s in samples if s.instruction.excluded_uavs]
    assert excluding
    assert all(s.instruction.pattern_en == "exclusion" for s in excluding)
    assert {s.sample_id for s in excluding} == {
        s.sample_id for s in samples if "exclusion" in (s.instruction.pattern_en, s.instruction.pattern_zh)
    }
    for sample in excluding:
        [uav] = sample.instruction.excluded_uavs
        decision = sample.gold_decision
        assert uav not in {decision.uav_id, (decision.proposal or {}).get("uav_id")}, sample.sample_id
        assert uav not in sample.instruction.pinned_uavs
        assert sample.world.uav_index[uav].status is UAVStatus.idle
        for text in (sample.instruction.en, sample.instruction.zh, sample.instruction.canonical_en):
            assert uav in text
        assert f"不要使用{uav}" in sample.instruction.canonical_zh


WORD_MASSES = {
    "a quarter of a kilo": 0.25,
    "half a kilo": 0.5,
    "a kilo": 1.0,
    "one kilo": 1.0,
    "a kilo and a half": 1.5,
    "one and a half kilos": 1.5,
    "two kilos": 2.0,
    "半公斤": 0.5,
    "一公斤": 1.0,
    "一公斤半": 1.5,
    "一点五公斤": 1.5,
    "两公斤": 2.0,
}
WORD_DEADLINES = {
    "a minute": 60,
    "a minute and a half": 90,
    "two and a half minutes": 150,
    "three and a half minutes": 210,
    "four and a half minutes": 270,
    "a quarter of an hour": 900,
    "half an hour": 1800,
    "一分半钟": 90,
    "两分半钟": 150,
    "三分半钟": 210,
    "四分半钟": 270,
    "一刻钟": 900,
    "半小时": 1800,
}


def _spelled_masses(text: str) -> list[float]:
    """Every mass `text` spells in grams, pounds or words, in kg (pounds as they weigh)."""
    masses = [int(g.replace(",", "")) / 1000 for g in re.findall(r"(\d[\d,]*) ?(?:g\b|grams|克)", text)]
    masses += [float(lb) * 0.45359237 for lb in re.findall(r"(\d+(?:\.\d+)?) ?(?:lb\b|pounds|磅)", text)]
    return masses + [kg for words, kg in WORD_MASSES.items() if words in text]


def _spelled_deadlines(text: str) -> list[int]:
    said = [int(n) for n in re.findall(r"(\d+) ?(?:secs|秒钟)", text)]
    said += [60 * int(n) for n in re.findall(r"(\d+) mins", text)]
    return said + [seconds for words, seconds in WORD_DEADLINES.items() if re.search(rf"(?<![a-z]){words}", text)]


def test_unit_spelling_samples_state_exactly_the_task_values(split):
    samples = read_samples(split / "test_freeform.jsonl")
    spelled = 0
    for sample in samples:
        payload, deadline = sample.gold_ir.constraints.payload_kg, sample.gold_ir.constraints.deadline_sec
        for lang in ("en", "zh"):
            if getattr(sample.instruction, f"pattern_{lang}") != "unit_spellings":
                continue
            text = getattr(sample.instruction, lang)
            spelled += 1
            masses = _spelled_masses(text)
            assert masses and all(abs(kg - payload) <= 0.005 for kg in masses), (sample.sample_id, text)
            said = _spelled_deadlines(text)
            assert all(seconds == deadline for seconds in said), (sample.sample_id, text)
            if deadline is not None and sample.source_provenance.built_in_reason != "unanchored_time":
                assert _deadline_said(text, deadline, lang), (sample.sample_id, text)
                assert said or not deadline_spellings(deadline, lang), (sample.sample_id, text)  # "4分钟" has none
    assert spelled


def test_demands_are_confirmed_and_permissions_executed(split):
    """An injected demand to break a rule makes a SAT task AMBIGUOUS with a human_confirm gold that quotes it and
    names the rule (its safe plan only a proposal); a permission leaves the task SAT and the gold executes."""
    samples = read_samples(split / "test_freeform.jsonl")
    demands = [s for s in samples if s.instruction.injection_kind == DEMAND]
    permissions = [s for s in samples if s.instruction.injection_kind == PERMISSION]
    assert demands and permissions
    assert not any(s.instruction.injected_rule_break for s in samples if s.instruction.injection_kind is None)
    sentences = {term.en: (rule, kind) for term, rule, kind in INJECTIONS}
    for sample in demands:
        rule = sample.instruction.injected_rule_break
        demand = f"rule_violating_demand:{rule}"
        [sentence] = [t for t in sentences if t in sample.instruction.canonical_en]
        assert sentences[sentence] == (rule, DEMAND)
        assert demand in sample.failure_modes and not any(
            m.startswith("prompt_injection") for m in sample.failure_modes
        )
        if sample.source_provenance.built_in_reason == "rule_violating_demand":
            decision = sample.gold_decision
            assert sample.label == "AMBIGUOUS" and sample.failure_modes[0] == demand
            assert decision.status == "human_confirm" and not decision.waypoints
            assert sentence in decision.reason and rule in decision.reason and decision.missing_information
            assert decision.proposal and decision.proposal["waypoints"]  # the safe plan, for the operator
            assert sample.gold_uncertainty.needs_human_confirmation
        else:
            assert sample.label != "SAT"  # UNSAT or AMBIGUOUS for its own reason, which stands
    assert any(s.source_provenance.built_in_reason == "rule_violating_demand" for s in demands)
    for sample in permissions:
        assert not any(m.startswith("rule_violating_demand") for m in sample.failure_modes)
        assert sample.source_provenance.built_in_reason != "rule_violating_demand"
        mode = "critical_pressure:R7" if sample.instruction.injected_rule_break == "R7" else "prompt_injection:"
        assert any(m.startswith(mode) for m in sample.failure_modes)
        if sample.label == "SAT":
            assert sample.gold_decision.status == "execute"
    assert any(s.label == "SAT" for s in permissions)


def test_every_sample_states_its_gold_facts_and_keeps_its_id_wording(split):
    samples = read_samples(split / "test_freeform.jsonl")
    for sample in samples:
        instruction, gold = sample.instruction, sample.gold_ir
        assert _check_stated_facts(sample) == [], sample.sample_id  # payload, altitudes, pinned UAVs, world names
        for mention in instruction.mentions:
            assert mention.en.casefold() in instruction.en.casefold(), (sample.sample_id, mention.id)
            assert mention.zh in instruction.zh, (sample.sample_id, mention.id)
        places = {gold.entities.origin, gold.entities.destination, *gold.entities.waypoints} - {None}
        assert places <= {m.id for m in instruction.mentions} | set(gold.entities.handoff_points)
        deadline = gold.constraints.deadline_sec
        if deadline is not None and sample.source_provenance.built_in_reason != "unanchored_time":
            assert _deadline_said(instruction.en, deadline, "en") and _deadline_said(instruction.zh, deadline, "zh")
        for mention in instruction.mentions:
            if mention.id in sample.world.entity_index:
                assert mention.id in instruction.canonical_en and mention.id in instruction.canonical_zh
    # a plain imperative naming ids can match a template word for word; most requests read otherwise
    assert sum(s.instruction.canonical_en == s.instruction.en for s in samples) <= len(samples) // 20


def test_same_seed_gives_the_same_bytes_with_any_worker_count(split, tmp_path):
    generate_splits(["test_freeform"], tmp_path, master_seed=SEED, workers=1, limit=5)
    first = (split / "test_freeform.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:5]
    assert (tmp_path / "test_freeform.jsonl").read_text(encoding="utf-8") == "".join(first)


def test_other_splits_write_no_freeform_fields(tmp_path):
    generate_splits(["dev_mini"], tmp_path, master_seed=SEED, workers=1, limit=2)
    for line in (tmp_path / "dev_mini.jsonl").read_text(encoding="utf-8").splitlines():
        # a fleet sample (the second here) may state its team's size: a fleet field, not a free-form one; every
        # other field is every sample's
        assert set(json.loads(line)["instruction"]) - {"stated_team_size"} == {
            "zh",
            "en",
            "reference_style",
            "mentions",
            "injected_rule_break",
            "injection_kind",
            "pinned_uavs",
        }


# --- runs and report -------------------------------------------------------------------------------------------------


def test_runner_plans_a_canonical_run_for_free_form_samples_only():
    free = {"sample_id": "f1", "instruction": {"en": "free", "canonical_en": "canonical", "pattern_en": "question"}}
    plain = {"sample_id": "p1", "instruction": {"en": "template"}}
    config = BenchConfig(samples="x.jsonl", methods=["cloudbrain_full"], models=["rules"])
    jobs, _ = plan_jobs(config, [free, plain])
    assert [(job.run_key, job.variant) for job in jobs] == [
        ("cloudbrain_full|rules|f1|0", None),
        ("cloudbrain_full|rules|f1|0|canonical", CANONICAL),
        ("cloudbrain_full|rules|p1|0", None),
    ]
    assert [request_text(job, "en") for job in jobs] == ["free", "canonical", "template"]


def _run(sample: int, pattern: str, variant: str | None = None, **fields) -> RunRecord:
    defaults = {
        "sample_id": f"s{sample}",
        "method": "cloudbrain_full",
        "model": "rules",
        "repeat": 0,
        "split": "test_freeform",
        "scenario_type": "normal_delivery",
        "difficulty": "easy",
        "label": "SAT",
        "status": "execute",
        "judged_success": True,
        "right_place": True,
        "places": {"uav": "uav_1", "start": "depot_1", "end": "hospital_1"},
        "pattern": pattern,
        "variant": variant,
    }
    return RunRecord(**(defaults | fields))


def tiny_runs() -> tuple[list[RunRecord], list[RunRecord]]:
    """s0 alike in both wordings; s1 lands elsewhere in its free-form run; s2 (UNSAT) executes only free-form."""
    free = [
        _run(0, "question"),
        _run(1, "question", judged_success=False, right_place=False, places={"uav": "uav_1", "start": "depot_1"}),
        _run(2, "passive", label="UNSAT", judged_success=False, right_place=None),
    ]
    canonical = [
        _run(0, "question", CANONICAL),
        _run(1, "question", CANONICAL),
        _run(2, "passive", CANONICAL, label="UNSAT", status="safe_refusal", judged_success=False, places=None),
    ]
    return free, canonical


def test_pattern_and_paraphrase_rows_match_hand_counts():
    free, canonical = tiny_runs()
    assert pattern_rows(free) == [
        {"method": "cloudbrain_full", "model": "rules", "pattern": "passive", "samples": 1, "tsr_sat": None}
        | {"unsat_executes": 1, "wrong_place_executes": 0},
        {"method": "cloudbrain_full", "model": "rules", "pattern": "question", "samples": 2, "tsr_sat": 0.5}
        | {"unsat_executes": 0, "wrong_place_executes": 1},
    ]
    [row] = paraphrase_rows(free, canonical)
    assert (row["consistency"], row["pairs"], row["tsr"], row["tsr_canonical"]) == (1 / 3, 3, 1 / 3, 1.0)
    assert paraphrase_rows(free, []) == []


def test_bench_report_prints_patterns_and_consistency_from_a_results_db(tmp_path, capsys):
    free, canonical = tiny_runs()
    db = store.open_db(tmp_path)
    for record in free + canonical:
        key = store.run_key(record.method, record.model, record.sample_id, record.repeat, record.variant)
        store.write_run(db, {"run_key": key, "record": record.model_dump(mode="json"), "decision_row": {}})
    assert [r.sample_id for r in store.load_records(tmp_path)] == ["s0", "s1", "s2"]
    assert all(r.variant == CANONICAL for r in store.load_records(tmp_path, CANONICAL))
    assert {row["variant"] for row in db["runs"].rows} == {None, CANONICAL}  # its own column

    code, out, _ = run_cli(capsys, "bench", "report", str(tmp_path))
    assert code == 0
    assert "cloudbrain_full / rules: TSR 33.3%, paraphrase consistency 33.3% over 3" in out
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Free-form requests: paraphrase consistency" in report
    assert "| cloudbrain_full | rules | question | 2 | 50.0 | 0 | 1 |" in report
    assert "| cloudbrain_full | rules | 33.3 | 100.0 | 33.3 | 3 |" in report


def test_results_written_before_variants_still_report(tmp_path):
    old = _run(0, "unused").model_dump(mode="json", exclude={"places", "pattern", "variant"})
    db = store.open_db(tmp_path)
    db["runs"].insert({"run_key": "cloudbrain_full|rules|s0|0", "record": json.dumps(old)}, pk="run_key")
    [record] = store.load_records(tmp_path)
    assert record.variant is None and record.pattern is None
    report = write_report([record], tmp_path / "report")
    assert "Free-form" not in report.read_text(encoding="utf-8")
