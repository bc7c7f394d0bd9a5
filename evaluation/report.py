"""`cloudbrain bench report`: report.md and its figures from judged runs (SPEC section 12, the seed plan's Tables 3
and 4 and figure plan).

Pure on records: the numbers come from evaluation.metrics and evaluation.statistics as rows (lists of dicts, so
tests check numbers, not markdown); `markdown_table` renders them and evaluation/figures.py draws them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluation import figures
from evaluation.metrics import (
    cost_per_task,
    executable_decision_rate,
    failure_attribution,
    hallucination_rate,
    latency_percentiles,
    pass_hat_k_table,
    repair_success_by_round,
    right_place_rate,
    safe_refusal_precision_recall,
    safety_violation_rate,
    task_success_rate,
    tool_call_accuracy,
    violation_rate_by_rule,
)
from evaluation.records import RunRecord
from evaluation.statistics import group_by, mcnemar_exact, mean_se, paired_bootstrap_ci

FULL = "cloudbrain_full"
METHOD_ORDER = ("direct_llm", "json_only", "react", "tool_use_only", "llm_p", "cloudbrain_no_repair", FULL)
ABLATIONS: dict[str, str] = {  # variant -> what removing it tests (the seed plan's Table 4)
    FULL: "the complete method",
    "cloudbrain_no_ir": "the structured interface (typed IR)",
    "cloudbrain_no_verifier": "formal verification (LTL / STL)",
    "cloudbrain_no_simulator": "stress-simulation feedback",
    "cloudbrain_no_repair": "counterexample-guided repair",
    "cloudbrain_no_memory": "retrieval of past repair cases",
    "cloudbrain_no_rag": "rule and map context",
}
NA = "N/A"
Row = dict[str, Any]


def _order(method: str) -> tuple[int, str]:
    known = (*METHOD_ORDER, *ABLATIONS)
    return (known.index(method) if method in known else len(known), method)


def by_method_model(records: Sequence[RunRecord]) -> dict[tuple[str, str], list[RunRecord]]:
    groups = group_by(records, lambda r: (r.method, r.model))
    return {key: groups[key] for key in sorted(groups, key=lambda k: (k[1], *_order(k[0])))}  # type: ignore[index]


def _tsr_mean_se(records: Sequence[RunRecord]) -> tuple[float | None, float | None]:
    """TSR per repeat, then mean and standard error across repeats (SE None with one repeat)."""
    per_repeat = [task_success_rate(group) or 0.0 for group in group_by(records, "repeat").values()]
    return mean_se(per_repeat)


def _rsr(records: Sequence[RunRecord]) -> float | None:
    by_round = repair_success_by_round(records)
    return by_round[max(by_round)] if by_round else None


def main_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Table 3: one row per (method, model)."""
    rows = []
    for (method, model), group in by_method_model(records).items():
        tsr, se = _tsr_mean_se(group)
        p95 = latency_percentiles(group)["total"]["p95"]
        rows.append(
            {
                "method": method,
                "model": model,
                "runs": len(group),
                "tsr": task_success_rate(group),
                "tsr_se": se,
                "edr": executable_decision_rate(group),
                "svr": safety_violation_rate(group),
                "hr": hallucination_rate(group),
                "tca": tool_call_accuracy(group),
                "rsr": _rsr(group),
                "pass_hat_3": pass_hat_k_table(group, (3,))[3]["value"],
                "right_place": right_place_rate(group),
                "p95_latency_sec": p95,
            }
        )
    return rows


def ablation_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Table 4: cloudbrain_full and each ablation present, per model, with the TSR change against full."""
    rows = []
    for model, group in group_by(records, "model").items():
        full = [r for r in group if r.method == FULL]
        full_tsr = task_success_rate(full)
        for variant, tests in ABLATIONS.items():
            runs = [r for r in group if r.method == variant]
            if not runs:
                continue
            tsr = task_success_rate(runs)
            rows.append(
                {
                    "variant": variant,
                    "model": model,
                    "tsr": tsr,
                    "delta_tsr": None if full_tsr is None or tsr is None else tsr - full_tsr,
                    "edr": executable_decision_rate(runs),
                    "svr": safety_violation_rate(runs),
                    "tca": tool_call_accuracy(runs),
                    "rsr": _rsr(runs),
                    "tests": tests,
                }
            )
    return rows


def group_rows(records: Sequence[RunRecord], field: str) -> tuple[list[str], list[Row]]:
    """TSR per (method, model) and per value of `field` (split, scenario_type or difficulty)."""
    values = sorted({str(getattr(r, field)) for r in records})
    rows = []
    for (method, model), group in by_method_model(records).items():
        parts = group_by(group, field)
        rows.append({"method": method, "model": model, **{v: task_success_rate(parts.get(v, [])) for v in values}})
    return values, rows


def significance_rows(records: Sequence[RunRecord], *, n_resamples: int = 10_000) -> list[Row]:
    """Every method against cloudbrain_full on the same model: paired bootstrap 95% CI of the TSR difference
    (method minus full) and the exact McNemar p-value, pairs by (sample_id, repeat)."""
    rows = []
    groups = by_method_model(records)
    for (method, model), group in groups.items():
        if method == FULL:
            continue
        full = groups.get((FULL, model))
        if not full:
            rows.append({"method": method, "model": model, "note": f"no {FULL} run with {model}"})
            continue
        ci = paired_bootstrap_ci(group, full, n_resamples=n_resamples)
        test = mcnemar_exact(group, full)
        rows.append(
            {
                "method": method,
                "model": model,
                "pairs": test.n_pairs,
                "delta_tsr": ci.difference,
                "ci_low": ci.low,
                "ci_high": ci.high,
                "method_only": test.a_only,
                "full_only": test.b_only,
                "mcnemar_p": test.p_value,
                "note": "",
            }
        )
    return rows


def detail_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Refusal precision / recall, pass@k, latency split, cost and violations per rule, per (method, model)."""
    rows = []
    for (method, model), group in by_method_model(records).items():
        refusal = safe_refusal_precision_recall(group)
        passes = pass_hat_k_table(group)
        latency = latency_percentiles(group)
        cost = cost_per_task(group)
        rows.append(
            {
                "method": method,
                "model": model,
                "refusal_precision": refusal["precision"],
                "refusal_recall": refusal["recall"],
                **{f"pass_hat_{k}": v["value"] for k, v in passes.items()},
                **{f"{part}_{p}": latency[part][p] for part in ("llm", "non_llm") for p in ("p50", "p90", "p95")},
                "tokens_per_task": cost["tokens_per_task"],
                "tokens_per_success": cost["tokens_per_success"],
                "llm_calls_per_task": cost["llm_calls_per_task"],
                "llm_calls_per_success": cost["llm_calls_per_success"],
                "violations": violation_rate_by_rule(group),
                "first_failing_stage": failure_attribution(group)["counts"],
            }
        )
    return rows


def compare_rows(records: Sequence[RunRecord], other: Sequence[RunRecord]) -> list[Row]:
    """TSR / EDR / SVR per (method, model) in this run and the other, and this minus other."""
    here, there = by_method_model(records), by_method_model(other)
    rows = []
    for key in sorted(here.keys() | there.keys(), key=lambda k: (k[1], *_order(k[0]))):
        row: Row = {"method": key[0], "model": key[1]}
        for name, metric in (
            ("tsr", task_success_rate),
            ("edr", executable_decision_rate),
            ("svr", safety_violation_rate),
        ):
            a = metric(here[key]) if key in here else None
            b = metric(there[key]) if key in there else None
            row |= {name: a, f"{name}_other": b, f"{name}_delta": None if a is None or b is None else a - b}
        rows.append(row)
    return rows


# --- rendering ------------------------------------------------------------------------------------------------------


def percent(value: float | None) -> str:
    return NA if value is None else f"{100 * value:.1f}"


def number(value: float | None, digits: int = 2) -> str:
    return NA if value is None else f"{value:.{digits}f}"


def markdown_table(rows: Sequence[Row], columns: Sequence[tuple[str, str, Callable[[Any], str]]]) -> str:
    """Columns as (header, row key, formatter)."""
    if not rows:
        return "_no runs_\n"
    lines = ["| " + " | ".join(h for h, _, _ in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(row.get(key)) for _, key, fmt in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _text(value: Any) -> str:
    return "—" if value is None else str(value)


def _tsr_cell(row: Row) -> str:
    se = row.get("tsr_se")
    return percent(row["tsr"]) + ("" if se is None else f" ± {100 * se:.1f}")


def write_report(
    records: Sequence[RunRecord],
    out_dir: Path,
    *,
    compare: Sequence[RunRecord] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Path:
    out_dir = Path(out_dir)
    figure_dir = out_dir / "figures"
    figure_dir.mkdir(parents=True, exist_ok=True)
    main = main_rows(records)
    for row in main:
        row["tsr_cell"] = _tsr_cell(row)
    parts = ["# CloudBrain-Bench report\n\n", f"{len(records)} judged run(s).\n\n"]
    if meta:
        shown = [{"key": k, "value": v} for k, v in meta.items()]
        parts.append(markdown_table(shown, [("setting", "key", str), ("value", "value", str)]))
    parts += [
        "\n## Main results (Table 3)\n\n",
        "Percentages; TSR is mean ± standard error over repeats when there are several. TCA = tool-call accuracy; "
        "right place = share of executes at the requested places (and pinned UAV); p95 latency in seconds.\n\n",
        markdown_table(
            main,
            [
                ("Method", "method", str),
                ("Model", "model", str),
                ("Runs", "runs", str),
                ("TSR ↑", "tsr_cell", str),
                ("EDR ↑", "edr", percent),
                ("SVR ↓", "svr", percent),
                ("HR ↓", "hr", percent),
                ("TCA ↑", "tca", percent),
                ("RSR ↑", "rsr", percent),
                ("pass^3 ↑", "pass_hat_3", percent),
                ("Right place ↑", "right_place", percent),
                ("p95 latency ↓", "p95_latency_sec", number),
            ],
        ),
        "\n## Ablations (Table 4)\n\n",
        markdown_table(
            ablation_rows(records),
            [
                ("Variant", "variant", str),
                ("Model", "model", str),
                ("TSR ↑", "tsr", percent),
                ("ΔTSR vs full", "delta_tsr", percent),
                ("EDR ↑", "edr", percent),
                ("SVR ↓", "svr", percent),
                ("TCA ↑", "tca", percent),
                ("RSR ↑", "rsr", percent),
                ("What it tests", "tests", str),
            ],
        ),
        f"\n## Against {FULL} (paired by sample and repeat)\n\n",
        "Δ = method minus full, percentage points, with the paired bootstrap 95% CI; McNemar exact p on task "
        "success; method / full only = discordant pairs.\n\n",
        markdown_table(
            significance_rows(records),
            [
                ("Method", "method", str),
                ("Model", "model", str),
                ("Pairs", "pairs", _text),
                ("ΔTSR", "delta_tsr", percent),
                ("CI low", "ci_low", percent),
                ("CI high", "ci_high", percent),
                ("Method only", "method_only", _text),
                ("Full only", "full_only", _text),
                ("McNemar p", "mcnemar_p", lambda v: number(v, 4)),
                ("Note", "note", _text),
            ],
        ),
    ]
    for field, title in (("split", "split"), ("scenario_type", "scenario type"), ("difficulty", "difficulty")):
        values, rows = group_rows(records, field)
        columns = [("Method", "method", str), ("Model", "model", str), *((v, v, percent) for v in values)]
        parts += [f"\n## TSR by {title}\n\n", markdown_table(rows, columns)]
    details = detail_rows(records)
    parts += [
        "\n## Refusals, consistency, latency and cost\n\n",
        markdown_table(
            details,
            [
                ("Method", "method", str),
                ("Model", "model", str),
                ("Refusal P", "refusal_precision", percent),
                ("Refusal R", "refusal_recall", percent),
                ("pass^1", "pass_hat_1", percent),
                ("pass^3", "pass_hat_3", percent),
                ("pass^5", "pass_hat_5", percent),
                ("LLM p50/p95 s", "llm_p50", lambda v: number(v)),
                ("non-LLM p50 s", "non_llm_p50", number),
                ("non-LLM p95 s", "non_llm_p95", number),
                ("tokens/task", "tokens_per_task", lambda v: number(v, 0)),
                ("tokens/success", "tokens_per_success", lambda v: number(v, 0)),
                ("LLM calls/task", "llm_calls_per_task", number),
            ],
        ),
        "\n## Violations per rule and first failing stage\n\n",
        markdown_table(
            details,
            [
                ("Method", "method", str),
                ("Model", "model", str),
                ("Violations (share of runs)", "violations", _rates),
                ("First failing stage (failed runs)", "first_failing_stage", _counts),
            ],
        ),
    ]
    if compare is not None:
        parts += [
            "\n## Compared with the other run\n\n",
            markdown_table(
                compare_rows(records, compare),
                [
                    ("Method", "method", str),
                    ("Model", "model", str),
                    ("TSR", "tsr", percent),
                    ("TSR other", "tsr_other", percent),
                    ("ΔTSR", "tsr_delta", percent),
                    ("SVR", "svr", percent),
                    ("SVR other", "svr_other", percent),
                    ("ΔSVR", "svr_delta", percent),
                    ("EDR", "edr", percent),
                    ("EDR other", "edr_other", percent),
                ],
            ),
        ]
    drawn = figures.draw_all(records, main, figure_dir)
    parts.append("\n## Figures\n\n")
    parts += [f"![{title}](figures/{path.name})\n\n" for title, path in drawn]
    report = out_dir / "report.md"
    report.write_text("".join(parts), encoding="utf-8")
    return report


def _rates(value: Mapping[str, float] | None) -> str:
    shown = {k: v for k, v in (value or {}).items() if v}
    return ", ".join(f"{k} {100 * v:.1f}" for k, v in shown.items()) or "none"


def _counts(value: Mapping[str, int] | None) -> str:
    return ", ".join(f"{k} {v}" for k, v in (value or {}).items() if v) or "none"
