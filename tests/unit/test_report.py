"""evaluation.report: the tables' numbers against counts done by hand on small record sets, the statistics against
cloudbrain_full, and a report.md with all four figures, also for empty and one-sided inputs."""

from __future__ import annotations

import math

import pytest

from benchmark.checks import Check
from evaluation.records import RunRecord, ToolCall
from evaluation.report import (
    ablation_rows,
    autoplan_metric_rows,
    breakdown_rows,
    check_kind_rows,
    check_rows,
    compare_rows,
    correction_rows,
    cost_rows,
    failure_stage_rows,
    latency_rows,
    main_rows,
    overview_rows,
    reliability_rows,
    repair_rows,
    significance_rows,
    stage_rows,
    unknown_rows,
    violation_rows,
    write_report,
)
from evaluation.statistics import mcnemar_exact, paired_bootstrap_ci
from tests.support.records import judged_run as run

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FIGURES = ("main_results", "repair_by_round", "failure_stage", "latency")


def full_runs() -> list[RunRecord]:
    """cloudbrain_full: s0 and s1 succeed (s1 after one repair round), s2 executes with an R1 violation and fails
    after two repair rounds, s3 is UNSAT and safely refused. No tool calls."""
    return [
        run("cloudbrain_full", 0, right_place=True, llm_latency_sec=1.0, tool_latency_sec=0.1, prompt_tokens=100),
        run(
            "cloudbrain_full",
            1,
            right_place=True,
            repair_rounds=1,
            success_round=1,
            llm_latency_sec=2.0,
            tool_latency_sec=0.2,
            prompt_tokens=100,
        ),
        run(
            "cloudbrain_full",
            2,
            ok=False,
            judged_violations=["R1"],
            right_place=False,
            repair_rounds=2,
            first_failing_stage="verification",
            llm_latency_sec=3.0,
            tool_latency_sec=0.3,
            prompt_tokens=100,
        ),
        run(
            "cloudbrain_full",
            3,
            label="UNSAT",
            status="safe_refusal",
            difficulty="unsat",
            llm_latency_sec=4.0,
            tool_latency_sec=0.4,
            prompt_tokens=100,
        ),
    ]


def react_runs() -> list[RunRecord]:
    """react: s0 succeeds; s1 asks a human on a SAT task; s2 executes with an R2 violation; s3 executes an UNSAT
    task (an R8 violation). One run hallucinates; three tool calls, two of them right."""
    expected = ["city_state", "plan_route"]
    calls = [
        ToolCall(tool="city_state", ok=True, dependency_ok=True),
        ToolCall(tool="plan_route", ok=True, dependency_ok=True),
        ToolCall(tool="weather", ok=True, dependency_ok=False),  # not in the gold trace
    ]
    return [
        run("react", 0, right_place=True, tool_calls=calls, expected_tools=expected),
        run("react", 1, ok=False, status="human_confirm", first_failing_stage="planning", hallucinations=1),
        run("react", 2, ok=False, judged_violations=["R2"], right_place=True, first_failing_stage="policy"),
        run("react", 3, ok=False, label="UNSAT", difficulty="unsat", right_place=True),
    ]


def by_method(rows: list[dict]) -> dict[str, dict]:
    return {row["method"]: row for row in rows}


def markdown_row(report: str, section: str, method: str) -> dict[str, str]:
    """The cells (by column header) of `method`'s first row in the table under the `## section` heading."""
    lines = report.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0].splitlines()
    table = [line for line in lines if line.startswith("|")]
    headers = [cell.strip() for cell in table[0].strip("|").split("|")]
    for line in table[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0] == method:
            return dict(zip(headers, cells))
    raise AssertionError(f"no {method} row under {section}")


def earlier_runs() -> list[RunRecord]:
    """A compared run: cloudbrain_full succeeding on s0 only (TSR 1/4, no violation) and a direct_llm run."""
    return [run("cloudbrain_full", s, ok=s == 0) for s in range(4)] + [run("direct_llm", 0)]


META = {"split": "dev_mini", "stress_seeds": [1, 2], "budget": {"max_llm_calls": 8}}


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    """One report on cloudbrain_full and react, compared with `earlier_runs` (figures take ~1 s per report)."""
    out = tmp_path_factory.mktemp("report")
    assert write_report(full_runs() + react_runs(), out, compare=earlier_runs(), meta=META) == out / "report.md"
    return out


def test_main_table_matches_hand_counts():
    rows = by_method(main_rows(full_runs() + react_runs()))
    full, react = rows["cloudbrain_full"], rows["react"]
    # TSR: full s0, s1 and the refused UNSAT s3; react only s0.
    assert (full["tsr"], react["tsr"]) == (3 / 4, 1 / 4)
    # EDR over the 3 SAT runs: full executes all three, react two (s1 asked a human).
    assert (full["edr"], react["edr"]) == (3 / 3, 2 / 3)
    # SVR over all runs: full s2 (R1); react s2 (R2) and s3 (R8, an executed UNSAT task).
    assert (full["svr"], react["svr"]) == (1 / 4, 2 / 4)
    assert (full["hr"], react["hr"]) == (0.0, 1 / 4)
    assert react["tca"] == 2 / 3 and full["tca"] is None  # no call at all: undefined, not 0
    assert full["rsr"] == 1 / 2 and react["rsr"] is None  # s1 repaired in round 1, s2 never; react never repairs
    assert full["right_place"] == 2 / 3 and react["right_place"] == 3 / 3  # over executes only
    assert full["pass_hat_3"] is None and full["tsr_se"] is None  # a single repeat
    assert [row["method"] for row in main_rows(react_runs() + full_runs())] == ["react", "cloudbrain_full"]


def test_main_table_orders_known_methods_first_and_groups_by_model():
    records = [
        run(method, 0, model=model)
        for model in ("b", "a")
        for method in ("zeta_planner", "cloudbrain_no_rag", "cloudbrain_full", "direct_llm")
    ]
    order = [(row["model"], row["method"]) for row in main_rows(records)]
    methods = ["direct_llm", "cloudbrain_full", "cloudbrain_no_rag", "zeta_planner"]
    assert order == [("a", m) for m in methods] + [("b", m) for m in methods]


def test_tsr_standard_error_and_pass_hat_3_over_repeats(tmp_path):
    # Repeat r succeeds on samples s0..s(r): per-repeat TSR 1/4, 2/4, 3/4.
    records = [run("cloudbrain_full", s, repeat=r, ok=s <= r) for r in range(3) for s in range(4)]
    row = main_rows(records)[0]
    assert row["tsr"] == 6 / 12
    assert row["tsr_se"] == pytest.approx(0.25 / math.sqrt(3))  # sample std of (.25, .5, .75) is .25
    # Successes per task over the 3 repeats: s0 3, s1 2, s2 1, s3 0; only s0 passes all three.
    assert row["pass_hat_3"] == 1 / 4
    text = write_report(records, tmp_path).read_text()
    assert markdown_row(text, "Main results (Table 3)", "cloudbrain_full")["TSR ↑"] == "50.0 ± 14.4"


def test_undefined_metrics_render_as_na(report_dir):
    text = (report_dir / "report.md").read_text(encoding="utf-8")
    react = markdown_row(text, "Main results (Table 3)", "react")
    full = markdown_row(text, "Main results (Table 3)", "cloudbrain_full")
    assert (react["RSR ↑"], react["pass^3 ↑"], react["TCA ↑"]) == ("N/A", "N/A", "66.7")
    assert (full["TCA ↑"], full["RSR ↑"], full["SVR ↓"], full["Right place ↑"]) == ("N/A", "50.0", "25.0", "66.7")


def test_ablation_rows_delta_against_full_per_model():
    ablation = [run("cloudbrain_no_verifier", s, ok=s == 0) for s in range(4)]  # TSR 1/4
    extra = [run("cloudbrain_no_foo", s) for s in range(2)]  # TSR 1, an ablation the report does not know
    orphan = [run("cloudbrain_no_rag", 0, model="other")]  # no cloudbrain_full on model "other"
    rows = ablation_rows(full_runs() + react_runs() + ablation + extra + orphan)
    assert [(r["variant"], r["model"]) for r in rows] == [
        ("cloudbrain_full", "m"),
        ("cloudbrain_no_verifier", "m"),
        ("cloudbrain_no_foo", "m"),
        ("cloudbrain_no_rag", "other"),
    ]
    variants = {(r["variant"], r["model"]): r for r in rows}
    assert variants["cloudbrain_no_verifier", "m"]["delta_tsr"] == 1 / 4 - 3 / 4 < 0
    assert variants["cloudbrain_no_foo", "m"]["delta_tsr"] == 1 - 3 / 4 > 0
    assert variants["cloudbrain_full", "m"]["delta_tsr"] == 0
    assert variants["cloudbrain_no_rag", "other"]["delta_tsr"] is None
    assert variants["cloudbrain_no_verifier", "m"]["tests"] == "formal verification"
    assert "foo" in variants["cloudbrain_no_foo", "m"]["tests"]


def test_significance_against_full_uses_the_same_pairs():
    full, react = full_runs(), react_runs()
    rows = by_method(significance_rows(full + react, n_resamples=2_000, seed=3))
    assert "cloudbrain_full" not in rows
    row = rows["react"]
    # Successes on s0..s3: react 1 0 0 0, full 1 1 0 1 -> full alone succeeds on s1 and s3.
    assert (row["pairs"], row["method_only"], row["full_only"]) == (4, 0, 2)
    assert row["mcnemar_p"] == mcnemar_exact(react, full).p_value == 0.5  # 2 * P(Bin(2, 1/2) <= 0)
    ci = paired_bootstrap_ci(react, full, n_resamples=2_000, seed=3, cluster_by_task=True)
    assert (row["delta_tsr"], row["ci_low"], row["ci_high"]) == (-1 / 2, ci.low, ci.high)
    assert row["ci_low"] <= -1 / 2 <= row["ci_high"]


def test_significance_says_why_a_method_cannot_be_compared():
    no_full_model = [run("react", 0, model="other")]
    no_shared_run = [run("json_only", 9)]  # cloudbrain_full never ran s9
    rows = by_method(significance_rows(full_runs() + no_full_model + no_shared_run, n_resamples=100))
    assert rows["react"]["note"] == "no cloudbrain_full run on other" and "mcnemar_p" not in rows["react"]
    assert "no (sample, repeat) shared" in rows["json_only"]["note"]


def test_breakdowns_have_the_groups_of_the_runs():
    records = [
        run("react", 0, difficulty="medium", split="test", scenario_type="nfz"),
        run("react", 1, ok=False, difficulty="extreme", split="dev"),
        run("react", 2, difficulty="easy", split="dev"),
        run("react", 3, label="UNSAT", status="safe_refusal", difficulty="unsat", split="dev"),
        run("llm_p", 0, ok=False, difficulty="medium", split="test", scenario_type="nfz"),
    ]
    difficulties, rows = breakdown_rows(records, "difficulty")
    assert difficulties == ["easy", "medium", "extreme", "unsat"]  # difficulty order, not alphabetical
    react, llm_p = by_method(rows)["react"], by_method(rows)["llm_p"]
    assert (react["extreme"], react["unsat"], llm_p["medium"]) == (0.0, 1.0, 0.0)
    assert llm_p["easy"] is None  # llm_p never ran an easy sample
    splits, rows = breakdown_rows(records, "split")
    assert splits == ["dev", "test"] and by_method(rows)["react"]["dev"] == 2 / 3
    scenarios, _ = breakdown_rows(records, "scenario_type")
    assert scenarios == ["delivery", "nfz"]


def test_detail_tables_match_hand_counts():
    records = full_runs() + react_runs()
    reliability = by_method(reliability_rows(records))
    # Positives: the UNSAT s3. full refuses only s3; react "refuses" only s1 (SAT) by asking a human.
    assert (reliability["cloudbrain_full"]["refusal_precision"], reliability["cloudbrain_full"]["refusal_recall"]) == (
        1.0,
        1.0,
    )
    assert (reliability["react"]["refusal_precision"], reliability["react"]["refusal_recall"]) == (0.0, 0.0)
    assert reliability["react"]["pass_hat_1"] == 1 / 4 and reliability["react"]["pass_hat_3"] is None
    latency = by_method(latency_rows(records))["cloudbrain_full"]
    assert latency["llm_p50"] == 2.5 and latency["non_llm_p50"] == pytest.approx(0.25)  # medians of 1..4, .1...4
    assert latency["llm_sec"] == [1.0, 2.0, 3.0, 4.0]
    assert by_method(cost_rows(records))["cloudbrain_full"]["tokens_per_success"] == 400 / 3
    assert by_method(cost_rows(records))["react"]["tokens_per_success"] == 0.0


def test_violations_and_first_failing_stage():
    records = full_runs() + react_runs() + [run("llm_p", 0, ok=False, judged_violations=["W1"])]
    rules, rows = violation_rows(records)
    assert rules == ["R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "W1"]
    react = by_method(rows)["react"]
    assert (react["R2"], react["R8"], react["R1"], react["W1"]) == (1 / 4, 1 / 4, 0.0, 0.0)
    stages = by_method(failure_stage_rows(records))
    assert stages["react"]["failed"] == 3
    assert (stages["react"]["planning"], stages["react"]["policy"], stages["react"]["unattributed"]) == (1, 1, 1)
    assert stages["cloudbrain_full"]["verification"] == 1 and stages["cloudbrain_full"]["shares"]["verification"] == 1
    rounds, repairs = repair_rows(records)
    assert rounds == [1, 2] and [row["method"] for row in repairs] == ["cloudbrain_full"]
    assert repairs[0]["by_round"] == {1: 1 / 2, 2: 1 / 2} and repairs[0]["repairing_runs"] == 2


def test_compare_rows_and_missing_sides(report_dir):
    rows = by_method(compare_rows(full_runs() + react_runs(), earlier_runs()))
    full = rows["cloudbrain_full"]
    assert (full["tsr"], full["tsr_other"], full["tsr_delta"]) == (3 / 4, 1 / 4, 1 / 2)
    assert (full["svr_delta"], full["edr_delta"]) == (1 / 4, 0.0)
    assert rows["react"]["in_other"] is False and rows["react"]["tsr_delta"] is None
    assert rows["direct_llm"]["in_runs"] is False and rows["direct_llm"]["tsr_other"] == 1.0
    text = (report_dir / "report.md").read_text(encoding="utf-8")
    section = "Compared with the other run"
    assert markdown_row(text, section, "cloudbrain_full")["ΔTSR (pp)"] == "+50.0"
    assert markdown_row(text, section, "react")["TSR other"] == "—"
    assert markdown_row(text, section, "direct_llm")["TSR"] == "—"


def test_report_writes_markdown_and_all_figures(report_dir):
    text = (report_dir / "report.md").read_text(encoding="utf-8")
    for figure in FIGURES:
        assert (report_dir / "figures" / f"{figure}.png").read_bytes().startswith(PNG_SIGNATURE)
        assert f"(figures/{figure}.png)" in text
    assert "| stress_seeds | 1, 2 |" in text and "| budget | max_llm_calls=8 |" in text
    assert "8 judged run(s)" in text and "| compared runs | 5 |" in text
    sections = ("Ablations (Table 4)", "Against cloudbrain_full", "TSR by difficulty", "First failing stage")
    for section in (*sections, "Tokens and corrections", "AutoPlan's metrics"):
        assert f"## {section}\n" in text


@pytest.mark.parametrize(
    ("records", "compare"),
    [([], []), (react_runs(), None), (react_runs() + [run("direct_llm", 0, model="other")], earlier_runs())],
    ids=["no records", "one method", "no cloudbrain_full"],
)
def test_partial_inputs_still_give_a_report(tmp_path, records, compare):
    text = write_report(records, tmp_path, compare=compare).read_text(encoding="utf-8")
    for figure in FIGURES:
        assert (tmp_path / "figures" / f"{figure}.png").read_bytes().startswith(PNG_SIGNATURE)
        assert f"(figures/{figure}.png)" in text
    assert f"{len(records)} judged run(s)" in text
    assert ("## Compared with the other run" in text) == (compare is not None)


def test_overview_lists_meta_then_what_the_runs_hold():
    rows = overview_rows(full_runs() + react_runs(), {"repeats": 1})
    values = {row["setting"]: row["value"] for row in rows}
    assert rows[0] == {"setting": "repeats", "value": 1}
    assert values["methods in runs"] == ["react", "cloudbrain_full"] and values["samples in runs"] == 4


def test_tokens_and_corrections_table_has_the_peers_react_and_full_only():
    records = [
        *full_runs(),
        run("tree_planner", 0, prompt_tokens=300, completion_tokens=100, corrections=2),
        run("tree_planner", 1, ok=False, prompt_tokens=100, corrections=0),
        run("llm_p", 0),
    ]
    rows = by_method(correction_rows(records))
    assert set(rows) == {"cloudbrain_full", "tree_planner"}
    tree = rows["tree_planner"]
    assert tree["tokens_per_task"] == 250 and tree["tokens_per_success"] == 500 and tree["corrections_per_task"] == 1
    assert rows["cloudbrain_full"]["corrections_per_task"] == 0  # full_runs() records no corrections


def test_autoplan_metric_rows_per_method():
    calls = [ToolCall(tool="plan_route", ok=True, dependency_ok=True, args={"start": "a"})]
    records = [
        run("autoplan", 0, answered=False, expected_tools=["plan_route"], expected_tool_args=[{"start": "a"}]),
        run("autoplan", 1, tool_calls=calls, expected_tools=["plan_route"], expected_tool_args=[{"start": "a"}]),
    ]
    row = by_method(autoplan_metric_rows(records))["autoplan"]
    # PT skips the run without calls; ST scores it 0 against its gold calls.
    assert (row["tcr"], row["tsr"], row["pt"], row["st"]) == (0.5, 1.0, 1.0, 0.5)


# --- checks, per-stage scores, UNKNOWN samples -----------------------------------------------------------------------
CHECKS = [
    Check(id="origin", kind="origin", target="hub_1", requirement="starts at hub_1"),
    Check(id="destination", kind="destination", target="clinic_2", requirement="reaches clinic_2"),
    Check(id="deadline", kind="deadline", target=300.0, requirement="within 300 s"),
]
IR = {"entities": {"origin": "hub_1", "destination": "clinic_2"}, "constraints": {"deadline_sec": 300.0}}


def checked_runs() -> list[RunRecord]:
    """cloudbrain_full writes IRs: s0 keeps every check, s1 misses the deadline (its IR drops it); react writes no
    IR, keeps the origin on s0 and executes an UNKNOWN sample s9 safely (not counted anywhere but apart)."""
    kept = {"origin": True, "destination": True, "deadline": True}
    return [
        run("cloudbrain_full", 0, ir=IR, sample_checks=CHECKS, checks=kept),
        run(
            "cloudbrain_full",
            1,
            ok=False,
            ir={"entities": IR["entities"], "constraints": {}},
            sample_checks=CHECKS,
            checks=kept | {"deadline": False},
        ),
        run("react", 0, sample_checks=CHECKS, checks={"origin": True, "destination": None}),
        run("react", 9, label="UNKNOWN", sample_checks=CHECKS, checks={"origin": False}),
    ]


def test_check_tables_per_method_and_per_kind():
    kinds, rows = check_rows(checked_runs())
    assert kinds == ["origin", "destination", "deadline"]
    full, react = by_method(rows)["cloudbrain_full"], by_method(rows)["react"]
    assert (full["scored"], full["all"], full["deadline"], full["origin"]) == (6, 5 / 6, 1 / 2, 1.0)
    # react: the unscored destination and the UNKNOWN sample's origin are not counted
    assert (react["scored"], react["all"], react["origin"], react["deadline"]) == (1, 1.0, 1.0, None)
    columns, by_kind = check_kind_rows(checked_runs())
    assert columns == ["react", "cloudbrain_full"]
    origin, deadline = by_kind[0], by_kind[2]
    assert (origin["kind"], origin["scored"], origin["all"]) == ("origin", 3, 1.0)
    assert (deadline["scored"], deadline["all"], deadline["react"], deadline["cloudbrain_full"]) == (2, 0.5, None, 0.5)
    # per-kind columns name the model too once runs used several
    assert check_kind_rows(checked_runs() + [run("react", 0, model="other")])[0][0] == "react / m"


def test_stage_rows_condition_each_stage_and_give_methods_without_ir_na(tmp_path):
    rows = by_method(stage_rows(checked_runs()))
    full, react = rows["cloudbrain_full"], rows["react"]
    # full: both IRs ground; s1's IR drops the deadline, so only s0 reaches planning, executes and is safe
    assert (full["grounding"], full["grounding_runs"], full["translation"], full["translation_runs"]) == (1, 2, 0.5, 2)
    assert (full["planning"], full["planning_runs"], full["safety"], full["safety_runs"]) == (1, 1, 1, 1)
    assert (react["grounding"], react["grounding_runs"], react["planning_runs"]) == (None, 0, 1)
    text = write_report(checked_runs(), tmp_path).read_text(encoding="utf-8")
    cells = markdown_row(text, "Per-stage scores", "cloudbrain_full")
    assert (cells["Grounding"], cells["Translation given grounding"], cells["Safety given planning"]) == (
        "100.0 (2)",
        "50.0 (2)",
        "100.0 (1)",
    )
    react_cells = markdown_row(text, "Per-stage scores", "react")
    assert (react_cells["Grounding"], react_cells["Translation given grounding"]) == ("N/A", "N/A")
    assert react_cells["Planning given translation"] == "100.0 (1)"
    assert markdown_row(text, "Check pass rates", "cloudbrain_full")["deadline"] == "50.0"
    assert markdown_row(text, "Check pass rates by kind", "deadline")["react"] == "N/A"


def test_unknown_runs_are_reported_apart_and_left_out_of_the_main_table(tmp_path):
    records = [*checked_runs(), run("react", 8, label="UNKNOWN", status="safe_refusal", ok=False)]
    assert unknown_rows(records) == [
        {"method": "react", "model": "m", "runs": 2, "tasks": 2, "executes": 1, "executes_judged_safe": 1}
    ]
    react = by_method(main_rows(records))["react"]
    assert react["tsr"] == 1.0 and react["svr"] == 0.0  # over s0 alone
    text = write_report(records, tmp_path).read_text(encoding="utf-8")
    assert markdown_row(text, "UNKNOWN samples (reported apart)", "react")["Executes judged safe"] == "1"
    assert markdown_row(text, "Main results (Table 3)", "react")["TSR ↑"] == "100.0"


def test_the_main_table_says_which_columns_count_the_runs_on_unknown_samples(tmp_path):
    hallucinated = {"label": "UNKNOWN", "status": "safe_refusal", "ok": False, "hallucinations": 1}
    records = [*checked_runs(), run("react", 8, **hallucinated)]
    react = by_method(main_rows(records))["react"]
    assert react["tsr"] == 1.0 and react["runs"] == 3  # TSR over the decided s0; Runs count s8 and s9 too
    assert react["hr"] == pytest.approx(1 / 3)  # HR is effort: over every run, the UNKNOWN s8 included
    text = write_report(records, tmp_path).read_text(encoding="utf-8")
    assert "Runs, HR, TCA, stated kept and p95 latency count every run, UNKNOWN ones too" in text
    assert "Percentages over the runs on decided samples" not in text


def test_results_from_before_checks_still_report(report_dir):
    """full_runs() and react_runs() carry no checks: the tables say so instead of failing."""
    text = (report_dir / "report.md").read_text(encoding="utf-8")
    assert markdown_row(text, "Check pass rates", "react")["All"] == "N/A"
    assert "no scored check (results from before checks existed)" in text
    assert "no run on an UNKNOWN sample" in text
    # react plans s0 and s2 right (executes of SAT tasks), s1 (asks a human) and s3 (executes UNSAT) wrong;
    # s2 then violates R2
    stages = markdown_row(text, "Per-stage scores", "react")
    assert (stages["Planning given translation"], stages["Safety given planning"]) == ("50.0 (4)", "50.0 (2)")
