"""`cloudbrain bench report`: report.md and its figures from judged runs: the main results, the ablations, the
breakdowns, significance against the full agent and the figures.

Pure on records. Every table's numbers come from a `*_rows` function that returns rows (lists of dicts, values as
fractions, seconds or counts, None where a metric is undefined) built from evaluation.metrics and
evaluation.statistics, so tests check numbers, not markdown. `write_report` only formats those rows
(`markdown_table`) and hands them to evaluation/figures.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from benchmark.checks import CHECK_KINDS, REFUSAL_LABELS
from evaluation import figures
from evaluation.gallery import gallery_section
from evaluation.methods import ABLATION_PREFIX, ABLATION_TESTS, BASELINES, FULL, PEERS
from evaluation.metrics import (
    OTHER_KIND,
    PIPELINE_STAGES,
    UNATTRIBUTED,
    check_pass_rates,
    corrections_per_task,
    cost_per_task,
    decided_runs,
    executable_decision_rate,
    executes_without_destination,
    failure_attribution,
    fleet_summary,
    hallucination_rate,
    ir_exact_match_rate,
    ir_field_f1,
    latency_percentiles,
    paraphrase_consistency,
    pass_hat_k,
    pass_hat_k_table,
    repair_success_by_round,
    right_place_rate,
    safe_refusal_precision_recall,
    safety_violation_rate,
    stage_scores,
    stated_constraint_recall,
    task_completion_rate,
    task_success,
    task_success_rate,
    tool_argument_similarity,
    tool_call_accuracy,
    tool_dependency_success,
    tool_precision,
    unapproved_relaxation_rate,
    undecided_summary,
    violation_rate_by_rule,
)
from evaluation.records import EXECUTE, STAGES, RunRecord
from evaluation.statistics import group_by, mcnemar_exact, mean_se, paired_bootstrap_ci

# The "tokens and corrections" table: the peers against the iterative baseline and the full agent (Tree-Planner's
# claim is about tokens and corrections against iterative re-planning).
CORRECTION_METHODS = (*PEERS, "react", FULL)
KNOWN_METHODS = (*BASELINES, *PEERS, *ABLATION_TESTS)  # the table order; any other method comes after these
DIFFICULTY_ORDER = ("easy", "medium", "hard", "extreme", "unsat")
BREAKDOWNS = (("split", "split"), ("scenario_type", "scenario type"), ("difficulty", "difficulty"))
FAILURE_STAGES = (*STAGES, UNATTRIBUTED)
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
NA = "N/A"  # the metric is undefined for that method (e.g. RSR of a method that never repairs)
MISSING = "—"  # there is no run at all (a group the method did not run, a method absent from one side)

Row = dict[str, Any]
MethodModel = tuple[str, str]


def method_order(method: str) -> tuple[int, str]:
    """Sort key: baselines, cloudbrain_full, its ablations (seed-plan order), then unknown methods by name."""
    return (KNOWN_METHODS.index(method) if method in KNOWN_METHODS else len(KNOWN_METHODS), method)


def _row_order(key: MethodModel) -> tuple[str, int, str]:
    method, model = key
    return (model, *method_order(method))


def by_method_model(records: Sequence[RunRecord]) -> dict[MethodModel, list[RunRecord]]:
    """Runs per (method, model), grouped by model and in `method_order` within a model: the row order of every
    table and figure."""
    groups = group_by(records, lambda r: (r.method, r.model))
    return {key: groups[key] for key in sorted(groups, key=_row_order)}


def _identity(key: MethodModel) -> Row:
    return {"method": key[0], "model": key[1]}


def _final_repair_success(runs: Sequence[RunRecord]) -> float | None:
    """RSR after the last round (cumulative RSR@K); None for a method that never repaired."""
    by_round = repair_success_by_round(runs)
    return by_round[max(by_round)] if by_round else None


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


# --- rows -------------------------------------------------------------------------------------------------------------


def overview_rows(records: Sequence[RunRecord], meta: Mapping[str, Any] | None = None) -> list[Row]:
    """The header table: every `meta` entry as given, then what the records themselves hold."""
    rows = [{"setting": str(key), "value": value} for key, value in (meta or {}).items()]
    seen = {
        "judged runs": len(records),
        "methods in runs": sorted({r.method for r in records}, key=method_order),
        "models in runs": sorted({r.model for r in records}),
        "splits in runs": sorted({r.split for r in records}),
        "samples in runs": len({r.sample_id for r in records}),
        "repeats in runs": len({r.repeat for r in records}),
    }
    settled = Counter(f"{r.model}: {r.structured_output}" for r in records if r.structured_output)
    if settled:  # what the servers accepted, beside the mode the config requested
        seen["structured output settled (runs)"] = [f"{mode} ({n})" for mode, n in sorted(settled.items())]
    return rows + [{"setting": key, "value": value} for key, value in seen.items()]


def main_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Table 3, one row per (method, model). TSR is pooled over the runs on decided samples; `tsr_se` is the standard
    error of the per-repeat TSRs (None with a single repeat)."""
    rows = []
    for key, runs in by_method_model(records).items():
        repeats = group_by(decided_runs(runs), "repeat").values()
        per_repeat = [sum(map(task_success, group)) / len(group) for group in repeats]
        rows.append(
            _identity(key)
            | {
                "runs": len(runs),
                "repeats": len(per_repeat),
                "tsr": task_success_rate(runs),
                "tsr_se": mean_se(per_repeat)[1],
                "edr": executable_decision_rate(runs),
                "svr": safety_violation_rate(runs),
                "hr": hallucination_rate(runs),
                "tca": tool_call_accuracy(runs),
                "rsr": _final_repair_success(runs),
                "pass_hat_3": pass_hat_k(runs, 3),
                "right_place": right_place_rate(runs),
                "no_destination": executes_without_destination(runs),
                "relaxed": unapproved_relaxation_rate(runs),
                "stated_recall": stated_constraint_recall(runs),
                "p95_latency_sec": latency_percentiles(runs)["total"]["p95"],
            }
        )
    return rows


def _ablation_text(variant: str) -> str:
    return ABLATION_TESTS.get(variant) or f"removing {variant.removeprefix(ABLATION_PREFIX).replace('_', ' ')}"


def _is_ablation(method: str) -> bool:
    return method == FULL or method.startswith(ABLATION_PREFIX)


def ablation_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Table 4: cloudbrain_full and every cloudbrain_no_* variant present, per model, with the TSR change against
    cloudbrain_full on the same model (variant minus full; None without a full run on that model)."""
    rows = main_rows([r for r in records if _is_ablation(r.method)])
    full_tsr = {row["model"]: row["tsr"] for row in rows if row["method"] == FULL}
    return [
        {
            "variant": row["method"],
            "model": row["model"],
            **{metric: row[metric] for metric in ("tsr", "edr", "svr", "tca", "rsr")},
            "delta_tsr": _difference(row["tsr"], full_tsr.get(row["model"])),
            "tests": _ablation_text(row["method"]),
        }
        for row in rows
    ]


def _group_order(field: str, value: str) -> tuple[int, str]:
    known = DIFFICULTY_ORDER if field == "difficulty" else ()
    return (known.index(value) if value in known else len(known), value)


def breakdown_rows(records: Sequence[RunRecord], field: str) -> tuple[list[str], list[Row]]:
    """TSR per (method, model) and per value of `field` (split, scenario_type or difficulty): (the values, in
    order, and the rows). A method without runs in a group has None there."""
    values = sorted({str(getattr(r, field)) for r in records}, key=lambda v: _group_order(field, v))
    rows = []
    for key, runs in by_method_model(records).items():
        parts = group_by(runs, lambda r: str(getattr(r, field)))
        rows.append(_identity(key) | {value: task_success_rate(parts.get(value, [])) for value in values})
    return values, rows


def significance_rows(
    records: Sequence[RunRecord], *, n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> list[Row]:
    """Each method against cloudbrain_full on the same model, runs paired by (sample_id, repeat): the TSR
    difference (method minus full) with its paired bootstrap 95% CI, and McNemar's exact test on task success.
    The bootstrap resamples tasks with all their repeats (repeats of one task are correlated). Runs on UNKNOWN
    samples have no task success and are left out. Rows that cannot be compared say why in `note` and have no
    numbers."""
    groups = by_method_model(decided_runs(records))
    rows = []
    for (method, model), runs in groups.items():
        if method == FULL:
            continue
        full = groups.get((FULL, model))
        test = mcnemar_exact(runs, full) if full else None
        if test is None or test.n_pairs == 0:
            why = f"no {FULL} run on {model}" if test is None else f"no (sample, repeat) shared with {FULL}"
            rows.append(_identity((method, model)) | {"note": why})
            continue
        ci = paired_bootstrap_ci(runs, full, n_resamples=n_resamples, seed=seed, cluster_by_task=True)
        rows.append(
            _identity((method, model))
            | {
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


def reliability_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Safe-refusal precision / recall (positives: UNSAT and AMBIGUOUS samples) and pass@1 / pass^3 / pass^5."""
    rows = []
    for key, runs in by_method_model(records).items():
        refusal = safe_refusal_precision_recall(runs)
        passes = {f"pass_hat_{k}": entry["value"] for k, entry in pass_hat_k_table(runs).items()}
        rows.append(
            _identity(key) | {"refusal_precision": refusal["precision"], "refusal_recall": refusal["recall"]} | passes
        )
    return rows


def latency_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Per-run latency percentiles split into LLM and non-LLM (tools, verifier, simulator, glue) time, plus the
    per-run values themselves (`llm_sec`, `non_llm_sec`) that the latency figure plots."""
    rows = []
    for key, runs in by_method_model(records).items():
        latency = latency_percentiles(runs)
        rows.append(
            _identity(key)
            | {f"{part}_{p}": latency[part][p] for part in ("llm", "non_llm", "total") for p in ("p50", "p90", "p95")}
            | {"llm_sec": [r.llm_latency_sec for r in runs], "non_llm_sec": [r.tool_latency_sec for r in runs]}
        )
    return rows


def cost_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Tokens and LLM calls per task (run) and per successful run."""
    keys = ("tokens_per_task", "tokens_per_success", "llm_calls_per_task", "llm_calls_per_success")
    rows = []
    for key, runs in by_method_model(records).items():
        cost = cost_per_task(runs)
        rows.append(_identity(key) | {name: cost[name] for name in keys})
    return rows


def correction_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Tokens per task and per success and corrections per task, for CORRECTION_METHODS present."""
    rows = []
    for key, runs in by_method_model(records).items():
        if key[0] in CORRECTION_METHODS:
            cost = cost_per_task(runs)
            rows.append(
                _identity(key)
                | {
                    "tokens_per_task": cost["tokens_per_task"],
                    "tokens_per_success": cost["tokens_per_success"],
                    "llm_calls_per_task": cost["llm_calls_per_task"],
                    "corrections_per_task": corrections_per_task(runs),
                }
            )
    return rows


def autoplan_metric_rows(records: Sequence[RunRecord]) -> list[Row]:
    """AutoPlan's own metrics for every method: TCR, TSR, PT (tool precision), ST (ROUGE-L of the arguments)."""
    return [
        _identity(key)
        | {
            "tcr": task_completion_rate(runs),
            "tsr": task_success_rate(runs),
            "pt": tool_precision(runs),
            "st": tool_argument_similarity(runs),
        }
        for key, runs in by_method_model(records).items()
    ]


def tool_ir_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Tool-call accuracy, tool-dependency success, IR exact match and IR field F1 (None: no call / no gold IR)."""
    return [
        _identity(key)
        | {
            "tca": tool_call_accuracy(runs),
            "tool_dependency": tool_dependency_success(runs),
            "ir_exact_match": ir_exact_match_rate(runs),
            "ir_field_f1": ir_field_f1(runs)["f1"],
        }
        for key, runs in by_method_model(records).items()
    ]


def violation_rows(records: Sequence[RunRecord]) -> tuple[list[str], list[Row]]:
    """Per-rule violation rates (share of runs; a run may violate several rules): (the rule ids, the rows). Every
    row has every rule: R1-R8, then any other id some method violated (0.0 where this one never did)."""
    rates = {key: violation_rate_by_rule(runs) for key, runs in by_method_model(records).items()}
    rules = list(dict.fromkeys(rule for by_rule in rates.values() for rule in by_rule))
    return rules, [_identity(key) | {rule: by_rule.get(rule, 0.0) for rule in rules} for key, by_rule in rates.items()]


def repair_rows(records: Sequence[RunRecord]) -> tuple[list[int], list[Row]]:
    """Cumulative repair success by round (RSR@r) for the methods that repaired at least once: (the rounds 1..K
    over all of them, the rows with `by_round` {r: value}; None past a method's own last round)."""
    rows = []
    for key, runs in by_method_model(records).items():
        by_round = repair_success_by_round(runs)
        if any(value is not None for value in by_round.values()):
            repairing = sum(r.repair_rounds >= 1 for r in runs)
            rows.append(_identity(key) | {"repairing_runs": repairing, "by_round": by_round})
    rounds = list(range(1, max((max(row["by_round"]) for row in rows), default=0) + 1))
    return rounds, rows


def failure_stage_rows(records: Sequence[RunRecord]) -> list[Row]:
    """First failing stage of the failed runs: `failed`, a count per stage (pipeline order, then unattributed)
    and `shares` {stage: count / failed} (None values when nothing failed)."""
    rows = []
    for key, runs in by_method_model(records).items():
        attribution = failure_attribution(runs)
        rows.append(
            _identity(key) | {"failed": attribution["runs"], "shares": attribution["shares"]} | attribution["counts"]
        )
    return rows


def _check_kinds(rates: Sequence[Mapping[str, Any]]) -> list[str]:
    """The check kinds scored in any of these `check_pass_rates` results, in CHECK_KINDS order."""
    seen = {kind for rate in rates for kind in rate["by_kind"]}
    return [kind for kind in (*CHECK_KINDS, OTHER_KIND) if kind in seen]


def check_rows(records: Sequence[RunRecord]) -> tuple[list[str], list[Row]]:
    """Check pass rates per (method, model) (metrics.check_pass_rates): (the kinds scored anywhere, the rows with
    `scored`, `all` and a rate per kind, None where the method had no scored check of that kind)."""
    rates = {key: check_pass_rates(runs) for key, runs in by_method_model(records).items()}
    kinds = _check_kinds(list(rates.values()))
    rows = [
        _identity(key)
        | {"scored": rate["scored"], "all": rate["rate"]}
        | {kind: rate["by_kind"].get(kind, {}).get("rate") for kind in kinds}
        for key, rate in rates.items()
    ]
    return kinds, rows


def _column_name(key: MethodModel, keys: Sequence[MethodModel]) -> str:
    """A (method, model) as a column header: the method alone when every run used one model."""
    return key[0] if len({model for _, model in keys}) == 1 else f"{key[0]} / {key[1]}"


def check_kind_rows(records: Sequence[RunRecord]) -> tuple[list[str], list[Row]]:
    """Check pass rates per kind (rows) and (method, model) (columns): (the column names, the rows with `kind`,
    `scored` and `all` pooled over every method, and a rate per column, None where that method scored none)."""
    groups = by_method_model(records)
    names = {_column_name(key, list(groups)): check_pass_rates(runs) for key, runs in groups.items()}
    pooled = check_pass_rates(records)
    rows = [
        {"kind": kind, "scored": pooled["by_kind"][kind]["scored"], "all": pooled["by_kind"][kind]["rate"]}
        | {name: rate["by_kind"].get(kind, {}).get("rate") for name, rate in names.items()}
        for kind in _check_kinds([pooled])
    ]
    return list(names), rows


def stage_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Per-stage scores per (method, model) (metrics.stage_scores): each stage's rate and `<stage>_runs`, the runs
    it is conditional on (grounding and translation None / 0 for a method that writes no IR)."""
    rows = []
    for key, runs in by_method_model(records).items():
        stages = stage_scores(runs)
        rows.append(
            _identity(key)
            | {stage: stages[stage]["rate"] for stage in PIPELINE_STAGES}
            | {f"{stage}_runs": stages[stage]["runs"] for stage in PIPELINE_STAGES}
        )
    return rows


def unknown_rows(records: Sequence[RunRecord]) -> list[Row]:
    """The runs on UNKNOWN samples per (method, model) that has any (metrics.undecided_summary)."""
    rows = []
    for key, runs in by_method_model(records).items():
        summary = undecided_summary(runs)
        if summary["runs"]:
            rows.append(_identity(key) | summary)
    return rows


def fleet_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Per (method, model) with runs on fleet samples: metrics.fleet_summary (samples, team success, makespan / gold,
    UAVs used against gold, per-member violations, unsafe executes); no row for one without such runs."""
    rows = []
    for key, runs in by_method_model([r for r in records if r.fleet is not None]).items():
        summary = fleet_summary(runs)
        if summary["runs"]:
            rows.append(_identity(key) | summary)
    return rows


def pattern_rows(records: Sequence[RunRecord]) -> list[Row]:
    """Per (method, model) and free-form pattern of the runs that carry one: samples, TSR on the SAT samples,
    executes on UNSAT / AMBIGUOUS samples (must be 0) and executes at a wrong place (right_place False)."""
    rows = []
    for key, runs in by_method_model([r for r in records if r.pattern]).items():
        for pattern, group in sorted(group_by(runs, "pattern").items()):
            rows.append(
                _identity(key)
                | {
                    "pattern": pattern,
                    "samples": len({r.sample_id for r in group}),
                    "tsr_sat": task_success_rate([r for r in group if r.label == "SAT"]),
                    "unsat_executes": sum(r.status == EXECUTE and r.label in REFUSAL_LABELS for r in group),
                    "wrong_place_executes": sum(r.status == EXECUTE and r.right_place is False for r in group),
                }
            )
    return rows


def paraphrase_rows(records: Sequence[RunRecord], canonical: Sequence[RunRecord]) -> list[Row]:
    """Per (method, model) with runs on canonical wordings: TSR on the free-form requests and on their canonical
    wordings, and paraphrase consistency (metrics.paraphrase_consistency) with its number of pairs."""
    theirs = by_method_model(canonical)
    rows = []
    for key, runs in by_method_model(records).items():
        if key in theirs:
            consistency = paraphrase_consistency(runs, theirs[key])
            rows.append(
                _identity(key)
                | {
                    "tsr": task_success_rate(runs),
                    "tsr_canonical": task_success_rate(theirs[key]),
                    "consistency": consistency["value"],
                    "pairs": consistency["pairs"],
                }
            )
    return rows


def compare_rows(records: Sequence[RunRecord], other: Sequence[RunRecord]) -> list[Row]:
    """TSR / SVR / EDR per (method, model) in these runs and in `other`, and the difference (these minus other).
    `in_runs` / `in_other` say which side has the (method, model); its metrics are None on the side without it."""
    here, there = by_method_model(records), by_method_model(other)
    rows = []
    for key in sorted(here.keys() | there.keys(), key=_row_order):
        row = _identity(key) | {"in_runs": key in here, "in_other": key in there}
        for name, metric in (
            ("tsr", task_success_rate),
            ("svr", safety_violation_rate),
            ("edr", executable_decision_rate),
        ):
            mine = metric(here[key]) if key in here else None
            theirs = metric(there[key]) if key in there else None
            row |= {name: mine, f"{name}_other": theirs, f"{name}_delta": _difference(mine, theirs)}
        rows.append(row)
    return rows


def report_rows(
    records: Sequence[RunRecord],
    compare: Sequence[RunRecord] | None = None,
    canonical: Sequence[RunRecord] = (),
) -> dict[str, Any]:
    """Every number of the report, by table: rows, or (columns, rows) for the tables whose columns depend on the
    data. `compare` is None without a compared run; `canonical` are the runs on free-form samples' canonical
    wordings (none outside test_freeform)."""
    return {
        "main": main_rows(records),
        "ablation": ablation_rows(records),
        "breakdown": {field: breakdown_rows(records, field) for field, _ in BREAKDOWNS},
        "significance": significance_rows(records),
        "reliability": reliability_rows(records),
        "latency": latency_rows(records),
        "cost": cost_rows(records),
        "corrections": correction_rows(records),
        "autoplan_metrics": autoplan_metric_rows(records),
        "tool_ir": tool_ir_rows(records),
        "violations": violation_rows(records),
        "repair": repair_rows(records),
        "failure_stage": failure_stage_rows(records),
        "checks": check_rows(records),
        "check_kinds": check_kind_rows(records),
        "stages": stage_rows(records),
        "unknown": unknown_rows(records),
        "fleet": fleet_rows(records),
        "compare": None if compare is None else compare_rows(records, compare),
        "paraphrase": paraphrase_rows(records, canonical),
        "patterns": pattern_rows(records),
    }


# --- markdown ---------------------------------------------------------------------------------------------------------

Column = tuple[str, Callable[[Row], str]]


def percent(value: float | None) -> str:
    return NA if value is None else f"{100 * value:.1f}"


def points(value: float | None) -> str:
    """A difference of two rates in signed percentage points."""
    return NA if value is None else f"{100 * value:+.1f}"


def number(value: float | None, digits: int = 2) -> str:
    return NA if value is None else f"{value:.{digits}f}"


def _cell(value: Any) -> str:
    """Any value as cell text: None as missing, lists joined, mappings as key=value (meta holds both)."""
    if value is None:
        return MISSING
    if isinstance(value, Mapping):
        return ", ".join(f"{key}={_cell(item)}" for key, item in value.items())
    if isinstance(value, list | tuple | set):
        return ", ".join(_cell(item) for item in value) or MISSING
    return str(value)


def markdown_table(rows: Sequence[Row], columns: Sequence[Column], *, empty: str = "no runs") -> str:
    """A markdown table, one line per row; a column is (header, function of the row giving the cell text). Without
    rows, the `empty` note in italics."""
    if not rows:
        return f"_{empty}_\n"

    def escape(cell: str) -> str:  # a '|' or a line break inside a cell would split the row
        return cell.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(escape(header) for header, _ in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(escape(cell(row)) for _, cell in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def text(header: str, key: str) -> Column:
    return header, lambda row: _cell(row.get(key))


def pct(header: str, key: str, *, empty: str = NA) -> Column:
    """A rate in percent; None shows as `empty` (N/A: undefined; MISSING where None means there was no run)."""
    return header, lambda row: empty if row.get(key) is None else percent(row[key])


def num(header: str, key: str, digits: int = 2) -> Column:
    return header, lambda row: number(row.get(key), digits)


def _when_compared(header: str, cell: Callable[[Row], str]) -> Column:
    """A significance cell, MISSING on rows that could not be compared (they carry a note instead)."""
    return header, lambda row: MISSING if row["note"] else cell(row)


def _compare_cells(name: str) -> list[Column]:
    """Compare table: the metric in these runs, in the other runs, and the difference; MISSING on a side without
    the (method, model)."""
    upper = name.upper()
    return [
        (upper, lambda row: percent(row[name]) if row["in_runs"] else MISSING),
        (f"{upper} other", lambda row: percent(row[f"{name}_other"]) if row["in_other"] else MISSING),
        (f"Δ{upper} (pp)", lambda row: points(row[f"{name}_delta"]) if row["in_runs"] and row["in_other"] else MISSING),
    ]


def _stage_cell(stage: str) -> Column:
    """A stage's rate with the runs it is conditional on; N/A where no run reached it (or the method has no IR)."""
    position = PIPELINE_STAGES.index(stage)
    header = f"{stage} given {PIPELINE_STAGES[position - 1]}" if position else stage
    runs = f"{stage}_runs"
    return header.capitalize(), lambda row: NA if not row[runs] else f"{percent(row[stage])} ({row[runs]})"


def _tsr_cell(row: Row) -> str:
    se = row["tsr_se"]
    return percent(row["tsr"]) + ("" if se is None else f" ± {100 * se:.1f}")


IDENTITY: tuple[Column, ...] = (text("Method", "method"), text("Model", "model"))
LATENCY_PARTS = (("llm", "LLM"), ("non_llm", "non-LLM"))
TOKEN_COLUMNS: tuple[Column, ...] = (
    num("tokens / task", "tokens_per_task", 0),
    num("tokens / success", "tokens_per_success", 0),
    num("LLM calls / task", "llm_calls_per_task"),
)


@dataclass(frozen=True)
class Table:
    """One table of the report, declared: its rows are `report_rows(...)[key]` (or what `rows` picks from that
    data), its columns fixed or chosen from the data (a column per rule, per repair round ...)."""

    title: str
    explanation: str
    key: str
    columns: Sequence[Column] | Callable[[Mapping[str, Any]], Sequence[Column]]
    rows: Callable[[Mapping[str, Any]], Sequence[Row]] | None = None
    empty: str = "no runs"
    optional: bool = False  # left out when it has no rows (the free-form tables); None rows are always left out

    def render(self, data: Mapping[str, Any]) -> str | None:
        rows = self.rows(data) if self.rows else data[self.key]
        if rows is None or (self.optional and not rows):
            return None
        columns = self.columns(data) if callable(self.columns) else self.columns
        return markdown_table(rows, columns, empty=self.empty)


def _breakdown(field: str, title: str) -> Table:
    return Table(
        f"TSR by {title}",
        f"TSR (%); {MISSING} = no run there.",
        "breakdown",
        lambda data: [*IDENTITY, *(pct(value, value, empty=MISSING) for value in data["breakdown"][field][0])],
        rows=lambda data: data["breakdown"][field][1],
    )


TABLES: tuple[Table, ...] = (
    Table(
        "Main results (Table 3)",
        "TSR, EDR, SVR, RSR, pass^3, right place, no-dest. exec and relaxed count the runs on decided samples only "
        "(UNKNOWN samples are reported apart); Runs, HR, TCA, stated kept and p95 latency count every run, UNKNOWN "
        "ones too (effort, not outcome). TSR is mean ± standard error over repeats when there are several. TCA = "
        "tool-call accuracy; right place = share of executes at the requested places with the requested UAV; "
        "no-dest. exec = executes on requests that name no destination (must be 0); "
        "relaxed = share of executes that drop a constraint the request states (pinned UAV, places, deadline, "
        "altitude band) without the operator's approval; stated kept = share of the stated requirements an IR "
        "can hold (the grounding and translation checks of Per-stage scores) that the IR carries; "
        f"p95 latency in seconds, end to end. {NA} = undefined for the method (e.g. RSR without repairs, "
        "pass^3 with fewer than 3 repeats).",
        "main",
        [
            *IDENTITY,
            text("Runs", "runs"),
            ("TSR ↑", _tsr_cell),
            pct("EDR ↑", "edr"),
            pct("SVR ↓", "svr"),
            pct("HR ↓", "hr"),
            pct("TCA ↑", "tca"),
            pct("RSR ↑", "rsr"),
            pct("pass^3 ↑", "pass_hat_3"),
            pct("Right place ↑", "right_place"),
            text("No-dest. exec ↓", "no_destination"),
            pct("Relaxed ↓", "relaxed"),
            pct("Stated kept ↑", "stated_recall"),
            num("p95 latency (s) ↓", "p95_latency_sec"),
        ],
    ),
    Table(
        "Ablations (Table 4)",
        f"ΔTSR = variant minus {FULL} on the same model, in percentage points.",
        "ablation",
        [
            text("Variant", "variant"),
            text("Model", "model"),
            pct("TSR ↑", "tsr"),
            ("ΔTSR (pp)", lambda row: points(row["delta_tsr"])),
            pct("EDR ↑", "edr"),
            pct("SVR ↓", "svr"),
            pct("TCA ↑", "tca"),
            pct("RSR ↑", "rsr"),
            text("What it tests", "tests"),
        ],
        empty=f"no {FULL} or {ABLATION_PREFIX}* run",
    ),
    *(_breakdown(field, title) for field, title in BREAKDOWNS),
    Table(
        f"Against {FULL}",
        f"Runs paired by (sample, repeat) with {FULL} on the same model. ΔTSR = method minus full, with the "
        f"paired bootstrap 95% CI ({BOOTSTRAP_RESAMPLES} resamples of tasks, seed {BOOTSTRAP_SEED}); McNemar "
        "exact p on task success; method / full only = discordant pairs.",
        "significance",
        [
            *IDENTITY,
            text("Pairs", "pairs"),
            _when_compared("ΔTSR (pp)", lambda row: points(row["delta_tsr"])),
            _when_compared("95% CI (pp)", lambda row: f"[{points(row['ci_low'])}, {points(row['ci_high'])}]"),
            text("Method only", "method_only"),
            text("Full only", "full_only"),
            _when_compared("McNemar p", lambda row: f"{row['mcnemar_p']:.3g}"),
            text("Note", "note"),
        ],
        empty=f"no other method to compare with {FULL}",
    ),
    Table(
        "Safe refusal and consistency",
        "Refusal precision / recall: safe_refusal or human_confirm against the UNSAT / AMBIGUOUS labels. "
        f"pass^k: the chance that k repeats of a task all succeed ({NA} with fewer than k repeats).",
        "reliability",
        [
            *IDENTITY,
            pct("Refusal precision", "refusal_precision"),
            pct("Refusal recall", "refusal_recall"),
            pct("pass@1", "pass_hat_1"),
            pct("pass^3", "pass_hat_3"),
            pct("pass^5", "pass_hat_5"),
        ],
    ),
    Table(
        "Check pass rates",
        "Each sample carries one check per requirement its request states (benchmark/checks.py: origin, each via "
        "point, destination, hand-off, pinned / excluded UAV, altitude band, deadline, payload, battery reserve, "
        "each zone to avoid, the refusal's reason on UNSAT / AMBIGUOUS samples), derived from the task; the judge "
        "scores each on every decision. Kept / scored checks (%); a check the judge could not score on a decision "
        f"(e.g. the deadline of a flight that did not fly) is not counted. {NA} = no check of that kind scored.",
        "checks",
        lambda data: [
            *IDENTITY,
            text("Checks", "scored"),
            pct("All", "all"),
            *(pct(kind, kind) for kind in data["checks"][0]),
        ],
        rows=lambda data: data["checks"][1],
    ),
    Table(
        "Check pass rates by kind",
        f"Kept / scored checks (%) per kind; Checks and All pool every method. {NA} = the method scored none.",
        "check_kinds",
        lambda data: [
            text("Kind", "kind"),
            text("Checks", "scored"),
            pct("All", "all"),
            *(pct(name, name) for name in data["check_kinds"][0]),
        ],
        rows=lambda data: data["check_kinds"][1],
        empty="no scored check (results from before checks existed)",
    ),
    Table(
        "Per-stage scores",
        "Each stage scored on the runs the stage before got right (VLTL-Bench): grounding = the IR names every "
        "stated id (origin, via points in order, destination, hand-off, pinned UAVs, no excluded UAV); "
        "translation = the IR carries every other stated field (altitude band, deadline, payload, battery "
        "reserve; the same or tighter); planning = on SAT an execute where every tool's last call succeeded, on "
        "UNSAT / AMBIGUOUS a refusal or confirmation whose reason names the failure; safety = no judged "
        f"violation. Rate % (runs it is conditional on). {NA}: grounding and translation of a method that writes "
        "no IR (its planning is scored on all its runs), or no run reached the stage.",
        "stages",
        [*IDENTITY, *(_stage_cell(stage) for stage in PIPELINE_STAGES)],
    ),
    Table(
        "UNKNOWN samples (reported apart)",
        "Samples whose gold plan failed and whose UNSAT proof could not decide: no outcome is right there, so "
        "their runs are left out of every other success and safety number of this report. Executes judged safe "
        "= executes without a violated rule.",
        "unknown",
        [
            *IDENTITY,
            text("Runs", "runs"),
            text("Samples", "tasks"),
            text("Executes", "executes"),
            text("Executes judged safe", "executes_judged_safe"),
        ],
        empty="no run on an UNKNOWN sample",
    ),
    Table(
        "Fleet missions",
        "Runs on fleet samples (requests a team of UAVs serves; UNKNOWN samples left out). Team success: on SAT a "
        "team execute the judge passed (every member safe, no two members closer than the minimum separation, "
        "every site served, the whole mass carried, the sensors, pinned / excluded UAVs, the deadline held by "
        "every member; a one-UAV execute is judged as a team of one), on UNSAT a refusal. Makespan / gold and "
        "UAVs vs gold: the mean ratio of the last member's arrival to the gold team's, and the mean difference "
        "in UAVs flown, over the successful runs on SAT samples (Compared); per-member violations: members with a "
        f"violation / members flown by the executes; unsafe executes: executes with a violated rule. {NA} = none "
        "to average.",
        "fleet",
        [
            *IDENTITY,
            text("Samples", "samples"),
            pct("Team success ↑", "team_success"),
            num("Makespan / gold ↓", "makespan_ratio"),
            num("UAVs vs gold", "uavs_vs_gold"),
            text("Compared", "compared"),
            pct("Per-member violations ↓", "member_violation_rate"),
            text("Unsafe executes ↓", "unsafe_executes"),
        ],
        optional=True,
    ),
    Table(
        "Latency",
        "Seconds per run; LLM = waiting on the model, non-LLM = tools, verifier, simulator and glue.",
        "latency",
        [
            *IDENTITY,
            *(num(f"{name} {p}", f"{part}_{p}") for part, name in LATENCY_PARTS for p in ("p50", "p90", "p95")),
            num("total p95", "total_p95"),
        ],
    ),
    Table(
        "Cost",
        f"Tokens and LLM calls per run and per successful run ({NA} when nothing succeeded).",
        "cost",
        [*IDENTITY, *TOKEN_COLUMNS, num("LLM calls / success", "llm_calls_per_success")],
    ),
    Table(
        "Tokens and corrections",
        "The peer systems against react (iterative re-planning) and the full agent. Corrections per run: "
        "backtracks (tree_planner), reflexion retries (autoplan), reassignments after a UAV's refusal (emos), "
        "turns after a failed tool call (react), repair rounds (cloudbrain).",
        "corrections",
        [*IDENTITY, *TOKEN_COLUMNS, num("corrections / task", "corrections_per_task")],
        empty="none of " + ", ".join(CORRECTION_METHODS) + " ran",
    ),
    Table(
        "AutoPlan's metrics",
        "TCR: runs that reached a final answer of their own; TSR as above; PT: tools called that the gold trace "
        f"calls; ST: ROUGE-L of the calls' names and arguments against the gold trace's ({NA} = no call).",
        "autoplan_metrics",
        [*IDENTITY, pct("TCR", "tcr"), pct("TSR", "tsr"), pct("PT", "pt"), pct("ST", "st")],
    ),
    Table(
        "Tools and IR",
        f"{NA} = no tool call / no gold IR.",
        "tool_ir",
        [
            *IDENTITY,
            pct("TCA", "tca"),
            pct("Tool dependency", "tool_dependency"),
            pct("IR exact match", "ir_exact_match"),
            pct("IR field F1", "ir_field_f1"),
        ],
    ),
    Table(
        "Violations per rule",
        "Share of runs (%) violating each rule; a run can violate several. R8 includes executing an UNSAT / "
        "AMBIGUOUS task.",
        "violations",
        lambda data: [*IDENTITY, *(pct(rule, rule) for rule in data["violations"][0])],
        rows=lambda data: data["violations"][1],
    ),
    Table(
        "Repair success by round",
        "Cumulative RSR@r (%) among the runs that needed repair; methods that never repaired are left out.",
        "repair",
        lambda data: [
            *IDENTITY,
            text("Runs repaired", "repairing_runs"),
            *((f"r ≤ {r}", lambda row, r=r: percent(row["by_round"].get(r))) for r in data["repair"][0]),
        ],
        rows=lambda data: data["repair"][1],
        empty="no run needed a repair",
    ),
    Table(
        "First failing stage",
        "Failed runs by the earliest pipeline stage that failed (counts).",
        "failure_stage",
        [*IDENTITY, text("Failed", "failed"), *(text(stage, stage) for stage in FAILURE_STAGES)],
    ),
    Table(
        "Free-form requests: paraphrase consistency",
        "Each free-form request was also run in its canonical wording (every entity by id). Consistency = "
        "share of samples whose free-form run ends in the same status with the same UAV, start and end "
        "places as its canonical run.",
        "paraphrase",
        [
            *IDENTITY,
            pct("TSR ↑", "tsr"),
            pct("TSR canonical", "tsr_canonical"),
            pct("Paraphrase consistency ↑", "consistency"),
            text("Pairs", "pairs"),
        ],
        optional=True,
    ),
    Table(
        "Free-form requests by pattern",
        "Per construction pattern of the request (in the run's language): TSR on SAT samples (%), executes "
        f"on UNSAT / AMBIGUOUS samples and executes at a wrong place (both must be 0). {NA} = no SAT sample.",
        "patterns",
        [
            *IDENTITY,
            text("Pattern", "pattern"),
            text("Samples", "samples"),
            pct("TSR on SAT ↑", "tsr_sat"),
            text("Executes on UNSAT ↓", "unsat_executes"),
            text("Wrong-place executes ↓", "wrong_place_executes"),
        ],
        optional=True,
    ),
    Table(
        "Compared with the other run",
        f"Δ = these runs minus the compared ones, percentage points; {MISSING} = no run on that side.",
        "compare",
        [*IDENTITY, *(c for name in ("tsr", "svr", "edr") for c in _compare_cells(name))],
    ),
)


def _sections(data: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(title, explanation, markdown table) of every table of `report_rows`, in report order."""
    rendered = ((table, table.render(data)) for table in TABLES)
    return [(table.title, table.explanation, markdown) for table, markdown in rendered if markdown is not None]


def _figures(data: Mapping[str, Any], figure_dir: Path) -> list[tuple[str, Path]]:
    """(caption, PNG path) of the four figures."""
    rounds, repairs = data["repair"]
    return [
        ("TSR, EDR, SVR and HR per method", figures.main_results(data["main"], figure_dir / "main_results.png")),
        ("Repair success by round", figures.repair_by_round(rounds, repairs, figure_dir / "repair_by_round.png")),
        (
            "First failing stage of the failed runs",
            figures.failure_stage(data["failure_stage"], FAILURE_STAGES, figure_dir / "failure_stage.png"),
        ),
        ("Latency per run, LLM and non-LLM", figures.latency(data["latency"], figure_dir / "latency.png")),
    ]


def write_report(
    records: Sequence[RunRecord],
    out_dir: Path,
    *,
    compare: Sequence[RunRecord] | None = None,
    meta: Mapping[str, Any] | None = None,
    canonical: Sequence[RunRecord] = (),
) -> Path:
    """Write out_dir/report.md and its PNG figures under out_dir/figures/; return the report's path. `canonical`:
    the runs on free-form samples' canonical wordings, for paraphrase consistency."""
    out_dir = Path(out_dir)
    figure_dir = out_dir / "figures"
    figure_dir.mkdir(parents=True, exist_ok=True)
    data = report_rows(records, compare, canonical)
    overview = overview_rows(records, meta)
    if compare is not None:
        overview.append({"setting": "compared runs", "value": len(compare)})
    parts = [
        "# CloudBrain-Bench report\n\n",
        f"{len(records)} judged run(s); report written {date.today().isoformat()}.\n\n",
        markdown_table(overview, [text("Setting", "setting"), text("Value", "value")]),
    ]
    for title, explanation, table in _sections(data):
        parts += [f"\n## {title}\n\n", f"{explanation}\n\n", table]
    parts.append(gallery_section(records, out_dir))
    parts.append("\n## Figures\n\n")
    parts += [f"### {caption}\n\n![{caption}](figures/{path.name})\n\n" for caption, path in _figures(data, figure_dir)]
    report = out_dir / "report.md"
    report.write_text("".join(parts), encoding="utf-8")
    return report
