"""Aggregates over `RunRecord`s: breakdowns, mean +- standard error, a paired bootstrap CI of the
difference between two methods, and McNemar's exact test on paired binary outcomes. Pure functions, no I/O.

Two methods' runs are paired by (sample_id, repeat): both ran the same task in the same repeat slot (same stress
seeds). Runs without a partner are left out and counted in the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from evaluation.metrics import task_success
from evaluation.records import RunRecord

Outcome = Callable[[RunRecord], float]
DEFAULT_RESAMPLES = 10_000
_CHUNK_CELLS = 2_000_000  # resample-matrix cells drawn at once (memory bound; fixed so results do not depend on it)


def success_outcome(record: RunRecord) -> float:
    """1.0 for a successful run (`evaluation.metrics.task_success`), else 0.0: the default per-task metric."""
    return float(task_success(record))


def group_by(
    records: Sequence[RunRecord], key: str | Callable[[RunRecord], Hashable]
) -> dict[Hashable, list[RunRecord]]:
    """Records split by a field name (e.g. "split", "scenario_type", "difficulty", "method") or a function of the
    record (e.g. ``lambda r: (r.method, r.model)``). Groups come sorted by their key's text; order within a group is
    the input order."""
    get = (lambda r: getattr(r, key)) if isinstance(key, str) else key
    groups: dict[Hashable, list[RunRecord]] = {}
    for record in records:
        groups.setdefault(get(record), []).append(record)
    return {k: groups[k] for k in sorted(groups, key=str)}


def mean_se(values: Sequence[float]) -> tuple[float | None, float | None]:
    """(mean, standard error = sample std (ddof 1) / sqrt(n)); the error is None below 2 values, both for none."""
    if not values:
        return None, None
    data = np.asarray(values, dtype=float)
    se = float(data.std(ddof=1) / math.sqrt(len(data))) if len(data) > 1 else None
    return float(data.mean()), se


def pair_runs(
    records_a: Sequence[RunRecord], records_b: Sequence[RunRecord]
) -> tuple[list[tuple[RunRecord, RunRecord]], int, int]:
    """(pairs sorted by (sample_id, repeat), unpaired runs of a, unpaired runs of b). A (sample_id, repeat) seen
    twice on one side is an error (mixed methods or models: group first)."""
    sides = []
    for records in (records_a, records_b):
        by_key: dict[tuple[str, int], RunRecord] = {}
        for record in records:
            if record.key in by_key:
                raise ValueError(f"duplicate run {record.key} on one side of the comparison")
            by_key[record.key] = record
        sides.append(by_key)
    a, b = sides
    shared = sorted(a.keys() & b.keys())
    return [(a[k], b[k]) for k in shared], len(a) - len(shared), len(b) - len(shared)


@dataclass(frozen=True)
class BootstrapCI:
    """Mean of outcome(a) - outcome(b) over the pairs and its percentile bootstrap interval."""

    difference: float
    low: float
    high: float
    confidence: float
    n_pairs: int
    n_resamples: int
    seed: int
    cluster_by_task: bool
    unpaired_a: int
    unpaired_b: int


def paired_bootstrap_ci(
    records_a: Sequence[RunRecord],
    records_b: Sequence[RunRecord],
    outcome: Outcome = success_outcome,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
    cluster_by_task: bool = False,
) -> BootstrapCI:
    """Paired bootstrap CI of mean(outcome(a)) - mean(outcome(b)) (method a minus method b).

    The per-pair differences d_i = outcome(a_i) - outcome(b_i) are resampled with replacement ``n_resamples`` times
    with ``numpy.random.default_rng(seed)``; the interval is the (1-confidence)/2 and (1+confidence)/2 quantiles of
    the resampled means (percentile method). With ``cluster_by_task`` the units drawn are tasks (sample_id) with all
    their repeats, and each resample's statistic is sum(d) / pairs drawn: repeats of one task are correlated, so
    this interval is the honest (wider) one when there are several repeats. Same inputs and seed -> same interval.
    """
    pairs, unpaired_a, unpaired_b = pair_runs(records_a, records_b)
    if not pairs:
        raise ValueError("no (sample_id, repeat) is shared by the two methods")
    if n_resamples < 1 or not 0 < confidence < 1:
        raise ValueError("n_resamples must be >= 1 and confidence in (0, 1)")
    diffs = np.array([outcome(a) - outcome(b) for a, b in pairs], dtype=float)
    if cluster_by_task:
        tasks: dict[str, list[float]] = {}
        for (a, _), d in zip(pairs, diffs):
            tasks.setdefault(a.sample_id, []).append(float(d))
        sums = np.array([sum(v) for v in tasks.values()])
        sizes = np.array([len(v) for v in tasks.values()], dtype=float)
    else:
        sums, sizes = diffs, np.ones_like(diffs)
    rng = np.random.default_rng(seed)
    units = len(sums)
    rows = max(1, _CHUNK_CELLS // units)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        idx = rng.integers(0, units, size=(stop - start, units))
        means[start:stop] = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return BootstrapCI(
        difference=float(diffs.mean()),
        low=float(low),
        high=float(high),
        confidence=confidence,
        n_pairs=len(pairs),
        n_resamples=n_resamples,
        seed=seed,
        cluster_by_task=cluster_by_task,
        unpaired_a=unpaired_a,
        unpaired_b=unpaired_b,
    )


def mcnemar_exact_p(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts: under H0 the a_only of the n = a_only + b_only
    discordant pairs follow Binomial(n, 1/2); p = min(1, 2 * P(X <= min(a_only, b_only))), computed exactly with
    integers. 1.0 when there is no discordant pair."""
    if a_only < 0 or b_only < 0:
        raise ValueError("counts must be non-negative")
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


@dataclass(frozen=True)
class McNemarResult:
    """Paired 2x2 table of binary outcomes and the exact two-sided p-value."""

    both: int  # a and b succeed
    a_only: int  # a succeeds, b fails
    b_only: int  # a fails, b succeeds
    neither: int
    p_value: float
    n_pairs: int
    unpaired_a: int
    unpaired_b: int


def mcnemar_exact(
    records_a: Sequence[RunRecord],
    records_b: Sequence[RunRecord],
    outcome: Callable[[RunRecord], bool] = task_success,
) -> McNemarResult:
    """McNemar's exact test on paired binary outcomes (default `task_success`) of two methods, paired by
    (sample_id, repeat). Only the discordant pairs carry information (`mcnemar_exact_p`)."""
    pairs, unpaired_a, unpaired_b = pair_runs(records_a, records_b)
    table = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for a, b in pairs:
        table[(bool(outcome(a)), bool(outcome(b)))] += 1
    return McNemarResult(
        both=table[(True, True)],
        a_only=table[(True, False)],
        b_only=table[(False, True)],
        neither=table[(False, False)],
        p_value=mcnemar_exact_p(table[(True, False)], table[(False, True)]),
        n_pairs=len(pairs),
        unpaired_a=unpaired_a,
        unpaired_b=unpaired_b,
    )
