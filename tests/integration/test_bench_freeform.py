"""test_freeform: free-form requests that state exactly the facts of their canonical template request, drawn
deterministically, every pattern used; runs on both wordings; the per-pattern table and paraphrase consistency."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from benchmark.check_splits import _check_stated_facts
from benchmark.citygen import generate_city
from benchmark.freeform import PATTERNS, VOICES, write_patterns
from benchmark.freeform.english import COULD_YOU
from benchmark.freeform.english import PATTERNS as ENGLISH_PATTERNS
from benchmark.freeform.request import Naming, Request, chinese_number, english_number, stated_constraints
from benchmark.generator import STATS_FILE, generate_splits
from benchmark.instructions import CRITICAL_PRESSURE, INJECTIONS, SCENARIO_HINTS, Asides, request_family
from benchmark.layouts import LAYOUTS, SEEN_LAYOUTS
from benchmark.sample import read_samples
from benchmark.splits import SPLITS
from benchmark.tasks import SCENARIO_SHARES, ScenarioError, add_stated_demand, build_task
from evaluation import store
from evaluation.records import CANONICAL, RunRecord
from evaluation.report import paraphrase_rows, pattern_rows, write_report
from evaluation.runner import BenchConfig, plan_jobs, request_text
from tests.support.cli import run_cli

SEED = 11
DEADLINES = (150.0, 300.0)  # one said in seconds, one in minutes
PRIORITY_MARKS = {
    "en": {"critical": ("critical",), "high": ("high", "priority"), "low": ("rush", "convenient", "low")},
    "zh": {"critical": ("特急", "最高优先级"), "high": ("优先",), "low": ("不急", "有空", "低")},
}
SENTENCES = (CRITICAL_PRESSURE, *(term for term, _ in INJECTIONS), *SCENARIO_HINTS.values())


def _deadline_said(text: str, seconds: float, lang: str) -> bool:
    minutes = seconds % 60 == 0
    value = int(seconds // 60) if minutes else int(seconds)
    if lang == "zh":
        unit = "分钟" if minutes else "秒"
        return any(f"{number}{unit}" in text for number in (str(value), chinese_number(value)))
    unit = r"(minutes?|min)" if minutes else r"(seconds|s)"
    numbers = "|".join(re.escape(n) for n in (str(value), english_number(value)))
    return re.search(rf"(?<![\w.-])({numbers}) {unit}\b", text) is not None


def missing_facts(text: str, lang: str, request: Request, naming: Naming) -> list[str]:
    """The facts of `request` that `text` does not state (an empty list: all of them, in that language)."""
    task, folded = request.task, text.casefold()  # an English phrase may open a sentence
    missing = [
        f"{r.id} as {getattr(r, lang)!r}" for r in naming.references if getattr(r, lang).casefold() not in folded
    ]
    if task.cargo:
        mass = f"{task.cargo.kg:g} kg" if lang == "en" else f"{task.cargo.kg:g}公斤"
        missing += [f"cargo {p}" for p in (getattr(task.cargo.term, lang), mass) if p.casefold() not in folded]
    if request.stated_deadline is not None and not _deadline_said(text, request.stated_deadline, lang):
        missing.append(f"deadline {request.stated_deadline:g} s")
    unit = " m" if lang == "en" else "米"
    for constraint in stated_constraints(task):
        said = {"floor": f"{constraint.value}{unit}", "ceiling": f"{constraint.value}{unit}"}
        said |= {"reserve": f"{constraint.value}%", "pinned": constraint.value}
        if constraint.kind in said and said[constraint.kind] not in text:
            missing.append(f"{constraint.kind} {said[constraint.kind]}")
    for sentence in SENTENCES:
        stated = sentence in (request.asides.hint, request.asides.injection)
        if (getattr(sentence, lang) in text) != stated:
            missing.append(f"aside {getattr(sentence, lang)!r} {'missing' if stated else 'added'}")
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
        deadline = DEADLINES[i % 2]
        made.append((Request(task, request_family(task), deadline, asides, stated_constraints(task)), draft.labels))
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
            assert not missing_facts(text, lang, request, naming), (pattern.name, text)
            names = [getattr(naming.term(w), lang) for w in request.task.waypoints]
            if request.family in ("via", "patrol"):
                assert _in_order(text.casefold(), [n.casefold() for n in names]), (pattern.name, text)
            if request.family == "round_trip":
                origin = getattr(naming.term(request.task.origin), lang).casefold()
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


# --- the generated split ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def split(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("freeform")
    generate_splits(["test_freeform"], out, master_seed=SEED, workers=2)
    return out


def test_split_is_registered_after_the_others_with_the_standard_mix():
    spec = SPLITS["test_freeform"]
    assert spec.index == max(s.index for s in SPLITS.values()) == len(SPLITS) - 1
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
        assert set(json.loads(line)["instruction"]) == {
            "zh",
            "en",
            "reference_style",
            "mentions",
            "injected_rule_break",
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
