"""evaluation.report: the tables' numbers on hand-counted records, the statistics against cloudbrain_full, and a
report with all four figures even for empty or one-sided inputs."""

from __future__ import annotations

from evaluation.records import RunRecord
from evaluation.report import ablation_rows, compare_rows, main_rows, significance_rows, write_report
from evaluation.statistics import mcnemar_exact

PNG = b"\x89PNG\r\n\x1a\n"


def run(
    method: str,
    sample: int,
    *,
    label: str = "SAT",
    status: str = "execute",
    ok: bool = True,
    repeat: int = 0,
    violations=(),
):
    return RunRecord(
        sample_id=f"s{sample}",
        method=method,
        model="rules",
        repeat=repeat,
        split="dev_mini",
        scenario_type="nfz_avoidance" if sample % 2 else "normal_delivery",
        difficulty="easy",
        label=label,
        status=status,
        judged_success=ok,
        judged_violations=list(violations),
        right_place=True if status == "execute" else None,
        total_latency_sec=0.1 * sample,
        tool_latency_sec=0.1 * sample,
    )


def records():
    # cloudbrain_full: 4 SAT executes, 3 judged successes; 1 UNSAT refused (success).
    full = [run("cloudbrain_full", i, ok=i != 2) for i in range(4)] + [
        run("cloudbrain_full", 4, label="UNSAT", status="safe_refusal", ok=True)
    ]
    # react: 2 of 4 SAT succeed, one violates R1; executes on the UNSAT sample (an R8 violation).
    react = [
        run("react", 0, ok=True),
        run("react", 1, ok=False, violations=["R1"]),
        run("react", 2, ok=True),
        run("react", 3, status="human_confirm", ok=False),
        run("react", 4, label="UNSAT", ok=False, violations=["R8"]),
    ]
    ablation = [run("cloudbrain_no_verifier", i, ok=i < 2) for i in range(4)]
    return full, react, ablation


def test_main_table_counts_by_hand():
    full, react, _ = records()
    rows = {r["method"]: r for r in main_rows(full + react)}
    assert rows["cloudbrain_full"]["tsr"] == 4 / 5  # 3 SAT successes + the refusal
    assert rows["react"]["tsr"] == 2 / 5
    assert rows["react"]["svr"] == 2 / 5  # the R1 run and the execute on UNSAT
    assert rows["react"]["edr"] == 3 / 4  # executes among the 4 SAT runs
    assert rows["react"]["rsr"] is None and rows["react"]["pass_hat_3"] is None  # no repairs, one repeat
    assert [r["method"] for r in main_rows(full + react)] == ["react", "cloudbrain_full"]  # the seed plan's order


def test_ablation_delta_and_statistics_against_full():
    full, react, ablation = records()
    rows = {r["variant"]: r for r in ablation_rows(full + ablation)}
    assert rows["cloudbrain_no_verifier"]["delta_tsr"] == 2 / 4 - 4 / 5
    stats = {r["method"]: r for r in significance_rows(full + react, n_resamples=500)}
    expected = mcnemar_exact(react, full)
    assert stats["react"]["mcnemar_p"] == expected.p_value
    assert (stats["react"]["method_only"], stats["react"]["full_only"]) == (expected.a_only, expected.b_only) == (1, 3)
    assert stats["react"]["ci_low"] <= stats["react"]["delta_tsr"] == -2 / 5 <= stats["react"]["ci_high"]
    assert "no cloudbrain_full" in significance_rows(react)[0]["note"]


def test_compare_with_another_run():
    full, react, _ = records()
    rows = {r["method"]: r for r in compare_rows(full + react, full)}
    assert rows["cloudbrain_full"]["tsr_delta"] == 0
    assert rows["react"]["tsr_other"] is None and rows["react"]["tsr_delta"] is None


def test_report_writes_markdown_and_figures_even_for_empty_runs(tmp_path):
    full, react, ablation = records()
    for name, data, compare in (("all", full + react + ablation, full), ("empty", [], None), ("one", react, None)):
        path = write_report(data, tmp_path / name, compare=compare, meta={"split": "dev_mini"})
        text = path.read_text()
        for figure in ("main_results", "repair_by_round", "failure_stage", "latency"):
            assert (tmp_path / name / "figures" / f"{figure}.png").read_bytes().startswith(PNG)
            assert f"(figures/{figure}.png)" in text
    assert "Compared with the other run" in (tmp_path / "all" / "report.md").read_text()
